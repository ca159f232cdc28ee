#pragma once
// A directory of small records, one file per id (<dir>/<id>.json), each replaced whole on
// every save: what a gateway leaves on disk (--state-dir) for the next process to read back.
//
// Saves are atomic (a temporary file renamed over the old one), so a reader never finds a torn
// record after a crash of the process; `fsync` also makes them outlive a crash of the machine.
// A failed write (a full disk) is never fatal to the caller: it gets the reason, the first
// failure in a row is logged, and every one is counted.

#include <atomic>
#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "common/logger.hpp"

namespace callisto {

class record_directory {
public:
    enum class sync { on_save, never };

    // Creates the directory (0700). Throws std::runtime_error when it cannot. `what` names the
    // records in messages ("kernel", "context").
    record_directory(std::filesystem::path dir, std::string what, sync when, logger log);

    const std::filesystem::path& dir() const { return dir_; }

    // "" when written, else why not. Thread-safe across ids; one id is saved by one caller at
    // a time.
    [[nodiscard]] std::string save(const std::string& id, std::string_view text);
    void remove(const std::string& id);
    std::uint64_t failed_writes() const { return failed_writes_; }

    struct entry {
        std::string id;
        std::string text;
    };
    // Every record (files not named like one are left alone).
    std::vector<entry> load() const;

    // Ids are what the gateway makes (UUIDs, E2B sandbox ids): letters, digits and dashes,
    // never a path.
    static bool valid_id(std::string_view id);

private:
    std::filesystem::path file_of(const std::string& id) const;

    std::filesystem::path dir_;
    std::string what_;
    sync sync_;
    logger log_;
    std::atomic<std::uint64_t> failed_writes_{0};
    std::atomic<bool> failing_{false};
};

}  // namespace callisto
