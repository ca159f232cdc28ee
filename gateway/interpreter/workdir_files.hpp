#pragma once
// Files in a context's workdir, reached only through descriptors opened one component at a
// time with O_NOFOLLOW below the workdir, so neither ".." nor a symlink the kernel planted
// leads outside it (a lexical check alone loses that race). Files the gateway creates get the
// workdir's owner, so the sandboxed kernel can change them like its own.
//
// Blocking file I/O: callers keep the sizes bounded.

#include <sys/stat.h>

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/unique_fd.hpp"

namespace callisto::gateway::interpreter {

struct file_error {
    int http_status;  // 400, 404, 409, 413, 500, 507
    std::string message;
};

// A path relative to the workdir as clients send it ("data/in.csv"): 1-1024 bytes, components
// of 1-255 bytes, none "", "." or "..", no leading '/', no NUL or control characters, no
// backslash. Returns the reason when it is refused.
[[nodiscard]] std::optional<std::string> check_relative_path(std::string_view path);

// What an errno from a file operation on `path` means to a client.
file_error file_error_from_errno(int err, std::string_view path, std::string_view what);

class workdir_files {
public:
    explicit workdir_files(std::filesystem::path root);

    // Creates missing parent directories; replaces an existing regular file.
    std::optional<file_error> write(std::string_view path, std::string_view bytes) const;
    // Several files, as nearly all-or-nothing as a file system allows: each is written to a
    // temporary name first, and only when all are written (and none would replace a
    // directory) are they renamed into place. A failure before the renames leaves no file
    // changed (missing parent directories may have been created).
    struct file_to_write {
        std::string_view path;
        std::string_view bytes;
    };
    std::optional<file_error> write_all(const std::vector<file_to_write>& files) const;
    // The same, each file's bytes written by its `fill` into the temporary file's descriptor
    // (a copy from elsewhere through a buffer, never whole in memory); an error it returns
    // stops all, as a failed write does.
    using fill_fn = std::function<std::optional<file_error>(int fd)>;
    struct file_to_fill {
        std::string_view path;
        fill_fn fill;
    };
    std::optional<file_error> fill_all(const std::vector<file_to_fill>& files) const;
    std::optional<file_error> read(std::string_view path, std::string& out,
                                   std::size_t max_bytes) const;
    // A regular file of at most max_bytes, opened for reading (a download reads it as it is
    // sent); `size` is its size when opened.
    std::optional<file_error> open_for_read(std::string_view path, unique_fd& out,
                                            std::uint64_t& size, std::size_t max_bytes) const;
    // A file, or an empty directory.
    std::optional<file_error> remove(std::string_view path) const;
    // [{path, type: file|directory|symlink|other, size}], depth first, at most max_entries
    // (then "truncated": true in the wrapper the caller builds). Names starting with '.' (and
    // what is under them) only with include_hidden.
    std::optional<file_error> list(nlohmann::json& out, std::size_t max_entries,
                                   bool include_hidden, bool& truncated) const;
    // The same walk for other uses: `visit` gets each entry's path and lstat, and returns
    // whether to go into it (a directory).
    using visitor = std::function<bool(const std::string& path, const struct stat& st)>;
    std::optional<file_error> walk(std::size_t max_entries, bool include_hidden, bool& truncated,
                                   const visitor& visit) const;

    // The pieces the calls above are made of, for callers that act on an entry itself (E2B's
    // envd: stat, mkdir, rename): the directory holding `path`'s last component, opened one
    // component at a time without following links (missing ones created, owned like the
    // workdir, with `create`), that component's name, and the workdir's own stat.
    struct parent_dir {
        unique_fd dir;
        std::string name;
        struct stat root_stat {};
    };
    std::optional<file_error> open_parent(std::string_view path, bool create,
                                          parent_dir& out) const;
    // The workdir itself, opened without following a link.
    std::optional<file_error> open_root(unique_fd& out, struct stat& st) const;

private:
    const std::filesystem::path root_;
};

}  // namespace callisto::gateway::interpreter
