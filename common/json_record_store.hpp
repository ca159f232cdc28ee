#pragma once
// The shell every --state-dir store shares: a record_directory of one kind of record, each
// written as its `to_json()` and read back with `Record::from_json`. A record type brings its
// own JSON (the type `to_json()` returns, parsed with its `parse`), so this layer names none.
//
//   struct thing { std::string id; json to_json() const; static thing from_json(const json&); };
//   json_record_store<thing> things(dir, "thing", record_directory::sync::never, log);

#include <cstdint>
#include <filesystem>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "common/logger.hpp"
#include "common/record_directory.hpp"

namespace callisto {

template <class Record>
class json_record_store {
public:
    // Creates the directory (0700). Throws std::runtime_error when it cannot. `what` names the
    // records in messages ("kernel", "context").
    json_record_store(std::filesystem::path dir, std::string what, record_directory::sync when,
                      logger log)
        : records_(std::move(dir), std::move(what), when, std::move(log)) {}

    const std::filesystem::path& dir() const { return records_.dir(); }

    // "" when written, else why not. Thread-safe across records.
    [[nodiscard]] std::string save(const Record& record) {
        return records_.save(record.id, record.to_json().dump());
    }
    void remove(const std::string& id) { records_.remove(id); }
    std::uint64_t failed_writes() const { return records_.failed_writes(); }

    struct loaded {
        std::vector<Record> records;
        // Each record not taken back, removed and said as "<id>.json: <why>" (for a warning;
        // never fatal).
        std::vector<std::string> problems;
    };

    // Every record. One that is not JSON, that from_json refuses, whose id is not its file's
    // name, or that `check` refuses (by throwing why) is removed, and said with the reason.
    template <class Check>
    loaded load(Check check) {
        using json = decltype(std::declval<const Record&>().to_json());
        loaded out;
        for (auto& [id, text] : records_.load()) {
            try {
                json doc;
                try {
                    doc = json::parse(text);
                } catch (const typename json::parse_error& e) {
                    throw std::invalid_argument(std::string("not JSON (") + e.what() + ")");
                }
                Record record = Record::from_json(doc);
                if (record.id != id) throw std::invalid_argument("its id is not its file's name");
                check(record);
                out.records.push_back(std::move(record));
            } catch (const std::exception& e) {
                out.problems.push_back(id + ".json: " + e.what());
                records_.remove(id);
            }
        }
        return out;
    }
    loaded load() {
        return load([](const Record&) {});
    }

private:
    record_directory records_;
};

}  // namespace callisto
