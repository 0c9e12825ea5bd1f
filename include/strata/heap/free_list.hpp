#pragma once
// free_list: the classic general-purpose heap (Knuth TAOCP 2.5): an address-ordered, doubly linked
// list of free blocks with boundary tags and immediate coalescing; the fit policy (first, best,
// next) is a template tag. It is the baseline the lab compares TLSF and buddy against: simple,
// compact, and O(free blocks) per call, which shows as it fragments.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <type_traits>

#include "strata/core/align.hpp"
#include "strata/core/allocator.hpp"
#include "strata/core/check.hpp"
#include "strata/core/config.hpp"
#include "strata/core/poison.hpp"
#include "strata/core/stats.hpp"
#include "strata/heap/detail/pool_chain.hpp"
#include "strata/heap/heap_metrics.hpp"

namespace strata {

/// Fit policies for free_list.
struct first_fit {}; ///< the lowest-addressed free block that fits
struct best_fit {};  ///< the smallest free block that fits (an exact fit stops the search)
struct next_fit {};  ///< the first fit at or after where the previous search stopped, wrapping

/// An address-ordered free list heap over caller memory (`add_pool`).
///
/// Layout as tlsf: a 16-byte header per block, 16-aligned payloads of at least 16 bytes, a pool
/// record (32 B) and an end sentinel (16 B) per pool. Allocation walks the free list (O(free
/// blocks)); freeing coalesces in O(1) with free neighbours, and otherwise walks the list to find
/// the block's address-ordered place (O(free blocks)).
///
/// Bad input answers are tlsf's: nullptr for size 0, a non-power-of-two alignment, sizes or
/// alignments above max_request, exhaustion; `foreign_pointer` / `double_free` reported at
/// checks >= 1 and the call ignored. Not thread-safe.
template <class Policy>
class free_list {
    static_assert(std::is_same_v<Policy, first_fit> || std::is_same_v<Policy, best_fit> ||
                      std::is_same_v<Policy, next_fit>,
                  "Policy is first_fit, best_fit or next_fit");

public:
    static constexpr std::size_t alignment = 16;
    static constexpr std::size_t header_size = 16;
    static constexpr std::size_t min_payload = 16;
    static constexpr std::size_t pool_overhead = 48;
    static constexpr std::size_t max_request = std::size_t{1} << 45;

    free_list() noexcept = default;
    /// Effects: a heap over `pool` (see add_pool).
    explicit free_list(std::span<std::byte> pool) noexcept { (void)add_pool(pool); }
    free_list(const free_list&) = delete;
    free_list& operator=(const free_list&) = delete;

    /// Effects: adds `pool` (trimmed to 16-byte boundaries). Returns: false when it is too small
    /// (< 80 bytes) or too large (>= 2^47). Requires: it outlives the heap and overlaps no pool.
    bool add_pool(std::span<std::byte> pool) noexcept;

    /// Returns: `size` bytes aligned to `align`, or nullptr (invalid request, no fitting block).
    /// Complexity: O(free blocks).
    [[nodiscard]] void* allocate(std::size_t size, std::size_t align = default_alignment) noexcept;

    /// Effects: frees `p` (nullptr: nothing), coalescing with free neighbours.
    /// Complexity: O(1) when a neighbour is free, else O(free blocks).
    void deallocate(void* p) noexcept;
    void deallocate(void* p, std::size_t /*size*/, std::size_t /*align*/ = default_alignment) noexcept {
        deallocate(p);
    }

    /// Returns: the usable bytes of live block `p`. Requires: p is live. In ASan builds the bytes
    /// past the size asked for stay poisoned (see tlsf::usable_size).
    [[nodiscard]] std::size_t usable_size(const void* p) const noexcept { return header_of(p)->size(); }
    /// Returns: true when `p` lies in the payload range of one of the pools (from its first block's
    /// payload to its end: no block starts in the pool record or first header). O(pools).
    [[nodiscard]] bool owns(const void* p) const noexcept { return pools_.find(p) != nullptr; }
    /// Returns: the payload of the largest free block, at most max_request: a request of this size
    /// succeeds (metrics().largest_free_block reports the block itself). O(free blocks).
    [[nodiscard]] std::size_t largest_free_block() const noexcept;
    /// Returns: the number of free blocks (the list length every call walks). O(1).
    [[nodiscard]] std::size_t free_block_count() const noexcept { return free_count_; }

