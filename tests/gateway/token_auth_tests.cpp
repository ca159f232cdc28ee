#include "gateway/http/session_registry.hpp"
#include "gateway/http/websocket_subprotocols.hpp"
#include "gateway/token_auth.hpp"
#include "gateway/user_directory.hpp"

#include <unistd.h>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>

#include <doctest/doctest.h>

using callisto::gateway::token_auth;

namespace {

bool accepts(const token_auth& auth, std::string_view header, std::string_view query) {
    return auth.authenticate(header, query).has_value();
}

struct users_file {
    std::filesystem::path path;
    explicit users_file(const std::string& text) {
        path = std::filesystem::temp_directory_path() /
               ("callisto-users-" + std::to_string(::getpid()) + "-" +
                std::to_string(reinterpret_cast<std::uintptr_t>(this)) + ".json");
        std::ofstream(path) << text;
    }
    ~users_file() { std::filesystem::remove(path); }
};

}  // namespace

TEST_CASE("auth accepts the token in the Authorization header or the query") {
    token_auth auth("s3cret-token");
    CHECK(accepts(auth, "token s3cret-token", ""));
    CHECK(accepts(auth, "Bearer s3cret-token", ""));
    CHECK(accepts(auth, "", "session_id=x&token=s3cret-token"));
    auto who = auth.authenticate("token s3cret-token", "");
    REQUIRE(who);
    CHECK(who->admin);
}

TEST_CASE("auth refuses missing, wrong and near-miss tokens") {
    token_auth auth("s3cret-token");
    CHECK_FALSE(accepts(auth, "", ""));
    CHECK_FALSE(accepts(auth, "token wrong", ""));
    CHECK_FALSE(accepts(auth, "token s3cret-toke", ""));
    CHECK_FALSE(accepts(auth, "token s3cret-token2", ""));
    CHECK_FALSE(accepts(auth, "s3cret-token", ""));  // no scheme
    CHECK_FALSE(accepts(auth, "Basic s3cret-token", ""));
    CHECK_FALSE(accepts(auth, "token ", "token="));
    CHECK_FALSE(accepts(auth, "", "tokens=s3cret-token"));
}

TEST_CASE("auth takes a browser WebSocket's token from its Sec-WebSocket-Protocol offer") {
    token_auth auth("s3cret-token");
    const std::string hex = "73336372 65742d74 6f6b656e";  // "s3cret-token", spaced for reading
    std::string packed;
    for (char c : hex)
        if (c != ' ') packed.push_back(c);
    CHECK(auth.authenticate("", "", "callisto.auth, callisto.token." + packed));
    CHECK(auth.authenticate("", "", " callisto.token." + packed + " ,callisto.auth"));
    // Any place that carries the valid token is enough; a wrong one elsewhere does not veto it.
    CHECK(auth.authenticate("token wrong", "", "callisto.token." + packed));
    CHECK(auth.authenticate("", "token=s3cret-token", "callisto.token.00"));
    CHECK_FALSE(auth.authenticate("token wrong", "token=wrong", "callisto.token.00"));
}

TEST_CASE("a malformed or wrong token in the offer is refused") {
    token_auth auth("s3cret-token");
    for (std::string_view offer :
         {"callisto.token.", "callisto.token.7", "callisto.token.7Z", "callisto.token.7333637",
          "callisto.token.73336372 65742d746f6b656e", "callisto.token.73336372656b",
          "callisto.TOKEN.733363726574 2d746f6b656e", "s3cret-token", "callisto.token.s3cret-token",
          ",,,", "callisto.auth"}) {
        INFO(offer);
        CHECK_FALSE(auth.authenticate("", "", offer));
    }
    // Upper-case hex is not the form the web UI sends; it is refused rather than guessed at.
    CHECK_FALSE(auth.authenticate("", "", "callisto.token.7333637265742D746F6B656E"));
}

TEST_CASE("offers_subprotocol finds a whole entry, blanks around it ignored") {
    using callisto::gateway::offers_subprotocol;
    CHECK(offers_subprotocol("callisto.auth", "callisto.auth"));
    CHECK(offers_subprotocol("v1.kernel.websocket.jupyter.org , callisto.auth", "callisto.auth"));
    CHECK(offers_subprotocol("a,\tcallisto.auth\t,b", "callisto.auth"));
    CHECK_FALSE(offers_subprotocol("callisto.authx", "callisto.auth"));
    CHECK_FALSE(offers_subprotocol("xcallisto.auth", "callisto.auth"));
    CHECK_FALSE(offers_subprotocol("", "callisto.auth"));
    CHECK_FALSE(offers_subprotocol(",,", "callisto.auth"));
}

