#include "gateway/http/request_log.hpp"

#include <doctest/doctest.h>

#include <string>
#include <vector>

using namespace callisto;
using namespace callisto::gateway;

namespace {

struct access_log {
    metrics::registry registry;
    std::vector<std::string> lines;
    request_log log{registry, logger([this](log_level, std::string_view, const log_fields&,
                                            std::string_view text) { lines.emplace_back(text); },
                                     log_level::info)};
};

}  // namespace

TEST_CASE("the access log names what a POST created, from the answer's Location") {
    access_log a;
    a.log.answered("POST", "/api/kernels?token=secret", "kernel_create", 201, 297,
                   std::chrono::milliseconds(71), "ana", "/api/kernels/4f1c");
    a.log.answered("GET", "/api/kernels", "kernels_list", 200, 2, std::chrono::milliseconds(1),
                   "ana");
    REQUIRE(a.lines.size() == 2);
    CHECK(a.lines[0] == "POST /api/kernels 201 297 B 71.0 ms -> /api/kernels/4f1c");
    CHECK(a.lines[1] == "GET /api/kernels 200 2 B 1.0 ms");
    CHECK(a.lines[0].find("secret") == std::string::npos);
}

TEST_CASE("the access log gives method, route, status, duration and size as fields") {
    metrics::registry registry;
    std::vector<log_fields> fields;
    request_log log{registry, logger([&fields](log_level, std::string_view, const log_fields& f,
                                               std::string_view) { fields.push_back(f); },
                                     log_level::info)};
    log.answered("GET", "/v1/contexts?token=secret", "contexts_list", 200, 57,
                 std::chrono::microseconds(2500), "ana");
    REQUIRE(fields.size() == 1);
    CHECK(fields[0] == log_fields{{"method", "GET"},
                                  {"route", "contexts_list"},
                                  {"status", "200"},
                                  {"duration_ms", "2.5"},
                                  {"bytes", "57"},
                                  {"user", "ana"}});
    // As --log-format=json writes it.
    const auto line = json_log_line("t", log_level::info, "access", fields[0], "GET /v1/contexts");
    CHECK(line.find(R"("status":"200","duration_ms":"2.5","bytes":"57")") != std::string::npos);
}