    [[nodiscard]] strata::stats stats() const noexcept {
        return {used_, peak_, capacity_, live_, total_, largest_free_block()};
    }
    [[nodiscard]] heap_metrics metrics() const noexcept;

    /// Effects: calls `visit(block_info)` for every block in address order (payload offsets counted
    /// across pools in the order added, payload sizes).
    template <class Visitor>
    void for_each_block(Visitor&& visit) const {
        pools_.for_each_block(static_cast<Visitor&&>(visit));
    }

    /// Returns: true when every invariant holds (address-ordered list of exactly the free blocks,
    /// consistent links and boundary tags, no adjacent free blocks, sizes sum to each pool, counters).
    /// Reports `corruption` for the first broken one. Complexity: O(blocks).
    [[nodiscard]] bool check() const noexcept;

private:
    struct block {
        block* prev_; // the physical predecessor (nullptr for a pool's first block)
        std::size_t size_;
        static constexpr std::size_t free_bit = 1;
        static constexpr std::size_t prev_free_bit = 2;
        static constexpr std::size_t size_mask = ((std::size_t{1} << 56) - 1) & ~std::size_t{15};
        block*& next_free() noexcept { return reinterpret_cast<block**>(this + 1)[0]; }
        block*& prev_free() noexcept { return reinterpret_cast<block**>(this + 1)[1]; }
        [[nodiscard]] block* next_free() const noexcept {
            return reinterpret_cast<block* const*>(this + 1)[0];
        }
        [[nodiscard]] block* prev_free() const noexcept {
            return reinterpret_cast<block* const*>(this + 1)[1];
        }
        [[nodiscard]] std::size_t size() const noexcept { return size_ & size_mask; }
        [[nodiscard]] block* prev_phys() const noexcept { return prev_; }
        [[nodiscard]] std::size_t slack() const noexcept { return size_ >> 56; }
        [[nodiscard]] bool is_free() const noexcept { return (size_ & free_bit) != 0; }
        [[nodiscard]] bool is_prev_free() const noexcept { return (size_ & prev_free_bit) != 0; }
        [[nodiscard]] std::byte* payload() noexcept { return reinterpret_cast<std::byte*>(this + 1); }
        [[nodiscard]] const std::byte* payload() const noexcept {
            return reinterpret_cast<const std::byte*>(this + 1);
        }
        [[nodiscard]] block* next_phys() noexcept { return reinterpret_cast<block*>(payload() + size()); }
        [[nodiscard]] const block* next_phys() const noexcept {
            return reinterpret_cast<const block*>(payload() + size());
        }
    };
    using pool_list = detail::pool_chain<block>;
    using pool_record = typename pool_list::record;
    static_assert(pool_list::overhead == pool_overhead && pool_list::min_payload == min_payload);

    [[nodiscard]] static block* header_of(const void* p) noexcept {
        return reinterpret_cast<block*>(const_cast<std::byte*>(static_cast<const std::byte*>(p))) - 1;
    }
    [[nodiscard]] block* find(std::size_t need) noexcept;
    void link_after(block* b, block* prev) noexcept; // prev == nullptr: at the head
    void unlink(block* b) noexcept;
    void replace(block* old_block, block* new_block) noexcept;
    [[nodiscard]] bool verify_live(const void* p) const noexcept;
    [[nodiscard]] bool corrupt(const void* where, const char* what) const noexcept;

    block* head_ = nullptr;
    block* rover_ = nullptr; // next_fit: where the next search starts
    std::size_t free_count_ = 0;
    std::size_t used_ = 0;
    std::size_t requested_ = 0;
    std::size_t peak_ = 0;
    std::size_t live_ = 0;
    std::size_t total_ = 0;
    std::size_t capacity_ = 0;
    pool_list pools_;
};

using free_list_first_fit = free_list<first_fit>;
using free_list_best_fit = free_list<best_fit>;
using free_list_next_fit = free_list<next_fit>;

extern template class free_list<first_fit>;
extern template class free_list<best_fit>;
extern template class free_list<next_fit>;

} // namespace strata

#include "strata/heap/detail/free_list_impl.hpp"
