#pragma once
// strata-lab counting_resource: the upstream of the std::pmr contenders, so their footprint is the
// bytes they hold from new/delete.
#include <cstddef>
#include <memory_resource>

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

} // namespace strata::lab
