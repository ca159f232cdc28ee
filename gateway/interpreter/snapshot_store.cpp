#include "gateway/interpreter/snapshot_store.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <fstream>
#include <set>
#include <stdexcept>
#include <system_error>

#include "common/durable_file.hpp"
#include "common/sha256.hpp"
#include "common/unique_fd.hpp"
#include "gateway/interpreter/workdir_files.hpp"
#include "kernelproto/iso_time.hpp"

namespace callisto::gateway::interpreter {

namespace fs = std::filesystem;

namespace {

constexpr const char* manifest_name = "manifest.json";
constexpr std::size_t max_manifest_bytes = 16 << 20;

snapshot_error not_found(const std::string& id) { return {404, "Snapshot does not exist: " + id}; }

snapshot_error damaged(const std::string& id, const std::string& why) {
    return {422, "snapshot " + id + " is damaged and is not restored: " + why};
}

// Reads a whole file of at most `max` bytes; false when it cannot.
bool read_file(const fs::path& path, std::string& out, std::uint64_t max) {
    unique_fd fd(::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC));
    if (!fd) return false;
    struct stat st {};
    if (::fstat(fd.get(), &st) != 0 || !S_ISREG(st.st_mode) ||
        static_cast<std::uint64_t>(st.st_size) > max)
        return false;
    out.resize(static_cast<std::size_t>(st.st_size));
    std::size_t done = 0;
    while (done < out.size()) {
        const auto n = ::read(fd.get(), out.data() + done, out.size() - done);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) return false;
        done += static_cast<std::size_t>(n);
    }
    return true;
}

void sync_directory(const fs::path& dir) {
    unique_fd fd(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    if (fd) ::fsync(fd.get());
}

}  // namespace

nlohmann::json snapshot_model(const nlohmann::json& manifest) {
    nlohmann::json files = nlohmann::json::array();
    for (const auto& p : manifest.at("pieces"))
        if (p.at("role") == "file")
            files.push_back({{"path", p.at("path")}, {"size", p.at("size")}});
    return {{"id", manifest.at("id")},
            {"owner", manifest.at("owner")},
            {"created_at", manifest.at("created_at")},
            {"language", manifest.at("language")},
            {"context_id", manifest.at("context_id")},
            {"size", manifest.at("size")},
            {"duration_ms", manifest.at("duration_ms")},
            {"files", std::move(files)},
            {"carried", manifest.at("carried")},
            {"not_carried", manifest.at("not_carried")}};
}

snapshot_store::snapshot_store(fs::path dir, snapshot_quota quota)
    : dir_(std::move(dir)), quota_(quota) {
    std::error_code ec;
    fs::create_directories(dir_, ec);
    if (ec || ::chmod(dir_.c_str(), 0700) != 0)
        throw std::runtime_error("cannot create the snapshot directory " + dir_.string() + ": " +
                                 (ec ? ec.message() : std::string(std::strerror(errno))));
    for (const auto& entry : fs::directory_iterator(dir_, ec))
        if (entry.path().filename().string().starts_with(".tmp-")) fs::remove_all(entry.path(), ec);
}

