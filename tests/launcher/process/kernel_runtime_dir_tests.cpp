#include <doctest/doctest.h>

#include <sys/stat.h>
#include <memory>
#include <string>

#include <nlohmann/json.hpp>

#include "launcher/process/kernel_runtime_dir.hpp"
#include "tests/launcher/test_support.hpp"

using callisto::launcher::kernel_runtime_dir;
using callisto::launcher::transport_kind;
using callisto::launcher::test::read_file;
using callisto::launcher::test::temp_dir;

namespace {

unsigned mode_of(const std::filesystem::path& p) {
    struct stat st {};
    REQUIRE(::lstat(p.c_str(), &st) == 0);
    return st.st_mode & 07777;
}

bool is_lower_hex(const std::string& s) {
    return s.find_first_not_of("0123456789abcdef") == std::string::npos;
}

}  // namespace

TEST_CASE("an ipc runtime dir is private and holds jupyter_client's connection file") {
    temp_dir tmp;
    kernel_runtime_dir dir(tmp.path(), "k1", transport_kind::ipc, "python3");

    CHECK(dir.path() == tmp.path() / "k1");
    CHECK(dir.connection_file() == tmp.path() / "k1" / "kernel.json");
    CHECK(mode_of(dir.path()) == 0700);
    CHECK(mode_of(dir.connection_file()) == 0600);

    const auto j = nlohmann::json::parse(read_file(dir.connection_file()));
    CHECK(j.at("transport") == "ipc");
    CHECK(j.at("ip") == (tmp.path() / "k1" / "k").string());
    CHECK(j.at("shell_port") == 1);
    CHECK(j.at("iopub_port") == 2);
    CHECK(j.at("stdin_port") == 3);
    CHECK(j.at("control_port") == 4);
    CHECK(j.at("hb_port") == 5);
    CHECK(j.at("signature_scheme") == "hmac-sha256");
    CHECK(j.at("kernel_name") == "python3");
    const auto key = j.at("key").get<std::string>();
    CHECK(key.size() == 64);
    CHECK(is_lower_hex(key));
    CHECK(dir.connection().key == key);
    CHECK(dir.connection().transport == "ipc");
}

TEST_CASE("every runtime dir gets its own key") {
    temp_dir tmp;
    kernel_runtime_dir a(tmp.path(), "a", transport_kind::ipc, "python3");
    kernel_runtime_dir b(tmp.path(), "b", transport_kind::ipc, "python3");
    CHECK(a.connection().key != b.connection().key);
}

TEST_CASE("destroying a runtime dir removes it and everything in it") {
    temp_dir tmp;
    auto dir = std::make_unique<kernel_runtime_dir>(tmp.path(), "gone", transport_kind::ipc, "k");
    const auto path = dir->path();
    std::filesystem::create_directories(path / "sub");
    callisto::launcher::test::write_file(path / "sub" / "file", "x");
    dir.reset();
    CHECK_FALSE(std::filesystem::exists(path));
}

TEST_CASE("a runtime dir whose ipc socket paths exceed libzmq's limit is refused before creation") {
    temp_dir tmp;
    const auto deep = tmp.path() / std::string(100, 'd');
    try {
        kernel_runtime_dir dir(deep, "k1", transport_kind::ipc, "python3");
        FAIL("expected an error");
    } catch (const std::runtime_error& e) {
        const std::string text = e.what();
        CHECK(text.find("107") != std::string::npos);
        CHECK(text.find("k1/k-5") != std::string::npos);
    }
    CHECK_FALSE(std::filesystem::exists(deep));
}

TEST_CASE("a runtime dir refuses to reuse an existing directory") {
    temp_dir tmp;
    std::filesystem::create_directories(tmp.path() / "taken");
    CHECK_THROWS_AS(kernel_runtime_dir(tmp.path(), "taken", transport_kind::ipc, "k"),
                    std::runtime_error);
    CHECK(std::filesystem::exists(tmp.path() / "taken"));  // not ours, so not removed
    CHECK_THROWS_AS(kernel_runtime_dir(tmp.path(), "../escape", transport_kind::ipc, "k"),
                    std::runtime_error);
}

TEST_CASE("a relative root becomes absolute, since the kernel runs in another directory") {
    temp_dir tmp;
    const auto old_cwd = std::filesystem::current_path();
    std::filesystem::current_path(tmp.path());
    {
        kernel_runtime_dir dir("rel", "k1", transport_kind::ipc, "k");
        CHECK(dir.path().is_absolute());
        CHECK(dir.connection().ip == (tmp.path() / "rel" / "k1" / "k").string());
    }
    std::filesystem::current_path(old_cwd);
}
