#pragma once
// The bytes of bodies the connections hold, all together and both ways: request bodies being
// received or handled, answers being written (a download: the chunk it holds). A body is
// admitted only while the total stays under the cap, so many concurrent uploads, or clients
// that do not read their answers, cannot push the gateway's memory past a known bound; a
// refused client is told to retry.

#include <atomic>
#include <cstddef>
#include <memory>

namespace callisto::gateway {

class body_budget {
public:
    explicit body_budget(std::size_t max_bytes)  // 0: no cap
        : max_bytes_(max_bytes), in_use_(std::make_shared<std::atomic<std::size_t>>(0)) {}

    // Holds `bytes` of the budget until destroyed or reset. Move-only.
    class reservation {
    public:
        reservation() = default;
        reservation(reservation&& other) noexcept
            : in_use_(std::move(other.in_use_)), bytes_(other.bytes_) {}
        reservation& operator=(reservation&& other) noexcept {
            if (this != &other) {
                reset();
                in_use_ = std::move(other.in_use_);
                bytes_ = other.bytes_;
            }
            return *this;
        }
        ~reservation() { reset(); }
        void reset() {
            if (in_use_) in_use_->fetch_sub(bytes_);
            in_use_.reset();
            bytes_ = 0;
        }

    private:
        friend class body_budget;
        std::shared_ptr<std::atomic<std::size_t>> in_use_;
        std::size_t bytes_ = 0;
    };

    // False, and `out` untouched, when `bytes` more would pass the cap.
    bool try_reserve(std::size_t bytes, reservation& out) {
        std::size_t now = in_use_->load();
        do {
            if (max_bytes_ && (bytes > max_bytes_ || now > max_bytes_ - bytes)) return false;
        } while (!in_use_->compare_exchange_weak(now, now + bytes));
        out.reset();
        out.in_use_ = in_use_;
        out.bytes_ = bytes;
        return true;
    }

    // For an answer already made: as try_reserve, and also when nothing else is in flight, so
    // that an answer larger than the whole cap is still sent, alone.
    bool try_reserve_answer(std::size_t bytes, reservation& out) {
        std::size_t now = in_use_->load();
        do {
            if (max_bytes_ && now != 0 && (bytes > max_bytes_ || now > max_bytes_ - bytes))
                return false;
        } while (!in_use_->compare_exchange_weak(now, now + bytes));
        out.reset();
        out.in_use_ = in_use_;
        out.bytes_ = bytes;
        return true;
    }

    std::size_t in_use() const { return in_use_->load(); }
    std::size_t max_bytes() const { return max_bytes_; }

private:
    std::size_t max_bytes_;
    std::shared_ptr<std::atomic<std::size_t>> in_use_;
};

}  // namespace callisto::gateway
