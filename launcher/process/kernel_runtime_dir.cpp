#include "launcher/process/kernel_runtime_dir.hpp"

#include <fcntl.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>
#include <array>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <memory>
#include <stdexcept>
#include <system_error>

#include <nlohmann/json.hpp>

#include "common/unique_fd.hpp"
#include "kernelproto/ids.hpp"

namespace callisto::launcher {

namespace {

// sizeof(sockaddr_un::sun_path) - 1: libzmq refuses longer ipc paths.
constexpr std::size_t max_ipc_path = 107;

[[noreturn]] void fail_errno(const std::string& what, int err) {
    throw std::runtime_error("kernel runtime dir: " + what + ": " + std::strerror(err));
}

// Five distinct ports the OS considers free right now. All five sockets stay bound until every
// port is known, so they differ; after closing them another process may still take one before
// the kernel binds it (the same race jupyter_client accepts). The ipc transport has no such race.
std::array<std::uint16_t, 5> pick_free_ports() {
    std::array<std::unique_ptr<unique_fd>, 5> sockets;
    std::array<std::uint16_t, 5> ports{};
    for (std::size_t i = 0; i < ports.size(); ++i) {
        sockets[i] = std::make_unique<unique_fd>(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
        if (sockets[i]->get() < 0) fail_errno("socket", errno);
        sockaddr_in addr{};
        addr.sin_family = AF_INET;
        addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        addr.sin_port = 0;
        if (::bind(sockets[i]->get(), reinterpret_cast<const sockaddr*>(&addr), sizeof addr) != 0)
            fail_errno("bind 127.0.0.1:0", errno);
        socklen_t len = sizeof addr;
        if (::getsockname(sockets[i]->get(), reinterpret_cast<sockaddr*>(&addr), &len) != 0)
            fail_errno("getsockname", errno);
        ports[i] = ntohs(addr.sin_port);
    }
    return ports;
}

void write_private_file(const std::filesystem::path& file, const std::string& content) {
    // O_EXCL and O_NOFOLLOW: never write the key through something planted in the directory.
    unique_fd fd(::open(file.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600));
    if (fd.get() < 0) fail_errno("create " + file.string(), errno);
    if (::fchmod(fd.get(), 0600) != 0) fail_errno("chmod " + file.string(), errno);
    std::size_t done = 0;
    while (done < content.size()) {
        auto n = ::write(fd.get(), content.data() + done, content.size() - done);
        if (n < 0) {
            if (errno == EINTR) continue;
            fail_errno("write " + file.string(), errno);
        }
        done += static_cast<std::size_t>(n);
    }
}

}  // namespace

kernel_runtime_dir::kernel_runtime_dir(adopt_existing_t, std::filesystem::path dir,
                                       kernelproto::connection_info info)
    : dir_(std::move(dir)), connection_file_(dir_ / "kernel.json"), info_(std::move(info)) {}

kernel_runtime_dir::kernel_runtime_dir(const std::filesystem::path& root,
                                       const std::string& short_name, transport_kind transport,
                                       const std::string& kernel_name) {
    if (short_name.empty() || short_name.find('/') != std::string::npos || short_name == "." ||
        short_name == "..")
        throw std::runtime_error("kernel runtime dir: invalid name \"" + short_name + "\"");

    // Absolute, because the kernel resolves ipc paths against its own working directory.
    std::error_code ec;
    auto abs_root = std::filesystem::absolute(root, ec);
    if (ec) throw std::runtime_error("kernel runtime dir: " + root.string() + ": " + ec.message());
    auto dir = abs_root.lexically_normal() / short_name;

    if (transport == transport_kind::ipc) {
        const auto longest = (dir / "k").string() + "-5";
        if (longest.size() > max_ipc_path)
            throw std::runtime_error("kernel runtime dir: ipc socket path " + longest + " is " +
                                     std::to_string(longest.size()) +
                                     " characters, libzmq allows " + std::to_string(max_ipc_path) +
                                     "; use a shorter root");
    }

    std::filesystem::create_directories(abs_root, ec);
    if (ec)
        throw std::runtime_error("kernel runtime dir: create " + abs_root.string() + ": " +
                                 ec.message());
    // mkdir (not create_directories) so an existing directory, possibly someone else's, is an
    // error.
    if (::mkdir(dir.c_str(), 0700) != 0) fail_errno("create " + dir.string(), errno);
    dir_ = dir;  // from here on the destructor's cleanup is ours to do on failure too
    try {
        if (::chmod(dir_.c_str(), 0700) != 0) fail_errno("chmod " + dir_.string(), errno);  // umask

        info_.kernel_name = kernel_name;
        info_.key = kernelproto::random_hex(32);
        info_.signature_scheme = "hmac-sha256";
        if (transport == transport_kind::ipc) {
            info_.transport = "ipc";
            info_.ip = (dir_ / "k").string();
            info_.shell_port = 1;
            info_.iopub_port = 2;
            info_.stdin_port = 3;
            info_.control_port = 4;
            info_.hb_port = 5;
        } else {
            info_.transport = "tcp";
            info_.ip = "127.0.0.1";
            const auto ports = pick_free_ports();
            info_.shell_port = ports[0];
            info_.iopub_port = ports[1];
            info_.stdin_port = ports[2];
            info_.control_port = ports[3];
            info_.hb_port = ports[4];
        }

        connection_file_ = dir_ / "kernel.json";
        write_private_file(connection_file_, info_.to_json().dump(1) + "\n");
        // Stamped with mtime 0 so a rewrite is recognisable (a recreated file may well get
        // the same inode number back).
        const struct timespec epoch[2] = {{0, 0}, {0, 0}};
        if (::utimensat(AT_FDCWD, connection_file_.c_str(), epoch, AT_SYMLINK_NOFOLLOW) != 0)
            fail_errno("utimensat " + connection_file_.string(), errno);
    } catch (...) {
        std::filesystem::remove_all(dir_, ec);
        throw;
    }
}

bool kernel_runtime_dir::ipc_sockets_present() const {
    if (info_.transport != "ipc") return true;
    for (int port = 1; port <= 5; ++port) {
        struct stat st {};
        if (::lstat((info_.ip + "-" + std::to_string(port)).c_str(), &st) != 0) return false;
    }
    return true;
}

bool kernel_runtime_dir::connection_file_rewritten() const {
    struct stat st {};
    if (::lstat(connection_file_.c_str(), &st) != 0 || !S_ISREG(st.st_mode) ||
        (st.st_mtim.tv_sec == 0 && st.st_mtim.tv_nsec == 0))
        return false;
    // A new mtime only says the rewrite began: jupyter_client creates the file, stats it, then
    // writes it. Sealing in between made the kernel's stat fail (EACCES) and the kernel exit,
    // so the rewrite counts as done once the file holds the whole JSON again.
    std::ifstream in(connection_file_);
    auto doc = nlohmann::json::parse(in, nullptr, /*allow_exceptions=*/false);
    return doc.is_object() && doc.contains("key") && doc.contains("shell_port");
}

std::string kernel_runtime_dir::seal(uid_t owner) const {
    // Lock first, check second: checked entries cannot be swapped after the check.
    if (::chown(dir_.c_str(), 0, 0) != 0)
        return "chown " + dir_.string() + ": " + std::strerror(errno);
    if (::chmod(dir_.c_str(), 0550) != 0)
        return "chmod " + dir_.string() + ": " + std::strerror(errno);
    if (info_.transport != "ipc") return {};
    for (int port = 1; port <= 5; ++port) {
        const auto socket = info_.ip + "-" + std::to_string(port);
        struct stat st {};
        if (::lstat(socket.c_str(), &st) != 0) return socket + ": " + std::strerror(errno);
        if (!S_ISSOCK(st.st_mode)) return socket + " is not a socket";
        if (st.st_uid != owner)
            return socket + " is owned by uid " + std::to_string(st.st_uid) +
                   ", not the kernel's " + std::to_string(owner);
    }
    return {};
}

kernel_runtime_dir::~kernel_runtime_dir() {
    std::error_code ec;  // a destructor must not throw; a leftover dir is only litter
    std::filesystem::remove_all(dir_, ec);
}

}  // namespace callisto::launcher
