#include "gateway/interpreter/snapshot_store.hpp"

#include <fcntl.h>
#include <openssl/evp.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <memory>
#include <set>
#include <stdexcept>
#include <system_error>

#include "common/durable_file.hpp"
#include "common/encoding.hpp"
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

// SHA-256 of bytes that come through a buffer, never all in memory.
class sha256_stream {
public:
    sha256_stream() : ctx_(EVP_MD_CTX_new()) { EVP_DigestInit_ex(ctx_, EVP_sha256(), nullptr); }
    ~sha256_stream() { EVP_MD_CTX_free(ctx_); }
    sha256_stream(const sha256_stream&) = delete;
    sha256_stream& operator=(const sha256_stream&) = delete;
    void update(std::string_view bytes) { EVP_DigestUpdate(ctx_, bytes.data(), bytes.size()); }
    std::string finish_hex() {
        unsigned char out[EVP_MAX_MD_SIZE];
        unsigned int len = 0;
        EVP_DigestFinal_ex(ctx_, out, &len);
        return to_hex(std::string_view(reinterpret_cast<const char*>(out), len));
    }

private:
    EVP_MD_CTX* ctx_;
};

bool write_all_of(int fd, const char* data, std::size_t size) {
    for (std::size_t done = 0; done < size;) {
        const auto n = ::write(fd, data + done, size - done);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) {
            if (n == 0) errno = ENOSPC;
            return false;
        }
        done += static_cast<std::size_t>(n);
    }
    return true;
}

}  // namespace

