#pragma once
// JSON from a client or a kernel, parsed so that nothing recursive can ever see a document
// nested deeper than max_json_depth: the fast validator (iterative) runs first, and only a
// document it passes is built. Never throws.

#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "kernelproto/json_validator.hpp"

namespace callisto::kernelproto {

struct parsed_json {
    nlohmann::json value;  // discarded unless status is valid
    json_check status = json_check::malformed;

    bool ok() const { return status == json_check::valid; }
    // "not valid JSON" or "nested deeper than 1000 levels", for error messages.
    std::string problem() const;
};

parsed_json parse_untrusted_json(std::string_view text);

}  // namespace callisto::kernelproto
