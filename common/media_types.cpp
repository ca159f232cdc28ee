#include "common/media_types.hpp"

#include <array>
#include <cctype>
#include <utility>

namespace callisto {

namespace {

// Extension -> type. A type's first row gives its usual extension.
constexpr std::array<std::pair<std::string_view, std::string_view>, 19> table = {{
    {".png", "image/png"},      {".jpg", "image/jpeg"},      {".jpeg", "image/jpeg"},
    {".gif", "image/gif"},      {".webp", "image/webp"},     {".svg", "image/svg+xml"},
    {".ico", "image/x-icon"},   {".pdf", "application/pdf"}, {".json", "application/json"},
    {".csv", "text/csv"},       {".txt", "text/plain"},      {".md", "text/markdown"},
    {".py", "text/x-python"},   {".html", "text/html"},      {".htm", "text/html"},
    {".js", "text/javascript"}, {".mjs", "text/javascript"}, {".css", "text/css"},
    {".tex", "text/latex"},
}};

bool same_without_case(std::string_view a, std::string_view b) {
    if (a.size() != b.size()) return false;
    for (std::size_t i = 0; i < a.size(); ++i)
        if (std::tolower(static_cast<unsigned char>(a[i])) != static_cast<unsigned char>(b[i]))
            return false;
    return true;
}

}  // namespace

std::optional<std::string_view> media_type_of(std::string_view file_name) {
    const auto slash = file_name.find_last_of('/');
    const auto name = slash == std::string_view::npos ? file_name : file_name.substr(slash + 1);
    const auto dot = name.rfind('.');
    if (dot == std::string_view::npos) return std::nullopt;
    const auto extension = name.substr(dot);
    for (const auto& [ext, type] : table)
        if (same_without_case(extension, ext)) return type;
    return std::nullopt;
}

std::string_view extension_for(std::string_view media_type) {
    for (const auto& [ext, type] : table)
        if (type == media_type) return ext;
    if (media_type.ends_with("+json")) return ".json";
    return ".bin";
}

}  // namespace callisto
