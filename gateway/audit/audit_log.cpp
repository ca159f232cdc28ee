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

// Below this much free space an execution is refused: its line might not fit.
constexpr std::uint64_t min_free_bytes = 1u << 20;

fs::path rotated(const fs::path& file, std::size_t n) {
    return fs::path(file.string() + "." + std::to_string(n));
}

// The last line of a file (without its newline); false when the file does not end in one.
bool last_line(const fs::path& file, std::string& line, bool& empty) {
    std::ifstream in(file, std::ios::binary);
    if (!in) return false;
    in.seekg(0, std::ios::end);
    const std::streamoff size = in.tellg();
    empty = size == 0;
    if (empty) return true;
    // Lines can hold megabytes of code: read back from the end until a line starts.
    for (std::streamoff chunk = 64 << 10;; chunk *= 2) {
        const std::streamoff from = std::max<std::streamoff>(0, size - chunk);
        std::string tail(static_cast<std::size_t>(size - from), '\0');
        in.seekg(from);
        in.read(tail.data(), static_cast<std::streamsize>(tail.size()));
        if (tail.back() != '\n') return false;
        tail.pop_back();
        const auto nl = tail.rfind('\n');
        if (nl != std::string::npos || from == 0) {
            line = nl == std::string::npos ? tail : tail.substr(nl + 1);
            return true;
        }
    }
}

}  // namespace

audit_log::audit_log(audit_settings settings) : settings_(std::move(settings)) {
    const fs::path& file = settings_.file;
    // The chain continues from the newest line there is: this file's, or after a rotation
    // that left it empty, the newest rotated file's.
    for (const fs::path& candidate : {file, rotated(file, 1)}) {
        std::error_code ec;
        if (!fs::exists(candidate, ec)) continue;
        std::string line;
        bool empty = false;
        if (!last_line(candidate, line, empty) || (!empty && !read_chain_end(line, end_)))
            throw std::runtime_error(
                "the audit log " + candidate.string() +
                " does not end with a complete audit line (a crash while writing, or an "
                "edit?): check it with `callisto audit-verify`, then move it aside");
        if (!empty) break;
    }
    open_locked();
    if (!fd_) throw std::runtime_error(last_error_);
}

void audit_log::open_locked() {
    const fs::path& file = settings_.file;
    fd_.reset(::open(file.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0600));
    if (!fd_) {
        last_error_ = "cannot open the audit log " + file.string() + ": " + std::strerror(errno);
        return;
    }
    struct stat st {};
    size_ = ::fstat(fd_.get(), &st) == 0 ? static_cast<std::uint64_t>(st.st_size) : 0;
}

std::string audit_log::refuse_reason() const {
    std::lock_guard lock(mutex_);
    if (!last_error_.empty()) return "the audit log cannot be written (" + last_error_ + ")";
    struct statvfs vfs {};
    if (::fstatvfs(fd_.get(), &vfs) == 0 &&
        static_cast<std::uint64_t>(vfs.f_bavail) * vfs.f_frsize < min_free_bytes)
        return "the audit log's disk is full";
    return {};
}

nlohmann::json audit_log::to_json(const execution_entry& e) const {
    nlohmann::json j = {
        {"time", kernelproto::format_iso_time(e.started)},
        {"user", e.user},
        {"api", e.api},
        {"kernel", e.kernel_id},
        {"execution", e.execution_id},
        {"code_sha256", sha256_hex(e.code)},
        {"code_bytes", e.code.size()},
        {"status", e.status},
        {"duration_s", std::round(e.duration.count() * 1e6) / 1e6},
        {"output_bytes", e.output_bytes},
        {"files_written", e.files_written},
    };
    j["context"] = e.context_id.empty() ? nlohmann::json(nullptr) : nlohmann::json(e.context_id);
    if (settings_.record_code) j["code"] = e.code;
    if (!e.request.empty()) j["request"] = e.request;
    if (!e.user_expressions.is_null()) {
        const std::string expressions = e.user_expressions.dump();
        j["user_expressions_sha256"] = sha256_hex(expressions);
        if (settings_.record_code) j["user_expressions"] = e.user_expressions;
    }
    return j;
}

