#include "common/record_directory.hpp"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <system_error>

#include "common/durable_file.hpp"

namespace callisto {

namespace fs = std::filesystem;

record_directory::record_directory(fs::path dir, std::string what, sync when, logger log)
    : dir_(std::move(dir)), what_(std::move(what)), sync_(when), log_(std::move(log)) {
    std::error_code ec;
    fs::create_directories(dir_, ec);
    if (!ec) fs::permissions(dir_, fs::perms::owner_all, fs::perm_options::replace, ec);
    if (ec) throw std::runtime_error(dir_.string() + ": " + ec.message());
}

bool record_directory::valid_id(std::string_view id) {
    return !id.empty() && id.size() <= 64 &&
           id.find_first_not_of(
               "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ-") ==
               std::string_view::npos;
}

fs::path record_directory::file_of(const std::string& id) const { return dir_ / (id + ".json"); }

std::string record_directory::save(const std::string& id, std::string_view text) {
    if (!valid_id(id)) return "not a " + what_ + " id: " + id;
    try {
        if (sync_ == sync::on_save) {
            write_file_durably(file_of(id), text);
        } else {
            // Atomic without fsync: the record outlives the process, not the machine.
            const auto temporary = dir_ / ("." + id + ".json.tmp");
            {
                std::ofstream out(temporary, std::ios::binary | std::ios::trunc);
                out.write(text.data(), static_cast<std::streamsize>(text.size()));
                out.flush();
                if (!out) {
                    const int err = errno;
                    std::remove(temporary.c_str());
                    throw std::system_error(err ? err : EIO, std::generic_category(),
                                            "write " + temporary.string());
                }
            }
            fs::permissions(temporary, fs::perms::owner_read | fs::perms::owner_write);
            if (std::rename(temporary.c_str(), file_of(id).c_str()) != 0) {
                const int err = errno;
                std::remove(temporary.c_str());
                throw std::system_error(err, std::generic_category(),
                                        "rename to " + file_of(id).string());
            }
        }
    } catch (const std::exception& e) {
        ++failed_writes_;
        const std::string why = "cannot record " + what_ + " " + id + " in " + dir_.string() +
                                ": " + e.what() + "; it will not survive a gateway restart";
        if (!failing_.exchange(true)) log_.error(why + " (further failures are counted only)");
        return why;
    }
    if (failing_.exchange(false)) log_.info(what_ + " records are written again");
    return {};
}

void record_directory::remove(const std::string& id) {
    if (!valid_id(id)) return;
    try {
        if (sync_ == sync::on_save)
            remove_file_durably(file_of(id));
        else if (std::remove(file_of(id).c_str()) != 0 && errno != ENOENT)
            throw std::system_error(errno, std::generic_category(),
                                    "remove " + file_of(id).string());
    } catch (const std::exception& e) {
        log_.warn("cannot remove a " + what_ + " record: " + e.what());
    }
}

std::vector<record_directory::entry> record_directory::load() const {
    std::vector<entry> out;
    std::error_code ec;
    for (const auto& file : fs::directory_iterator(dir_, ec)) {
        const auto& path = file.path();
        const auto name = path.filename().string();
        if (name.size() > 10 && name.front() == '.' && name.ends_with(".json.tmp")) {
            std::remove(path.c_str());  // a save a crash interrupted; the record is intact
            continue;
        }
        if (path.extension() != ".json" || !valid_id(path.stem().string())) continue;
        std::ifstream in(path, std::ios::binary);
        std::ostringstream text;
        text << in.rdbuf();
        out.push_back({path.stem().string(), std::move(text).str()});
    }
    return out;
}

}  // namespace callisto
