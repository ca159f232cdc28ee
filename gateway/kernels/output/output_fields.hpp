#pragma once
// Caps on the fields of kernel output that no stream budget covers: an error's name, value and
// traceback. The interpreter's recorder cuts them (and a display's metadata) before an
// execution keeps, answers, streams or records them; the kernel session cuts an error's
// content before a Jupyter WebSocket client gets it. A cut text keeps its head and tail around
// the stream budget's marker. Pure.

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace callisto::gateway::kernels {

// The text itself when it is at most max_bytes; else at most max_bytes made of its head and its
// tail around truncation_marker(), cut between UTF-8
// characters. `cut` gets the bytes of the text left out (0 when it fitted).
std::string cap_text(std::string_view text, std::size_t max_bytes, std::size_t& cut);

// Lines (a traceback) within max_bytes together, plus one marker line: each line first within
// half of it (cap_text), then the first lines and the last ones, each side within half, with the
// marker line for the lines left out between them. `cut` gets the bytes left out, of the lines cut
// and of those dropped.
std::vector<std::string> cap_lines(std::vector<std::string> lines, std::size_t max_bytes,
                                   std::size_t& cut);

// The last `keep` bytes of `text`, not starting inside a UTF-8 sequence, after a line saying how
// much was left out ("[... N bytes not recorded ...]"): what a context record keeps of a text.
std::string record_tail(const std::string& text, std::size_t keep);

// "\n[... N bytes truncated ...]\n": what stands for the bytes a cut left out, in every stream
// and field the gateway cuts.
std::string truncation_marker(std::size_t bytes);

struct error_field_caps {
    std::size_t name_bytes = 1024;     // ename: a class name
    std::size_t text_bytes = 1 << 20;  // evalue; the traceback's lines together
};

// What the gateway relays and keeps of the code a kernel echoes in execute_input: the client
// that sent the code has it, and the kernel echoes every request (a flood of 16 MiB requests was
// a flood of 16 MiB echoes, each held for every client and in the replay buffer).
constexpr std::size_t max_echoed_code_bytes = 64 << 10;

// An execute_input's content with its "code" within max_code_bytes (cap_text); nullopt when the
// content is not a JSON object or its code fits (then it goes as it is).
std::optional<std::string> cap_execute_input(std::string_view content, std::size_t max_code_bytes);

// An error's content ({"ename", "evalue", "traceback"}: an iopub error, or a reply with
// "status": "error") with each of those fields within its cap (a cut traceback keeps only its
// string lines); nullopt when the content is not a JSON object or nothing needed cutting (then
// it goes as it is).
std::optional<std::string> cap_error_content(std::string_view content, error_field_caps caps);

}  // namespace callisto::gateway::kernels
