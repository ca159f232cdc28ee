#include "gateway/audit/audit_log.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <cstring>
#include <fstream>
#include <stdexcept>

#include "kernelproto/iso_time.hpp"

namespace callisto::gateway::audit {
namespace {

namespace fs = std::filesystem;

// Below this much free space a run line is not written, so the execution is refused: the
// end lines of what already runs must still fit.
constexpr std::uint64_t min_free_bytes = 1u << 20;
// A rotation reads the first line of the oldest file it keeps, to say what it deleted; lines
// are bounded by --audit-code-limit, so one past this is not one of ours.
constexpr std::size_t first_line_limit = 16u << 20;

fs::path rotated(const fs::path& file, std::size_t n) {
    return fs::path(file.string() + "." + std::to_string(n));
}

std::string errno_text() { return std::strerror(errno); }

// The line that ends just before byte `end` of a file (without its newline); false when the
// byte before `end` is not a newline or the file cannot be read.
bool line_ending_at(const fs::path& file, std::uint64_t end, std::string& line) {
    std::ifstream in(file, std::ios::binary);
    if (!in || end == 0) return false;
    in.seekg(0, std::ios::end);
    if (static_cast<std::uint64_t>(in.tellg()) < end) return false;
    const auto to = static_cast<std::streamoff>(end);
    // Lines can hold megabytes of code (before --audit-code-limit): read back until one starts.
    for (std::streamoff chunk = 64 << 10;; chunk *= 2) {
        const std::streamoff from = std::max<std::streamoff>(0, to - chunk);
        std::string tail(static_cast<std::size_t>(to - from), '\0');
        in.seekg(from);
        if (!in.read(tail.data(), static_cast<std::streamsize>(tail.size()))) return false;
        if (tail.back() != '\n') return false;
        tail.pop_back();
        const auto nl = tail.rfind('\n');
        if (nl != std::string::npos || from == 0) {
            line = nl == std::string::npos ? tail : tail.substr(nl + 1);
            return true;
        }
    }
}

// The last line of a file; false when it does not end in a newline. `size` is the file's.
bool last_line(const fs::path& file, std::string& line, std::uint64_t& size) {
    std::error_code ec;
    size = fs::is_regular_file(file, ec) ? fs::file_size(file, ec) : 0;
    if (ec) return false;
    return size == 0 || line_ending_at(file, size, line);
}

bool first_line(const fs::path& file, std::string& line) {
    std::ifstream in(file, std::ios::binary);
    line.clear();
    for (char c; in.get(c);) {
        if (c == '\n') return true;
        if (line.size() >= first_line_limit) return false;
        line += c;
    }
    return false;
}

bool write_all(int fd, std::string_view text) {
    while (!text.empty()) {
        const ssize_t n = ::write(fd, text.data(), text.size());
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) return false;
        text.remove_prefix(static_cast<std::size_t>(n));
    }
    return true;
}

// The key of the chain, from its file, or a new one written there. A key others can read
// proves nothing (they can rewrite the log and every MAC), so such a file is refused.
chain_key load_or_create_key(const fs::path& file) {
    if (file.empty()) throw std::runtime_error("no key file for the audit chain (--audit-key)");
    unique_fd fd(::open(file.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC));
    if (!fd && errno == ENOENT) {
        std::error_code ec;
        if (file.has_parent_path()) fs::create_directories(file.parent_path(), ec);
        const chain_key key = chain_key::generate();
        unique_fd out(
            ::open(file.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600));
        // Durable before the first line it MACs: without it, that line could not be verified.
        if (!out || !write_all(out.get(), key.text()) || ::fsync(out.get()) != 0)
            throw std::runtime_error("cannot create the audit key " + file.string() + ": " +
                                     errno_text());
        return key;
    }
    if (!fd)
        throw std::runtime_error("cannot read the audit key " + file.string() + ": " +
                                 errno_text());
    struct stat st {};
    if (::fstat(fd.get(), &st) != 0 || !S_ISREG(st.st_mode))
        throw std::runtime_error("the audit key " + file.string() + " is not a regular file");
    if (st.st_uid != ::geteuid())
        throw std::runtime_error("the audit key " + file.string() + " belongs to uid " +
                                 std::to_string(st.st_uid) + ", not to this gateway's uid " +
                                 std::to_string(::geteuid()));
    if ((st.st_mode & 077) != 0) {
        char mode[8];
        std::snprintf(mode, sizeof mode, "%04o", static_cast<unsigned>(st.st_mode & 07777));
        throw std::runtime_error(
            "the audit key " + file.string() + " can be read or written by others (mode " + mode +
            "): whoever reads it can rewrite the log undetected; chmod 600 it");
    }
    char buf[256];
    const ssize_t n = ::read(fd.get(), buf, sizeof buf);
    auto key = n > 0 ? chain_key::from_text(std::string_view(buf, static_cast<std::size_t>(n)))
                     : std::nullopt;
    if (!key)
        throw std::runtime_error("the audit key " + file.string() +
                                 " is not an audit key (64 hex characters)");
    return *key;
}

}  // namespace

