#pragma once
// What a Python kernel is sent to save its user namespace into a file and to load it back
// (issue 37): the kernel itself serializes with dill (Debian's python3-dill), inside its
// sandbox, and the gateway only moves the bytes; it never unpickles them. Pure: the code is
// text, unit-tested here and run by tests/e2e/python/test_snapshots.py.
//
// Both write a JSON report beside the blob: {"carried": [names], "not_carried": [{name, type,
// reason}]}. Modules are carried by name and imported again; what cannot be serialized (a
// generator, a socket, a thread, an open file, anything dill refuses) is listed, never
// silently dropped. Neither leaves a name in the user's namespace.

#include <string>

namespace callisto::gateway::languages::python_snapshot {

// The blob and the report, in the workdir's top (as the kernel sees it). The gateway moves
// them out of the workdir when it stores a snapshot, and puts the blob back to restore one.
inline constexpr const char* blob_name = ".callisto-snapshot.dill";
inline constexpr const char* report_name = ".callisto-snapshot.json";

// Serializes the user namespace into <workdir>/blob_name, the report into report_name.
std::string save_code(const std::string& workdir);
// Loads <workdir>/blob_name into the user namespace, removes it, writes the report.
std::string load_code(const std::string& workdir);

}  // namespace callisto::gateway::languages::python_snapshot