TEST_CASE("auth with an empty token lets everything through") {
    token_auth auth("");
    CHECK_FALSE(auth.enabled());
    CHECK(accepts(auth, "", ""));
}

TEST_CASE("token_sha256 is the hex SHA-256 of the token") {
    CHECK(token_auth::token_sha256("abc") ==
          "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
}

TEST_CASE("a users file maps each token to its user, role and quota") {
    users_file f(R"([{"name": "ana", "token_sha256": ")" + token_auth::token_sha256("ana-token-1") +
                 R"(", "max_kernels": 2},
                    {"name": "root", "token_sha256": ")" +
                 token_auth::token_sha256("root-token-1") + R"(", "role": "admin"}])");
    auto auth = token_auth::from_users_file(f.path);
    auto ana = auth.authenticate("token ana-token-1", "");
    REQUIRE(ana);
    CHECK(ana->name == "ana");
    CHECK_FALSE(ana->admin);
    CHECK(ana->max_kernels == 2);
    CHECK(ana->may_use("ana"));
    CHECK_FALSE(ana->may_use("root"));
    auto root = auth.authenticate("", "token=root-token-1");
    REQUIRE(root);
    CHECK(root->admin);
    CHECK(root->may_use("ana"));
    CHECK_FALSE(auth.authenticate("token nobody-token", ""));
}

TEST_CASE("a bad users file is refused with a message naming the problem") {
    const std::string good_hash = token_auth::token_sha256("x-token-123");
    for (std::string text :
         {std::string("not json"), std::string("[]"), std::string("{}"),
          std::string(R"([{"token_sha256": ")") + good_hash + "\"}]",
          std::string(R"([{"name": "a"}])"),
          std::string(R"([{"name": "a", "token_sha256": "abc"}])"),
          std::string(R"([{"name": "a", "token_sha256": ")") + good_hash + R"(", "role": "root"}])",
          std::string(R"([{"name": "a", "token_sha256": ")") + good_hash +
              R"(", "max_kernels": -1}])",
          std::string(R"([{"name": "a", "token_sha256": ")") + good_hash +
              R"("}, {"name": "a", "token_sha256": ")" + good_hash + "\"}]"}) {
        users_file f(text);
        CAPTURE(text);
        CHECK_THROWS_WITH_AS(token_auth::from_users_file(f.path), doctest::Contains("users file"),
                             std::runtime_error);
    }
    CHECK_THROWS_AS(token_auth::from_users_file("/nonexistent/users.json"), std::runtime_error);
}

// ---- the users file read again while the server runs (user_directory) ------------------------

namespace {

std::string user_entry(const std::string& name, const std::string& token,
                       const std::string& extra = "") {
    return R"({"name": ")" + name + R"(", "token_sha256": ")" + token_auth::token_sha256(token) +
           "\"" + extra + "}";
}

void rewrite(const std::filesystem::path& path, const std::string& text) {
    // As an admin's editor or a deployment does: a new file renamed into place.
    const auto tmp = path.string() + ".new";
    std::ofstream(tmp) << text;
    std::filesystem::rename(tmp, path);
}

}  // namespace

TEST_CASE("a reload puts the users file in effect and names who went or changed") {
    using callisto::gateway::user_directory;
    users_file f("[" + user_entry("ana", "ana-token-1") + "," + user_entry("bob", "bob-token-1") +
                 "," + user_entry("cy", "cy-token-1", R"(, "max_kernels": 1)") + "]");
    user_directory users(f.path);
    CHECK(users.has_file());
    CHECK_FALSE(users.file_changed());
    CHECK(users.authenticate("token bob-token-1", ""));
    CHECK_FALSE(users.authenticate("token dee-token-1", ""));

    // bob removed, cy's quota changed, dee added, ana as she was.
    rewrite(f.path, "[" + user_entry("ana", "ana-token-1") + "," +
                        user_entry("cy", "cy-token-1", R"(, "max_kernels": 3)") + "," +
                        user_entry("dee", "dee-token-1") + "]");
    CHECK(users.file_changed());
    CHECK(users.reload() == std::set<std::string>{"bob", "cy"});
    CHECK_FALSE(users.file_changed());
    CHECK_FALSE(users.authenticate("token bob-token-1", ""));
    CHECK(users.authenticate("token dee-token-1", "")->name == "dee");
    CHECK(users.authenticate("token cy-token-1", "")->max_kernels == 3);
    CHECK(users.authenticate("token ana-token-1", ""));

    // A new token for ana: her old one stops working, and she is named.
    rewrite(f.path, "[" + user_entry("ana", "ana-token-2") + "," +
                        user_entry("dee", "dee-token-1", R"(, "role": "admin")") + "]");
    CHECK(users.reload() == std::set<std::string>{"ana", "cy", "dee"});
    CHECK_FALSE(users.authenticate("token ana-token-1", ""));
    CHECK(users.authenticate("token dee-token-1", "")->admin);
}

