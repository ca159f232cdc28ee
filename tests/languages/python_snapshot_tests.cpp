#include "gateway/languages/python_snapshot.hpp"

#include <doctest/doctest.h>

using namespace callisto::gateway::languages;

TEST_CASE("python snapshot: saving uses dill in the kernel and lists what it cannot carry") {
    const auto code = python_snapshot::save_code("/work");
    CHECK(code.find("import dill") != std::string::npos);
    CHECK(code.find("_callisto_snapshot_save(\"/work\", \".callisto-snapshot.dill\", "
                    "\".callisto-snapshot.json\")") != std::string::npos);
    // Each kind the issue names is listed, never silently dropped.
    for (const char* kind : {"types.GeneratorType", "socket.socket", "threading.Thread",
                             "io.IOBase", "not_carried.append"})
        CHECK(code.find(kind) != std::string::npos);
    // Modules by name, re-imported on load.
    CHECK(code.find("modules[name] = value.__name__") != std::string::npos);
    // Leaves no name behind, even when it fails.
    CHECK(code.find("finally:\n    del _callisto_snapshot_save\n") != std::string::npos);
}

TEST_CASE(
    "python snapshot: loading re-imports modules, unpickles in the kernel, removes the "
    "blob") {
    const auto code = python_snapshot::load_code("/tmp/a \"dir\"");
    CHECK(code.find("_callisto_snapshot_load(\"/tmp/a \\\"dir\\\"\"") != std::string::npos);
    CHECK(code.find("importlib.import_module") != std::string::npos);
    CHECK(code.find("dill.loads") != std::string::npos);
    CHECK(code.find("os.unlink(blob)") != std::string::npos);
    CHECK(code.find("finally:\n    del _callisto_snapshot_load\n") != std::string::npos);
}
