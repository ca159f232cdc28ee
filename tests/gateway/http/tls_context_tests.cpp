// The server's TLS context: what it loads, what it refuses, and sessions resumed with it,
// handshakes run in memory (no socket).

#include "gateway/http/tls_context.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <memory>
#include <stdexcept>
#include <string>

#include <doctest/doctest.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>

using namespace callisto::gateway;
namespace fs = std::filesystem;

namespace {

template <class T, void (*F)(T*)>
struct openssl_free {
    void operator()(T* p) const { F(p); }
};
using pkey_ptr = std::unique_ptr<EVP_PKEY, openssl_free<EVP_PKEY, EVP_PKEY_free>>;
using x509_ptr = std::unique_ptr<X509, openssl_free<X509, X509_free>>;
using ssl_ptr = std::unique_ptr<SSL, openssl_free<SSL, SSL_free>>;
using ssl_ctx_ptr = std::unique_ptr<SSL_CTX, openssl_free<SSL_CTX, SSL_CTX_free>>;
using session_ptr = std::unique_ptr<SSL_SESSION, openssl_free<SSL_SESSION, SSL_SESSION_free>>;

std::string pem(int (*write)(BIO*, void*), void* what) {
    BIO* bio = BIO_new(BIO_s_mem());
    REQUIRE(write(bio, what) == 1);
    char* data = nullptr;
    const long n = BIO_get_mem_data(bio, &data);
    std::string text(data, static_cast<std::size_t>(n));
    BIO_free(bio);
    return text;
}

// A self-signed P-256 certificate named `cn` and its key, as PEM.
struct identity {
    std::string cert_pem;
    std::string key_pem;
};

identity make_identity(const char* cn) {
    pkey_ptr key(EVP_EC_gen("P-256"));
    REQUIRE(key);
    x509_ptr cert(X509_new());
    ASN1_INTEGER_set(X509_get_serialNumber(cert.get()), 1);
    X509_gmtime_adj(X509_getm_notBefore(cert.get()), -60);
    X509_gmtime_adj(X509_getm_notAfter(cert.get()), 24 * 3600);
    X509_NAME* name = X509_get_subject_name(cert.get());
    X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC, reinterpret_cast<const unsigned char*>(cn),
                               -1, -1, 0);
    X509_set_issuer_name(cert.get(), name);
    X509_set_pubkey(cert.get(), key.get());
    REQUIRE(X509_sign(cert.get(), key.get(), EVP_sha256()) > 0);
    identity id;
    id.cert_pem = pem([](BIO* b, void* c) { return PEM_write_bio_X509(b, static_cast<X509*>(c)); },
                      cert.get());
    id.key_pem = pem(
        [](BIO* b, void* k) {
            return PEM_write_bio_PrivateKey(b, static_cast<EVP_PKEY*>(k), nullptr, nullptr, 0,
                                            nullptr, nullptr);
        },
        key.get());
    return id;
}

// A temporary directory with a server identity (server.pem, server.key) and a client one
// (client.pem, client.key; client.pem also serves as the client CA).
struct tls_dir {
    fs::path dir;
    identity server = make_identity("127.0.0.1");
    identity client = make_identity("ana");

    tls_dir() {
        char tmpl[] = "/tmp/callisto-tls-test-XXXXXX";
        REQUIRE(::mkdtemp(tmpl) != nullptr);
        dir = tmpl;
        write("server.pem", server.cert_pem);
        write("server.key", server.key_pem);
        write("client.pem", client.cert_pem);
        write("client.key", client.key_pem);
    }
    ~tls_dir() {
        std::error_code ec;
        fs::remove_all(dir, ec);
    }
    void write(const std::string& name, const std::string& text) const {
        std::ofstream(dir / name) << text;
    }
    fs::path operator/(const std::string& name) const { return dir / name; }
    tls_files files(bool mutual) const {
        return {dir / "server.pem", dir / "server.key", mutual ? dir / "client.pem" : fs::path()};
    }
};

// Runs a handshake between two SSL objects over memory BIOs; true when both completed.
bool handshake(SSL* client, SSL* server) {
    BIO *client_bio = nullptr, *server_bio = nullptr;
    REQUIRE(BIO_new_bio_pair(&client_bio, 0, &server_bio, 0) == 1);
    SSL_set_bio(client, client_bio, client_bio);
    SSL_set_bio(server, server_bio, server_bio);
    SSL_set_connect_state(client);
    SSL_set_accept_state(server);
    // One side's next step, until it is done; false when it failed (other than by waiting for
    // the peer's bytes).
    const auto step = [](SSL* side, bool& done) {
        if (done) return true;
        const int r = SSL_do_handshake(side);
        done = r == 1;
        return done || SSL_get_error(side, r) == SSL_ERROR_WANT_READ;
    };
    bool client_done = false, server_done = false;
    for (int round = 0; round < 20 && !(client_done && server_done); ++round)
        if (!step(client, client_done) || !step(server, server_done)) break;
    // TLS 1.3 sends its tickets after the handshake: one exchange of data takes them in.
    if (client_done && server_done) {
        char byte = 'x';
        REQUIRE(SSL_write(server, &byte, 1) == 1);
        REQUIRE(SSL_read(client, &byte, 1) == 1);
    }
    ERR_clear_error();
    return client_done && server_done;
}

