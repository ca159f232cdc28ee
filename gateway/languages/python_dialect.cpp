#include "gateway/languages/python_dialect.hpp"

namespace callisto::gateway::languages::python_dialect {

std::string chdir_code(const std::string& path) {
    return "import os as _callisto_os\n_callisto_os.chdir(" + string_literal(path) +
           ")\ndel _callisto_os\n";
}

std::string home_code(const std::string& path) {
    return "__import__('os').environ['HOME'] = " + string_literal(path) + "\n";
}

std::string env_apply_code(const env_vars& vars) {
    std::string dict = "{";
    for (const auto& [name, value] : vars)
        dict += string_literal(name) + ": " + string_literal(value) + ", ";
    dict += "}";
    return "(lambda o, s, new: (setattr(s, '_callisto_saved_env', "
           "{k: o.environ.get(k) for k in new}), o.environ.update(new)))"
           "(__import__('os'), __import__('sys'), " +
           dict + ")\n";
}

std::string env_restore_code() {
    return "(lambda o, saved: [o.environ.pop(k, None) if v is None else o.environ.__setitem__(k, "
           "v) "
           "for k, v in saved.items()])"
           "(__import__('os'), __import__('sys').__dict__.pop('_callisto_saved_env', {}))\n";
}

std::string reset_code(const std::string& workdir, bool wipe) {
    std::string code =
        "import sys as _callisto_sys\n"
        "if 'matplotlib.pyplot' in _callisto_sys.modules:\n"
        "    _callisto_sys.modules['matplotlib.pyplot'].close('all')\n";
    code +=
        "import os as _callisto_os, shutil as _callisto_shutil\n"
        "_callisto_os.chdir(" +
        string_literal(workdir) + ")\n";
    if (wipe) {
        code +=
            "for _callisto_e in list(_callisto_os.scandir('.')):\n"
            "    if _callisto_e.name in ('.ipython', '.cache'):\n"
            "        continue\n"
            "    try:\n"
            "        if _callisto_e.is_dir(follow_symlinks=False):\n"
            "            _callisto_shutil.rmtree(_callisto_e.path)\n"
            "        else:\n"
            "            _callisto_os.unlink(_callisto_e.path)\n"
            "    except OSError:\n"
            "        pass\n";
    }
    code += "get_ipython().reset(new_session=True, aggressive=False)\n";
    return code;
}

}  // namespace callisto::gateway::languages::python_dialect
