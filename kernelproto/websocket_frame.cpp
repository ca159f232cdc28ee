#include "kernelproto/websocket_frame.hpp"

namespace callisto::kernelproto {

websocket_frame::websocket_frame(std::string bytes, bool is_binary) : binary(is_binary) {
    glue_ = std::move(bytes);
    size_ = glue_.size();
    if (size_ != 0) pieces_.push_back({nullptr, 0, size_});
}

void websocket_frame::append(std::string_view bytes) {
    if (bytes.empty()) return;
    const std::size_t offset = glue_.size();
    glue_.append(bytes);
    size_ += bytes.size();
    // Consecutive glue is one piece.
    if (!pieces_.empty() && pieces_.back().ref == nullptr &&
        pieces_.back().offset + pieces_.back().size == offset) {
        pieces_.back().size += bytes.size();
        return;
    }
    pieces_.push_back({nullptr, offset, bytes.size()});
}

void websocket_frame::append_ref(std::string_view bytes) {
    if (bytes.size() < min_ref_size) return append(bytes);
    pieces_.push_back({bytes.data(), 0, bytes.size()});
    size_ += bytes.size();
}

void websocket_frame::append_frame(const websocket_frame& other) {
    for (const auto& p : other.pieces_) {
        if (p.ref) {
            pieces_.push_back(p);
            size_ += p.size;
        } else {
            append(std::string_view(other.glue_).substr(p.offset, p.size));
        }
    }
    owners_.insert(owners_.end(), other.owners_.begin(), other.owners_.end());
}

void websocket_frame::keep(std::shared_ptr<const void> owner) {
    if (owner) owners_.push_back(std::move(owner));
}

std::vector<std::string_view> websocket_frame::pieces() const {
    std::vector<std::string_view> out;
    out.reserve(pieces_.size());
    for (const auto& p : pieces_) out.emplace_back(p.ref ? p.ref : glue_.data() + p.offset, p.size);
    return out;
}

std::string websocket_frame::str() const {
    std::string out;
    out.reserve(size_);
    for (auto p : pieces()) out.append(p);
    return out;
}

}  // namespace callisto::kernelproto
