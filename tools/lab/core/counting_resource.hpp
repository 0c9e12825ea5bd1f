#pragma once
// strata-lab counting_resource: the upstream of the std::pmr contenders, so their footprint is the
// bytes they hold from new/delete; pmr_replay, what those contenders share.
#include <cstddef>
#include <memory_resource>
#include <utility>

namespace strata::lab {

/// A pmr upstream that forwards to new_delete_resource() and counts the bytes outstanding.
class counting_resource final : public std::pmr::memory_resource {
public:
    [[nodiscard]] std::size_t outstanding() const noexcept { return outstanding_; }

private:
    void* do_allocate(std::size_t bytes, std::size_t align) override {
        void* p = upstream_->allocate(bytes, align);
        outstanding_ += bytes;
        return p;
    }
    void do_deallocate(void* p, std::size_t bytes, std::size_t align) override {
        upstream_->deallocate(p, bytes, align);
        outstanding_ -= bytes;
    }
    [[nodiscard]] bool do_is_equal(const std::pmr::memory_resource& other) const noexcept override {
        return this == &other;
    }

    std::pmr::memory_resource* upstream_ = std::pmr::new_delete_resource();
    std::size_t outstanding_ = 0;
};

/// A std::pmr resource R over a counting_resource, for the pmr contenders (replay.hpp's contract):
/// allocate() answers nullptr where R throws; the footprint is the bytes R holds from new/delete.
template <class R>
class pmr_replay {
public:
    void* allocate(std::size_t size, std::size_t align) noexcept {
        try {
            return resource_.allocate(size, align);
        } catch (...) {
            return nullptr;
        }
    }
    [[nodiscard]] std::size_t footprint() const noexcept { return upstream_.outstanding(); }

protected:
    /// Effects: R made from `args` and the counting upstream.
    template <class... Args>
    explicit pmr_replay(Args&&... args) : resource_(std::forward<Args>(args)..., &upstream_) {}

    counting_resource upstream_;
    R resource_;
};

} // namespace strata::lab
