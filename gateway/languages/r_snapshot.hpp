#pragma once
// What an R kernel (IRkernel) is sent to save its global environment into a file and to load
// it back (issue 37), as python_snapshot.hpp is for Python: R's own save() and load(), run
// inside the sandboxed kernel; the gateway only moves the bytes. Pure: the code is text,
// unit-tested here and run by tests/e2e/python/test_pause.py.
//
// The blob and the report have the names python_snapshot gives them (the gateway's names for
// a kernel's saved state, whatever is in it), and the report the same shape: {"carried":
// [names], "not_carried": [{name, type, reason}]}. The packages attached when it was saved are
// attached again on load (one that cannot be is listed); an open connection and an external
// pointer belong to the process and are listed, never silently dropped. Neither leaves a name
// in the global environment.

#include <string>

namespace callisto::gateway::languages::r_snapshot {

// Saves the global environment into <workdir>/python_snapshot::blob_name (an .RData file),
// the report into python_snapshot::report_name.
std::string save_code(const std::string& workdir);
// Loads <workdir>/blob_name into the global environment, removes it, writes the report.
std::string load_code(const std::string& workdir);

}  // namespace callisto::gateway::languages::r_snapshot
