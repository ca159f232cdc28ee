#pragma once
// The server's TLS settings: its certificate chain and key (and, for mutual TLS, the CA that
// client certificates must chain to), TLS 1.2 at least. reload() reads the files again (SIGHUP):
// connections made afterwards use the new certificate, open ones keep theirs. Only regular
// files are read, never waiting on one (a FIFO, a device): a reload runs on the signal path.

#include <filesystem>
#include <memory>
#include <mutex>

#include <boost/asio/ssl/context.hpp>

namespace callisto::gateway {

struct tls_files {
    std::filesystem::path certfile;   // PEM: the certificate, then its intermediates
    std::filesystem::path keyfile;    // PEM: the private key
    std::filesystem::path client_ca;  // PEM: CA of accepted client certificates; empty: none
};

class tls_context {
public:
    // Throws std::runtime_error naming the file and OpenSSL's reason when one cannot be used.
    explicit tls_context(tls_files files);

    // The current context, for a new connection.
    std::shared_ptr<boost::asio::ssl::context> current() const;

    // Reads the files again; on an error the current context stays and the error is thrown.
    void reload();

    const tls_files& files() const { return files_; }

private:
    static std::shared_ptr<boost::asio::ssl::context> load(const tls_files& files);

    const tls_files files_;
    mutable std::mutex mutex_;
    std::shared_ptr<boost::asio::ssl::context> current_;
};

}  // namespace callisto::gateway
