// A listener made inside another network namespace (the kernel's, for the egress proxy): a
// child process in a namespace of its own reaches it on its 127.0.0.1, the host's 127.0.0.1
// does not hold it. Root, as the gateway; loopback only.
#include "launcher/sandbox/netns_listener.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <net/if.h>
#include <netinet/in.h>
#include <poll.h>
#include <sched.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <doctest/doctest.h>

#include <cstring>
#include <ostream>  // doctest prints an error_code
#include <string>

#include "tests/support/forked_child.hpp"

using callisto::unique_fd;
using callisto::launcher::listen_in_namespace;
using callisto::test::forked_child;

namespace {

sockaddr_in loopback(std::uint16_t port) {
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(port);
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    return a;
}

std::uint16_t port_of(int fd) {
    sockaddr_in a{};
    socklen_t length = sizeof a;
    REQUIRE(::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &length) == 0);
    return ntohs(a.sin_port);
}

// In the child: `lo` up, as bwrap and the jail bring it up.
bool loopback_up() {
    unique_fd s(::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0));
    ifreq request{};
    std::strncpy(request.ifr_name, "lo", IFNAMSIZ - 1);
    if (::ioctl(s.get(), SIOCGIFFLAGS, &request) != 0) return false;
    request.ifr_flags = static_cast<short>(request.ifr_flags | IFF_UP);
    return ::ioctl(s.get(), SIOCSIFFLAGS, &request) == 0;
}

// The child: a namespace of its own, then says so, waits for a port and connects to it.
[[noreturn]] void child(int ready_fd, int port_fd) {
    if (::unshare(CLONE_NEWNET) != 0 || !loopback_up()) ::_exit(10);
    const char ready = 'r';
    if (::write(ready_fd, &ready, 1) != 1) ::_exit(11);
    std::uint16_t port = 0;
    if (::read(port_fd, &port, sizeof port) != sizeof port) ::_exit(12);
    unique_fd s(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
    const auto to = loopback(port);
    if (::connect(s.get(), reinterpret_cast<const sockaddr*>(&to), sizeof to) != 0) ::_exit(13);
    const std::string hello = "from the kernel's namespace";
    if (::write(s.get(), hello.data(), hello.size()) != static_cast<ssize_t>(hello.size()))
        ::_exit(14);
    ::_exit(0);
}

}  // namespace