std::filesystem::path audit_log::anchor_file(const std::filesystem::path& key_file) {
    return fs::path(key_file).replace_extension(".anchor");
}

std::optional<chain_key> read_key_file(const std::filesystem::path& file, std::string& why) {
    std::ifstream in(file, std::ios::binary);
    if (!in) {
        why = "cannot read " + file.string() + ": " + errno_text();
        return std::nullopt;
    }
    std::string text(256, '\0');
    in.read(text.data(), static_cast<std::streamsize>(text.size()));
    text.resize(static_cast<std::size_t>(in.gcount()));
    auto key = chain_key::from_text(text);
    if (!key) why = file.string() + " is not an audit key (64 hex characters)";
    return key;
}

std::optional<chain_anchor> read_anchor_file(const std::filesystem::path& file,
                                             const chain_key& key, std::string& why) {
    std::ifstream in(file, std::ios::binary);
    if (!in) {
        why = "cannot read " + file.string() + ": " + errno_text();
        return std::nullopt;
    }
    std::string text(64 << 10, '\0');
    in.read(text.data(), static_cast<std::streamsize>(text.size()));
    text.resize(static_cast<std::size_t>(in.gcount()));
    auto anchor = parse_anchor(key, text, why);
    if (!anchor) why = file.string() + ": " + why;
    return anchor;
}

