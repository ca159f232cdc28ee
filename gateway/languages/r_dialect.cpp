#include "gateway/languages/r_dialect.hpp"

namespace callisto::gateway::languages::r_dialect {

std::string chdir_code(const std::string& path) {
    return "base::invisible(base::setwd(" + string_literal(path) + "))\n";
}

std::string home_code(const std::string& path) {
    return "base::invisible(base::Sys.setenv(HOME = " + string_literal(path) + "))\n";
}

std::string env_apply_code(const env_vars& vars) {
    std::string names = "base::c(", values = "base::c(";
    for (std::size_t i = 0; i < vars.size(); ++i) {
        const char* sep = i == 0 ? "" : ", ";
        names += sep + string_literal(vars[i].first);
        values += sep + string_literal(vars[i].second);
    }
    names += ")";
    values += ")";
    // Sys.getenv(unset = NA) tells an absent variable from an empty one.
    return "base::invisible(base::local({\n"
           "  n <- " +
           names +
           "\n"
           "  base::options(callisto.saved_env = base::Sys.getenv(n, unset = NA, names = TRUE))\n"
           "  base::do.call(base::Sys.setenv, base::as.list(stats::setNames(" +
           values +
           ", n)))\n"
           "}))\n";
}

std::string env_restore_code() {
    return "base::invisible(base::local({\n"
           "  saved <- base::getOption(\"callisto.saved_env\")\n"
           "  base::options(callisto.saved_env = NULL)\n"
           "  for (n in base::names(saved)) {\n"
           "    if (base::is.na(saved[[n]])) base::Sys.unsetenv(n)\n"
           "    else base::do.call(base::Sys.setenv, stats::setNames(base::list(saved[[n]]), n))\n"
           "  }\n"
           "}))\n";
}

std::string reset_code(const std::string& workdir, bool wipe) {
    std::string code =
        "base::invisible(base::local({\n"
        "  grDevices::graphics.off()\n"
        "  base::setwd(" +
        string_literal(workdir) + ")\n";
    if (wipe)
        code +=
            "  base::unlink(base::list.files(\".\", all.files = TRUE, no.. = TRUE), "
            "recursive = TRUE, force = TRUE)\n";
    code +=
        "  base::rm(list = base::ls(envir = base::globalenv(), all.names = TRUE),\n"
        "           envir = base::globalenv())\n"
        "}))\n";
    return code;
}

}  // namespace callisto::gateway::languages::r_dialect
