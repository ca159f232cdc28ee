#pragma once
// What a REST handler receives and how it answers. Handlers may answer later, from any thread.

#include <functional>

#include <boost/beast/http/message.hpp>
#include <boost/beast/http/string_body.hpp>

#include "gateway/http/descriptor_body.hpp"
#include "gateway/http/json_response.hpp"

namespace callisto::gateway {

using http_request = http::request<http::string_body>;
using respond_fn = std::function<void(http_response)>;
// An answer whose body is an open file, sent a chunk at a time (downloads).
using file_response = http::response<descriptor_body>;
using respond_file_fn = std::function<void(file_response)>;

}  // namespace callisto::gateway
