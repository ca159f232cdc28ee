#pragma once
// A child process forked by a test to stand somewhere else (a network namespace of its own),
// with two pipes to the test: one it says "ready" on once it stands there, one the test sends
// it what it needs next (a port) on, or closes to let it end.

#include <fcntl.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstddef>

#include <doctest/doctest.h>

namespace callisto::test {

class forked_child {
public:
    // What the child runs: writes one byte to `ready_fd` when it is ready, reads `parent_fd`,
    // and never returns (it _exits). System calls only, no allocation: the parent may have
    // threads. Fork before the test starts any thread.
    using body = void (*)(int ready_fd, int parent_fd);

    // Returns once the child said it is ready.
    explicit forked_child(body run) {
        REQUIRE(::pipe2(ready_, O_CLOEXEC) == 0);
        REQUIRE(::pipe2(to_child_, O_CLOEXEC) == 0);
        pid_ = ::fork();
        REQUIRE(pid_ >= 0);
        if (pid_ == 0) {
            // The test's ends: a child's own children inherit none of them, and see the end of
            // the test's pipe when the test closes it.
            ::close(ready_[0]);
            ::close(to_child_[1]);
            run(ready_[1], to_child_[0]);
            ::_exit(99);  // `run` returned, which it must not
        }
        ::close(ready_[1]);
        ::close(to_child_[0]);
        char byte = 0;
        REQUIRE(::read(ready_[0], &byte, 1) == 1);
    }
    ~forked_child() {
        ::close(ready_[0]);
        close_pipe();
    }
    forked_child(const forked_child&) = delete;
    forked_child& operator=(const forked_child&) = delete;

    pid_t pid() const { return pid_; }

    void send(const void* bytes, std::size_t size) {
        REQUIRE(::write(to_child_[1], bytes, size) == static_cast<ssize_t>(size));
    }
    // The end of what the test sends: the child's reads of its pipe return 0.
    void close_pipe() {
        if (to_child_[1] >= 0) ::close(to_child_[1]);
        to_child_[1] = -1;
    }

    // Waits for the child's end; its exit code, or -1 when a signal ended it.
    int exit_code() {
        int status = 0;
        REQUIRE(::waitpid(pid_, &status, 0) == pid_);
        return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    }

private:
    int ready_[2] = {-1, -1};
    int to_child_[2] = {-1, -1};
    pid_t pid_ = -1;
};

}  // namespace callisto::test