audit_log::audit_log(audit_settings settings, logger log)
    : settings_(std::move(settings)),
      log_(std::move(log)),
      key_(load_or_create_key(settings_.key_file)),
      anchor_path_(anchor_file(settings_.key_file)) {
    const fs::path& file = settings_.file;
    if (anchor_path_ == settings_.key_file)
        throw std::runtime_error("the audit key " + settings_.key_file.string() +
                                 " is named like its anchor: give it another name");
    std::optional<chain_anchor> anchor;
    std::error_code ec;
    if (fs::exists(anchor_path_, ec)) {
        std::string why;
        anchor = read_anchor_file(anchor_path_, key_, why);
        if (!anchor)
            throw std::runtime_error("the audit anchor is not valid (" + why +
                                     "): it was edited, or belongs to another key");
        if (anchor->log != file.string())
            throw std::runtime_error("the audit anchor " + anchor_path_.string() +
                                     " belongs to the audit log " + anchor->log + ", not " +
                                     file.string() + ": give each log its own --audit-key");
        anchored_seq_ = anchor->seq;
    }

    // The chain goes on from the newest line there is: this file's, or after a rotation that
    // left it empty, the newest rotated file's.
    std::optional<read_line> last;
    for (const fs::path& candidate : {file, rotated(file, 1)}) {
        if (!fs::exists(candidate, ec)) continue;
        std::string line;
        std::uint64_t size = 0;
        std::string why = "the last line is incomplete";
        const bool complete = last_line(candidate, line, size);
        if (complete && size == 0) continue;
        if (complete) last = parse_line(key_, line, why);
        if (!last)
            throw std::runtime_error(
                "the audit log " + candidate.string() +
                " does not end with a line of this key's chain (" + why +
                "): a crash while writing, an edit, or another key? Check it with `callisto "
                "audit-verify`, then move it aside");
        end_seq_ = last->seq;
        end_mac_ = last->mac;
        end_offset_ = size;
        break;
    }

    std::string anchor_state = anchor ? "found" : last ? "missing" : "new";
    if (anchor && !anchored_line_present(*anchor)) {
        std::lock_guard lock(mutex_);
        std::string what = "the audit log " + file.string() +
                           (last ? " ends at seq " + std::to_string(end_seq_) : " has no lines") +
                           ", but this gateway had written up to seq " +
                           std::to_string(anchor->seq) + " (its anchor " + anchor_path_.string() +
                           "): lines were cut from its end";
        const bool recorded = last && last->record.value("event", "") == "truncated" &&
                              last->record.value("anchor_seq", std::uint64_t{0}) == anchor->seq &&
                              last->record.value("anchor_mac", "") == anchor->mac;
        if (recorded) {
            what += " (recorded at seq " + std::to_string(end_seq_) + " by an earlier start)";
        } else {
            const nlohmann::json record = {
                {"event", "truncated"},
                {"time", kernelproto::format_iso_time(std::chrono::system_clock::now())},
                {"found_seq", end_seq_},
                {"anchor_seq", anchor->seq},
                {"anchor_mac", anchor->mac}};
            // Past the anchor's seq: no seq is ever used twice, and the gap shows.
            auto r = append_locked(record, std::max(end_seq_, anchor->seq) + 1);
            if (!r.error.empty())
                throw std::runtime_error(what + "; and that could not be recorded: " + r.error);
            what += "; recorded at seq " + std::to_string(r.seq);
        }
        if (settings_.required)
            throw std::runtime_error(
                what +
                ". `callisto audit-verify` reports it. To go on with this log anyway, start once "
                "with --audit-required=off; to begin a new one, move the log, its rotated files "
                "and the anchor aside");
        log_.error(what + "; going on with it (--audit-required=off)");
        anchor_state = "cut";
    }

    {
        std::lock_guard lock(mutex_);
        open_locked();
        if (!fd_) throw std::runtime_error(last_error_);
        const nlohmann::json record = {
            {"event", "open"},
            {"time", kernelproto::format_iso_time(std::chrono::system_clock::now())},
            {"pid", ::getpid()},
            {"anchor_state", anchor_state}};
        if (auto r = append_locked(record); !r.error.empty())
            log_.error("the audit log's first line could not be written (" + r.error +
                       "): executions are refused until a line can be");
    }
    if (anchor_state == "missing")
        log_.warn("no audit anchor at " + anchor_path_.string() +
                  ": a cut of the log's end before this start cannot be detected; the log says "
                  "so at seq " +
                  std::to_string(end_seq_));
    sync();
    if (settings_.sync_interval.count() > 0)
        sync_thread_ = std::jthread([this](std::stop_token stop) {
            std::unique_lock lock(wake_mutex_);
            while (!stop.stop_requested()) {
                wake_.wait_for(lock, stop, settings_.sync_interval, [] { return false; });
                if (stop.stop_requested()) break;
                lock.unlock();
                sync();
                lock.lock();
            }
        });
}

audit_log::~audit_log() {
    if (sync_thread_.joinable()) {
        sync_thread_.request_stop();
        sync_thread_.join();
    }
    sync();
}

bool audit_log::anchored_line_present(const chain_anchor& anchor) const {
    if (end_seq_ < anchor.seq) return false;
    if (end_seq_ == anchor.seq) return end_mac_ == anchor.mac;
    // Later lines were written after the anchor was (at most a second's, or a crash's): the
    // anchored line must still be where it was, in the log or a file rotated since.
    for (std::size_t n = 0;; ++n) {
        const fs::path candidate = n == 0 ? settings_.file : rotated(settings_.file, n);
        std::error_code ec;
        if (!fs::exists(candidate, ec)) return false;
        std::string line, why;
        if (!line_ending_at(candidate, anchor.offset, line)) continue;
        if (auto r = parse_line(key_, line, why); r && r->seq == anchor.seq && r->mac == anchor.mac)
            return true;
    }
}

