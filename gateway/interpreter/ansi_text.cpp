#include "gateway/interpreter/ansi_text.hpp"

namespace callisto::gateway::interpreter {

std::string strip_ansi(std::string_view text) {
    std::string out;
    out.reserve(text.size());
    std::size_t i = 0;
    while (i < text.size()) {
        const char c = text[i];
        if (c != '\x1b') {
            out.push_back(c);
            ++i;
            continue;
        }
        if (i + 1 >= text.size()) break;
        const char kind = text[i + 1];
        i += 2;
        if (kind == '[') {  // CSI: parameters and intermediates, then a final byte 0x40-0x7e
            while (i < text.size() && !(text[i] >= 0x40 && text[i] <= 0x7e)) ++i;
            if (i < text.size()) ++i;
        } else if (kind == ']') {  // OSC: up to BEL or ST (ESC \)
            while (i < text.size()) {
                if (text[i] == '\x07') {
                    ++i;
                    break;
                }
                if (text[i] == '\x1b' && i + 1 < text.size() && text[i + 1] == '\\') {
                    i += 2;
                    break;
                }
                ++i;
            }
        } else if (kind >= 0x20 && kind <= 0x2f) {  // nF: intermediates, then a final byte
            while (i < text.size() && text[i] >= 0x20 && text[i] <= 0x2f) ++i;
            if (i < text.size()) ++i;
        }
        // Anything else: ESC plus one byte, both dropped.
    }
    return out;
}

}  // namespace callisto::gateway::interpreter
