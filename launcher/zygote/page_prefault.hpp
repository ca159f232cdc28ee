#pragma once
// Pages a process is about to write, faulted in by a few system calls rather than one page
// fault each. On the virtual machines Callisto is measured on, a fault is dear: 13 us for a new
// page, 20-25 us for a copy of a page shared with the parent, against 0.6 and 5-8 us the same
// pages cost through madvise(MADV_POPULATE_WRITE) (docs/performance.md). A kernel forked from
// the zygote faults in this way the pages its start is known to write (zygote_helpers.py,
// _callisto_rehearse_start).

#include <sys/uio.h>

#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

namespace callisto::launcher::zygote {

class page_prefault {
public:
    using range = std::pair<std::uintptr_t, std::size_t>;  // address, length: whole pages

    page_prefault() = default;
    explicit page_prefault(const std::vector<range>& ranges);

    // Makes each page present, writable and this process's own (a shared page is copied).
    // Best effort and invisible to the program: a range no longer mapped, or a Linux without
    // MADV_POPULATE_WRITE (before 5.14), leaves its pages to be faulted in when written. Does
    // not allocate (it runs in a fork). Returns how many madvise and process_madvise calls it
    // made.
    std::size_t fault_in() const noexcept;

    std::size_t pages() const noexcept;
    bool empty() const noexcept { return ranges_.empty(); }

private:
    std::vector<iovec> ranges_;
};

}  // namespace callisto::launcher::zygote