std::string audit_log::rotate_locked() {
    const fs::path& file = settings_.file;
    std::error_code ec;
    std::size_t highest = 0;
    while (fs::exists(rotated(file, highest + 1), ec)) ++highest;
    for (std::size_t n = highest; n >= 1; --n) {
        if (settings_.keep != 0 && n >= settings_.keep) {
            fs::remove(rotated(file, n), ec);
        } else {
            fs::rename(rotated(file, n), rotated(file, n + 1), ec);
        }
        if (ec) return "cannot rotate " + rotated(file, n).string() + ": " + ec.message();
    }
    fd_.reset();
    fs::rename(file, rotated(file, 1), ec);
    if (ec) return "cannot rotate " + file.string() + ": " + ec.message();
    open_locked();
    return last_error_;
}

std::string audit_log::record(const execution_entry& entry) {
    const nlohmann::json record = to_json(entry);
    std::lock_guard lock(mutex_);
    auto line = chain_line(record, end_.seq + 1, end_.hash);
    line.text += '\n';
    if (settings_.rotate_bytes != 0 && size_ != 0 &&
        size_ + line.text.size() > settings_.rotate_bytes) {
        if (auto why = rotate_locked(); !why.empty()) return last_error_ = why;
    }
    if (!fd_) open_locked();
    if (!fd_) return last_error_;
    std::size_t written = 0;
    while (written < line.text.size()) {
        const ssize_t n =
            ::write(fd_.get(), line.text.data() + written, line.text.size() - written);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) {
            const int err = n < 0 ? errno : ENOSPC;
            // A torn line would break the chain for every line after it: take it back.
            if (written != 0) {
                [[maybe_unused]] const int rc = ::ftruncate(fd_.get(), static_cast<off_t>(size_));
            }
            return last_error_ = "writing " + settings_.file.string() + ": " + std::strerror(err);
        }
        written += static_cast<std::size_t>(n);
    }
    size_ += written;
    end_ = {line.hash, end_.seq + 1};
    last_error_.clear();
    remember_locked(record, end_.seq);
    return {};
}

void audit_log::remember_locked(nlohmann::json record, std::uint64_t seq) {
    constexpr std::size_t latest_kept = 100;
    constexpr std::size_t code_shown = 500;
    record["seq"] = seq;
    if (auto it = record.find("code"); it != record.end() && it->is_string()) {
        auto& code = it->get_ref<std::string&>();
        if (code.size() > code_shown) {
            // Cut between characters: code is UTF-8 (it came through JSON).
            std::size_t cut = code_shown;
            while (cut > 0 && (static_cast<unsigned char>(code[cut]) & 0xC0) == 0x80) --cut;
            code = code.substr(0, cut) + "…";
        }
    }
    latest_.push_front(std::move(record));
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

int verify_files(const std::vector<std::string>& files, std::string& report) {
    chain_verifier chain;
    for (const auto& file : files) {
        std::ifstream in(file, std::ios::binary);
        if (!in) {
            report = file + ": cannot read it: " + std::strerror(errno) + "\n";
            return 1;
        }
        std::string line;
        std::size_t number = 0;
        while (std::getline(in, line)) {
            ++number;
            if (in.eof()) {
                report = file + ":" + std::to_string(number) +
                         ": the last line is incomplete (no newline)\n";
                return 1;
            }
            if (auto why = chain.add(line); !why.empty()) {
                report = file + ":" + std::to_string(number) + ": broken: " + why + "\n";
                return 1;
            }
        }
    }
    report = "intact: " + std::to_string(chain.lines()) + " lines in " +
             std::to_string(files.size()) + (files.size() == 1 ? " file" : " files") +
             (chain.starts_mid_chain() ? " (continuing a chain whose earlier files were not given)"
                                       : "") +
             "\n";
    return 0;
}

}  // namespace callisto::gateway::audit
