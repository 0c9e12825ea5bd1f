#pragma once
// The pools of a boundary-tag heap (tlsf, free_list). Each pool the caller adds is trimmed to 16-byte
// boundaries (tlsf: its start to 32) and starts with a 32-byte record, which chains the pools in the order
// they were added, and ends with a 16-byte sentinel header of size 0 that stops physical walks and merges.
// The heaps differ in their block headers and free lists, not in this; they share it so that the pool walk,
// the owner lookup and the live-block test behind every checked free are written once.
#include <cstddef>
#include <cstdint>
#include <new>
#include <span>

#include "strata/core/poison.hpp"
#include "strata/heap/heap_metrics.hpp"

namespace strata::detail {

/// The pool list of a heap whose blocks are `Block`s: 16-byte headers in front of their payloads,
/// with size(), is_free(), payload(), next_phys() and prev_phys().
template <class Block>
class pool_chain {
public:
    static constexpr std::size_t alignment = 16;
    static constexpr std::size_t header_size = sizeof(Block);
    static constexpr std::size_t min_payload = 16;
    static_assert(header_size == alignment, "a block header is 16 bytes");

    struct record {
        record* next;
        std::size_t bytes; // from this record to the end of the sentinel
        std::byte* end;    // one past the sentinel
        std::size_t pad;
        [[nodiscard]] Block* first() noexcept { return reinterpret_cast<Block*>(this + 1); }
        [[nodiscard]] const Block* first() const noexcept { return reinterpret_cast<const Block*>(this + 1); }
        [[nodiscard]] Block* sentinel() noexcept { return reinterpret_cast<Block*>(end - header_size); }
        [[nodiscard]] const Block* sentinel() const noexcept {
            return reinterpret_cast<const Block*>(end - header_size);
        }
    };
    static_assert(sizeof(record) == 32);
    /// Bytes of a pool that no block payload uses: the record and the sentinel.
    static constexpr std::size_t overhead = sizeof(record) + header_size;

    /// Effects: trims `pool`'s start to a `start_alignment` boundary (a power of two >= 16) and its
    /// end to a 16-byte one, unpoisons it and writes an unchained record at its start; the caller
    /// then lays out the first block and the sentinel and calls append().
    /// Returns: the record, or nullptr (nothing written) when the trimmed pool is shorter than
    /// `min_bytes` or not shorter than `max_bytes`.
    [[nodiscard]] static record* place(std::span<std::byte> pool, std::size_t min_bytes,
                                       std::size_t max_bytes,
                                       std::size_t start_alignment = alignment) noexcept {
        if (pool.data() == nullptr) return nullptr;
        const auto raw = reinterpret_cast<std::uintptr_t>(pool.data());
        const std::uintptr_t begin = (raw + (start_alignment - 1)) & ~std::uintptr_t{start_alignment - 1};
        const std::uintptr_t end = (raw + pool.size()) & ~std::uintptr_t{alignment - 1};
        if (end < raw || end <= begin) return nullptr;
        const std::size_t bytes = end - begin;
        if (bytes < min_bytes || bytes >= max_bytes) return nullptr;
        unpoison(reinterpret_cast<void*>(begin), bytes);
        return ::new (reinterpret_cast<void*>(begin))
            record{nullptr, bytes, reinterpret_cast<std::byte*>(end), 0};
    }

    /// Effects: chains `r` (from place()) after the pools added before it.
    void append(record* r) noexcept {
        if (last_ != nullptr) {
            last_->next = r;
        } else {
            first_ = r;
        }
        last_ = r;
    }

    /// Returns: the first pool (follow record::next), nullptr when none.
    [[nodiscard]] const record* front() const noexcept { return first_; }

    /// Returns: the number of pools. Complexity: O(pools).
    [[nodiscard]] std::size_t count() const noexcept {
        std::size_t n = 0;
        for (const record* r = first_; r != nullptr; r = r->next)
            ++n;
        return n;
    }

    /// Returns: the pool whose payload range holds `p`, or nullptr. Complexity: O(pools).
    [[nodiscard]] const record* find(const void* p) const noexcept {
        const auto at = reinterpret_cast<std::uintptr_t>(p);
        for (const record* r = first_; r != nullptr; r = r->next) {
            const auto begin = reinterpret_cast<std::uintptr_t>(r->first()->payload());
            if (at >= begin && at < reinterpret_cast<std::uintptr_t>(r->end)) return r;
        }
        return nullptr;
    }

    /// Returns: true when the header in front of `p`, a 16-aligned address inside `pool`, describes a
    /// block that ends inside the pool, whose successor names it as its predecessor and whose
    /// predecessor (if any) ends at it. A pointer into a block's middle reads user bytes as a header
    /// and fails this (almost surely), and so does a block freed and then merged into a neighbour.
    /// In ASan builds a header that lies in released (poisoned) bytes is not read: it is not a live
    /// block's, and reading it would stop the program instead of giving the documented report.
    [[nodiscard]] static bool is_block_start(const record& pool, const void* p) noexcept {
        const Block* b = static_cast<const Block*>(p) - 1;
        if (is_poisoned(b, header_size)) return false;
        const auto end = reinterpret_cast<std::uintptr_t>(pool.end) - header_size;
        const auto at = reinterpret_cast<std::uintptr_t>(p);
        const std::size_t size = b->size();
        if (size < min_payload || size > end - at) return false;
        const Block* next = b->next_phys();
        if (is_poisoned(next, header_size) || next->prev_phys() != b) return false;
        // A merge on both sides leaves two stale headers in the merged block, the second naming the
        // first as its predecessor, so the successor test alone passes a double free of the middle
        // block. The predecessor must end at b too (or b must be the pool's first block).
        const Block* prev = b->prev_phys();
        if (prev == nullptr) return b == pool.first();
        const auto before = reinterpret_cast<std::uintptr_t>(prev);
        if ((before & (alignment - 1)) != 0 || before < reinterpret_cast<std::uintptr_t>(pool.first()) ||
            before >= at - header_size || is_poisoned(prev, header_size))
            return false;
        return prev->next_phys() == b;
    }

    /// Effects: calls `visit(block_info)` for every block of every pool in address order; offsets are
    /// payload offsets counted across pools (in the order added), sizes are payload bytes.
    template <class Visitor>
    void for_each_block(Visitor&& visit) const {
        std::size_t base = 0;
        for (const record* r = first_; r != nullptr; r = r->next) {
            const auto* begin = reinterpret_cast<const std::byte*>(r);
            for (const Block* b = r->first(); b->size() != 0; b = b->next_phys())
                visit(block_info{base + static_cast<std::size_t>(b->payload() - begin), b->size(),
                                 !b->is_free()});
            base += r->bytes;
        }
    }

    /// Returns: the figures of every block, and overhead_bytes (the block headers, pool records and
    /// sentinels); capacity and requested bytes are left for the heap. Complexity: O(blocks).
    [[nodiscard]] heap_metrics block_metrics() const noexcept {
        heap_metrics_builder builder;
        for_each_block([&](const block_info& info) { builder.add(info); });
        heap_metrics m = builder.m;
        m.overhead_bytes = m.block_count() * header_size + count() * overhead;
        return m;
    }

private:
    record* first_ = nullptr;
    record* last_ = nullptr;
};

} // namespace strata::detail
