#pragma once
// Helpers for tests of heaps over caller memory: an over-aligned buffer and a light reference model
// of the live blocks (no overlap, alignment, contents preserved: every block is filled with a byte
// derived from its id and carries its id in its first and last bytes).
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <iterator>
#include <map>
#include <new>
#include <span>

#include <gtest/gtest.h>

#include "support/aligned_buffer.hpp"
#include "support/test_rng.hpp"

namespace strata::test {

/// The buffer heaps are built over (an aligned_buffer: over-aligned, freed on destruction).
using heap_buffer = aligned_buffer;

/// The live blocks of a heap under test.
class heap_model {
public:
    struct block {
        std::byte* p;
        std::size_t size;
        std::uint64_t id;
    };

    /// Records a fresh block: non-null, aligned, disjoint from every live block; fills it.
    ::testing::AssertionResult add(void* ptr, std::size_t size, std::size_t align) {
        auto* p = static_cast<std::byte*>(ptr);
        if (p == nullptr) return ::testing::AssertionFailure() << "nullptr";
        if (reinterpret_cast<std::uintptr_t>(p) % align != 0)
            return ::testing::AssertionFailure() << "misaligned for " << align;
        auto next = live_.lower_bound(p);
        if (next != live_.end() && p + size > next->first)
            return ::testing::AssertionFailure() << "overlaps the next live block";
        if (next != live_.begin()) {
            auto prev = std::prev(next);
            if (prev->first + prev->second.size > p)
                return ::testing::AssertionFailure() << "overlaps the previous live block";
        }
        const std::uint64_t id = ++next_id_;
        fill(p, size, id);
        live_.emplace(p, block{p, size, id});
        return ::testing::AssertionSuccess();
    }

    /// Verifies the block's contents and forgets it.
    ::testing::AssertionResult remove(void* ptr) {
        auto it = live_.find(static_cast<std::byte*>(ptr));
        if (it == live_.end()) return ::testing::AssertionFailure() << "unknown block";
        auto r = verify(it->second);
        live_.erase(it);
        return r;
    }

    /// Moves a block to `to` with `new_size` (a reallocation): checks the kept prefix, refills.
    ::testing::AssertionResult moved(void* from, void* to, std::size_t new_size, std::size_t align) {
        auto it = live_.find(static_cast<std::byte*>(from));
        if (it == live_.end()) return ::testing::AssertionFailure() << "unknown block";
        block b = it->second;
        live_.erase(it);
        const std::size_t keep = b.size < new_size ? b.size : new_size;
        const auto* q = static_cast<const std::byte*>(to);
        for (std::size_t i = 8; i + 8 < keep; i += 61) // the body pattern (ids sit at both ends)
            if (q[i] != body(b.id)) return ::testing::AssertionFailure() << "contents lost at " << i;
        if (keep >= 8 && std::memcmp(q, &b.id, 8) != 0) return ::testing::AssertionFailure() << "head lost";
        return add(to, new_size, align);
    }

    ::testing::AssertionResult verify_all() const {
        for (const auto& [p, b] : live_) {
            auto r = verify(b);
            if (!r) return r;
        }
        return ::testing::AssertionSuccess();
    }

    [[nodiscard]] std::size_t size() const noexcept { return live_.size(); }
    [[nodiscard]] bool empty() const noexcept { return live_.empty(); }
    [[nodiscard]] const std::map<std::byte*, block>& blocks() const noexcept { return live_; }
    /// Returns: the i-th live block (by address), i < size().
    [[nodiscard]] const block& nth(std::size_t i) const {
        return std::next(live_.begin(), static_cast<long>(i))->second;
    }

private:
    static std::byte body(std::uint64_t id) noexcept { return static_cast<std::byte>((id * 131u) | 1u); }
    static void fill(std::byte* p, std::size_t size, std::uint64_t id) noexcept {
        std::memset(p, static_cast<int>(body(id)), size);
        if (size >= 8) std::memcpy(p, &id, 8);
        if (size >= 16) std::memcpy(p + size - 8, &id, 8);
    }
    static ::testing::AssertionResult verify(const block& b) {
        std::uint64_t head = 0, tail = 0;
        if (b.size >= 8) std::memcpy(&head, b.p, 8);
        if (b.size >= 16) std::memcpy(&tail, b.p + b.size - 8, 8);
        if ((b.size >= 8 && head != b.id) || (b.size >= 16 && tail != b.id))
            return ::testing::AssertionFailure() << "block " << b.id << " lost its id";
        for (std::size_t i = 8; i + 8 < b.size; i += 61)
            if (b.p[i] != body(b.id))
                return ::testing::AssertionFailure() << "block " << b.id << " corrupted at " << i;
        return ::testing::AssertionSuccess();
    }

    std::map<std::byte*, block> live_;
    std::uint64_t next_id_ = 0;
};

} // namespace strata::test
