#include "gateway/http/tls_context.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>
#include <string>

#include <openssl/err.h>
#include <openssl/ssl.h>
#include <boost/asio/buffer.hpp>

#include "common/unique_fd.hpp"

namespace callisto::gateway {
namespace {

namespace ssl = boost::asio::ssl;

std::string openssl_reason(const boost::system::error_code& ec) {
    std::string reason = ec.message();
    // Asio's message is often "asio.ssl error"; OpenSSL's own queue says more.
    if (unsigned long e = ::ERR_get_error()) {
        char buf[256];
        ::ERR_error_string_n(e, buf, sizeof buf);
        reason = buf;
    }
    ::ERR_clear_error();
    return reason;
}

// Certificate files are a few KiB; a CA bundle some hundreds.
constexpr off_t max_file_bytes = 4 << 20;

[[noreturn]] void refuse(const char* option, const std::filesystem::path& file,
                         const std::string& why) {
    throw std::runtime_error(std::string(option) + " " + file.string() + ": " + why);
}

const char* file_type(mode_t mode) {
    if (S_ISFIFO(mode)) return "a FIFO";
    if (S_ISDIR(mode)) return "a directory";
    if (S_ISCHR(mode)) return "a character device";
    if (S_ISBLK(mode)) return "a block device";
    if (S_ISSOCK(mode)) return "a socket";
    return "a special file";
}

// The file's bytes, read by us rather than by OpenSSL: a reload runs where signals are handled,
// and opening a FIFO, or reading one or a device, would block there (and every later signal
// with it). O_NONBLOCK keeps the open from waiting for a FIFO's writer; only a regular file,
// which never blocks, is read.
std::string read_regular_file(const char* option, const std::filesystem::path& file) {
    unique_fd fd(::open(file.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY));
    if (!fd) refuse(option, file, std::strerror(errno));
    struct stat st {};
    if (::fstat(fd.get(), &st) != 0) refuse(option, file, std::strerror(errno));
    if (!S_ISREG(st.st_mode))
        refuse(option, file, std::string("is ") + file_type(st.st_mode) + ", not a regular file");
    if (st.st_size > max_file_bytes)
        refuse(option, file,
               "is larger than " + std::to_string(max_file_bytes >> 20) + " MiB: not a PEM file");
    std::string bytes;
    char buf[16384];
    for (;;) {
        const ssize_t n = ::read(fd.get(), buf, sizeof buf);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) refuse(option, file, std::strerror(errno));
        if (n == 0) break;
        bytes.append(buf, static_cast<std::size_t>(n));
        if (bytes.size() > static_cast<std::size_t>(max_file_bytes))
            refuse(option, file,
                   "grew past " + std::to_string(max_file_bytes >> 20) + " MiB while it was read");
    }
    return bytes;
}

template <class F>
void use(const char* option, const std::filesystem::path& file, F&& f) {
    const std::string bytes = read_regular_file(option, file);
    boost::system::error_code ec;
    f(boost::asio::buffer(bytes), ec);
    if (ec) refuse(option, file, openssl_reason(ec));
}

}  // namespace

tls_context::tls_context(tls_files files) : files_(std::move(files)), current_(load(files_)) {}

std::shared_ptr<ssl::context> tls_context::current() const {
    std::lock_guard lock(mutex_);
    return current_;
}

void tls_context::reload() {
    auto fresh = load(files_);
    std::lock_guard lock(mutex_);
    current_ = std::move(fresh);
}

std::shared_ptr<ssl::context> tls_context::load(const tls_files& files) {
    auto ctx = std::make_shared<ssl::context>(ssl::context::tls_server);
    ctx->set_options(ssl::context::default_workarounds | ssl::context::no_sslv2 |
                     ssl::context::no_sslv3 | ssl::context::no_tlsv1 | ssl::context::no_tlsv1_1 |
                     ssl::context::single_dh_use);
    ::SSL_CTX_set_min_proto_version(ctx->native_handle(), TLS1_2_VERSION);
    use("--certfile", files.certfile,
        [&](auto pem, auto& ec) { ctx->use_certificate_chain(pem, ec); });
    use("--keyfile", files.keyfile,
        [&](auto pem, auto& ec) { ctx->use_private_key(pem, ssl::context::pem, ec); });
    if (::SSL_CTX_check_private_key(ctx->native_handle()) != 1) {
        ::ERR_clear_error();
        throw std::runtime_error("--keyfile " + files.keyfile.string() +
                                 ": the key does not match the certificate in " +
                                 files.certfile.string());
    }
    if (!files.client_ca.empty()) {
        use("--client-ca", files.client_ca,
            [&](auto pem, auto& ec) { ctx->add_certificate_authority(pem, ec); });
        ctx->set_verify_mode(ssl::verify_peer | ssl::verify_fail_if_no_peer_cert);
    }
    // OpenSSL refuses to resume a session that verified a client certificate (alert 80,
    // internal error) unless the context names the sessions it made; each reload makes a new
    // context with its own cache and ticket keys, so one fixed name cannot mix them.
    static constexpr unsigned char session_id_context[] = "callisto";
    if (::SSL_CTX_set_session_id_context(ctx->native_handle(), session_id_context,
                                         sizeof session_id_context - 1) != 1) {
        ::ERR_clear_error();
        throw std::runtime_error("TLS: cannot set the session id context");
    }
    return ctx;
}

}  // namespace callisto::gateway
