#pragma once
// Writing a small file so that a reader finds either the old content or the new, never a
// torn mix, even across a crash or a power cut: a temporary file beside it, fsync, rename over
// the old one, fsync of the directory. For the state a restarted gateway reads back.

#include <filesystem>
#include <string_view>

namespace callisto {

// Throws std::system_error naming the step that failed (ENOSPC when the disk is full); the
// old file, if any, is then untouched and no temporary file is left.
void write_file_durably(const std::filesystem::path& path, std::string_view content);

// Removes the file and makes the removal durable. No error when it does not exist.
void remove_file_durably(const std::filesystem::path& path);

}  // namespace callisto
