#pragma once
// The bytes of one message part that can be large (content, buffers): either owned, or a view
// of a buffer kept alive by an owner (a received ZeroMQ frame). A kernel's 50 MB output then
// goes from the buffer ZeroMQ received it in to the WebSocket without a copy in between.
//
// Reads like a string: converts to std::string_view, compares with strings, has begin()/end()
// (so nlohmann::json::parse takes it), and assigning a string makes it an owned one again.

#include <cstddef>
#include <memory>
#include <string>
#include <string_view>

namespace callisto::kernelproto {

class payload {
public:
    payload() = default;
    payload(std::string bytes) : owned_(std::move(bytes)) {}  // NOLINT: implicit, like a string
    payload(std::string_view bytes) : owned_(bytes) {}        // NOLINT
    payload(const char* bytes) : owned_(bytes) {}             // NOLINT
    // A view of bytes that `owner` keeps alive (null: the caller guarantees they outlive it).
    payload(std::shared_ptr<const void> owner, std::string_view bytes)
        : owner_(std::move(owner)), view_(bytes), viewed_(true) {}

    std::string_view view() const { return viewed_ ? view_ : std::string_view(owned_); }
    operator std::string_view() const { return view(); }  // NOLINT: reads like a string
    const char* data() const { return view().data(); }
    std::size_t size() const { return view().size(); }
    bool empty() const { return size() == 0; }
    const char* begin() const { return data(); }
    const char* end() const { return data() + size(); }
    std::string str() const { return std::string(view()); }
    // True when the bytes live in a buffer owned elsewhere (not copied).
    bool is_view() const { return viewed_; }

    friend bool operator==(const payload& a, const payload& b) { return a.view() == b.view(); }
    friend bool operator==(const payload& a, std::string_view b) { return a.view() == b; }
    friend bool operator==(const payload& a, const std::string& b) { return a.view() == b; }
    friend bool operator==(const payload& a, const char* b) { return a.view() == b; }

private:
    std::string owned_;
    std::shared_ptr<const void> owner_;
    std::string_view view_;
    bool viewed_ = false;
};

}  // namespace callisto::kernelproto
