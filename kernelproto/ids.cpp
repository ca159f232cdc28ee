#include "kernelproto/ids.hpp"

#include <array>
#include <stdexcept>
#include <vector>

#include <openssl/rand.h>

namespace callisto::kernelproto {

namespace {

constexpr char hex_digits[] = "0123456789abcdef";

void fill_random(unsigned char* out, std::size_t n) {
    // RAND_bytes takes an int; ids are small, so one call suffices.
    if (n == 0) return;
    if (RAND_bytes(out, static_cast<int>(n)) != 1)
        throw std::runtime_error("RAND_bytes failed: no entropy for identifiers");
}

}  // namespace

std::string new_uuid() {
    std::array<unsigned char, 16> b{};
    fill_random(b.data(), b.size());
    b[6] = static_cast<unsigned char>((b[6] & 0x0f) | 0x40);  // version 4
    b[8] = static_cast<unsigned char>((b[8] & 0x3f) | 0x80);  // RFC 4122 variant
    std::string out;
    out.reserve(36);
    for (std::size_t i = 0; i < b.size(); ++i) {
        if (i == 4 || i == 6 || i == 8 || i == 10) out.push_back('-');
        out.push_back(hex_digits[b[i] >> 4]);
        out.push_back(hex_digits[b[i] & 0x0f]);
    }
    return out;
}

std::string random_hex(std::size_t n_bytes) {
    std::vector<unsigned char> b(n_bytes);
    fill_random(b.data(), b.size());
    std::string out;
    out.reserve(2 * n_bytes);
    for (unsigned char c : b) {
        out.push_back(hex_digits[c >> 4]);
        out.push_back(hex_digits[c & 0x0f]);
    }
    return out;
}

}  // namespace callisto::kernelproto
