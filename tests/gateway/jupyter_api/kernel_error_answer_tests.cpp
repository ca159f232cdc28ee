#include "gateway/jupyter_api/kernel_error_answer.hpp"

#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

#include "gateway/http/beast.hpp"

using namespace callisto::gateway;
using callisto::gateway::kernels::kernel_error;

TEST_CASE(
    "each kernel error has its HTTP answer, and only the server's limit says when to come back") {
    const std::pair<kernel_error, http::status> expected[] = {
        {kernel_error::no_such_kernelspec, http::status::not_found},
        {kernel_error::kernelspec_refused, http::status::internal_server_error},
        {kernel_error::id_taken, http::status::conflict},
        {kernel_error::user_over_limit, http::status::too_many_requests},
        {kernel_error::server_over_limit, http::status::too_many_requests},
        {kernel_error::shutting_down, http::status::service_unavailable},
        {kernel_error::start_failed, http::status::internal_server_error},
        {kernel_error::not_running, http::status::conflict},
    };
    for (auto [error, status] : expected) {
        CAPTURE(kernels::to_string(error));
        auto res = jupyter_api::kernel_error_answer(error, "what happened");
        CHECK(res.result() == status);
        CHECK(nlohmann::json::parse(res.body())["message"] == "what happened");
        CHECK(res[http::field::retry_after].empty() == (error != kernel_error::server_over_limit));
    }
}
