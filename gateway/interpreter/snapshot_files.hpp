#pragma once
// Between a context's workdir and a snapshot (issue 37): what the kernel left there when it
// saved its namespace (the blob and its report, languages/python_snapshot.hpp and
// r_snapshot.hpp) and the workdir's files are gathered into a snapshot_content; restoring
// puts them back. Through workdir_files, so nothing the kernel planted (a symlink, "..")
// leads outside the workdir.
// Blocking file I/O: the interpreter's file pool.

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string_view>
#include <variant>

#include <nlohmann/json.hpp>

#include "gateway/interpreter/snapshot_store.hpp"

namespace callisto::gateway::interpreter {

struct snapshot_limits {
    std::uint64_t max_bytes;  // blob and files together
    std::size_t max_files;
};

// The kernel's report ({"carried": [names], "not_carried": [{name, type, reason}]}), checked
// and cut to strings of sensible length: it came out of a kernel. nullopt when it is not one.
struct snapshot_report {
    nlohmann::json carried = nlohmann::json::array();
    nlohmann::json not_carried = nlohmann::json::array();
};
std::optional<snapshot_report> parse_snapshot_report(std::string_view text);

// Takes the report out of the workdir and names what the store is to copy: the blob and every
// regular file beside it; .ipython and .cache (the kernel's own) stay out, and a symlink or
// other special file is listed in not_carried with the reason. Sizes as they are now are held
// to limits.max_bytes (the store holds the copy to the quota again). On failure the blob is
// removed; on success it stays for the store to copy (remove_snapshot_leftovers after).
std::variant<snapshot_content, snapshot_error> collect_snapshot(
    const std::filesystem::path& workdir, const snapshot_limits& limits);

// Reads and removes the report a load left; nullopt when there is none or it is not one.
std::optional<snapshot_report> take_report(const std::filesystem::path& workdir);
// Removes what a save or load may have left (after a failure).
void remove_snapshot_leftovers(const std::filesystem::path& workdir);

// Copies the snapshot's files and its blob into a (new) context's workdir, each through the
// store's buffer and checked against its SHA-256 again; all or (nearly) nothing.
std::optional<snapshot_error> place_snapshot(const std::filesystem::path& workdir,
                                             const stored_snapshot& snapshot);

}  // namespace callisto::gateway::interpreter
