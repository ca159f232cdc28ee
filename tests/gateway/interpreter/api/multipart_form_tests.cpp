// multipart/form-data uploads: the push parser (whole, byte by byte, split anywhere) and the
// rules for files, with every bad form refused with a sentence.

#include <doctest/doctest.h>

#include "gateway/interpreter/api/multipart_form.hpp"
#include "tests/support/refusals.hpp"

using namespace callisto::gateway::interpreter;
using callisto::test::check_each_refused;

namespace {

const std::string ct = "multipart/form-data; boundary=XyZ";

std::string part(std::string_view headers, std::string_view body) {
    return "--XyZ\r\n" + std::string(headers) + "\r\n\r\n" + std::string(body) + "\r\n";
}
std::string file(std::string_view name, std::string_view filename, std::string_view body) {
    return part("Content-Disposition: form-data; name=\"" + std::string(name) + "\"; filename=\"" +
                    std::string(filename) + "\"\r\nContent-Type: text/csv",
                body);
}
const std::string close_line = "--XyZ--\r\n";

std::optional<std::vector<multipart_file>> parse(const std::string& body, std::string& error,
                                                 std::string_view type = ct) {
    return parse_upload_form(body, type, multipart_limits{}, error);
}

struct collected {
    std::vector<multipart_part_header> headers;
    std::vector<std::string> bodies;
    int ends = 0;
};

// Feeds `body` in pieces of `step` bytes.
bool feed_in_pieces(const std::string& body, std::size_t step, collected& c, std::string& error,
                    multipart_limits limits = {}) {
    multipart_parser p(
        "XyZ", limits,
        [&](const multipart_part_header& h) {
            c.headers.push_back(h);
            c.bodies.emplace_back();
        },
        [&](std::string_view d, std::size_t) { c.bodies.back().append(d); }, [&] { ++c.ends; });
    for (std::size_t i = 0; i < body.size(); i += step)
        if (!p.feed(std::string_view(body).substr(i, step))) break;
    const bool ok = p.finish();
    error = p.error();
    return ok;
}

}  // namespace

TEST_CASE("multipart boundary: quoted or not, and every bad Content-Type") {
    std::string error;
    CHECK(multipart_boundary("multipart/form-data; boundary=abc", error) ==
          std::optional<std::string>("abc"));
    CHECK(multipart_boundary("Multipart/Form-Data;boundary=\"a b:c\"", error) ==
          std::optional<std::string>("a b:c"));
    CHECK(multipart_boundary(
              "multipart/form-data; charset=utf-8; boundary=----WebKitFormBoundaryQ1", error) ==
          std::optional<std::string>("----WebKitFormBoundaryQ1"));
    for (const std::string& bad : std::vector<std::string>{
             "", "text/plain", "multipart/mixed; boundary=a", "multipart/form-data",
             "multipart/form-data; boundary=", "multipart/form-data; boundary=\"\"",
             "multipart/form-data; boundary=" + std::string(71, 'a'),
             std::string("multipart/form-data; boundary=a\x01"),
             "multipart/form-data; boundary=\"ends with space \"",
             "multipart/form-data; boundary=a;b", "multipart/form-data; boundary=\"unterminated",
             "multipart/form-data; boundary=a; boundary=b", "multipart/form-data; boundary"}) {
        INFO(bad);
        CHECK_FALSE(multipart_boundary(bad, error));
        CHECK_FALSE(error.empty());
    }
}

TEST_CASE("multipart parser finds boundaries split across pieces of every size") {
    const std::string body =
        "preamble to ignore\r\n" +
        file("f", "a.csv", "x,y\r\n1,2\r\n--XyY is not the boundary \r\n--XY") +
        part("Content-Disposition: form-data; name=\"path\"", "p") +
        file("g", "b.bin", std::string("\0\r\n\r\n--X", 9)) + close_line + "epilogue to ignore";
    for (std::size_t step : {body.size(), std::size_t{1}, std::size_t{2}, std::size_t{3},
                             std::size_t{5}, std::size_t{7}, std::size_t{64}}) {
        INFO(step);
        collected c;
        std::string error;
        REQUIRE(feed_in_pieces(body, step, c, error));
        REQUIRE(c.headers.size() == 3);
        CHECK(c.ends == 3);
        CHECK(c.headers[0].name == "f");
        CHECK(c.headers[0].filename == std::optional<std::string>("a.csv"));
        CHECK(c.headers[0].content_type == "text/csv");
        CHECK(c.bodies[0] == "x,y\r\n1,2\r\n--XyY is not the boundary \r\n--XY");
        CHECK_FALSE(c.headers[1].filename);
        CHECK(c.bodies[1] == "p");
        CHECK(c.bodies[2] == std::string("\0\r\n\r\n--X", 9));
    }
}