// The client closes as real clients do, with close_notify. OpenSSL marks the session of an SSL
// freed without it as not resumable (ssl_clear_bad_session: SSL_free removes it from the cache
// and sets not_resumable on the SSL_SESSION itself, which the caller's copy shares), so a
// client that merely freed its connection would offer nothing the next time. The server side
// sends nothing, as the gateway's own connections do.
void close_client(SSL* client) {
    SSL_shutdown(client);
    ERR_clear_error();
}

ssl_ctx_ptr client_context(const tls_dir& d, int version) {
    ssl_ctx_ptr ctx(SSL_CTX_new(TLS_client_method()));
    SSL_CTX_set_min_proto_version(ctx.get(), version);
    SSL_CTX_set_max_proto_version(ctx.get(), version);
    REQUIRE(SSL_CTX_use_certificate_file(ctx.get(), (d / "client.pem").c_str(), SSL_FILETYPE_PEM) ==
            1);
    REQUIRE(SSL_CTX_use_PrivateKey_file(ctx.get(), (d / "client.key").c_str(), SSL_FILETYPE_PEM) ==
            1);
    return ctx;
}

}  // namespace

TEST_CASE("tls context: a client certificate's session is resumed, with TLS 1.2 and 1.3") {
    // Without a session id context OpenSSL refused every resumption of a session that
    // verified a client certificate: alert 80, internal error.
    tls_dir d;
    tls_context server(d.files(true));
    for (int version : {TLS1_2_VERSION, TLS1_3_VERSION}) {
        INFO("version " << std::hex << version);
        auto client_ctx = client_context(d, version);
        ssl_ptr first_client(SSL_new(client_ctx.get()));
        ssl_ptr first_server(SSL_new(server.current()->native_handle()));
        REQUIRE(handshake(first_client.get(), first_server.get()));
        CHECK_FALSE(SSL_session_reused(first_client.get()));
        session_ptr session(SSL_get1_session(first_client.get()));
        REQUIRE(session);
        close_client(first_client.get());
        first_client.reset();
        first_server.reset();
        // Each time with the newest session the client holds (in TLS 1.3 a new ticket each
        // connection: the server takes each one once).
        for (int again = 0; again < 3; ++again) {
            INFO("resumption " << again);
            ssl_ptr client(SSL_new(client_ctx.get()));
            ssl_ptr srv(SSL_new(server.current()->native_handle()));
            REQUIRE(SSL_set_session(client.get(), session.get()) == 1);
            CHECK(handshake(client.get(), srv.get()));
            CHECK(SSL_session_reused(client.get()));
            CHECK(SSL_session_reused(srv.get()));
            session.reset(SSL_get1_session(client.get()));
            close_client(client.get());
        }
    }
}

TEST_CASE("tls context: a client without a certificate gets no handshake under mutual TLS") {
    tls_dir d;
    tls_context server(d.files(true));
    ssl_ctx_ptr client_ctx(SSL_CTX_new(TLS_client_method()));
    ssl_ptr client(SSL_new(client_ctx.get()));
    ssl_ptr srv(SSL_new(server.current()->native_handle()));
    CHECK_FALSE(handshake(client.get(), srv.get()));
}

TEST_CASE("tls context: a FIFO, a directory or a device given as a file is refused, unopened") {
    // Reading a FIFO blocked the SIGHUP reload, and every later signal, for ever.
    tls_dir d;
    REQUIRE(::mkfifo((d / "fifo").c_str(), 0600) == 0);
    fs::create_directory(d / "dir");
    struct bad_case {
        tls_files files;
        std::string says;
    };
    const bad_case cases[] = {
        {{d / "fifo", d / "server.key", {}}, "--certfile " + (d / "fifo").string() + ": is a FIFO"},
        {{d / "server.pem", d / "fifo", {}}, "--keyfile " + (d / "fifo").string() + ": is a FIFO"},
        {{d / "server.pem", d / "server.key", d / "fifo"},
         "--client-ca " + (d / "fifo").string() + ": is a FIFO"},
        {{d / "server.pem", d / "dir", {}}, ": is a directory, not a regular file"},
        {{d / "server.pem", "/dev/zero", {}}, "--keyfile /dev/zero: is a character device"},
        {{d / "server.pem", d / "missing.key", {}}, "No such file or directory"},
    };
    for (const auto& c : cases) {
        INFO(c.says);
        try {
            tls_context ctx(c.files);
            FAIL("loaded");
        } catch (const std::runtime_error& e) {
            CHECK(std::string(e.what()).find(c.says) != std::string::npos);
        }
    }
}

