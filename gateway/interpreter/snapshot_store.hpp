#pragma once
// Snapshots of contexts (issue 37), on disk under --snapshot-dir: one directory per snapshot,
// <dir>/<id>/, holding manifest.json and the snapshot's pieces as files named 0, 1, 2 ...
// (piece 0 is the kernel's serialized namespace, the others the workdir's files). Names on
// disk are never a client's or a kernel's path: the manifest maps each piece to its workdir
// path, which is checked again when it is written back. The manifest records each piece's
// size and SHA-256, and its own checksum; a snapshot is read back only when all of them
// match, with no piece missing and none extra, so a corrupt or truncated snapshot is refused
// with the reason and nothing is restored from it.
//
// Pieces are never held in memory whole: each is copied between the workdir and the store
// through one buffer of copy_buffer_bytes, hashed as it passes, so the gateway's memory for
// a snapshot, of any size, is that buffer and the manifest.
//
// The store only moves bytes: the namespace is unpickled inside the sandboxed kernel alone.
// Snapshots belong to their owner (others get "not found"; an admin sees all) and count
// against a per-user quota of their number and bytes. Blocking file I/O: call it from the
// interpreter's file pool.

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include <nlohmann/json.hpp>

#include "gateway/user.hpp"

namespace callisto::gateway::interpreter {

struct snapshot_quota {
    std::size_t max_count = 20;            // snapshots per user
    std::uint64_t max_bytes = 4ull << 30;  // their bytes together, per user
};

struct snapshot_error {
    int http_status;  // 400, 404, 422 (damaged), 500, 507 (quota)
    std::string message;
};

// What is said of a snapshot besides its bytes.
struct snapshot_meta {
    std::string language;                                  // the kernel's dialect ("python")
    nlohmann::json carried = nlohmann::json::array();      // names
    nlohmann::json not_carried = nlohmann::json::array();  // [{name, type, reason}]
    std::string source_context;                            // the context it was taken of
    std::int64_t duration_ms = 0;                          // taking it, kernel's part included
};

// A snapshot on its way into the store: its pieces named by their paths in the workdir they
// are copied from (read through workdir_files, so no link leads outside it).
struct snapshot_content : snapshot_meta {
    std::string namespace_path;      // the kernel's serialized namespace
    std::vector<std::string> files;  // kept under the same paths
};

// A stored piece, as its checked manifest describes it.
struct stored_piece {
    bool is_namespace = false;
    std::string path;            // in the workdir ("" for the namespace)
    std::filesystem::path file;  // its bytes, in the store
    std::uint64_t size = 0;
    std::string sha256;  // hex
};

// A snapshot read back: every piece present, of its size and SHA-256 when load_for looked.
struct stored_snapshot : snapshot_meta {
    std::vector<stored_piece> pieces;  // the namespace first
};

// The one buffer a piece passes through (the bound on the gateway's memory per snapshot).
inline constexpr std::size_t copy_buffer_bytes = 1 << 20;

struct copy_result {
    int error = 0;  // an errno; EFBIG past `max`
    std::uint64_t bytes = 0;
    std::string sha256;  // hex, of the bytes copied
};
// Reads `in` from where it is to its end through one buffer of copy_buffer_bytes, hashing,
// and writes what it reads to `out` (out < 0: only hashes). Stops with EFBIG past `max`.
copy_result copy_hashing(int in, int out, std::uint64_t max);

class snapshot_store {
public:
    // Creates the directory (0700); throws std::runtime_error when it cannot. Leftovers of
    // saves a crash interrupted (.tmp-*) are removed once untouched for leftover_age: the
    // directory may be shared by replicas, and a .tmp- another one is writing is not a
    // leftover.
    snapshot_store(std::filesystem::path dir, snapshot_quota quota);
    static constexpr std::chrono::hours leftover_age{1};

    const std::filesystem::path& dir() const { return dir_; }
    const snapshot_quota& quota() const { return quota_; }

    // Ids are what the gateway makes (UUIDs): hex digits and dashes, 36 characters.
    static bool valid_id(std::string_view id);

    // Stores it under `id` for `owner`, each piece copied from `workdir`: written whole in a
    // temporary directory, then renamed into place, so a failure (a full disk, the quota
    // passed halfway) leaves no partial snapshot and the others as they were. The model (as
    // get answers it), or why not: past the quota (507), a piece missing from the workdir.
    std::variant<nlohmann::json, snapshot_error> save(const std::string& id,
                                                      const std::string& owner,
                                                      const snapshot_content& content,
                                                      const std::filesystem::path& workdir);
    // The models of the snapshots `who` may see, oldest first.
    std::vector<nlohmann::json> list_for(const user& who) const;
    // Its model: 404 for an unknown id, one `who` may not see, or a manifest that is not one.
    std::variant<nlohmann::json, snapshot_error> get_for(const std::string& id,
                                                         const user& who) const;
    // Every piece read (through the buffer) and checked against the manifest: 404 as
    // get_for, 422 with the reason for a damaged snapshot.
    std::variant<stored_snapshot, snapshot_error> load_for(const std::string& id,
                                                           const user& who) const;
    std::optional<snapshot_error> remove_for(const std::string& id, const user& who);

    // The manifest's own checksum: SHA-256 of its JSON without the "checksum" member.
    static std::string manifest_checksum(nlohmann::json manifest);

private:
    struct usage {
        std::size_t count = 0;
        std::uint64_t bytes = 0;
    };
    // The manifest of a snapshot `who` may see, its checksum verified; 404 or 422.
    std::variant<nlohmann::json, snapshot_error> manifest_for(const std::string& id,
                                                              const user& who) const;
    usage usage_of(const std::string& owner) const;

    const std::filesystem::path dir_;
    const snapshot_quota quota_;
    std::mutex save_mutex_;  // a quota is checked and used by one save at a time
};

// What a client sees of a manifest: without the pieces' names on disk and the checksum.
nlohmann::json snapshot_model(const nlohmann::json& manifest);

}  // namespace callisto::gateway::interpreter
