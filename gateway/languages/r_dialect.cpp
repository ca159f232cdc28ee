#include "gateway/languages/r_dialect.hpp"

namespace callisto::gateway::languages::r_dialect {

std::string chdir_code(const std::string& path) {
    return "invisible(setwd(" + string_literal(path) + "))\n";
}

std::string env_apply_code(const env_vars& vars) {
    std::string names = "c(", values = "c(";
    for (std::size_t i = 0; i < vars.size(); ++i) {
        const char* sep = i == 0 ? "" : ", ";
        names += sep + string_literal(vars[i].first);
        values += sep + string_literal(vars[i].second);
    }
    names += ")";
    values += ")";
    // Sys.getenv(unset = NA) tells an absent variable from an empty one.
    return "invisible(local({\n"
           "  n <- " +
           names +
           "\n"
           "  options(callisto.saved_env = Sys.getenv(n, unset = NA, names = TRUE))\n"
           "  do.call(Sys.setenv, as.list(setNames(" +
           values +
           ", n)))\n"
           "}))\n";
}

std::string env_restore_code() {
    return "invisible(local({\n"
           "  saved <- getOption(\"callisto.saved_env\")\n"
           "  options(callisto.saved_env = NULL)\n"
           "  for (n in names(saved)) {\n"
           "    if (is.na(saved[[n]])) Sys.unsetenv(n)\n"
           "    else do.call(Sys.setenv, setNames(list(saved[[n]]), n))\n"
           "  }\n"
           "}))\n";
}

std::string reset_code(const std::string& workdir, bool wipe) {
    std::string code =
        "invisible(local({\n"
        "  grDevices::graphics.off()\n"
        "  setwd(" +
        string_literal(workdir) + ")\n";
    if (wipe)
        code +=
            "  unlink(list.files(\".\", all.files = TRUE, no.. = TRUE), recursive = TRUE, "
            "force = TRUE)\n";
    code +=
        "  rm(list = ls(envir = globalenv(), all.names = TRUE), envir = globalenv())\n"
        "}))\n";
    return code;
}

}  // namespace callisto::gateway::languages::r_dialect