TEST_CASE("multipart parser: transport padding, escapes and a first boundary without CRLF") {
    const std::string body =
        "--XyZ  \t\r\nContent-Disposition: form-data; name=\"a\\\"b\"; "
        "filename=\"c.txt\"\r\n\r\nhi\r\n--XyZ--";
    collected c;
    std::string error;
    REQUIRE(feed_in_pieces(body, body.size(), c, error));
    CHECK(c.headers[0].name == "a\"b");
    CHECK(c.bodies[0] == "hi");
}

TEST_CASE("multipart parser refuses every malformed body with a sentence") {
    const std::string cd = "Content-Disposition: form-data; name=\"f\"; filename=\"a\"";
    const std::string bad[] = {
        "",  // no boundary line at all
        "just text, wrong boundary\r\n--OTHER\r\n\r\nx\r\n--OTHER--",
        part(cd, "x"),                              // no closing boundary
        part(cd, "x") + "--XyZ",                    // closing line cut short
        "--XyZ\r\n" + cd + "\r\n\r\nnever closed",  // body never ends
        "--XyZgarbage\r\n" + cd + "\r\n\r\nx\r\n" + close_line,
        "--XyZ" + std::string(100, ' ') + "\r\n" + cd + "\r\n\r\nx\r\n" + close_line,
        part("Content-Type: text/plain", "x") + close_line,  // no Content-Disposition
        part("", "x") + close_line,                          // no headers at all
        "--XyZ\r\n\r\n\r\n" + close_line,                    // an empty part
        part("Content-Disposition: attachment; filename=\"a\"", "x") + close_line,
        part("Content-Disposition: form-data; filename=\"a\"", "x") + close_line,  // no name
        part("Content-Disposition: form-data; name=\"f\"; filename*=UTF-8''a", "x") + close_line,
        part("Content-Disposition: form-data; name=\"f\"; name=\"g\"", "x") + close_line,
        part("Content-Disposition: form-data; name=\"f\"; filename=\"a", "x") + close_line,
        part("Content-Disposition: form-data; name", "x") + close_line,
        part(cd + "\r\n" + cd, "x") + close_line,  // two dispositions
        part(cd + "\r\nContent-Type: a\r\nContent-Type: b", "x") + close_line,
        part(cd + "\r\n folded", "x") + close_line,
        part(cd + "\r\nno colon here", "x") + close_line,
        part(cd + "\r\n: empty name", "x") + close_line,
        part(cd + "\r\nX-A: " + std::string(9000, 'h'), "x") + close_line,  // huge headers
        "--XyZ\r\n" + std::string(9000, 'h'),                               // headers never end
    };
    for (const auto& body : bad) {
        INFO(body.substr(0, 100));
        for (std::size_t step : {body.size() ? body.size() : 1, std::size_t{1}, std::size_t{7}}) {
            collected c;
            std::string error;
            CHECK_FALSE(feed_in_pieces(body, step, c, error));
            CHECK_FALSE(error.empty());
        }
    }
}

