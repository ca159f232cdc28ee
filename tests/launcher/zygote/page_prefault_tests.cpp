#include "launcher/zygote/page_prefault.hpp"

#include <doctest/doctest.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

using callisto::launcher::zygote::page_prefault;

namespace {

const std::size_t page = static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));

std::uintptr_t address_of(const char* p) { return reinterpret_cast<std::uintptr_t>(p); }

// Whether this process holds the page at `p` of its own: present (pagemap bit 63) and mapped
// by this process alone (bit 56), as a page is once copied from the one its parent shares.
bool own_page(const char* p) {
    const int fd = ::open("/proc/self/pagemap", O_RDONLY | O_CLOEXEC);
    std::uint64_t entry = 0;
    const auto read =
        ::pread(fd, &entry, sizeof entry, static_cast<off_t>(address_of(p) / page * sizeof entry));
    ::close(fd);
    return read == sizeof entry && (entry >> 63 & 1) && (entry >> 56 & 1);
}

// Runs `check` in a fork of this process; its answer.
template <class Check>
bool in_fork(Check check) {
    const pid_t pid = ::fork();
    if (pid == 0) ::_exit(check() ? 0 : 1);
    int status = 0;
    ::waitpid(pid, &status, 0);
    return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

// Private memory this process has written: each page present here and shared by its forks.
struct written_memory {
    explicit written_memory(std::size_t pages) : size(pages * page) {
        bytes = static_cast<char*>(
            ::mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
        REQUIRE(bytes != MAP_FAILED);
        for (std::size_t i = 0; i < pages; ++i)
            std::memset(bytes + i * page, int(i % 250) + 1, page);
    }
    ~written_memory() { ::munmap(bytes, size); }
    char* operator[](std::size_t index) const { return bytes + index * page; }
    char* bytes;
    std::size_t size;
};

}  // namespace

TEST_CASE("a prefault makes the pages it names a fork's own, as they were, and no others") {
    const written_memory memory(8);
    const page_prefault prefault(
        {{address_of(memory[1]), 2 * page}, {address_of(memory[5]), page}});
    CHECK(prefault.pages() == 3);
    CHECK_FALSE(prefault.empty());
    // Without it, a fork shares every page with this process.
    CHECK(in_fork([&] { return !own_page(memory[1]) && !own_page(memory[5]); }));
    CHECK(in_fork([&] {
        prefault.fault_in();
        return own_page(memory[1]) && own_page(memory[2]) && own_page(memory[5]) &&
               !own_page(memory[0]) && !own_page(memory[3]) && !own_page(memory[4]) &&
               !own_page(memory[6]) && memory[1][0] == 2 && memory[2][page - 1] == 3 &&
               memory[5][0] == 6;
    }));
}

TEST_CASE("more ranges than one system call takes are all faulted in") {
    const written_memory memory(3000);
    std::vector<page_prefault::range> every_other;
    for (std::size_t i = 0; i < 3000; i += 2) every_other.emplace_back(address_of(memory[i]), page);
    const page_prefault prefault(every_other);
    CHECK(prefault.pages() == 1500);
    CHECK(in_fork([&] {
        prefault.fault_in();
        for (std::size_t i = 0; i < 3000; ++i)
            if (own_page(memory[i]) != (i % 2 == 0)) return false;
        return true;
    }));
}

TEST_CASE("a range no longer mapped is skipped, and the ranges after it still faulted in") {
    const written_memory memory(4);
    REQUIRE(::munmap(memory[1], page) == 0);
    const page_prefault prefault({{address_of(memory[0]), page},
                                  {address_of(memory[1]), page},
                                  {address_of(memory[2]), 2 * page}});
    CHECK(in_fork([&] {
        prefault.fault_in();
        return own_page(memory[0]) && own_page(memory[2]) && own_page(memory[3]);
    }));
}

// Whether this Linux takes MADV_POPULATE_WRITE through process_madvise for the calling process
// (6.13 and later, unless a seccomp policy refuses it).
bool batches_here() {
    const written_memory memory(1);
    const long pidfd = ::syscall(SYS_pidfd_open, ::getpid(), 0);
    if (pidfd < 0) return false;
    iovec one{memory[0], page};
    const long done =
        ::syscall(SYS_process_madvise, pidfd, &one, 1, 23 /* MADV_POPULATE_WRITE */, 0);
    ::close(static_cast<int>(pidfd));
    return done == static_cast<long>(page);
}

TEST_CASE("where ranges go in batches, one that fails does not send the rest one by one") {
    const written_memory memory(3000);
    std::vector<page_prefault::range> every_other;
    for (std::size_t i = 0; i < 3000; i += 2) every_other.emplace_back(address_of(memory[i]), page);
    REQUIRE(::munmap(memory[700], page) == 0);  // in the first batch of 1,024
    const page_prefault prefault(every_other);
    const bool batches = batches_here();
    MESSAGE(
        std::string(batches ? "process_madvise takes the ranges" : "one madvise per range here"));
    CHECK(in_fork([&] {
        const auto calls = prefault.fault_in();
        for (std::size_t i = 0; i < 3000; i += 2)
            if (i != 700 && !own_page(memory[i])) return false;
        // Refused, the first process_madvise counts too.
        return batches ? calls <= 4 : calls >= every_other.size();
    }));
}

TEST_CASE("an empty prefault does nothing") {
    const page_prefault none;
    CHECK(none.empty());
    CHECK(none.pages() == 0);
    none.fault_in();
}
