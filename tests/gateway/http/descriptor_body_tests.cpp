// The body downloads are sent with: chunks of the open file, never more than one held.

#include "gateway/http/descriptor_body.hpp"

#include <doctest/doctest.h>

#include <fcntl.h>
#include <unistd.h>

#include <cstdlib>
#include <string>

#include <boost/beast/http/message.hpp>

using namespace callisto;
using namespace callisto::gateway;

namespace {

// An unlinked temporary file holding `bytes`.
unique_fd temp_file(const std::string& bytes) {
    char name[] = "/tmp/callisto-body-XXXXXX";
    unique_fd fd(::mkstemp(name));
    REQUIRE(fd.get() >= 0);
    ::unlink(name);
    REQUIRE(::write(fd.get(), bytes.data(), bytes.size()) == static_cast<ssize_t>(bytes.size()));
    return fd;
}

std::string pattern(std::size_t n) {
    std::string s(n, '\0');
    for (std::size_t i = 0; i < n; ++i) s[i] = static_cast<char>((i * 7 + i / 251) & 0xff);
    return s;
}

struct drained {
    std::string bytes;
    std::size_t chunks = 0;
    std::size_t largest = 0;
    boost::beast::error_code ec;
};

drained drain(const descriptor_body::value_type& body) {
    boost::beast::http::response_header<> header;
    descriptor_body::writer writer(header, body);
    drained out;
    writer.init(out.ec);
    if (out.ec) return out;
    while (auto next = writer.get(out.ec)) {
        const auto& [buffer, more] = *next;
        out.bytes.append(static_cast<const char*>(buffer.data()), buffer.size());
        ++out.chunks;
        out.largest = std::max(out.largest, buffer.size());
        if (!more) break;
    }
    return out;
}

}  // namespace

TEST_CASE("descriptor body sends the file in chunks of at most chunk_bytes, every byte in order") {
    const std::string bytes = pattern(3 * descriptor_body::chunk_bytes + 123);
    descriptor_body::value_type body{temp_file(bytes), bytes.size()};
    CHECK(descriptor_body::size(body) == bytes.size());
    auto out = drain(body);
    CHECK_FALSE(out.ec);
    CHECK(out.bytes == bytes);
    CHECK(out.chunks == 4);
    CHECK(out.largest == descriptor_body::chunk_bytes);
}

TEST_CASE("descriptor body sends what Content-Length says when the file grew meanwhile") {
    const std::string bytes = pattern(1000);
    descriptor_body::value_type body{temp_file(bytes + "appended later"), bytes.size()};
    auto out = drain(body);
    CHECK_FALSE(out.ec);
    CHECK(out.bytes == bytes);
}

TEST_CASE("descriptor body fails when the file shrank, rather than send a short body") {
    const std::string bytes = pattern(descriptor_body::chunk_bytes + 10);
    auto fd = temp_file(bytes);
    REQUIRE(::ftruncate(fd.get(), 100) == 0);
    descriptor_body::value_type body{std::move(fd), bytes.size()};
    auto out = drain(body);
    CHECK(out.ec);
    CHECK(out.bytes.size() < bytes.size());
}

TEST_CASE("descriptor body of an empty file gives no chunk; a missing descriptor is an error") {
    descriptor_body::value_type empty{temp_file(""), 0};
    auto out = drain(empty);
    CHECK_FALSE(out.ec);
    CHECK(out.chunks == 0);
    descriptor_body::value_type none{unique_fd(), 10};
    CHECK(drain(none).ec);
}

TEST_CASE("read_file_chunk reads at an offset and says when the file ends before the size") {
    auto fd = temp_file("0123456789");
    char buffer[8] = {};
    boost::beast::error_code ec;
    CHECK(read_file_chunk(fd.get(), 3, buffer, 4, ec) == 4);
    CHECK_FALSE(ec);
    CHECK(std::string(buffer, 4) == "3456");
    CHECK(read_file_chunk(fd.get(), 8, buffer, 8, ec) == 2);
    CHECK_FALSE(ec);
    CHECK(read_file_chunk(fd.get(), 10, buffer, 8, ec) == 0);
    CHECK(ec);
    CHECK(read_file_chunk(-1, 0, buffer, 8, ec) == 0);
    CHECK(ec);
}
