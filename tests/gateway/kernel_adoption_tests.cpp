// Adopting the kernels an earlier gateway left running (--state-dir): what of a networked
// kernel's recorded egress the server's ceiling still covers (issue 36).

#include "gateway/kernel_adoption.hpp"

#include <doctest/doctest.h>

using callisto::gateway::egress_within_ceiling;
using strings = std::vector<std::string>;

TEST_CASE("an adopted kernel keeps the egress rules the ceiling still covers, and only those") {
    strings dropped;
    CHECK(egress_within_ceiling({"pypi.org", "127.0.0.2:8080"}, {"pypi.org", "127.0.0.2:8080"},
                                dropped) == strings{"pypi.org", "127.0.0.2:8080"});
    CHECK(dropped.empty());

    // Covered by a wider rule of the ceiling.
    CHECK(egress_within_ceiling({"a.example.org"}, {"*.example.org"}, dropped) ==
          strings{"a.example.org"});
    CHECK(dropped.empty());

    // The admin narrowed the ceiling across the restart: what it no longer covers goes.
    CHECK(egress_within_ceiling({"pypi.org", "127.0.0.2:8080", "files.pythonhosted.org"},
                                {"pypi.org"}, dropped) == strings{"pypi.org"});
    CHECK(dropped == strings{"127.0.0.2:8080", "files.pythonhosted.org"});

    // Another port of an allowed host is not covered.
    dropped.clear();
    CHECK(egress_within_ceiling({"127.0.0.2:8081"}, {"127.0.0.2:8080"}, dropped).empty());
    CHECK(dropped == strings{"127.0.0.2:8081"});

    // No ceiling now (restarted without --egress-allow, or without the sandbox): nothing.
    dropped.clear();
    CHECK(egress_within_ceiling({"pypi.org"}, {}, dropped).empty());
    CHECK(dropped == strings{"pypi.org"});

    // A record's rule that does not parse (edited by hand) is dropped, never trusted.
    dropped.clear();
    CHECK(egress_within_ceiling({"*.org", "127.1:80", "pypi.org"}, {"*.org", "pypi.org"},
                                dropped) == strings{"pypi.org"});
    CHECK(dropped == strings{"*.org", "127.1:80"});
}