bool snapshot_store::valid_id(std::string_view id) {
    if (id.size() != 36) return false;
    for (std::size_t i = 0; i < id.size(); ++i) {
        const char c = id[i];
        const bool dash = i == 8 || i == 13 || i == 18 || i == 23;
        if (dash ? c != '-' : !((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
    }
    return true;
}

std::string snapshot_store::manifest_checksum(nlohmann::json manifest) {
    manifest.erase("checksum");
    return sha256_hex(manifest.dump());
}

std::variant<nlohmann::json, snapshot_error> snapshot_store::manifest_for(const std::string& id,
                                                                          const user& who) const {
    if (!valid_id(id)) return not_found(id);
    std::string text;
    const fs::path dir = dir_ / id;
    if (!read_file(dir / manifest_name, text, max_manifest_bytes)) {
        std::error_code ec;
        if (!fs::is_directory(dir, ec)) return not_found(id);
        // A snapshot without a readable manifest cannot be said to be anyone's.
        return not_found(id);
    }
    auto manifest = nlohmann::json::parse(text, nullptr, false);
    if (!manifest.is_object() || !manifest.contains("owner") || !manifest["owner"].is_string())
        return not_found(id);
    if (!who.may_use(manifest["owner"].get<std::string>())) return not_found(id);
    if (!manifest.contains("checksum") || !manifest["checksum"].is_string() ||
        manifest["checksum"].get<std::string>() != manifest_checksum(manifest))
        return damaged(id, "its manifest does not match its checksum");
    try {
        if (manifest.at("id") != id) return damaged(id, "its manifest names another snapshot");
        for (const auto& p : manifest.at("pieces")) {
            (void)p.at("name").get<std::string>();
            (void)p.at("size").get<std::uint64_t>();
            (void)p.at("sha256").get<std::string>();
            (void)p.at("role").get<std::string>();
        }
        (void)snapshot_model(manifest);
    } catch (const nlohmann::json::exception&) {
        return damaged(id, "its manifest lacks a field");
    }
    return manifest;
}

snapshot_store::usage snapshot_store::usage_of(const std::string& owner) const {
    usage u;
    user as_owner{owner};
    std::error_code ec;
    for (const auto& entry : fs::directory_iterator(dir_, ec)) {
        const auto id = entry.path().filename().string();
        if (!valid_id(id)) continue;
        auto m = manifest_for(id, as_owner);
        if (auto* manifest = std::get_if<nlohmann::json>(&m);
            manifest && (*manifest)["owner"] == owner) {
            ++u.count;
            u.bytes += (*manifest)["size"].get<std::uint64_t>();
        }
    }
    return u;
}

std::variant<nlohmann::json, snapshot_error> snapshot_store::save(const std::string& id,
                                                                  const std::string& owner,
                                                                  const snapshot_content& content) {
    if (!valid_id(id)) return snapshot_error{400, "not a snapshot id: " + id};
    std::set<std::string> paths;
    for (const auto& f : content.files) {
        if (auto why = check_relative_path(f.path))
            return snapshot_error{400, "a file of the snapshot: " + *why};
        if (!paths.insert(f.path).second)
            return snapshot_error{400, "a file of the snapshot is named twice: " + f.path};
    }
    std::uint64_t size = content.namespace_blob.size();
    for (const auto& f : content.files) size += f.bytes.size();

    std::lock_guard lock(save_mutex_);
    const auto used = usage_of(owner);
    if (used.count + 1 > quota_.max_count)
        return snapshot_error{507, "snapshot quota reached: " + owner + " has " +
                                       std::to_string(used.count) + " snapshots, the most " +
                                       std::to_string(quota_.max_count) +
                                       "; delete one (DELETE /v1/snapshots/{id})"};
    if (used.bytes + size > quota_.max_bytes)
        return snapshot_error{507, "snapshot quota reached: this snapshot's " +
                                       std::to_string(size) + " bytes and the " +
                                       std::to_string(used.bytes) + " already stored pass " +
                                       std::to_string(quota_.max_bytes) + " bytes"};

    nlohmann::json pieces = nlohmann::json::array();
    pieces.push_back({{"name", "0"},
                      {"role", "namespace"},
                      {"path", ""},
                      {"size", content.namespace_blob.size()},
                      {"sha256", sha256_hex(content.namespace_blob)}});
    for (std::size_t i = 0; i < content.files.size(); ++i)
        pieces.push_back({{"name", std::to_string(i + 1)},
                          {"role", "file"},
                          {"path", content.files[i].path},
                          {"size", content.files[i].bytes.size()},
                          {"sha256", sha256_hex(content.files[i].bytes)}});
    nlohmann::json manifest = {
        {"format", 1},
        {"id", id},
        {"owner", owner},
        {"created_at", kernelproto::format_iso_time(std::chrono::system_clock::now())},
        {"language", content.language},
        {"context_id", content.source_context},
        {"size", size},
        {"duration_ms", content.duration_ms},
        {"carried", content.carried},
        {"not_carried", content.not_carried},
        {"pieces", pieces},
    };
    manifest["checksum"] = manifest_checksum(manifest);

    const fs::path tmp = dir_ / (".tmp-" + id);
    const fs::path final_dir = dir_ / id;
    std::error_code ec;
    if (fs::exists(final_dir, ec)) return snapshot_error{500, "snapshot id in use: " + id};
    try {
        fs::create_directory(tmp);
        write_file_durably(tmp / "0", content.namespace_blob);
        for (std::size_t i = 0; i < content.files.size(); ++i)
            write_file_durably(tmp / std::to_string(i + 1), content.files[i].bytes);
        write_file_durably(tmp / manifest_name, manifest.dump(1));
        fs::rename(tmp, final_dir);
        sync_directory(dir_);
    } catch (const std::exception& e) {
        fs::remove_all(tmp, ec);
        const bool full = std::string(e.what()).find("No space") != std::string::npos;
        return snapshot_error{full ? 507 : 500,
                              std::string("the snapshot could not be written: ") + e.what()};
    }
    return snapshot_model(manifest);
}

std::vector<nlohmann::json> snapshot_store::list_for(const user& who) const {
    std::vector<nlohmann::json> out;
    std::error_code ec;
    for (const auto& entry : fs::directory_iterator(dir_, ec)) {
        const auto id = entry.path().filename().string();
        if (!valid_id(id)) continue;
        auto m = manifest_for(id, who);
        if (auto* manifest = std::get_if<nlohmann::json>(&m))
            out.push_back(snapshot_model(*manifest));
    }
    std::sort(out.begin(), out.end(), [](const nlohmann::json& a, const nlohmann::json& b) {
        return std::pair(a["created_at"].get<std::string>(), a["id"].get<std::string>()) <
               std::pair(b["created_at"].get<std::string>(), b["id"].get<std::string>());
    });
    return out;
}

std::variant<nlohmann::json, snapshot_error> snapshot_store::get_for(const std::string& id,
                                                                     const user& who) const {
    auto m = manifest_for(id, who);
    if (auto* e = std::get_if<snapshot_error>(&m)) return *e;
    return snapshot_model(std::get<nlohmann::json>(m));
}

std::variant<snapshot_content, snapshot_error> snapshot_store::load_for(const std::string& id,
                                                                        const user& who) const {
    auto m = manifest_for(id, who);
    if (auto* e = std::get_if<snapshot_error>(&m)) return *e;
    const auto& manifest = std::get<nlohmann::json>(m);
    const fs::path dir = dir_ / id;

    snapshot_content content;
    content.language = manifest["language"].get<std::string>();
    content.carried = manifest["carried"];
    content.not_carried = manifest["not_carried"];
    content.source_context = manifest["context_id"].get<std::string>();
    std::set<std::string> expected{manifest_name};
    bool have_namespace = false;
    for (const auto& p : manifest["pieces"]) {
        const auto name = p["name"].get<std::string>();
        const auto role = p["role"].get<std::string>();
        const auto path = p["path"].get<std::string>();
        const auto size = p["size"].get<std::uint64_t>();
        const auto what = role == "namespace" ? std::string("the namespace") : "file " + path;
        if (name.empty() || name.find_first_not_of("0123456789") != std::string::npos ||
            !expected.insert(name).second)
            return damaged(id, "its manifest names a piece '" + name + "'");
        if (role == "file") {
            if (auto why = check_relative_path(path))
                return damaged(id, "its manifest names a file outside the workdir: " + *why);
        } else if (role != "namespace" || have_namespace) {
            return damaged(id, "its manifest has a piece of role '" + role + "'");
        }
        std::string bytes;
        std::error_code ec;
        if (!fs::exists(dir / name, ec)) return damaged(id, what + " is missing");
        if (!read_file(dir / name, bytes, size + 1))
            return damaged(id, what + " cannot be read, or is larger than the " +
                                   std::to_string(size) + " bytes recorded");
        if (bytes.size() != size)
            return damaged(id, what + " has " + std::to_string(bytes.size()) + " bytes, " +
                                   std::to_string(size) + " recorded (truncated)");
        if (sha256_hex(bytes) != p["sha256"].get<std::string>())
            return damaged(id, what + " does not match its SHA-256");
        if (role == "namespace") {
            content.namespace_blob = std::move(bytes);
            have_namespace = true;
        } else {
            content.files.push_back({path, std::move(bytes)});
        }
    }
    if (!have_namespace) return damaged(id, "its manifest has no namespace");
    std::error_code ec;
    for (const auto& entry : fs::directory_iterator(dir, ec))
        if (!expected.contains(entry.path().filename().string()))
            return damaged(id, "it holds a file its manifest does not name: " +
                                   entry.path().filename().string());
    if (ec) return damaged(id, "its directory cannot be read: " + ec.message());
    return content;
}

std::optional<snapshot_error> snapshot_store::remove_for(const std::string& id, const user& who) {
    if (!valid_id(id)) return not_found(id);
    std::string text;
    // A damaged snapshot may still be deleted by its owner: only the owner is read.
    if (!read_file(dir_ / id / manifest_name, text, max_manifest_bytes)) return not_found(id);
    auto manifest = nlohmann::json::parse(text, nullptr, false);
    if (!manifest.is_object() || !manifest.contains("owner") || !manifest["owner"].is_string() ||
        !who.may_use(manifest["owner"].get<std::string>()))
        return not_found(id);
    std::lock_guard lock(save_mutex_);
    std::error_code ec;
    const fs::path gone = dir_ / (".tmp-" + id);
    // Renamed out of sight first: a half-removed snapshot is never listed.
    fs::rename(dir_ / id, gone, ec);
    if (ec) return snapshot_error{500, "cannot delete snapshot " + id + ": " + ec.message()};
    sync_directory(dir_);
    fs::remove_all(gone, ec);
    return std::nullopt;
}

}  // namespace callisto::gateway::interpreter
