#pragma once
// Security headers for what the gateway serves as files. A workdir file is written by kernel
// code, so it is untrusted: it must never run as a page of the gateway's origin, where a
// script could read the token (from a ?token= URL or the UI's sessionStorage) and drive the API.

#include <string>
#include <string_view>

#include "gateway/http/json_response.hpp"

namespace callisto::gateway {

// For untrusted files: no script, no plugin, no request, an opaque origin, even when a
// browser opens the file as a page.
inline constexpr std::string_view untrusted_file_csp = "default-src 'none'; sandbox";

// Types a browser shows without running anything in them (images, plain text, JSON).
// Everything else, and every unknown type, is active or may be.
bool renders_passively(std::string_view content_type);

// `attachment` with the file's last path component, as an ASCII filename= fallback (odd
// characters become '_') and an RFC 8187 filename*= in UTF-8.
std::string attachment_disposition(std::string_view path);

// For a file served from a workdir or a kernelspec directory, its Content-Type set:
// nosniff, the sandbox CSP, no Referer, and Content-Disposition: attachment unless its type
// renders passively.
void set_untrusted_file_headers(http::response_header<>& res, std::string_view path);

// For the web UI (web/): its CSP (what the page really uses, and no framing by others),
// nosniff and no Referer: the first load may carry ?token= before web/js/auth.js strips it.
void set_web_ui_headers(http_response& res);

}  // namespace callisto::gateway
