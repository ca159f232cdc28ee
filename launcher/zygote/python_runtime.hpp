#pragma once
// The Python interpreter a zygote embeds: initialised once as the kernelspec's python would
// be, the kernel's modules imported once, its objects frozen out of the garbage collector (so
// a collection in a kernel does not dirty, and copy, every page it shares with the zygote),
// and after each fork the kernel's own state: environment, seeds, argv, and `-m module`.
//
// Holds the GIL for the zygote's whole life: nothing else in the zygote runs Python.

#include <string>
#include <vector>

#include "launcher/zygote/page_prefault.hpp"
#include "launcher/zygote/zygote_protocol.hpp"

namespace callisto::launcher::zygote {

class python_runtime {
public:
    // Initialises the interpreter as `program` (e.g. /usr/bin/python3) would start.
    // Throws std::runtime_error when Python does not start.
    explicit python_runtime(const std::string& program);
    python_runtime(const python_runtime&) = delete;
    python_runtime& operator=(const python_runtime&) = delete;

    // Imports ipykernel's kernel application and then each of `modules`; a module that fails
    // is reported, not fatal.
    zygote_protocol::ready_event preload(const std::vector<std::string>& modules);

    // After preload: the pages an ipykernel start wrote when the zygote rehearsed one (none if
    // it did not: the ready event says why).
    std::vector<page_prefault::range> start_writes() const;

    // Around fork(), as os.fork() does: Python's locks and at-fork hooks.
    void before_fork();
    void after_fork_in_parent();

    // In the forked kernel: reinitialises Python's runtime for this process (random is reseeded
    // by its at-fork hook), then runs `argv[0] -m module args...` with `env` as the whole
    // environment, numpy's global generator reseeded from the OS, and cwd first on sys.path.
    // Returns the exit status once the atexit handlers ran; the interpreter is not finalized,
    // which would touch (and copy) every page shared with the zygote: the caller _exits.
    int run_kernel(const std::vector<std::string>& argv,
                   const std::map<std::string, std::string>& env);
};

}  // namespace callisto::launcher::zygote
