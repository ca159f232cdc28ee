#include "gateway/languages/r_snapshot.hpp"

#include "gateway/languages/kernel_dialect.hpp"
#include "gateway/languages/python_snapshot.hpp"

namespace callisto::gateway::languages::r_snapshot {

namespace {

// Run in base::local(): its names live in a throwaway environment, never the global one, and
// every function is called by base:: (a user's own `c` or `save` must not answer). The values
// are gathered into a new environment (references, not copies) with the attached packages'
// names beside them, so one save() writes both. Hidden names (a leading dot) stay out, as
// Python's leading underscore does: they are the kernel's own (pbdZMQ's .pbd_env, which loaded
// into another kernel would take its sockets' place) and .Random.seed (a restored context gets
// a random state of its own).
const char* const save_body = R"R(
  env <- base::globalenv()
  carried <- base::character()
  not_carried <- base::data.frame(name = base::character(), type = base::character(),
                                  reason = base::character(), stringsAsFactors = FALSE)
  saved <- base::new.env(parent = base::emptyenv())
  for (name in base::ls(env, all.names = FALSE, sorted = TRUE)) {
    value <- base::tryCatch(base::get(name, envir = env), error = function(e) e)
    kind <- base::paste(base::class(value), collapse = "/")
    reason <- if (base::inherits(value, "error")) {
      base::substr(base::conditionMessage(value), 1, 300)
    } else if (base::inherits(value, "connection")) {
      "an open connection belongs to this process"
    } else if (base::typeof(value) == "externalptr") {
      "an external pointer belongs to this process"
    } else NULL
    if (base::is.null(reason)) {
      base::assign(name, value, envir = saved)
      carried <- base::c(carried, name)
    } else {
      not_carried[base::nrow(not_carried) + 1, ] <- base::list(name, kind, reason)
    }
  }
  base::assign(".callisto_packages", base::.packages(), envir = saved)
  part <- base::paste0(blob, ".part")
  base::save(list = base::ls(saved, all.names = TRUE), envir = saved, file = part)
  if (!base::file.rename(part, blob)) base::stop("the saved state could not be renamed")
  base::writeLines(jsonlite::toJSON(base::list(carried = carried, not_carried = not_carried)),
                   report)
)R";

// Loaded into an environment of its own first: the packages are attached before the values
// reach the global environment, and the packages' list never does.
const char* const load_body = R"R(
  saved <- base::new.env(parent = base::emptyenv())
  base::load(blob, envir = saved)
  base::unlink(blob)
  not_carried <- base::data.frame(name = base::character(), type = base::character(),
                                  reason = base::character(), stringsAsFactors = FALSE)
  packages <- base::get0(".callisto_packages", envir = saved, inherits = FALSE)
  if (!base::is.null(packages)) base::rm(".callisto_packages", envir = saved)
  # .packages() lists the last attached first: attached again in the order they were.
  for (p in base::rev(base::setdiff(packages, base::.packages()))) {
    why <- base::tryCatch({
      base::suppressPackageStartupMessages(base::library(p, character.only = TRUE))
      NULL
    }, error = function(e) base::substr(base::conditionMessage(e), 1, 300))
    if (!base::is.null(why))
      not_carried[base::nrow(not_carried) + 1, ] <- base::list(p, "package", why)
  }
  carried <- base::sort(base::ls(saved, all.names = TRUE))
  base::list2env(base::as.list(saved, all.names = TRUE), envir = base::globalenv())
  base::writeLines(jsonlite::toJSON(base::list(carried = carried, not_carried = not_carried)),
                   report)
)R";

std::string call(const char* body, const std::string& workdir) {
    return "base::invisible(base::local({\n  blob <- base::file.path(" + string_literal(workdir) +
           ", " + string_literal(python_snapshot::blob_name) + ")\n  report <- base::file.path(" +
           string_literal(workdir) + ", " + string_literal(python_snapshot::report_name) + ")\n" +
           body + "}))\n";
}

}  // namespace

std::string save_code(const std::string& workdir) { return call(save_body, workdir); }

std::string load_code(const std::string& workdir) { return call(load_body, workdir); }

}  // namespace callisto::gateway::languages::r_snapshot
