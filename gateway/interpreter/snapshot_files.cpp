#include "gateway/interpreter/snapshot_files.hpp"

#include <fcntl.h>
#include <sys/stat.h>

#include "common/unique_fd.hpp"
#include "gateway/interpreter/workdir_files.hpp"
#include "gateway/languages/python_snapshot.hpp"

namespace callisto::gateway::interpreter {

namespace fs = std::filesystem;
namespace ps = languages::python_snapshot;

namespace {

constexpr std::size_t max_report_bytes = 4 << 20;
constexpr std::size_t max_names = 10000;

std::string short_string(const nlohmann::json& v, std::size_t max = 300) {
    std::string s = v.is_string() ? v.get<std::string>() : std::string();
    if (s.size() > max) s.resize(max);
    // Cut inside a character, or not UTF-8 at all: replaced, so the answer stays JSON.
    return nlohmann::json::parse(
               nlohmann::json(s).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace))
        .get<std::string>();
}

snapshot_error error_from(const file_error& e, const std::string& what) {
    return {e.http_status, what + ": " + e.message};
}

}  // namespace

std::optional<snapshot_report> parse_snapshot_report(std::string_view text) {
    auto doc = nlohmann::json::parse(text, nullptr, false);
    if (!doc.is_object() || !doc.contains("carried") || !doc["carried"].is_array() ||
        !doc.contains("not_carried") || !doc["not_carried"].is_array() ||
        doc["carried"].size() + doc["not_carried"].size() > max_names)
        return std::nullopt;
    snapshot_report r;
    for (const auto& name : doc["carried"]) {
        if (!name.is_string()) return std::nullopt;
        r.carried.push_back(short_string(name));
    }
    for (const auto& entry : doc["not_carried"]) {
        if (!entry.is_object()) return std::nullopt;
        r.not_carried.push_back(
            {{"name", short_string(entry.value("name", nlohmann::json()))},
             {"type", short_string(entry.value("type", nlohmann::json()))},
             {"reason", short_string(entry.value("reason", nlohmann::json()))}});
    }
    return r;
}

void remove_snapshot_leftovers(const fs::path& workdir) {
    workdir_files files(workdir);
    for (const std::string& name : {std::string(ps::blob_name), std::string(ps::report_name),
                                    std::string(ps::blob_name) + ".part"})
        (void)files.remove(name);
}

std::optional<snapshot_report> take_report(const fs::path& workdir) {
    std::string text;
    workdir_files files(workdir);
    auto e = files.read(ps::report_name, text, max_report_bytes);
    (void)files.remove(ps::report_name);
    if (e) return std::nullopt;
    return parse_snapshot_report(text);
}

std::variant<snapshot_content, snapshot_error> collect_snapshot(const fs::path& workdir,
                                                                const snapshot_limits& limits) {
    workdir_files files(workdir);
    snapshot_content content;
    auto report = take_report(workdir);
    auto fail = [&](snapshot_error e) {
        remove_snapshot_leftovers(workdir);
        return e;
    };
    if (!report) return fail({500, "the kernel left no report of what it saved"});
    // Only looked at here: the store copies it (and the files) through its buffer.
    unique_fd blob;
    std::uint64_t total = 0;
    if (auto e = files.open_for_read(ps::blob_name, blob, total, limits.max_bytes)) {
        if (e->http_status == 413)
            return fail({507, "the kernel's state is larger than the snapshot quota (" +
                                  std::to_string(limits.max_bytes) + " bytes)"});
        return fail(error_from(*e, "the kernel's saved state"));
    }
    content.namespace_path = ps::blob_name;
    content.carried = std::move(report->carried);
    content.not_carried = std::move(report->not_carried);

    bool past_quota = false;
    bool truncated = false;
    auto e = files.walk(
        limits.max_files, true, truncated, [&](const std::string& path, const struct stat& st) {
            if (past_quota) return false;
            if (path == ".ipython" || path == ".cache" || path.starts_with(".callisto-snapshot"))
                return false;
            if (S_ISDIR(st.st_mode)) return true;
            if (!S_ISREG(st.st_mode)) {
                content.not_carried.push_back(
                    {{"name", path},
                     {"type", S_ISLNK(st.st_mode) ? "symlink" : "special file"},
                     {"reason", "only regular files of the workdir are carried"}});
                return false;
            }
            total += static_cast<std::uint64_t>(st.st_size);
            past_quota = total > limits.max_bytes;
            content.files.push_back(path);
            return false;
        });
    if (e) return fail(error_from(*e, "the workdir"));
    if (past_quota)
        return fail({507, "the workdir's files and the kernel's state pass the snapshot quota (" +
                              std::to_string(limits.max_bytes) + " bytes)"});
    if (truncated)
        return fail({507, "the workdir holds more than " + std::to_string(limits.max_files) +
                              " entries: too many to snapshot"});
    return content;
}

std::optional<snapshot_error> place_snapshot(const fs::path& workdir,
                                             const stored_snapshot& snapshot) {
    // Each piece copied from the store through the buffer and hashed again on the way: one
    // changed since load_for checked it is not restored either.
    auto fill_from = [](const stored_piece& piece) {
        return [&piece](int out) -> std::optional<file_error> {
            unique_fd in(::open(piece.file.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC));
            if (!in) return file_error{422, "a piece of the snapshot cannot be read"};
            const auto copied = copy_hashing(in.get(), out, piece.size);
            if (copied.error == EFBIG ||
                (!copied.error && (copied.bytes != piece.size || copied.sha256 != piece.sha256)))
                return file_error{422, "the snapshot changed while it was restored"};
            if (copied.error) return file_error_from_errno(copied.error, piece.path, "write");
            return std::nullopt;
        };
    };
    std::vector<workdir_files::file_to_fill> writes;
    for (const auto& piece : snapshot.pieces)
        writes.push_back(
            {piece.is_namespace ? std::string_view(ps::blob_name) : std::string_view(piece.path),
             fill_from(piece)});
    if (auto e = workdir_files(workdir).fill_all(writes))
        return error_from(*e, "writing the snapshot into the new context");
    return std::nullopt;
}

}  // namespace callisto::gateway::interpreter
