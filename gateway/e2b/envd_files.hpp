#pragma once
// A sandbox's files as E2B's envd serves them (GET/POST /files, filesystem.Filesystem): E2B's
// paths, absolute under /home/user or relative to it, mapped onto the default context's
// workdir, the tree the sandbox's kernels have as their working directory (/work), so what
// the code writes is what the files API reads, and the reverse. Every operation goes through
// interpreter::workdir_files' descriptors, opened one component at a time without following a
// link: neither ".." nor a symlink the sandbox planted reaches outside the workdir.
//
// Blocking file I/O: callers run it off the I/O threads and keep sizes bounded.

#include <sys/stat.h>

#include <cstddef>
#include <cstdint>
#include <ctime>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/unique_fd.hpp"
#include "gateway/e2b/e2b_errors.hpp"
#include "gateway/interpreter/workdir_files.hpp"
#include "launcher/sandbox/sandbox_layout.hpp"

namespace callisto::gateway::e2b {

// The sandbox's home as E2B's SDKs name it, where the sandbox mounts its tree; /work, the
// name its code knows the same directory by, is taken too.
inline constexpr std::string_view envd_home = launcher::sandbox_home;
inline constexpr std::string_view workdir_path = launcher::sandbox_workdir;

struct envd_error {
    connect_code code;
    int http_status;  // what GET/POST /files answers
    std::string message;
};

// The workdir-relative path ("" for the home itself) an E2B path names: absolute under
// /home/user (or /work), or relative to it; "." and ".." resolved lexically, never above the
// home; repeated and trailing slashes dropped. nullopt and the refusal otherwise: a path
// elsewhere or climbing out is permission_denied, a malformed one (empty, NUL or control
// characters, a backslash, too long) invalid_argument.
std::optional<std::string> resolve_envd_path(std::string_view path, envd_error& error);
// The E2B path of a workdir-relative one.
std::string envd_path_of(std::string_view relative);

// envd's FileType (filesystem.proto).
enum class envd_file_type { unspecified = 0, file = 1, directory = 2, symlink = 3 };

// envd's EntryInfo, from an lstat (links are reported, not followed).
struct envd_entry {
    std::string name;
    std::string path;  // E2B's, absolute
    envd_file_type type = envd_file_type::unspecified;
    std::int64_t size = 0;
    std::uint32_t mode = 0;   // the permission bits
    std::string permissions;  // as Go's FileMode.String() spells them: "-rw-r--r--"
    std::string owner;
    std::string group;
    struct timespec modified {};
    std::optional<std::string> symlink_target;
};

// Go's FileMode.String() of an lstat's st_mode, which envd reports.
std::string go_mode_string(mode_t mode);

class envd_files {
public:
    explicit envd_files(std::filesystem::path workdir);

    // Paths here are workdir-relative, as resolve_envd_path gives them.
    std::optional<envd_error> stat(std::string_view path, envd_entry& out) const;
    // The entries under a directory, depth levels down (1: its own), depth first in name
    // order, hidden ones too (envd shows them); failed_precondition past max_entries.
    std::optional<envd_error> list(std::string_view path, std::uint32_t depth,
                                   std::size_t max_entries, std::vector<envd_entry>& out) const;
    // mkdir -p: already_exists for a directory there, invalid_argument for another entry.
    std::optional<envd_error> make_dir(std::string_view path) const;
    // Renames, creating the destination's missing parents; an existing file there is replaced.
    std::optional<envd_error> move(std::string_view from, std::string_view to,
                                   envd_entry& out) const;
    // The entry and, for a directory, all it holds; a missing path is no error (envd's
    // RemoveAll). The home itself is refused.
    std::optional<envd_error> remove(std::string_view path) const;
    // Creates missing parents; replaces a file (never follows a link at the name).
    std::optional<envd_error> write(std::string_view path, std::string_view bytes) const;
    std::optional<envd_error> open_for_read(std::string_view path, unique_fd& out,
                                            std::uint64_t& size, std::size_t max_bytes) const;

    // The deepest directory remove() goes into: a tree the sandbox made deeper is refused
    // rather than recursed without end.
    static constexpr int max_remove_depth = 256;
    // The deepest level list() goes to, whatever depth asks.
    static constexpr std::uint32_t max_list_depth = 64;

private:
    envd_entry entry_of(std::string_view path, std::string_view name, const struct stat& st,
                        const struct stat& root, int dir_fd) const;

    const std::filesystem::path workdir_;
    const interpreter::workdir_files files_;
};

// What a workdir_files refusal is to envd's clients.
envd_error envd_error_of(const interpreter::file_error& e);

}  // namespace callisto::gateway::e2b
