#include "gateway/auth.hpp"

#include <doctest/doctest.h>

using callisto::gateway::token_auth;

TEST_CASE("auth accepts the token in the Authorization header or the query") {
    token_auth auth("s3cret-token");
    CHECK(auth.authorized("token s3cret-token", ""));
    CHECK(auth.authorized("Bearer s3cret-token", ""));
    CHECK(auth.authorized("", "session_id=x&token=s3cret-token"));
}

TEST_CASE("auth refuses missing, wrong and near-miss tokens") {
    token_auth auth("s3cret-token");
    CHECK_FALSE(auth.authorized("", ""));
    CHECK_FALSE(auth.authorized("token wrong", ""));
    CHECK_FALSE(auth.authorized("token s3cret-toke", ""));
    CHECK_FALSE(auth.authorized("token s3cret-token2", ""));
    CHECK_FALSE(auth.authorized("s3cret-token", ""));  // no scheme
    CHECK_FALSE(auth.authorized("Basic s3cret-token", ""));
    CHECK_FALSE(auth.authorized("token ", "token="));
    CHECK_FALSE(auth.authorized("", "tokens=s3cret-token"));
}

TEST_CASE("auth with an empty token lets everything through") {
    token_auth auth("");
    CHECK_FALSE(auth.enabled());
    CHECK(auth.authorized("", ""));
}
