#include "common/media_types.hpp"

#include <string>

#include <doctest/doctest.h>

using namespace callisto;

TEST_CASE("a file name's extension names its media type, compared without case") {
    CHECK(media_type_of("plot.png") == "image/png");
    CHECK(media_type_of("out/Photo.JPEG") == "image/jpeg");
    CHECK(media_type_of("a.b.csv") == "text/csv");
    CHECK(media_type_of("index.html") == "text/html");
    CHECK(media_type_of("app.mjs") == "text/javascript");
}

TEST_CASE("a name without a known extension has no media type") {
    CHECK_FALSE(media_type_of("Makefile"));
    CHECK_FALSE(media_type_of(""));
    CHECK_FALSE(media_type_of("data.xyz"));
    CHECK_FALSE(media_type_of("dir.png/file"));  // the dot is in a folder's name
    CHECK_FALSE(media_type_of("png"));
    CHECK_FALSE(media_type_of("trailing."));
}

TEST_CASE("a media type's usual extension, .json for any +json type, .bin when unknown") {
    CHECK(extension_for("image/png") == ".png");
    CHECK(extension_for("image/jpeg") == ".jpg");
    CHECK(extension_for("text/html") == ".html");
    CHECK(extension_for("text/latex") == ".tex");
    CHECK(extension_for("application/vnd.vegalite.v5+json") == ".json");
    CHECK(extension_for("application/x-whatever") == ".bin");
    CHECK(extension_for("") == ".bin");
    CHECK(extension_for("IMAGE/PNG") == ".bin");  // media types from kernels are lower case
}

TEST_CASE("every extension in the table names a type whose usual extension maps back to it") {
    for (auto name : {"a.png", "a.jpg", "a.jpeg", "a.gif", "a.webp", "a.svg", "a.pdf", "a.json",
                      "a.csv", "a.txt", "a.md", "a.py", "a.htm", "a.js", "a.css", "a.tex"}) {
        const auto type = media_type_of(name);
        REQUIRE(type);
        CHECK(media_type_of(std::string("b") + std::string(extension_for(*type))) == type);
    }
}
