#include "kernelproto/untrusted_json.hpp"

namespace callisto::kernelproto {

std::string parsed_json::problem() const {
    switch (status) {
        case json_check::valid: return "";
        case json_check::too_deep:
            return "nested deeper than " + std::to_string(max_json_depth) + " levels";
        case json_check::malformed: break;
    }
    return "not valid JSON";
}

parsed_json parse_untrusted_json(std::string_view text) {
    parsed_json out;
    out.value = nlohmann::json(nlohmann::json::value_t::discarded);
    out.status = check_json(text);
    if (!out.ok()) return out;
    out.value = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
    // The validator accepts lone surrogates, which nlohmann refuses.
    if (out.value.is_discarded()) out.status = json_check::malformed;
    return out;
}

}  // namespace callisto::kernelproto
