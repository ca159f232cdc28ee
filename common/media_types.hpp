#pragma once
// File names and media types: one table for every place that names a file's type (the web
// UI's assets, downloads from a workdir, images handed to MCP clients, results saved as files).
// Each place keeps its own policy (what it refuses to serve as active content, which charset
// it declares); the facts are here once.

#include <optional>
#include <string_view>

namespace callisto {

// The media type a file name's extension names, compared without case ("a.PNG" ->
// "image/png"), or nullopt for an extension the table does not know or no extension.
std::optional<std::string_view> media_type_of(std::string_view file_name);

// The usual extension, with its dot, for a media type: "image/jpeg" -> ".jpg", any "+json"
// type -> ".json"; ".bin" for a type the table does not know.
std::string_view extension_for(std::string_view media_type);

}  // namespace callisto