TEST_CASE("tls context: files that are not PEM, or too large to be, are refused by name") {
    tls_dir d;
    d.write("junk.pem", "not a certificate\n");
    std::ofstream(d / "huge.pem") << std::string(5 << 20, 'A');
    auto refusal = [](tls_files files) {
        try {
            tls_context ctx(std::move(files));
        } catch (const std::runtime_error& e) {
            return std::string(e.what());
        }
        return std::string("loaded");
    };
    CHECK(refusal({d / "junk.pem", d / "server.key", {}})
              .starts_with("--certfile " + (d / "junk.pem").string() + ": "));
    CHECK(refusal({d / "huge.pem", d / "server.key", {}}).find(": is larger than 4 MiB") !=
          std::string::npos);
    INFO(refusal({d / "server.pem", d / "client.key", {}}));
    CHECK(refusal({d / "server.pem", d / "client.key", {}})
              .starts_with("--keyfile " + (d / "client.key").string() + ": "));
    CHECK(refusal({d / "server.pem", d / "server.key", d / "junk.pem"})
              .starts_with("--client-ca " + (d / "junk.pem").string() + ": "));
    CHECK(refusal({d / "server.pem", d / "server.key", d / "client.pem"}) == "loaded");
}

TEST_CASE("tls context: a reload that finds a FIFO keeps the certificate in use") {
    tls_dir d;
    d.write("live.pem", d.server.cert_pem);
    d.write("live.key", d.server.key_pem);
    tls_context ctx({d / "live.pem", d / "live.key", {}});
    const auto before = ctx.current();
    fs::remove(d / "live.key");
    REQUIRE(::mkfifo((d / "live.key").c_str(), 0600) == 0);
    CHECK_THROWS_WITH_AS(ctx.reload(), doctest::Contains("is a FIFO, not a regular file"),
                         std::runtime_error);
    CHECK(ctx.current() == before);
    // Good files again: the next reload takes them.
    fs::remove(d / "live.key");
    d.write("live.pem", d.client.cert_pem);
    d.write("live.key", d.client.key_pem);
    ctx.reload();
    CHECK(ctx.current() != before);
}

TEST_CASE(
    "tls context: a TLS 1.2 session without a ticket is kept for resumption only when the "
    "server shut its connection down") {
    // What the gateway's connections rely on (client_stream::async_shutdown): OpenSSL drops
    // from its cache the session of an SSL freed before SSL_shutdown, and a client that takes
    // no tickets resumes from that cache only.
    tls_dir d;
    tls_context server(d.files(false));
    ssl_ctx_ptr client_ctx(SSL_CTX_new(TLS_client_method()));
    SSL_CTX_set_min_proto_version(client_ctx.get(), TLS1_2_VERSION);
    SSL_CTX_set_max_proto_version(client_ctx.get(), TLS1_2_VERSION);
    SSL_CTX_set_options(client_ctx.get(), SSL_OP_NO_TICKET);
    for (bool server_shuts_down : {false, true}) {
        INFO("the server shuts down: " << server_shuts_down);
        ssl_ptr first_client(SSL_new(client_ctx.get()));
        ssl_ptr first_server(SSL_new(server.current()->native_handle()));
        REQUIRE(handshake(first_client.get(), first_server.get()));
        session_ptr session(SSL_get1_session(first_client.get()));
        REQUIRE(session);
        CHECK(SSL_SESSION_get_ticket_lifetime_hint(session.get()) == 0);  // no ticket
        close_client(first_client.get());
        if (server_shuts_down) {
            SSL_shutdown(first_server.get());  // close_notify sent
            ERR_clear_error();
        }
        first_server.reset();
        first_client.reset();
        ssl_ptr client(SSL_new(client_ctx.get()));
        ssl_ptr srv(SSL_new(server.current()->native_handle()));
        REQUIRE(SSL_set_session(client.get(), session.get()) == 1);
        REQUIRE(handshake(client.get(), srv.get()));
        CHECK(SSL_session_reused(srv.get()) == (server_shuts_down ? 1 : 0));
        close_client(client.get());
        SSL_shutdown(srv.get());
        ERR_clear_error();
    }
}
