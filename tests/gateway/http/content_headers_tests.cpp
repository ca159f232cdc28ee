// Headers for files the gateway serves: kernel-written files never run as this origin.

#include <doctest/doctest.h>

#include <boost/beast/http/field.hpp>

#include "gateway/http/content_headers.hpp"

using namespace callisto::gateway;

namespace {

http_response file_of_type(std::string_view content_type) {
    http_response res{http::status::ok, 11};
    res.set(http::field::content_type, content_type);
    return res;
}

}  // namespace

TEST_CASE("images, plain text, CSV and JSON render passively; active and unknown types do not") {
    for (auto type : {"image/png", "image/jpeg", "image/gif", "image/webp", "text/plain",
                      "text/plain; charset=utf-8", "text/csv", "application/json"})
        CHECK_MESSAGE(renders_passively(type), type);
    for (auto type : {"image/svg+xml", "text/html", "text/html; charset=utf-8", "application/xml",
                      "text/xml", "application/xhtml+xml", "text/javascript", "application/pdf",
                      "application/octet-stream", "", "image/png-but-not"})
        CHECK_FALSE_MESSAGE(renders_passively(type), type);
}

TEST_CASE("an SVG from a workdir is an attachment in a sandbox, with nosniff and no Referer") {
    auto res = file_of_type("image/svg+xml");
    set_untrusted_file_headers(res, "plots/x.svg");
    CHECK(res[http::field::content_disposition] ==
          "attachment; filename=\"x.svg\"; filename*=UTF-8''x.svg");
    CHECK(res["Content-Security-Policy"] == "default-src 'none'; sandbox");
    CHECK(res["X-Content-Type-Options"] == "nosniff");
    CHECK(res["Referrer-Policy"] == "no-referrer");
}

TEST_CASE("a PNG stays inline, still sandboxed and nosniff") {
    auto res = file_of_type("image/png");
    set_untrusted_file_headers(res, "chart.png");
    CHECK(res.find(http::field::content_disposition) == res.end());
    CHECK(res["Content-Security-Policy"] == "default-src 'none'; sandbox");
    CHECK(res["X-Content-Type-Options"] == "nosniff");
}

TEST_CASE("the attachment filename cannot break out of its quotes; UTF-8 goes percent-encoded") {
    CHECK(attachment_disposition("a/b\"c\\d%e.html") ==
          "attachment; filename=\"b_c_d_e.html\"; filename*=UTF-8''b%22c%5Cd%25e.html");
    CHECK(attachment_disposition("r\xc3\xa9sum\xc3\xa9 1.txt") ==
          "attachment; filename=\"r__sum__ 1.txt\"; filename*=UTF-8''r%C3%A9sum%C3%A9%201.txt");
    CHECK(attachment_disposition("dir/") == "attachment");
}

TEST_CASE("the web UI gets a CSP that forbids framing, nosniff and no Referer") {
    auto res = file_of_type("text/html; charset=utf-8");
    set_web_ui_headers(res);
    const std::string csp(res["Content-Security-Policy"]);
    CHECK(csp.find("script-src 'self'") != std::string::npos);
    CHECK(csp.find("frame-ancestors 'none'") != std::string::npos);
    CHECK(res[http::field::x_frame_options] == "DENY");
    CHECK(res["X-Content-Type-Options"] == "nosniff");
    CHECK(res["Referrer-Policy"] == "no-referrer");
    CHECK(res.find(http::field::content_disposition) == res.end());
}
