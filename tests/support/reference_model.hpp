#pragma once
// A reference model for randomized allocator tests: remembers every live block, fills it with a
// pattern derived from its id, and checks no overlap, alignment and intact contents.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <iterator>
#include <map>
#include <random>

#include <gtest/gtest.h>

namespace strata::test {

class reference_model {
public:
    struct block {
        std::byte* p;
        std::size_t size;
        std::size_t align;
        std::uint64_t id;
    };

    /// Records a fresh block, checks alignment and that it overlaps no live block, and fills it.
    void add(void* ptr, std::size_t size, std::size_t align) {
        auto* p = static_cast<std::byte*>(ptr);
        ASSERT_NE(p, nullptr);
        ASSERT_EQ(reinterpret_cast<std::uintptr_t>(p) % align, 0u) << "misaligned for " << align;
        auto next = live_.lower_bound(p);
        if (next != live_.end()) {
            ASSERT_LE(p + size, next->second.p) << "overlaps the next live block";
        }
        if (next != live_.begin()) {
            auto prev = std::prev(next);
            ASSERT_LE(prev->second.p + prev->second.size, p) << "overlaps the previous live block";
        }
        const std::uint64_t id = ++next_id_;
        fill(p, size, id);
        live_.emplace(p, block{p, size, align, id});
    }

    /// Checks the block's contents survived and forgets it.
    void remove(void* ptr) {
        auto it = live_.find(static_cast<std::byte*>(ptr));
        ASSERT_NE(it, live_.end()) << "removing a block the model does not know";
        verify(it->second);
        live_.erase(it);
    }

    /// Checks every live block's contents.
    void verify_all() const {
        for (const auto& [p, b] : live_)
            verify(b);
    }

    /// Forgets every block whose address is >= `from` (a rewind), checking the ones below survive.
    void forget_from(const void* from) {
        auto it = live_.lower_bound(static_cast<std::byte*>(const_cast<void*>(from)));
        live_.erase(it, live_.end());
    }
    void clear() noexcept { live_.clear(); }

    [[nodiscard]] std::size_t size() const noexcept { return live_.size(); }
    [[nodiscard]] bool empty() const noexcept { return live_.empty(); }
    [[nodiscard]] const std::map<std::byte*, block>& blocks() const noexcept { return live_; }

private:
    static std::byte pattern(std::uint64_t id, std::size_t i) noexcept {
        return static_cast<std::byte>((id * 131u + i * 7u) & 0xFFu);
    }
    static void fill(std::byte* p, std::size_t size, std::uint64_t id) noexcept {
        for (std::size_t i = 0; i < size; ++i)
            p[i] = pattern(id, i);
    }
    static void verify(const block& b) {
        for (std::size_t i = 0; i < b.size; ++i) {
            if (b.p[i] != pattern(b.id, i)) {
                ADD_FAILURE() << "block " << b.id << " of " << b.size << " bytes corrupted at byte " << i;
                return;
            }
        }
    }

    std::map<std::byte*, block> live_;
    std::uint64_t next_id_ = 0;
};

} // namespace strata::test