TEST_CASE("a users file that no longer parses leaves the users in effect") {
    using callisto::gateway::user_directory;
    users_file f("[" + user_entry("ana", "ana-token-1") + "]");
    user_directory users(f.path);
    for (const char* bad : {"", "[]", "not json", R"([{"name": "x"}])"}) {
        CAPTURE(bad);
        rewrite(f.path, bad);
        CHECK(users.file_changed());
        CHECK_THROWS_AS(users.reload(), std::runtime_error);
        CHECK_FALSE(users.file_changed());  // not read again, and logged, every poll
        CHECK(users.authenticate("token ana-token-1", ""));
    }
    std::filesystem::remove(f.path);
    CHECK(users.file_changed());
    CHECK_THROWS_AS(users.reload(), std::runtime_error);
    CHECK(users.authenticate("token ana-token-1", ""));
}

TEST_CASE("one token has nothing to reload") {
    using callisto::gateway::user_directory;
    user_directory users(token_auth("a-single-token"));
    CHECK_FALSE(users.has_file());
    CHECK_FALSE(users.file_changed());
    CHECK(users.reload().empty());
    CHECK(users.authenticate("token a-single-token", ""));
}

TEST_CASE("the session registry closes the sessions of the users named, and no others") {
    struct fake_session {
        bool closed = false;
        void close() { closed = true; }
    };
    callisto::gateway::session_registry sessions;
    auto bob = std::make_shared<fake_session>();
    auto ana = std::make_shared<fake_session>();
    auto anonymous = std::make_shared<fake_session>();
    sessions.add(bob, "kernel_websocket", "bob");
    sessions.add(ana, "events_websocket", "ana");
    sessions.add(anonymous, "http");
    sessions.close_of_users({"bob"});
    CHECK(bob->closed);
    CHECK_FALSE(ana->closed);
    CHECK_FALSE(anonymous->closed);
    CHECK(sessions.open_by_kind() ==
          std::map<std::string, std::size_t>{{"events_websocket", 1}, {"http", 1}});
}

TEST_CASE("a users file gives a user an egress_allow list, canonical, or none") {
    users_file f(R"([{"name": "ana", "token_sha256": ")" + token_auth::token_sha256("ana-token-1") +
                 R"(", "egress_allow": ["PyPI.org", "127.0.0.1:8080"]},
                    {"name": "bo", "token_sha256": ")" +
                 token_auth::token_sha256("bo-token-12") + R"("}])");
    auto auth = token_auth::from_users_file(f.path);
    auto ana = auth.authenticate("token ana-token-1", "");
    REQUIRE(ana);
    REQUIRE(ana->egress_allow);
    CHECK(*ana->egress_allow == std::vector<std::string>{"pypi.org", "127.0.0.1:8080"});
    auto bo = auth.authenticate("token bo-token-12", "");
    REQUIRE(bo);
    CHECK_FALSE(bo->egress_allow);  // the server's ceiling alone
}

TEST_CASE("a users file's bad egress_allow is refused, naming the user and the rule") {
    const std::string hash = token_auth::token_sha256("x-token-123");
    for (const char* bad :
         {R"("pypi.org")", R"([1])", R"(["*.org"])", R"(["127.1:80"])", R"(["pypi.org:0"])"}) {
        CAPTURE(bad);
        users_file f(R"([{"name": "a", "token_sha256": ")" + hash + R"(", "egress_allow": )" + bad +
                     "}]");
        CHECK_THROWS_WITH_AS(token_auth::from_users_file(f.path),
                             doctest::Contains("user 'a': egress_allow"), std::runtime_error);
    }
}