TEST_CASE("multipart parser bounds the number of parts and what it holds between pieces") {
    std::string body;
    for (int i = 0; i < 5; ++i) body += file("f", "a" + std::to_string(i), "x");
    body += close_line;
    multipart_limits limits;
    limits.max_parts = 4;
    collected c;
    std::string error;
    CHECK_FALSE(feed_in_pieces(body, body.size(), c, error, limits));
    CHECK(error.find("more than 4 parts") != std::string::npos);

    // A big file passes through in pieces: the parser hands data on as it goes.
    std::size_t biggest = 0;
    multipart_parser p(
        "XyZ", {}, [](const multipart_part_header&) {},
        [&](std::string_view d, std::size_t) { biggest = std::max(biggest, d.size()); }, [] {});
    CHECK(p.feed("--XyZ\r\nContent-Disposition: form-data; name=\"f\"; filename=\"a\"\r\n\r\n"));
    for (int i = 0; i < 1000; ++i) CHECK(p.feed(std::string(1000, 'd')));
    CHECK(p.feed("\r\n--XyZ--"));
    CHECK(p.finish());
    CHECK(biggest <= 1000 + 8);
}

TEST_CASE("upload form: files go to their filename, or one file to the 'path' field") {
    std::string error;
    auto files = parse(
        file("file", "data/in.csv", "a,b\n1,2\n") + file("f2", "ü.txt", "") + close_line, error);
    REQUIRE(files);
    REQUIRE(files->size() == 2);
    CHECK((*files)[0].path == "data/in.csv");
    CHECK((*files)[0].content == "a,b\n1,2\n");
    CHECK((*files)[1].path == "ü.txt");
    CHECK((*files)[1].content.empty());  // an empty file is a file

    files = parse(part("Content-Disposition: form-data; name=\"path\"", "data/x.csv") +
                      file("file", "local name.csv", "1") + close_line,
                  error);
    REQUIRE(files);
    CHECK((*files)[0].path == "data/x.csv");
    // With 'path', an empty filename is fine (a browser's Blob without a name).
    files = parse(file("file", "", "1") +
                      part("Content-Disposition: form-data; name=\"path\"", "y") + close_line,
                  error);
    REQUIRE(files);
    CHECK((*files)[0].path == "y");
}

TEST_CASE("upload form: every bad form is refused, so nothing is written") {
    const std::string path_field = part("Content-Disposition: form-data; name=\"path\"", "p.csv");
    const std::string bad[] = {
        close_line,                                                               // no parts
        part("Content-Disposition: form-data; name=\"path\"", "x") + close_line,  // no file
        file("f", "", "x") + close_line,                                          // empty filename
        file("f", "../x", "x") + close_line,
        file("f", "a/../../x", "x") + close_line,
        file("f", "/etc/passwd", "x") + close_line,
        file("f", "C:\\\\Users\\\\x.csv", "x") + close_line,  // backslashes
        file("f", "a\\\\b", "x") + close_line,
        file("f", std::string("a\0b", 3), "x") + close_line,  // NUL
        file("f",
             "a\x01"
             "b",
             "x") +
            close_line,
        file("f", "dir/", "x") + close_line,
        file("f", std::string(300, 'n'), "x") + close_line,
        file("f", "same.csv", "1") + file("g", "same.csv", "2") + close_line,  // duplicate
        path_field + file("f", "a", "1") + file("g", "b", "2") + close_line,   // path for two
        path_field + path_field + file("f", "a", "1") + close_line,
        part("Content-Disposition: form-data; name=\"path\"", "../up") + file("f", "a", "1") +
            close_line,
        part("Content-Disposition: form-data; name=\"other\"", "v") + file("f", "a", "1") +
            close_line,
        part("Content-Disposition: form-data; name=\"path\"", std::string(5000, 'p')) +
            file("f", "a", "1") + close_line,  // oversized field
        file("f", "a", "1"),                   // missing final boundary
    };
    check_each_refused(
        bad, [](const std::string& body, std::string& error) { return parse(body, error); });
    std::string error;
    CHECK_FALSE(parse(file("f", "a", "1") + close_line, error, "application/json"));
    CHECK_FALSE(
        parse(file("f", "a", "1") + close_line, error, "multipart/form-data; boundary=Other"));
    CHECK_FALSE(parse(file("f", "same.csv", "1") + file("g", "same.csv", "2") + close_line, error));
    CHECK(error.find("two files") != std::string::npos);
    CHECK_FALSE(parse(file("f", "../x", "x") + close_line, error));
    CHECK(error.find("'.' or '..'") != std::string::npos);
}