copy_result copy_hashing(int in, int out, std::uint64_t max) {
    copy_result r;
    sha256_stream hash;
    // On the heap, and freed on return: at most one such buffer per copy under way.
    const auto buffer = std::make_unique<char[]>(copy_buffer_bytes);
    for (;;) {
        const auto n = ::read(in, buffer.get(), copy_buffer_bytes);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) {
            r.error = errno;
            return r;
        }
        if (n == 0) break;
        const auto got = static_cast<std::uint64_t>(n);
        if (r.bytes + got > max) {
            r.error = EFBIG;
            return r;
        }
        hash.update({buffer.get(), static_cast<std::size_t>(n)});
        if (out >= 0 && !write_all_of(out, buffer.get(), static_cast<std::size_t>(n))) {
            r.error = errno;
            return r;
        }
        r.bytes += got;
    }
    r.sha256 = hash.finish_hex();
    return r;
}

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
    const auto now = fs::file_time_type::clock::now();
    for (const auto& entry : fs::directory_iterator(dir_, ec)) {
        if (!entry.path().filename().string().starts_with(".tmp-")) continue;
        std::error_code age_ec;
        const auto written = fs::last_write_time(entry.path(), age_ec);
        if (!age_ec && now - written > leftover_age) fs::remove_all(entry.path(), ec);
    }
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
                                                                  const snapshot_content& content,
                                                                  const fs::path& workdir) {
    if (!valid_id(id)) return snapshot_error{400, "not a snapshot id: " + id};
    std::set<std::string> paths;
    for (const auto& f : content.files) {
        if (auto why = check_relative_path(f))
            return snapshot_error{400, "a file of the snapshot: " + *why};
        if (!paths.insert(f).second)
            return snapshot_error{400, "a file of the snapshot is named twice: " + f};
    }
    if (auto why = check_relative_path(content.namespace_path))
        return snapshot_error{400, "the snapshot's namespace: " + *why};

    std::lock_guard lock(save_mutex_);
    const auto used = usage_of(owner);
    if (used.count + 1 > quota_.max_count)
        return snapshot_error{507, "snapshot quota reached: " + owner + " has " +
                                       std::to_string(used.count) + " snapshots, the most " +
                                       std::to_string(quota_.max_count) +
                                       "; delete one (DELETE /v1/snapshots/{id})"};
    const std::uint64_t room = quota_.max_bytes > used.bytes ? quota_.max_bytes - used.bytes : 0;
    auto past_quota = [&] {
        return snapshot_error{507, "snapshot quota reached: this snapshot's bytes and the " +
                                       std::to_string(used.bytes) + " already stored pass " +
                                       std::to_string(quota_.max_bytes) + " bytes"};
    };

    const fs::path tmp = dir_ / (".tmp-" + id);
    const fs::path final_dir = dir_ / id;
    std::error_code ec;
    if (fs::exists(final_dir, ec)) return snapshot_error{500, "snapshot id in use: " + id};
    fs::remove_all(tmp, ec);
    if (!fs::create_directory(tmp, ec) || ec)
        return snapshot_error{500, "the snapshot could not be written: " + ec.message()};
    auto give_up = [&](snapshot_error e) {
        fs::remove_all(tmp, ec);
        return e;
    };
    auto write_failed = [&](int err, const std::string& what) {
        return give_up({err == ENOSPC || err == EDQUOT ? 507 : 500,
                        "the snapshot could not be written (" + what + "): " + std::strerror(err)});
    };

    // Each piece copied from the workdir into the temporary directory, one at a time.
    workdir_files from(workdir);
    std::uint64_t size = 0;
    nlohmann::json pieces = nlohmann::json::array();
    auto copy_piece = [&](const std::string& source, bool is_namespace,
                          std::size_t n) -> std::optional<snapshot_error> {
        const std::string what = is_namespace ? std::string("the namespace") : "file " + source;
        unique_fd in;
        std::uint64_t at_open = 0;
        if (auto e = from.open_for_read(source, in, at_open, room - size)) {
            if (e->http_status == 413) return give_up(past_quota());
            return give_up({e->http_status == 404 ? 500 : e->http_status,
                            what + " of the snapshot: " + e->message});
        }
        const fs::path piece = tmp / std::to_string(n);
        unique_fd out(
            ::open(piece.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600));
        if (!out) return write_failed(errno, what);
        // The file may grow while it is copied: the quota still holds.
        const auto copied = copy_hashing(in.get(), out.get(), room - size);
        if (copied.error == EFBIG) return give_up(past_quota());
        if (copied.error) return write_failed(copied.error, what);
        if (::fsync(out.get()) != 0) return write_failed(errno, what);
        if (::close(out.release()) != 0) return write_failed(errno, what);
        size += copied.bytes;
        pieces.push_back({{"name", std::to_string(n)},
                          {"role", is_namespace ? "namespace" : "file"},
                          {"path", is_namespace ? "" : source},
                          {"size", copied.bytes},
                          {"sha256", copied.sha256}});
        return std::nullopt;
    };
    if (auto e = copy_piece(content.namespace_path, true, 0)) return *e;
    for (std::size_t i = 0; i < content.files.size(); ++i)
        if (auto e = copy_piece(content.files[i], false, i + 1)) return *e;

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
    try {
        write_file_durably(tmp / manifest_name, manifest.dump(1));
        fs::rename(tmp, final_dir);
        sync_directory(dir_);
    } catch (const std::exception& e) {
        const bool full = std::string(e.what()).find("No space") != std::string::npos;
        return give_up(
            {full ? 507 : 500, std::string("the snapshot could not be written: ") + e.what()});
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

std::variant<stored_snapshot, snapshot_error> snapshot_store::load_for(const std::string& id,
                                                                       const user& who) const {
    auto m = manifest_for(id, who);
    if (auto* e = std::get_if<snapshot_error>(&m)) return *e;
    const auto& manifest = std::get<nlohmann::json>(m);
    const fs::path dir = dir_ / id;

    stored_snapshot snapshot;
    snapshot.language = manifest["language"].get<std::string>();
    snapshot.carried = manifest["carried"];
    snapshot.not_carried = manifest["not_carried"];
    snapshot.source_context = manifest["context_id"].get<std::string>();
    snapshot.duration_ms = manifest["duration_ms"].get<std::int64_t>();
    std::set<std::string> expected{manifest_name};
    bool have_namespace = false;
    for (const auto& p : manifest["pieces"]) {
        stored_piece piece;
        const auto name = p["name"].get<std::string>();
        const auto role = p["role"].get<std::string>();
        piece.path = p["path"].get<std::string>();
        piece.size = p["size"].get<std::uint64_t>();
        piece.sha256 = p["sha256"].get<std::string>();
        piece.is_namespace = role == "namespace";
        const auto what = piece.is_namespace ? std::string("the namespace") : "file " + piece.path;
        if (name.empty() || name.find_first_not_of("0123456789") != std::string::npos ||
            !expected.insert(name).second)
            return damaged(id, "its manifest names a piece '" + name + "'");
        if (role == "file") {
            if (auto why = check_relative_path(piece.path))
                return damaged(id, "its manifest names a file outside the workdir: " + *why);
        } else if (role != "namespace" || have_namespace) {
            return damaged(id, "its manifest has a piece of role '" + role + "'");
        }
        piece.file = dir / name;
        std::error_code ec;
        if (!fs::exists(piece.file, ec)) return damaged(id, what + " is missing");
        unique_fd fd(::open(piece.file.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC));
        struct stat st {};
        if (!fd || ::fstat(fd.get(), &st) != 0 || !S_ISREG(st.st_mode))
            return damaged(id, what + " cannot be read");
        const auto read = copy_hashing(fd.get(), -1, piece.size);
        if (read.error == EFBIG)
            return damaged(
                id, what + " is larger than the " + std::to_string(piece.size) + " bytes recorded");
        if (read.error) return damaged(id, what + " cannot be read: " + std::strerror(read.error));
        if (read.bytes != piece.size)
            return damaged(id, what + " has " + std::to_string(read.bytes) + " bytes, " +
                                   std::to_string(piece.size) + " recorded (truncated)");
        if (read.sha256 != piece.sha256) return damaged(id, what + " does not match its SHA-256");
        if (piece.is_namespace) {
            have_namespace = true;
            snapshot.pieces.insert(snapshot.pieces.begin(), std::move(piece));
        } else {
            snapshot.pieces.push_back(std::move(piece));
        }
    }
    if (!have_namespace) return damaged(id, "its manifest has no namespace");
    std::error_code ec;
    for (const auto& entry : fs::directory_iterator(dir, ec))
        if (!expected.contains(entry.path().filename().string()))
            return damaged(id, "it holds a file its manifest does not name: " +
                                   entry.path().filename().string());
    if (ec) return damaged(id, "its directory cannot be read: " + ec.message());
    return snapshot;
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