TEST_CASE("listen_in_namespace makes a listener the namespace's processes reach on 127.0.0.1") {
    forked_child kernel(child);
    unique_fd ns(::open(("/proc/" + std::to_string(kernel.pid()) + "/ns/net").c_str(),
                        O_RDONLY | O_CLOEXEC));
    REQUIRE(ns);
    struct stat before {};
    REQUIRE(::stat("/proc/thread-self/ns/net", &before) == 0);
    auto made = listen_in_namespace(ns.get(), 0);
    REQUIRE(std::holds_alternative<unique_fd>(made));
    const auto listener = std::move(std::get<unique_fd>(made));
    const auto port = port_of(listener.get());

    // Not in this (the host's) namespace: the same port is free on the host's 127.0.0.1.
    unique_fd host_side(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
    const auto here = loopback(port);
    CHECK(::bind(host_side.get(), reinterpret_cast<const sockaddr*>(&here), sizeof here) == 0);
    // And this thread is still in the namespace it was in.
    struct stat after {};
    REQUIRE(::stat("/proc/thread-self/ns/net", &after) == 0);
    CHECK(after.st_ino == before.st_ino);

    kernel.send(&port, sizeof port);
    pollfd wait_for{listener.get(), POLLIN, 0};
    REQUIRE(::poll(&wait_for, 1, 20'000) == 1);  // a guard against a hang, not a timing check
    unique_fd connection(::accept4(listener.get(), nullptr, nullptr, SOCK_CLOEXEC));
    REQUIRE(connection);
    std::string got;
    char chunk[256];
    ssize_t n;
    while ((n = ::read(connection.get(), chunk, sizeof chunk)) > 0)
        got.append(chunk, static_cast<std::size_t>(n));
    CHECK(got == "from the kernel's namespace");
    CHECK(kernel.exit_code() == 0);
}

TEST_CASE(
    "listen_in_namespace takes the port again while an earlier listener's connections linger") {
    // A gateway restart: the earlier listener is gone, the connections it accepted and closed
    // first are in TIME_WAIT on the port; the next gateway listens there again.
    unique_fd ns(::open("/proc/self/ns/net", O_RDONLY | O_CLOEXEC));
    REQUIRE(ns);
    std::uint16_t port = 0;
    {
        auto made = listen_in_namespace(ns.get(), 0);
        REQUIRE(std::holds_alternative<unique_fd>(made));
        const auto listener = std::move(std::get<unique_fd>(made));
        port = port_of(listener.get());
        unique_fd client(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
        const auto to = loopback(port);
        REQUIRE(::connect(client.get(), reinterpret_cast<const sockaddr*>(&to), sizeof to) == 0);
        pollfd wait_for{listener.get(), POLLIN, 0};
        REQUIRE(::poll(&wait_for, 1, 20'000) == 1);  // a guard against a hang
        unique_fd accepted(::accept4(listener.get(), nullptr, nullptr, SOCK_CLOEXEC));
        REQUIRE(accepted);
        accepted.reset();  // the listener's side closes first, as the proxy does
        char byte;
        CHECK(::read(client.get(), &byte, 1) == 0);
    }  // the client closes, the listener too
    auto again = listen_in_namespace(ns.get(), port);
    if (auto* ec = std::get_if<std::error_code>(&again)) FAIL("listening again: " << ec->message());
}

TEST_CASE("listen_in_namespace refuses what is not a network namespace") {
    auto none = listen_in_namespace(-1, 0);
    REQUIRE(std::holds_alternative<std::error_code>(none));
    CHECK(std::get<std::error_code>(none) == std::errc::bad_file_descriptor);

    unique_fd not_a_namespace(::open("/dev/null", O_RDONLY | O_CLOEXEC));
    auto wrong = listen_in_namespace(not_a_namespace.get(), 0);
    REQUIRE(std::holds_alternative<std::error_code>(wrong));
    CHECK(std::get<std::error_code>(wrong) == std::errc::invalid_argument);

    unique_fd mount_namespace(::open("/proc/self/ns/mnt", O_RDONLY | O_CLOEXEC));
    auto other_kind = listen_in_namespace(mount_namespace.get(), 0);
    REQUIRE(std::holds_alternative<std::error_code>(other_kind));
    CHECK(std::get<std::error_code>(other_kind) == std::errc::invalid_argument);
}

namespace {

// A process that stays in the host's namespace and forks one that unshares its own, as bwrap
// does: says 'r' once the grandchild is in its namespace, then waits for its pipe to close.
[[noreturn]] void bwrap_like(int ready_fd, int hold_fd) {
    int inner_ready[2];
    if (::pipe2(inner_ready, O_CLOEXEC) != 0) ::_exit(20);
    const pid_t inner = ::fork();
    if (inner < 0) ::_exit(21);
    if (inner == 0) {
        if (::unshare(CLONE_NEWNET) != 0) ::_exit(22);
        const char ready = 'r';
        if (::write(inner_ready[1], &ready, 1) != 1) ::_exit(23);
        char byte;
        while (::read(hold_fd, &byte, 1) > 0) {
        }
        ::_exit(0);
    }
    char byte = 0;
    if (::read(inner_ready[0], &byte, 1) != 1) ::_exit(24);
    if (::write(ready_fd, &byte, 1) != 1) ::_exit(25);
    int status = 0;
    ::waitpid(inner, &status, 0);
    ::_exit(0);
}

ino_t namespace_inode(int fd) {
    struct stat st {};
    REQUIRE(::fstat(fd, &st) == 0);
    return st.st_ino;
}

}  // namespace

TEST_CASE("open_jail_network finds the namespace of a process's first descendant in another") {
    forked_child jail(bwrap_like);
    auto found = callisto::launcher::open_jail_network(jail.pid());
    REQUIRE(std::holds_alternative<unique_fd>(found));
    unique_fd own(::open("/proc/self/ns/net", O_RDONLY | O_CLOEXEC));
    CHECK(namespace_inode(std::get<unique_fd>(found).get()) != namespace_inode(own.get()));
    // A listener made there is not on the host's side either: the same fd works for it.
    auto listener = listen_in_namespace(std::get<unique_fd>(found).get(), 0);
    CHECK(std::holds_alternative<unique_fd>(listener));

    jail.close_pipe();  // the grandchild ends, then its parent
    CHECK(jail.exit_code() == 0);
}

TEST_CASE("open_jail_network finds nothing for a process tree all in the host's namespace") {
    auto found = callisto::launcher::open_jail_network(::getpid());
    REQUIRE(std::holds_alternative<std::error_code>(found));
    CHECK(std::get<std::error_code>(found) == std::errc::no_such_file_or_directory);
}