void audit_log::open_locked() {
    const fs::path& file = settings_.file;
    fd_.reset(::open(file.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0600));
    if (!fd_) {
        last_error_ = "cannot open the audit log " + file.string() + ": " + errno_text();
        return;
    }
    struct stat st {};
    size_ = ::fstat(fd_.get(), &st) == 0 ? static_cast<std::uint64_t>(st.st_size) : 0;
}

nlohmann::json audit_log::start_json(const execution_start& s) const {
    nlohmann::json j = {
        {"event", "run"},
        {"time", kernelproto::format_iso_time(s.started)},
        {"user", s.user},
        {"api", s.api},
        {"kernel", s.kernel_id},
        {"execution", s.execution_id},
        {"code_sha256", sha256_hex(s.code)},
        {"code_bytes", s.code.size()},
    };
    j["context"] = s.context_id.empty() ? nlohmann::json(nullptr) : nlohmann::json(s.context_id);
    // Past the limit, only the hash and size: one user's execution cannot fill the log's disk
    // or push the lines before it out of the kept files by its size alone.
    if (s.code.size() > settings_.code_limit)
        j["code_over_limit"] = true;
    else if (settings_.record_code)
        j["code"] = s.code;
    if (!s.request.empty()) j["request"] = s.request;
    if (s.user_expressions && !s.user_expressions->is_null()) {
        const std::string expressions =
            s.user_expressions->dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
        j["user_expressions_sha256"] = sha256_hex(expressions);
        j["user_expressions_bytes"] = expressions.size();
        if (expressions.size() > settings_.code_limit)
            j["user_expressions_over_limit"] = true;
        else if (settings_.record_code)
            j["user_expressions"] = *s.user_expressions;
    }
    return j;
}

std::string audit_log::write_locked(const std::string& text) {
    std::size_t written = 0;
    while (written < text.size()) {
        const ssize_t n = ::write(fd_.get(), text.data() + written, text.size() - written);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) {
            const int err = n < 0 ? errno : ENOSPC;
            // A torn line would end the file in something no start can continue: take it back.
            if (written != 0) {
                [[maybe_unused]] const int rc = ::ftruncate(fd_.get(), static_cast<off_t>(size_));
            }
            return "writing " + settings_.file.string() + ": " + std::strerror(err);
        }
        written += static_cast<std::size_t>(n);
    }
    size_ += written;
    return {};
}

audit_log::appended audit_log::append_locked(const nlohmann::json& record, std::uint64_t seq) {
    if (!fd_) open_locked();
    if (!fd_) return {0, last_error_};
    auto line = chain_line(key_, record, seq ? seq : end_seq_ + 1, end_mac_);
    if (settings_.rotate_bytes != 0 && size_ != 0 &&
        size_ + line.text.size() + 1 > settings_.rotate_bytes) {
        if (auto why = rotate_locked(); !why.empty()) return {0, last_error_ = why};
        line = chain_line(key_, record, seq ? seq : end_seq_ + 1, end_mac_);
    }
    const std::uint64_t written_seq = seq ? seq : end_seq_ + 1;
    if (auto why = write_locked(line.text + '\n'); !why.empty()) return {0, last_error_ = why};
    end_seq_ = written_seq;
    end_mac_ = line.mac;
    end_offset_ = size_;
    last_error_.clear();
    return {written_seq, {}};
}

