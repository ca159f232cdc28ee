#pragma once
// One encoded WebSocket frame as a gather list: the bytes the encoder makes (offset tables,
// JSON punctuation, small parts) live in the frame, the message's big parts (content, buffers)
// are referenced where they already are, kept alive by the frame. A 50 MB output is written to
// the socket from the buffer it was received in, never spliced into a second copy.

#include <cstddef>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace callisto::kernelproto {

class websocket_frame {
public:
    bool binary = false;

    websocket_frame() = default;
    // A frame of these bytes (tests, error replies).
    explicit websocket_frame(std::string bytes, bool is_binary = false);

    std::size_t size() const { return size_; }
    // The frame's bytes in order; views valid while the frame lives and is not changed.
    std::vector<std::string_view> pieces() const;
    std::string str() const;  // the bytes joined: for tests and logs, never on the relay path

    // Building. append copies; append_ref references bytes kept alive by an owner given to
    // keep() (short parts are copied anyway: a piece costs more than copying a few bytes).
    void append(std::string_view bytes);
    void append_ref(std::string_view bytes);
    void append_frame(const websocket_frame& other);  // other's references stay references
    void keep(std::shared_ptr<const void> owner);
    void reserve_glue(std::size_t bytes) { glue_.reserve(bytes); }

    static constexpr std::size_t min_ref_size = 4096;

private:
    struct piece {
        const char* ref;  // nullptr: glue_[offset, offset + size)
        std::size_t offset;
        std::size_t size;
    };
    std::string glue_;
    std::vector<piece> pieces_;
    std::vector<std::shared_ptr<const void>> owners_;
    std::size_t size_ = 0;
};

}  // namespace callisto::kernelproto
