#include "gateway/e2b/envd_files.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstring>
#include <functional>

#include "common/directory_stream.hpp"

namespace callisto::gateway::e2b {

namespace {

using interpreter::file_error;

envd_error refused(connect_code code, std::string message) {
    const int status = code == connect_code::not_found           ? 404
                       : code == connect_code::permission_denied ? 403
                       : code == connect_code::already_exists    ? 409
                       : code == connect_code::internal          ? 500
                       : code == connect_code::unavailable       ? 503
                                                                 : 400;
    return {code, status, std::move(message)};
}

envd_error from_errno(int err, std::string_view path, std::string_view what) {
    return envd_error_of(interpreter::file_error_from_errno(err, path, what));
}

bool starts_with_dir(std::string_view path, std::string_view dir) {
    return path.substr(0, dir.size()) == dir &&
           (path.size() == dir.size() || path[dir.size()] == '/');
}

std::string name_of_owner(uid_t id, const struct stat& root) {
    // The sandbox's uid owns the workdir: it is E2B's "user" here.
    if (id == root.st_uid) return "user";
    if (id == 0) return "root";
    return std::to_string(id);
}

std::string name_of_group(gid_t id, const struct stat& root) {
    if (id == root.st_gid) return "user";
    if (id == 0) return "root";
    return std::to_string(id);
}

envd_file_type type_of(mode_t mode) {
    if (S_ISREG(mode)) return envd_file_type::file;
    if (S_ISDIR(mode)) return envd_file_type::directory;
    if (S_ISLNK(mode)) return envd_file_type::symlink;
    return envd_file_type::unspecified;
}

// A directory under the workdir ("" is the workdir), opened without following a link; a link
// or a file there is named as such.
std::optional<envd_error> open_dir(const interpreter::workdir_files& files, std::string_view path,
                                   unique_fd& out, struct stat& root) {
    if (path.empty()) {
        if (auto e = files.open_root(out, root)) return envd_error_of(*e);
        return std::nullopt;
    }
    interpreter::workdir_files::parent_dir parent;
    if (auto e = files.open_parent(path, false, parent)) return envd_error_of(*e);
    root = parent.root_stat;
    unique_fd dir(::openat(parent.dir.get(), parent.name.c_str(),
                           O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
    if (dir.get() >= 0) {
        out = std::move(dir);
        return std::nullopt;
    }
    const int err = errno;
    struct stat st {};
    if (::fstatat(parent.dir.get(), parent.name.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0) {
        if (S_ISLNK(st.st_mode)) return from_errno(ELOOP, path, "open");
        if (!S_ISDIR(st.st_mode))
            return refused(connect_code::invalid_argument,
                           "path is not a directory: " + envd_path_of(path));
    }
    return from_errno(err, path, "open");
}

std::vector<std::string> names_in(int dir_fd) {
    std::vector<std::string> names;
    auto listing = directory_stream::of_copy(dir_fd);
    while (const dirent* e = listing.next()) {
        std::string name = e->d_name;
        if (name != "." && name != "..") names.push_back(std::move(name));
    }
    std::sort(names.begin(), names.end());
    return names;
}

// Everything under dir_fd, never following a link; false when the tree is deeper than
// max_remove_depth or an entry would not go.
bool remove_contents(int dir_fd, int depth, int& err) {
    if (depth > envd_files::max_remove_depth) {
        err = ELOOP;
        return false;
    }
    for (const auto& name : names_in(dir_fd)) {
        if (::unlinkat(dir_fd, name.c_str(), 0) == 0 || errno == ENOENT) continue;
        if (errno != EISDIR) {
            err = errno;
            return false;
        }
        unique_fd sub(
            ::openat(dir_fd, name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
        if (sub.get() < 0) {
            err = errno;
            return false;
        }
        if (!remove_contents(sub.get(), depth + 1, err)) return false;
        if (::unlinkat(dir_fd, name.c_str(), AT_REMOVEDIR) != 0 && errno != ENOENT) {
            err = errno;
            return false;
        }
    }
    return true;
}

}  // namespace

envd_error envd_error_of(const file_error& e) {
    switch (e.http_status) {
        case 404: return {connect_code::not_found, 404, e.message};
        case 400:
            // A link on the way: the path leads where the files API does not go.
            if (e.message.find("symbolic link") != std::string::npos)
                return {connect_code::permission_denied, 403, e.message};
            return {connect_code::invalid_argument, 400, e.message};
        case 409: return {connect_code::invalid_argument, 400, e.message};
        case 413: return {connect_code::resource_exhausted, 413, e.message};
        case 507: return {connect_code::resource_exhausted, 507, e.message};
        case 503: return {connect_code::unavailable, 503, e.message};
        default: return {connect_code::internal, 500, e.message};
    }
}

std::optional<std::string> resolve_envd_path(std::string_view path, envd_error& error) {
    auto bad = [&](connect_code code, std::string why) {
        error = refused(code, std::move(why));
        return std::nullopt;
    };
    if (path.empty()) return bad(connect_code::invalid_argument, "the path is empty");
    if (path.size() > 4096) return bad(connect_code::invalid_argument, "the path is too long");
    for (unsigned char c : path) {
        if (c == 0) return bad(connect_code::invalid_argument, "the path contains a NUL byte");
        if (c < 0x20 || c == 0x7f)
            return bad(connect_code::invalid_argument, "the path contains a control character");
        if (c == '\\') return bad(connect_code::invalid_argument, "the path contains a backslash");
    }
    std::string_view rest = path;
    if (path.front() == '/') {
        if (starts_with_dir(path, envd_home))
            rest = path.substr(envd_home.size());
        else if (starts_with_dir(path, workdir_path))
            rest = path.substr(workdir_path.size());
        else
            return bad(connect_code::permission_denied,
                       "'" + std::string(path) + "' is outside the sandbox's home, " +
                           std::string(envd_home) + ": only its files can be reached");
    }
    std::vector<std::string_view> parts;
    while (!rest.empty()) {
        const auto slash = rest.find('/');
        const auto part = rest.substr(0, slash);
        rest = slash == std::string_view::npos ? std::string_view{} : rest.substr(slash + 1);
        if (part.empty() || part == ".") continue;
        if (part == "..") {
            if (parts.empty())
                return bad(connect_code::permission_denied,
                           "'" + std::string(path) + "' climbs out of the sandbox's home");
            parts.pop_back();
            continue;
        }
        if (part.size() > 255)
            return bad(connect_code::invalid_argument, "a path component is longer than 255 bytes");
        parts.push_back(part);
    }
    std::string out;
    for (auto part : parts) {
        if (!out.empty()) out += '/';
        out += part;
    }
    if (out.size() > 1024)
        return bad(connect_code::invalid_argument, "the path is longer than 1024 bytes");
    return out;
}

std::string envd_path_of(std::string_view relative) {
    std::string out(envd_home);
    if (!relative.empty()) {
        out += '/';
        out += relative;
    }
    return out;
}

std::string go_mode_string(mode_t mode) {
    // Go's letters, in its bit order: d a l T L D p S u g c t ?
    std::string out;
    if (S_ISDIR(mode)) out += 'd';
    if (S_ISLNK(mode)) out += 'L';
    if (S_ISBLK(mode) || S_ISCHR(mode)) out += 'D';
    if (S_ISFIFO(mode)) out += 'p';
    if (S_ISSOCK(mode)) out += 'S';
    if (mode & S_ISUID) out += 'u';
    if (mode & S_ISGID) out += 'g';
    if (S_ISCHR(mode)) out += 'c';
    if (mode & S_ISVTX) out += 't';
    if (out.empty()) out += '-';
    static constexpr char rwx[] = "rwxrwxrwx";
    for (int i = 0; i < 9; ++i) out += (mode & (1u << (8 - i))) ? rwx[i] : '-';
    return out;
}

envd_files::envd_files(std::filesystem::path workdir) : workdir_(workdir), files_(workdir) {}

envd_entry envd_files::entry_of(std::string_view path, std::string_view name, const struct stat& st,
                                const struct stat& root, int dir_fd) const {
    envd_entry e;
    e.name = std::string(name);
    e.path = envd_path_of(path);
    e.type = type_of(st.st_mode);
    e.size = static_cast<std::int64_t>(st.st_size);
    e.mode = static_cast<std::uint32_t>(st.st_mode & 0777);
    e.permissions = go_mode_string(st.st_mode);
    e.owner = name_of_owner(st.st_uid, root);
    e.group = name_of_group(st.st_gid, root);
    e.modified = st.st_mtim;
    if (S_ISLNK(st.st_mode) && dir_fd >= 0) {
        char target[PATH_MAX];
        const ssize_t n = ::readlinkat(dir_fd, e.name.c_str(), target, sizeof target);
        if (n >= 0) e.symlink_target = std::string(target, static_cast<std::size_t>(n));
    }
    return e;
}

std::optional<envd_error> envd_files::stat(std::string_view path, envd_entry& out) const {
    if (path.empty()) {
        unique_fd root_fd;
        struct stat root {};
        if (auto e = files_.open_root(root_fd, root)) return envd_error_of(*e);
        out = entry_of(path, "user", root, root, -1);
        return std::nullopt;
    }
    interpreter::workdir_files::parent_dir parent;
    if (auto e = files_.open_parent(path, false, parent)) return envd_error_of(*e);
    struct stat st {};
    if (::fstatat(parent.dir.get(), parent.name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0)
        return from_errno(errno, path, "stat");
    out = entry_of(path, parent.name, st, parent.root_stat, parent.dir.get());
    return std::nullopt;
}

std::optional<envd_error> envd_files::list(std::string_view path, std::uint32_t depth,
                                           std::size_t max_entries,
                                           std::vector<envd_entry>& out) const {
    out.clear();
    if (depth == 0) depth = 1;  // envd's default: the directory's own entries
    depth = std::min(depth, max_list_depth);
    unique_fd dir;
    struct stat root {};
    if (auto e = open_dir(files_, path, dir, root)) return e;
    std::optional<envd_error> failure;
    // Depth first: each directory's entries, each followed by what it holds.
    std::function<void(int, const std::string&, std::uint32_t)> walk =
        [&](int dir_fd, const std::string& prefix, std::uint32_t level) {
            for (const auto& name : names_in(dir_fd)) {
                if (failure) return;
                struct stat st {};
                if (::fstatat(dir_fd, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) continue;
                if (out.size() >= max_entries) {
                    failure = refused(connect_code::failed_precondition,
                                      "more than " + std::to_string(max_entries) +
                                          " entries under " + envd_path_of(path) +
                                          ": list a smaller depth or a deeper directory");
                    return;
                }
                const std::string rel = prefix.empty() ? name : prefix + "/" + name;
                out.push_back(entry_of(rel, name, st, root, dir_fd));
                if (S_ISDIR(st.st_mode) && level < depth) {
                    unique_fd sub(::openat(dir_fd, name.c_str(),
                                           O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
                    if (sub.get() >= 0) walk(sub.get(), rel, level + 1);
                }
            }
        };
    walk(dir.get(), std::string(path), 1);
    if (failure) {
        out.clear();
        return failure;
    }
    return std::nullopt;
}

std::optional<envd_error> envd_files::make_dir(std::string_view path) const {
    if (path.empty())
        return refused(connect_code::already_exists,
                       "directory already exists: " + envd_path_of(path));
    interpreter::workdir_files::parent_dir parent;
    if (auto e = files_.open_parent(path, true, parent)) return envd_error_of(*e);
    if (::mkdirat(parent.dir.get(), parent.name.c_str(), 0755) != 0) {
        const int err = errno;
        struct stat st {};
        if (err == EEXIST &&
            ::fstatat(parent.dir.get(), parent.name.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0) {
            if (S_ISDIR(st.st_mode))
                return refused(connect_code::already_exists,
                               "directory already exists: " + envd_path_of(path));
            return refused(connect_code::invalid_argument,
                           "path already exists but it is not a directory: " + envd_path_of(path));
        }
        return from_errno(err, path, "mkdir");
    }
    // Owned like the workdir, so the sandboxed kernel can change it like its own.
    if (::fchownat(parent.dir.get(), parent.name.c_str(), parent.root_stat.st_uid,
                   parent.root_stat.st_gid, AT_SYMLINK_NOFOLLOW) != 0) {
        // Not fatal: the gateway may not run as root (no sandbox).
    }
    return std::nullopt;
}

std::optional<envd_error> envd_files::move(std::string_view from, std::string_view to,
                                           envd_entry& out) const {
    if (from.empty() || to.empty())
        return refused(connect_code::permission_denied,
                       "the sandbox's home itself cannot be moved or replaced");
    interpreter::workdir_files::parent_dir source;
    if (auto e = files_.open_parent(from, false, source)) return envd_error_of(*e);
    struct stat st {};
    if (::fstatat(source.dir.get(), source.name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0)
        return from_errno(errno, from, "stat");
    interpreter::workdir_files::parent_dir destination;
    if (auto e = files_.open_parent(to, true, destination)) return envd_error_of(*e);
    if (::renameat(source.dir.get(), source.name.c_str(), destination.dir.get(),
                   destination.name.c_str()) != 0) {
        const int err = errno;
        if (err == EINVAL)
            return refused(connect_code::invalid_argument,
                           "cannot move " + envd_path_of(from) + " into itself");
        return from_errno(err, to, "rename");
    }
    return stat(to, out);
}

std::optional<envd_error> envd_files::remove(std::string_view path) const {
    if (path.empty())
        return refused(connect_code::permission_denied,
                       "the sandbox's home itself cannot be removed");
    interpreter::workdir_files::parent_dir parent;
    if (auto e = files_.open_parent(path, false, parent)) {
        if (e->http_status == 404) return std::nullopt;
        return envd_error_of(*e);
    }
    if (::unlinkat(parent.dir.get(), parent.name.c_str(), 0) == 0 || errno == ENOENT)
        return std::nullopt;
    if (errno != EISDIR) return from_errno(errno, path, "remove");
    unique_fd dir(::openat(parent.dir.get(), parent.name.c_str(),
                           O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
    if (dir.get() < 0) return from_errno(errno, path, "open");
    int err = 0;
    if (!remove_contents(dir.get(), 1, err)) {
        if (err == ELOOP)
            return refused(connect_code::failed_precondition,
                           envd_path_of(path) + " is more than " +
                               std::to_string(max_remove_depth) + " directories deep");
        return from_errno(err, path, "remove");
    }
    if (::unlinkat(parent.dir.get(), parent.name.c_str(), AT_REMOVEDIR) != 0 && errno != ENOENT)
        return from_errno(errno, path, "remove");
    return std::nullopt;
}

std::optional<envd_error> envd_files::write(std::string_view path, std::string_view bytes) const {
    if (path.empty())
        return refused(connect_code::invalid_argument,
                       "the sandbox's home is a directory: name a file in it");
    if (auto e = files_.write(path, bytes)) return envd_error_of(*e);
    return std::nullopt;
}

std::optional<envd_error> envd_files::open_for_read(std::string_view path, unique_fd& out,
                                                    std::uint64_t& size,
                                                    std::size_t max_bytes) const {
    if (path.empty())
        return refused(connect_code::invalid_argument,
                       "the sandbox's home is a directory: name a file in it");
    if (auto e = files_.open_for_read(path, out, size, max_bytes)) return envd_error_of(*e);
    return std::nullopt;
}

}  // namespace callisto::gateway::e2b
