#pragma once
// What one execution created or changed in its context's workdir, for the audit log's
// files_written: the regular files that are new after it ran, or whose size, modification
// time or inode differ. Bounded both ways: at most max_entries entries are looked at (a
// workdir with more is only partly seen, and the record says so), and at most max_paths are
// named (the rest counted). The kernel's own dot-directories (IPython's history, caches) are
// not looked into: what the kernel machinery writes there on every execution is not what the
// code wrote; a dot-file the code writes anywhere else is named.

#include <sys/stat.h>

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "gateway/interpreter/workdir_files.hpp"

namespace callisto::gateway::interpreter {

struct file_stamp {
    std::uint64_t size = 0;
    std::int64_t mtime_ns = 0;
    std::uint64_t inode = 0;
    bool operator==(const file_stamp&) const = default;
};

struct workdir_state {
    std::map<std::string, file_stamp> files;  // regular files, by path in the workdir
    bool complete = true;                     // false: past max_entries, or unreadable
};

// The workdir's regular files now.
workdir_state capture_workdir(const workdir_files& files, std::size_t max_entries);

// The regular files of `after` that are not in `before` or differ from it, in path order; past
// max_paths the rest are counted in one last entry "(N more)". When either state is
// incomplete, a last entry "(the workdir holds more files than were compared)" says so.
std::vector<std::string> changed_files(const workdir_state& before, const workdir_state& after,
                                       std::size_t max_paths);

// Whether the walk goes into this directory (path relative to the workdir).
bool kernels_own_directory(const std::string& path);

}  // namespace callisto::gateway::interpreter