std::string audit_log::rotate_locked() {
    const fs::path& file = settings_.file;
    // On disk and anchored before it is renamed: the anchor then names a line that is there.
    if (end_seq_ != 0) {
        if (::fdatasync(fd_.get()) == 0)
            write_anchor({file.string(), end_seq_, end_mac_, end_offset_});
        else
            log_.warn("fdatasync of the audit log before its rotation: " + errno_text());
    }
    std::error_code ec;
    std::size_t highest = 0;
    while (fs::exists(rotated(file, highest + 1), ec)) ++highest;
    bool deleted = false;
    for (std::size_t n = highest; n >= 1; --n) {
        if (settings_.keep != 0 && n >= settings_.keep) {
            fs::remove(rotated(file, n), ec);
            deleted = true;
        } else {
            fs::rename(rotated(file, n), rotated(file, n + 1), ec);
        }
        if (ec) return "cannot rotate " + rotated(file, n).string() + ": " + ec.message();
    }
    fd_.reset();
    fs::rename(file, rotated(file, 1), ec);
    if (ec) return "cannot rotate " + file.string() + ": " + ec.message();
    open_locked();
    if (!fd_) return last_error_;
    // The new file's first line: where a chain may begin once older files are gone, and what
    // this rotation deleted (everything before the oldest file kept), so audit-verify can tell
    // lines deleted by rotation from lines removed by hand.
    nlohmann::json record = {
        {"event", "rotate"},
        {"time", kernelproto::format_iso_time(std::chrono::system_clock::now())}};
    if (deleted) {
        std::string line, why;
        if (first_line(rotated(file, settings_.keep), line))
            if (auto oldest = parse_line(key_, line, why))
                record["deleted_through"] = oldest->seq - 1;
        if (!record.contains("deleted_through"))
            log_.warn(
                "the oldest audit file kept does not begin with a line of the chain: "
                "its rotation line cannot say what was deleted");
    }
    auto rotate_line = chain_line(key_, record, end_seq_ + 1, end_mac_);
    if (auto why = write_locked(rotate_line.text + '\n'); !why.empty()) return why;
    end_seq_ += 1;
    end_mac_ = rotate_line.mac;
    end_offset_ = size_;
    return {};
}

void audit_log::write_anchor(const chain_anchor& anchor) {
    std::lock_guard lock(anchor_mutex_);
    if (anchor.seq <= anchored_seq_) return;
    const std::string tmp = anchor_path_.string() + ".tmp";
    unique_fd fd(::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600));
    // Renamed into place whole: a crash leaves the old anchor or the new one, never half.
    if (!fd || !write_all(fd.get(), anchor_text(key_, anchor)) ||
        ::rename(tmp.c_str(), anchor_path_.c_str()) != 0) {
        log_.warn("cannot write the audit anchor " + anchor_path_.string() + ": " + errno_text() +
                  " (the previous one stays)");
        return;
    }
    anchored_seq_ = anchor.seq;
}

void audit_log::sync() {
    unique_fd fd;
    chain_anchor anchor;
    {
        std::lock_guard lock(mutex_);
        if (!fd_ || end_seq_ <= anchored_seq_) return;
        fd.reset(::dup(fd_.get()));
        anchor = {settings_.file.string(), end_seq_, end_mac_, end_offset_};
    }
    // The log on disk first, then the anchor: after a crash of the machine the anchor never
    // names a line the disk lost.
    if (!fd || ::fdatasync(fd.get()) != 0) {
        log_.warn("fdatasync of the audit log: " + errno_text());
        return;
    }
    write_anchor(anchor);
}

start_result audit_log::record_start(const execution_start& start) {
    const nlohmann::json record = start_json(start);
    std::lock_guard lock(mutex_);
    struct statvfs vfs {};
    if (fd_ && ::fstatvfs(fd_.get(), &vfs) == 0 &&
        static_cast<std::uint64_t>(vfs.f_bavail) * vfs.f_frsize < min_free_bytes)
        return {0, "the audit log's disk is full (less than 1 MiB free)"};
    auto r = append_locked(record);
    if (!r.error.empty()) return {0, "the audit log cannot be written (" + r.error + ")"};
    remember_locked(record, r.seq);
    return {r.seq, {}};
}

