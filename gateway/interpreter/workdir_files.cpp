#include "gateway/interpreter/workdir_files.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <vector>

#include "common/byte_size.hpp"
#include "common/directory_stream.hpp"
#include "common/unique_fd.hpp"
#include "kernelproto/ids.hpp"

namespace callisto::gateway::interpreter {

namespace {

std::vector<std::string> components(std::string_view path) {
    std::vector<std::string> out;
    std::size_t pos = 0;
    while (pos <= path.size()) {
        std::size_t slash = path.find('/', pos);
        if (slash == std::string_view::npos) slash = path.size();
        out.emplace_back(path.substr(pos, slash - pos));
        pos = slash + 1;
    }
    return out;
}

}  // namespace

file_error file_error_from_errno(int err, std::string_view path, std::string_view what) {
    const std::string p(path);
    switch (err) {
        case ENOENT: return {404, "no such file: " + p};
        case ELOOP:
            return {400, "'" + p + "' goes through a symbolic link; links are not followed"};
        case ENOTDIR: return {409, "a part of '" + p + "' is not a directory"};
        case EISDIR: return {409, "'" + p + "' is a directory"};
        case ENOTEMPTY:
        case EEXIST: return {409, "'" + p + "' is a directory that is not empty"};
        case ENOSPC:
        case EDQUOT: return {507, "the context's workdir is full"};
        case EFBIG: return {413, "the file is larger than the workdir allows"};
        case ENAMETOOLONG: return {400, "the path is too long"};
        default: return {500, std::string(what) + " '" + p + "': " + std::strerror(err)};
    }
}

namespace {

file_error from_errno(int err, std::string_view path, std::string_view what) {
    return file_error_from_errno(err, path, what);
}

}  // namespace

std::optional<std::string> check_relative_path(std::string_view path) {
    if (path.empty()) return "the path is empty";
    if (path.size() > 1024) return "the path is longer than 1024 bytes";
    if (path.front() == '/') return "the path must be relative to the workdir";
    for (unsigned char c : path) {
        if (c == 0) return "the path contains a NUL byte";
        if (c < 0x20 || c == 0x7f) return "the path contains a control character";
        if (c == '\\') return "the path contains a backslash";
    }
    for (const auto& part : components(path)) {
        if (part.empty()) return "the path has an empty component";
        if (part == "." || part == "..") return "the path may not contain '.' or '..'";
        if (part.size() > 255) return "a path component is longer than 255 bytes";
    }
    return std::nullopt;
}

workdir_files::workdir_files(std::filesystem::path root) : root_(std::move(root)) {}

namespace {

using opened_parent = workdir_files::parent_dir;

// Opens the directory holding `path`'s last component, never following a link, optionally
// creating missing directories (owned like the workdir).
std::optional<file_error> open_parent_of(const std::filesystem::path& root, std::string_view path,
                                         bool create, opened_parent& out) {
    if (auto bad = check_relative_path(path)) return file_error{400, *bad};
    unique_fd dir(::open(root.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
    if (dir.get() < 0) return file_error{503, "the context's workdir is not available"};
    if (::fstat(dir.get(), &out.root_stat) != 0) return file_error{500, "cannot stat the workdir"};
    auto parts = components(path);
    for (std::size_t i = 0; i + 1 < parts.size(); ++i) {
        int next =
            ::openat(dir.get(), parts[i].c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (next < 0 && errno == ENOENT && create) {
            if (::mkdirat(dir.get(), parts[i].c_str(), 0755) != 0 && errno != EEXIST)
                return from_errno(errno, path, "mkdir");
            next = ::openat(dir.get(), parts[i].c_str(),
                            O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
            if (next >= 0 && ::fchown(next, out.root_stat.st_uid, out.root_stat.st_gid) != 0) {
                // Not fatal: the gateway may not run as root (no sandbox).
            }
        }
        if (next < 0) {
            const int err = errno;
            struct stat st {};
            // O_DIRECTORY|O_NOFOLLOW on a link says ENOTDIR; say what it really is.
            if (::fstatat(dir.get(), parts[i].c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0 &&
                S_ISLNK(st.st_mode))
                return from_errno(ELOOP, path, "open");
            return from_errno(err, path, "open");
        }
        dir = unique_fd(next);
    }
    out.dir = std::move(dir);
    out.name = parts.back();
    return std::nullopt;
}

}  // namespace

std::optional<file_error> workdir_files::open_parent(std::string_view path, bool create,
                                                     parent_dir& out) const {
    return open_parent_of(root_, path, create, out);
}

std::optional<file_error> workdir_files::open_root(unique_fd& out, struct stat& st) const {
    unique_fd dir(::open(root_.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
    if (dir.get() < 0) return file_error{503, "the context's workdir is not available"};
    if (::fstat(dir.get(), &st) != 0) return file_error{500, "cannot stat the workdir"};
    out = std::move(dir);
    return std::nullopt;
}

std::optional<file_error> workdir_files::write(std::string_view path,
                                               std::string_view bytes) const {
    return write_all({{path, bytes}});
}

namespace {

// A file written under a temporary name next to where it goes.
struct staged_file {
    opened_parent parent;
    std::string temp;
    std::string_view path;
};

void discard(std::vector<staged_file>& staged) {
    for (auto& s : staged) ::unlinkat(s.parent.dir.get(), s.temp.c_str(), 0);
    staged.clear();
}

std::optional<file_error> stage(const std::filesystem::path& root, std::string_view path,
                                const workdir_files::fill_fn& fill, staged_file& out) {
    if (auto e = open_parent_of(root, path, true, out.parent)) return e;
    out.path = path;
    // A reader never sees half a file, and an existing symlink at the name is replaced by the
    // rename, never followed.
    out.temp = ".callisto-upload-" + kernelproto::random_hex(8);
    unique_fd fd(::openat(out.parent.dir.get(), out.temp.c_str(),
                          O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644));
    if (fd.get() < 0) return from_errno(errno, path, "create");
    auto fail = [&](int err) {
        ::unlinkat(out.parent.dir.get(), out.temp.c_str(), 0);
        return from_errno(err, path, "write");
    };
    if (auto e = fill(fd.get())) {
        ::unlinkat(out.parent.dir.get(), out.temp.c_str(), 0);
        return e;
    }
    if (::fchown(fd.get(), out.parent.root_stat.st_uid, out.parent.root_stat.st_gid) != 0) {
        // Not fatal: the gateway may not run as root (no sandbox).
    }
    if (::close(fd.release()) != 0) return fail(errno);
    return std::nullopt;
}

}  // namespace

std::optional<file_error> workdir_files::write_all(const std::vector<file_to_write>& files) const {
    std::vector<file_to_fill> fills;
    fills.reserve(files.size());
    for (const auto& f : files)
        fills.push_back({f.path, [&f](int fd) -> std::optional<file_error> {
                             std::size_t done = 0;
                             while (done < f.bytes.size()) {
                                 ssize_t n =
                                     ::write(fd, f.bytes.data() + done, f.bytes.size() - done);
                                 if (n < 0 && errno == EINTR) continue;
                                 if (n <= 0)
                                     return from_errno(n < 0 ? errno : ENOSPC, f.path, "write");
                                 done += static_cast<std::size_t>(n);
                             }
                             return std::nullopt;
                         }});
    return fill_all(fills);
}

std::optional<file_error> workdir_files::fill_all(const std::vector<file_to_fill>& files) const {
    std::vector<staged_file> staged;
    staged.reserve(files.size());
    for (const auto& f : files) {
        staged.emplace_back();
        if (auto e = stage(root_, f.path, f.fill, staged.back())) {
            staged.pop_back();  // its temporary file is gone already
            discard(staged);
            return e;
        }
    }
    for (const auto& s : staged) {
        struct stat existing {};
        if (::fstatat(s.parent.dir.get(), s.parent.name.c_str(), &existing, AT_SYMLINK_NOFOLLOW) ==
                0 &&
            S_ISDIR(existing.st_mode)) {
            const std::string p(s.path);
            discard(staged);
            return file_error{409, "'" + p + "' is a directory"};
        }
    }
    for (std::size_t i = 0; i < staged.size(); ++i) {
        auto& s = staged[i];
        if (::renameat(s.parent.dir.get(), s.temp.c_str(), s.parent.dir.get(),
                       s.parent.name.c_str()) != 0) {
            auto e = from_errno(errno, s.path, "rename");
            std::vector<staged_file> rest(
                std::make_move_iterator(staged.begin() + static_cast<std::ptrdiff_t>(i)),
                std::make_move_iterator(staged.end()));
            discard(rest);
            if (i > 0)
                e.message +=
                    " (" + std::to_string(i) + " earlier files of the request were written)";
            return e;
        }
    }
    return std::nullopt;
}

std::optional<file_error> workdir_files::open_for_read(std::string_view path, unique_fd& out,
                                                       std::uint64_t& size,
                                                       std::size_t max_bytes) const {
    opened_parent parent;
    if (auto e = open_parent_of(root_, path, false, parent)) return e;
    // O_NONBLOCK: a FIFO the kernel left at the name must not block the open.
    unique_fd fd(::openat(parent.dir.get(), parent.name.c_str(),
                          O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK));
    if (fd.get() < 0) return from_errno(errno, path, "open");
    struct stat st {};
    if (::fstat(fd.get(), &st) != 0) return from_errno(errno, path, "stat");
    if (S_ISDIR(st.st_mode)) return file_error{409, "'" + std::string(path) + "' is a directory"};
    if (!S_ISREG(st.st_mode))
        return file_error{409, "'" + std::string(path) + "' is not a regular file"};
    if (static_cast<std::size_t>(st.st_size) > max_bytes)
        return file_error{413, "the file is " + std::to_string(st.st_size) +
                                   " bytes, larger than the " + describe_bytes(max_bytes) +
                                   " that can be read here"};
    size = static_cast<std::uint64_t>(st.st_size);
    out = std::move(fd);
    return std::nullopt;
}

std::optional<file_error> workdir_files::read(std::string_view path, std::string& out,
                                              std::size_t max_bytes) const {
    unique_fd fd;
    std::uint64_t size = 0;
    if (auto e = open_for_read(path, fd, size, max_bytes)) return e;
    out.clear();
    out.resize(static_cast<std::size_t>(size));
    std::size_t done = 0;
    while (done < out.size()) {
        ssize_t n = ::read(fd.get(), out.data() + done, out.size() - done);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) return from_errno(errno, path, "read");
        if (n == 0) break;  // shrank meanwhile
        done += static_cast<std::size_t>(n);
    }
    out.resize(done);
    return std::nullopt;
}

std::optional<file_error> workdir_files::remove(std::string_view path) const {
    opened_parent parent;
    if (auto e = open_parent_of(root_, path, false, parent)) return e;
    if (::unlinkat(parent.dir.get(), parent.name.c_str(), 0) == 0) return std::nullopt;
    if (errno == EISDIR && ::unlinkat(parent.dir.get(), parent.name.c_str(), AT_REMOVEDIR) == 0)
        return std::nullopt;
    return from_errno(errno, path, "remove");
}

namespace {

// Depth first, in name order; `visit` sees each entry (its path relative to the workdir) and
// says whether to go into it when it is a directory. At most max_entries visits.
void walk_dir(int dir_fd, const std::string& prefix, int depth, std::size_t& visited,
              std::size_t max_entries, bool include_hidden, bool& truncated,
              const workdir_files::visitor& visit) {
    std::vector<std::string> names;
    {
        auto listing = directory_stream::of_copy(dir_fd);
        while (const dirent* e = listing.next()) {
            std::string name = e->d_name;
            // Dot entries are the kernel's own (.cache, .ipython, .config, .local): shown on
            // request.
            if (name != "." && name != ".." && (include_hidden || name.front() != '.'))
                names.push_back(std::move(name));
        }
    }  // closed before the walk goes deeper, which opens descriptors of its own
    std::sort(names.begin(), names.end());
    for (const auto& name : names) {
        if (visited >= max_entries) {
            truncated = true;
            return;
        }
        struct stat st {};
        if (::fstatat(dir_fd, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) continue;
        const std::string rel = prefix.empty() ? name : prefix + "/" + name;
        ++visited;
        if (visit(rel, st) && S_ISDIR(st.st_mode) && depth < 16) {
            unique_fd sub(
                ::openat(dir_fd, name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
            if (sub.get() >= 0)
                walk_dir(sub.get(), rel, depth + 1, visited, max_entries, include_hidden, truncated,
                         visit);
        }
    }
}

}  // namespace

std::optional<file_error> workdir_files::walk(std::size_t max_entries, bool include_hidden,
                                              bool& truncated, const visitor& visit) const {
    unique_fd dir(::open(root_.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
    if (dir.get() < 0) return file_error{503, "the context's workdir is not available"};
    truncated = false;
    std::size_t visited = 0;
    walk_dir(dir.get(), "", 0, visited, max_entries, include_hidden, truncated, visit);
    return std::nullopt;
}

std::optional<file_error> workdir_files::list(nlohmann::json& out, std::size_t max_entries,
                                              bool include_hidden, bool& truncated) const {
    out = nlohmann::json::array();
    return walk(max_entries, include_hidden, truncated,
                [&out](const std::string& path, const struct stat& st) {
                    const char* type = S_ISREG(st.st_mode)   ? "file"
                                       : S_ISDIR(st.st_mode) ? "directory"
                                       : S_ISLNK(st.st_mode) ? "symlink"
                                                             : "other";
                    nlohmann::json entry = {{"path", path}, {"type", type}};
                    if (S_ISREG(st.st_mode)) entry["size"] = static_cast<std::uint64_t>(st.st_size);
                    out.push_back(std::move(entry));
                    return true;
                });
}

}  // namespace callisto::gateway::interpreter
