#include "launcher/process/instance_lock.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cerrno>
#include <cstring>
#include <stdexcept>

#include "kernelproto/ids.hpp"

namespace callisto::launcher {

namespace {

constexpr const char* lock_file = ".callisto.lock";
constexpr const char* tag_file = ".callisto-instance";  // in the workdir root and the runtime root
constexpr const char* runtime_note = ".callisto-runtime";
constexpr const char* state_dir_name = ".callisto-state";  // the default --state-dir

[[noreturn]] void fail(const std::string& what, int err) {
    throw std::runtime_error("workdir root lock: " + what + ": " + std::strerror(err));
}

// Small root-written files; O_NOFOLLOW so nothing planted redirects them.
std::string read_note(const std::filesystem::path& file) {
    unique_fd fd(::open(file.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC));
    if (!fd) return {};
    char buf[4096];
    const auto n = ::read(fd.get(), buf, sizeof buf);
    if (n <= 0) return {};
    std::string s(buf, static_cast<std::size_t>(n));
    while (!s.empty() && (s.back() == '\n' || s.back() == '\0')) s.pop_back();
    return s;
}

void write_note(const std::filesystem::path& file, const std::string& content) {
    unique_fd fd(::open(file.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600));
    const std::string line = content + "\n";
    if (!fd || ::write(fd.get(), line.data(), line.size()) != static_cast<ssize_t>(line.size()))
        fail("write " + file.string(), errno);
}

bool is_tag(const std::string& s) {
    return s.size() == 8 && s.find_first_not_of("0123456789abcdef") == std::string::npos;
}

}  // namespace

instance_lock::instance_lock(std::filesystem::path workdir_root) {
    std::error_code ec;
    root_ = std::filesystem::absolute(workdir_root, ec).lexically_normal();
    if (ec)
        throw std::runtime_error("workdir root lock: " + workdir_root.string() + ": " +
                                 ec.message());
    if (!root_.has_filename() && root_ != root_.root_path()) root_ = root_.parent_path();  // "dir/"
    std::filesystem::create_directories(root_, ec);
    if (ec)
        throw std::runtime_error("workdir root lock: create " + root_.string() + ": " +
                                 ec.message());
    // As session_workdir leaves it: traversable, not listable, by the kernels' uids.
    if (::chmod(root_.c_str(), 0711) != 0) fail("chmod " + root_.string(), errno);

    const auto file = root_ / lock_file;
    fd_.reset(::open(file.c_str(), O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600));
    if (!fd_) fail("open " + file.string(), errno);
    if (::flock(fd_.get(), LOCK_EX | LOCK_NB) != 0) {
        if (errno != EWOULDBLOCK) fail("flock " + file.string(), errno);
        const auto holder = read_note(file);
        throw std::runtime_error(
            "another callisto instance is running with --workdir-root=" + root_.string() +
            (holder.empty() ? "" : " (pid " + holder + ")") + "; it holds " + file.string() +
            ". Give each instance its own --workdir-root (and --sandbox-uids range)");
    }
    // The holder's pid, for the message above; the lock itself is the flock.
    const std::string pid = std::to_string(::getpid()) + "\n";
    if (::ftruncate(fd_.get(), 0) != 0 || ::pwrite(fd_.get(), pid.data(), pid.size(), 0) < 0)
        fail("write " + file.string(), errno);

    tag_ = read_note(root_ / tag_file);
    if (!is_tag(tag_)) {
        tag_ = kernelproto::random_hex(4);
        write_note(root_ / tag_file, tag_);
    }
    if (auto previous = read_note(root_ / runtime_note);
        !previous.empty() && previous.front() == '/')
        previous_runtime_ = std::filesystem::path(previous);
}

void instance_lock::claim_runtime_root(const std::filesystem::path& runtime_root) const {
    std::error_code ec;
    const auto abs = std::filesystem::absolute(runtime_root, ec).lexically_normal();
    if (ec)
        throw std::runtime_error("workdir root lock: " + runtime_root.string() + ": " +
                                 ec.message());
    write_note(abs / tag_file, tag_);
    write_note(root_ / runtime_note, abs.string());
}

bool instance_lock::is_own_file(const std::string& name) {
    return name == lock_file || name == tag_file || name == runtime_note || name == state_dir_name;
}

bool instance_lock::runtime_root_marked(const std::filesystem::path& runtime_root,
                                        const std::string& tag) {
    return is_tag(tag) && read_note(runtime_root / tag_file) == tag;
}

}  // namespace callisto::launcher