std::string audit_log::record_end(const execution_end& e) {
    nlohmann::json record = {
        {"event", "end"},
        {"time", kernelproto::format_iso_time(e.finished)},
        {"user", e.user},
        {"api", e.api},
        {"execution", e.execution_id},
        {"status", e.status},
        {"duration_s", std::round(e.duration.count() * 1e6) / 1e6},
        {"output_bytes", e.output_bytes},
        {"files_written", e.files_written},
    };
    record["run_seq"] = e.run_seq ? nlohmann::json(e.run_seq) : nlohmann::json(nullptr);
    std::lock_guard lock(mutex_);
    auto r = append_locked(record);
    if (!r.error.empty()) return r.error;
    for (auto& run : latest_)
        if (run.value("seq", std::uint64_t{0}) == e.run_seq && e.run_seq != 0) {
            for (const char* field : {"status", "duration_s", "output_bytes", "files_written"})
                run[field] = record[field];
            break;
        }
    return {};
}

std::string audit_log::record_egress(const egress_attempt& a) {
    const nlohmann::json record = {
        {"event", "egress"},
        {"time", kernelproto::format_iso_time(a.finished)},
        {"user", a.user},
        {"kernel", a.kernel_id},
        {"method", a.method},
        {"host", a.host},
        {"port", a.port},
        {"address", a.address},
        {"decision", a.allowed ? "allowed" : "refused"},
        {"rule", a.rule},
        {"reason", a.reason},
        {"status", a.status},
        {"ended", a.ended},
        {"bytes_up", a.bytes_up},
        {"bytes_down", a.bytes_down},
        {"duration_s", std::round(a.duration.count() * 1e6) / 1e6},
    };
    std::lock_guard lock(mutex_);
    return append_locked(record).error;
}

std::string audit_log::record_operation(const context_operation& op) {
    nlohmann::json record = {
        {"event", "context"},        {"time", kernelproto::format_iso_time(op.time)},
        {"operation", op.operation}, {"user", op.user},
        {"context", op.context_id},
    };
    // What the operation says of itself, never over the fields above.
    if (op.details.is_object())
        for (const auto& [name, value] : op.details.items())
            if (!record.contains(name)) record[name] = value;
    std::lock_guard lock(mutex_);
    return append_locked(record).error;
}

void audit_log::remember_locked(const nlohmann::json& record, std::uint64_t seq) {
    constexpr std::size_t latest_kept = 100;
    constexpr std::size_t code_shown = 500;
    nlohmann::json shown = record;
    shown["seq"] = seq;
    shown["status"] = "running";
    if (auto it = shown.find("code"); it != shown.end() && it->is_string()) {
        auto& code = it->get_ref<std::string&>();
        if (code.size() > code_shown) {
            // Cut between characters: code is UTF-8 (it came through JSON).
            std::size_t cut = code_shown;
            while (cut > 0 && (static_cast<unsigned char>(code[cut]) & 0xC0) == 0x80) --cut;
            code = code.substr(0, cut) + "…";
        }
    }
    latest_.push_front(std::move(shown));
    if (latest_.size() > latest_kept) latest_.pop_back();
}

nlohmann::json audit_log::latest(std::size_t limit) const {
    std::lock_guard lock(mutex_);
    nlohmann::json out = nlohmann::json::array();
    for (const auto& r : latest_) {
        if (out.size() >= limit) break;
        out.push_back(r);
    }
    return out;
}

int verify_files(const chain_key& key, const std::optional<chain_anchor>& anchor,
                 const std::vector<std::string>& files, std::string& report) {
    chain_verifier chain(key, anchor);
    for (const auto& file : files) {
        std::ifstream in(file, std::ios::binary);
        if (!in) {
            chain.broken(file + ": cannot read it: " + errno_text());
            continue;
        }
        std::string line;
        std::size_t number = 0;
        while (std::getline(in, line)) {
            ++number;
            const std::string where = file + ":" + std::to_string(number);
            if (in.eof()) {
                chain.broken(where + ": the last line is incomplete (no newline)");
                break;
            }
            chain.add(line, where);
        }
    }
    const verdict v = chain.finish();
    report = chain.report();
    return static_cast<int>(v);
}

}  // namespace callisto::gateway::audit
