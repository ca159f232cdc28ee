#include "gateway/interpreter/snapshot_files.hpp"

#include <sys/stat.h>

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
    for (const std::string name : {std::string(ps::blob_name), std::string(ps::report_name),
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
    auto blob_error = files.read(ps::blob_name, content.namespace_blob, limits.max_bytes);
    remove_snapshot_leftovers(workdir);
    if (!report) return snapshot_error{500, "the kernel left no report of what it saved"};
    if (blob_error) {
        if (blob_error->http_status == 413)
            return snapshot_error{507, "the kernel's state is larger than the snapshot quota (" +
                                           std::to_string(limits.max_bytes) + " bytes)"};
        return error_from(*blob_error, "the kernel's saved state");
    }
    content.carried = std::move(report->carried);
    content.not_carried = std::move(report->not_carried);

    std::uint64_t total = content.namespace_blob.size();
    std::optional<snapshot_error> failed;
    bool truncated = false;
    auto e = files.walk(
        limits.max_files, true, truncated, [&](const std::string& path, const struct stat& st) {
            if (failed) return false;
            if (path == ".ipython" || path == ".cache") return false;
            if (S_ISDIR(st.st_mode)) return true;
            if (!S_ISREG(st.st_mode)) {
                content.not_carried.push_back(
                    {{"name", path},
                     {"type", S_ISLNK(st.st_mode) ? "symlink" : "special file"},
                     {"reason", "only regular files of the workdir are carried"}});
                return false;
            }
            snapshot_file f{path, {}};
            const auto left = limits.max_bytes > total ? limits.max_bytes - total : 0;
            if (auto re = files.read(path, f.bytes, left)) {
                failed = re->http_status == 413
                             ? snapshot_error{507,
                                              "the workdir's files and the "
                                              "kernel's state pass the snapshot "
                                              "quota (" +
                                                  std::to_string(limits.max_bytes) + " bytes)"}
                             : error_from(*re, path);
                return false;
            }
            total += f.bytes.size();
            content.files.push_back(std::move(f));
            return false;
        });
    if (e) return error_from(*e, "the workdir");
    if (failed) return *failed;
    if (truncated)
        return snapshot_error{507, "the workdir holds more than " +
                                       std::to_string(limits.max_files) +
                                       " entries: too many to snapshot"};
    return content;
}

std::optional<snapshot_error> place_snapshot(const fs::path& workdir,
                                             const snapshot_content& content) {
    std::vector<workdir_files::file_to_write> writes;
    for (const auto& f : content.files) writes.push_back({f.path, f.bytes});
    writes.push_back({ps::blob_name, content.namespace_blob});
    if (auto e = workdir_files(workdir).write_all(writes))
        return error_from(*e, "writing the snapshot into the new context");
    return std::nullopt;
}

}  // namespace callisto::gateway::interpreter
