#pragma once
// A directory's entries, read through a descriptor: owns the DIR stream, and with it the
// descriptor, so that every path closes it (early returns and exceptions included).

#include <dirent.h>
#include <unistd.h>

#include "common/unique_fd.hpp"

namespace callisto {

class directory_stream {
public:
    // Reads `dir`, which it takes; a stream without entries when fdopendir fails.
    explicit directory_stream(unique_fd dir) : stream_(dir ? ::fdopendir(dir.get()) : nullptr) {
        if (stream_) dir.release();  // closedir closes it now
    }
    // Reads through a copy of `dir_fd`, which stays the caller's (the copy shares its offset).
    static directory_stream of_copy(int dir_fd) {
        return directory_stream(unique_fd(::dup(dir_fd)));
    }

    ~directory_stream() {
        if (stream_) ::closedir(stream_);
    }
    directory_stream(const directory_stream&) = delete;
    directory_stream& operator=(const directory_stream&) = delete;

    // The next entry, "." and ".." among them; nullptr after the last.
    const dirent* next() { return stream_ ? ::readdir(stream_) : nullptr; }

private:
    DIR* stream_;
};

}  // namespace callisto
