#pragma once
// slab_cache<T>: an object cache after Bonwick (1994). Objects live in slabs: power-of-two blocks
// from a memory source, aligned to their size, each holding N objects and a header. Slabs sit on a
// partial, a full or an empty list; allocation prefers partial slabs, so memory stays dense and
// empty slabs can go back to the source.
#include <algorithm>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <new>
#include <type_traits>
#include <utility>
#include <vector>

#include "strata/core/align.hpp"
#include "strata/core/bit.hpp"
#include "strata/core/check.hpp"
#include "strata/core/config.hpp"
#include "strata/core/iteration_guard.hpp"
#include "strata/core/poison.hpp"
#include "strata/core/stats.hpp"
#include "strata/source/memory_source.hpp"

namespace strata {

/// Settings of a slab_cache.
struct slab_options {
    /// Bytes per slab, a power of two in [the header plus one object, 1 GiB] (the slab header is
    /// found by masking an object's address; slab_cache<T>::max_slab_bytes is the cap); outside
    /// that range the cache is invalid. 0 = the smallest power of two in [16 KiB, 1 GiB] that holds
    /// at least `min_objects` objects.
    std::size_t slab_bytes = 0;
    /// Only used when slab_bytes is 0 (0 counts as 1). When not even a 1 GiB slab holds this many
    /// objects the cache is invalid, rather than quietly holding fewer per slab than asked for.
    std::size_t min_objects = 8;
    std::size_t max_empty_slabs = 1; ///< empty slabs kept for reuse; the rest go back to the source
    /// Bonwick's object caching: T() runs once per object when its slab is created, allocate() hands
    /// out constructed objects, deallocate() takes them back constructed (the caller restores the
    /// constructed state), and ~T() runs when the slab goes back to the source. Requires a
    /// nothrow-default-constructible T (otherwise the cache is invalid).
    bool cache_objects = false;
};

/// Per-slab header layout shared by every slab_cache<T> (not a template: no code bloat per T).
struct slab_header {
    const void* owner; // the cache, for foreign-pointer checks
    slab_header* prev; // neighbours on the list this slab is on
    slab_header* next;
    memory_block block;     // as the source returned it
    std::uint32_t live;     // objects handed out
    std::uint32_t free_top; // free indices on the stack
    std::uint32_t list;     // 0 partial, 1 full, 2 empty
    std::uint32_t reserved;
    // followed by: std::uint32_t free_stack[N]; std::uint64_t live_bits[(N + 63) / 64]; objects.
};

/// An object cache of T.
///
/// Free objects are an index stack in the slab header (not links in the objects, so cached
/// objects keep their constructed state); one live bit per object (also in the header) lets the
/// cache iterate live objects and catch double frees. allocate/deallocate are O(1): list moves are
/// doubly linked, the owning slab is found by masking. Not thread-safe: magazine_cache<T> adds
/// per-thread magazines in front of it.
///
/// Walks: for_each_slab / for_each_live visit the live objects and may allocate, but may not free:
/// a free could release the slab being walked or move it to another list. deallocate()/destroy()
/// inside a walk are refused at every checks level (nothing freed; reported as invalid_argument at
/// checks >= 1). To free while walking, use destroy_if / deallocate_if, which free in place and fix
/// each slab's list once the walk has left it. The const walks count themselves in a mutable
/// depth counter, so two walks of one cache on different threads need synchronizing like any
/// other pair of calls (the cache is not thread-safe).
///
/// Bad input: deallocate(nullptr) is a no-op; a foreign pointer (O(log slabs) lookup), a pointer into
/// the middle of an object, or an object already free: reported at checks >= 1 (foreign_pointer /
/// foreign_pointer / double_free) and ignored; undefined at checks 0. Invalid options (slab_bytes
/// not a power of two, too small for one object or above 1 GiB; slab_bytes 0 with min_objects more
/// than a 1 GiB slab holds; caching without a nothrow default constructor) make the cache invalid:
/// valid() false, allocate() nullptr. Destroying the cache with live objects reports `leak` at
/// checks >= 1; the slabs go back to the source anyway.
template <class T>
class slab_cache {
public:
    using value_type = T;
    static constexpr std::size_t object_align = alignof(T) > alignof(void*) ? alignof(T) : alignof(void*);
    static constexpr std::size_t stride = (sizeof(T) + object_align - 1) / object_align * object_align;
    /// The largest slab: slab_options above it make the cache invalid.
    static constexpr std::size_t max_slab_bytes = std::size_t{1} << 30;

    /// A view of one slab, for iteration over its live objects.
    class slab_view {
    public:
        /// Returns: objects handed out from this slab.
        [[nodiscard]] std::size_t live() const noexcept { return s_->live; }
        /// Returns: objects this slab holds.
        [[nodiscard]] std::size_t capacity() const noexcept { return cache_->per_slab_; }
        /// Effects: calls f(T&) for each live object, in address order (cache-friendly updates).
        /// A walk of the cache: f may not free (see the class comment). Throws: what f throws.
        template <class F>
        void for_each_live(F&& f) const {
            const detail::iteration_guard guard(cache_->iterating_);
            const std::uint64_t* bits = cache_->bits(s_);
            for (std::size_t w = 0; w < cache_->words_; ++w)
                for (std::uint64_t m = bits[w]; m != 0; m &= m - 1)
                    f(*cache_->object(s_, w * 64 + static_cast<std::size_t>(std::countr_zero(m))));
        }

    private:
        friend class slab_cache;
        slab_view(const slab_cache* c, slab_header* s) noexcept : cache_(c), s_(s) {}
        const slab_cache* cache_;
        slab_header* s_;
    };

    /// Effects: a cache that takes slabs from `source`. Requires: `source` outlives the cache.
    explicit slab_cache(source_ref source, slab_options options = {}) noexcept
        : source_(source), options_(options) {
        if (options.cache_objects && !std::is_nothrow_default_constructible_v<T>) return;
        std::size_t bytes = options.slab_bytes;
        if (bytes == 0) {
            const std::size_t want = std::max<std::size_t>(options.min_objects, 1);
            bytes = std::size_t{16} << 10;
            while (layout(bytes) < want && bytes < max_slab_bytes)
                bytes *= 2;
            if (layout(bytes) < want) return; // not even the largest slab holds what was asked
        }
        if (!is_pow2(bytes) || bytes < sizeof(slab_header) || bytes > max_slab_bytes) return;
        const std::size_t n = layout(bytes);
        if (n == 0) return;
        per_slab_ = n;
        words_ = (n + 63) / 64;
        slab_bytes_ = bytes;
        first_ = first_offset(n);
        // Exact division by the stride: stride = odd << shift, idx = (off >> shift) * odd^-1 mod 2^32.
        shift_ = static_cast<unsigned>(std::countr_zero(stride));
        auto odd = static_cast<std::uint32_t>(stride >> shift_);
        std::uint32_t inv = odd;
        for (int i = 0; i < 5; ++i)
            inv *= 2u - odd * inv;
        inverse_ = inv;
    }

    slab_cache(const slab_cache&) = delete;
    slab_cache& operator=(const slab_cache&) = delete;

    /// Effects: reports a leak at checks >= 1 when objects are live, then returns every slab to the
    /// source (running ~T() on every object of each slab when caching objects).
    ~slab_cache() {
        if (STRATA_CHECKS >= 1 && live_ != 0) { // the message names the count
            char msg[64];
            std::snprintf(msg, sizeof msg, "slab_cache destroyed with %zu live objects",
                          static_cast<std::size_t>(live_));
            (void)STRATA_VERIFY(1, live_ == 0, leak, "strata::slab_cache", nullptr, msg);
        }
        for (slab_header* l : {partial_, full_, empty_}) {
            for (slab_header* s = l; s != nullptr;) {
                slab_header* next = s->next;
                release_slab(s);
                s = next;
            }
        }
    }

    /// Returns: storage for one T (a constructed T when caching objects), or nullptr when the source
    /// is exhausted or the cache is invalid. Complexity: O(1); a new slab calls the source once.
    [[nodiscard]] STRATA_ALWAYS_INLINE T* allocate() noexcept {
        slab_header* s = partial_;
        if (STRATA_UNLIKELY(s == nullptr)) {
            s = refill();
            if (s == nullptr) return nullptr;
        }
        const std::uint32_t idx = stack(s)[--s->free_top];
        bits(s)[idx / 64] |= std::uint64_t{1} << (idx % 64);
        ++s->live;
        ++live_;
        ++total_;
        if (STRATA_UNLIKELY(s->free_top == 0)) move(s, partial_, full_, 1);
        T* p = object(s, idx);
        if (!options_.cache_objects) acquire_bytes(p, stride);
        return p;
    }

    /// Effects: takes back `p` (still constructed when caching objects); nullptr is a no-op. Keeps at
    /// most max_empty_slabs empty slabs. Inside a walk (for_each_slab, for_each_live, destroy_if,
    /// deallocate_if) nothing is freed at any checks level, reported as invalid_argument at checks
    /// >= 1. Complexity: O(1) (O(log slabs) at checks >= 1).
    STRATA_ALWAYS_INLINE void deallocate(T* p) noexcept {
        if (STRATA_UNLIKELY(p == nullptr)) return;
        if (STRATA_UNLIKELY(iterating_ != 0)) return refuse_free_in_walk(p);
#if STRATA_CHECKS >= 1
        if (!verify_live(p)) return;
#endif
        free_slot(p);
    }

    /// Returns: a T constructed from args, or nullptr on exhaustion. Not for caching mode: nullptr
    /// there, reported as invalid_argument at checks >= 1. Throws: what T's constructor throws (the storage
    /// is returned first, inside a walk too, where the caller's own frees are refused).
    template <class... Args>
    [[nodiscard]] T* create(Args&&... args) {
        if (STRATA_UNLIKELY(options_.cache_objects)) { // refused at every level; reported at checks >= 1
            (void)STRATA_VERIFY(1, false, invalid_argument, "strata::slab_cache", nullptr,
                                "create() on an object-caching slab_cache; use allocate()");
            return nullptr;
        }
        T* p = allocate();
        if (p == nullptr) return nullptr;
        try {
            return ::new (static_cast<void*>(p)) T(std::forward<Args>(args)...);
        } catch (...) {
            // Not deallocate(): inside a walk it refuses every free, and the slot would stay live
            // with no object in it (walked, destroyed by destroy_if, reported as a leak).
            free_slot(p);
            throw;
        }
    }

    /// Effects: runs ~T() then deallocate(p); nullptr is a no-op. Violations, and a destroy inside a
    /// walk (refused as in deallocate), are reported before the destructor would run. Not for
    /// caching mode, where the slab destroys its objects itself when it is released: there
    /// destroy(p) is deallocate(p) (no ~T()), reported as invalid_argument at checks >= 1.
    void destroy(T* p) noexcept {
        if (p == nullptr) return;
        if (STRATA_UNLIKELY(iterating_ != 0)) return refuse_free_in_walk(p);
#if STRATA_CHECKS >= 1
        if (!verify_live(p)) return;
#endif
        if (STRATA_UNLIKELY(options_.cache_objects)) {
            (void)STRATA_VERIFY(1, false, invalid_argument, "strata::slab_cache", p,
                                "destroy() on an object-caching slab_cache; use deallocate()");
        } else {
            p->~T();
        }
        deallocate(p);
    }

    /// Allocator contract: allocate() when 0 < size <= sizeof(T) and align is a power of two <=
    /// object_align; otherwise nullptr.
    [[nodiscard]] void* allocate(std::size_t size, std::size_t align) noexcept {
        if (size - 1 < sizeof(T) && (align & (align - 1)) == 0 && align - 1 < object_align) return allocate();
        return nullptr;
    }
    /// Allocator contract: deallocate(p).
    void deallocate(void* p, std::size_t /*size*/, std::size_t /*align*/) noexcept {
        deallocate(static_cast<T*>(p));
    }

    /// Returns: true when `p` lies in one of this cache's slabs. Complexity: O(log slabs).
    [[nodiscard]] bool owns(const void* p) const noexcept { return find_slab(p) != nullptr; }

    /// Effects: at checks >= 1 reports what deallocate(p) would report. Returns: true when p is a live
    /// object of this cache (at checks 0: true).
    [[nodiscard]] bool verify_live(const void* p) const noexcept {
#if STRATA_CHECKS >= 1
        slab_header* s = find_slab(p);
        if (!STRATA_VERIFY(1, s != nullptr, foreign_pointer, "strata::slab_cache", p,
                           "pointer not from this cache"))
            return false;
        const auto off =
            static_cast<std::size_t>(static_cast<const std::byte*>(p) - reinterpret_cast<std::byte*>(s));
        const bool start =
            off >= first_ && (off - first_) % stride == 0 && (off - first_) / stride < per_slab_;
        if (!STRATA_VERIFY(1, start, foreign_pointer, "strata::slab_cache", p,
                           "pointer into the middle of an object"))
            return false;
        const std::size_t idx = (off - first_) / stride;
        return STRATA_VERIFY(1, (bits(s)[idx / 64] >> (idx % 64)) & 1u, double_free, "strata::slab_cache", p,
                             "object freed twice (it is already free)");
#else
        (void)p;
        return true;
#endif
    }

    /// Effects: calls f(slab_view) for every slab holding live objects, in address order. f may
    /// allocate (an object allocated during the walk may or may not be visited; every other live
    /// object is visited once) but not free: deallocate()/destroy() inside f are refused (see the
    /// class comment); destroy_if / deallocate_if free while walking. Throws: what f throws.
    /// Complexity: O(slabs * log slabs) plus f.
    template <class F>
    void for_each_slab(F&& f) const {
        const detail::iteration_guard guard(iterating_);
        // By address through the sorted directory rather than along the lists: an allocation in f
        // can move a slab to another list (a list walk would then skip or revisit slabs) or add a
        // slab, but it never moves one in the address order.
        for (slab_header* s = slab_after(0); s != nullptr;) {
            const std::uintptr_t at = address_of(s);
            if (s->live != 0) f(slab_view(this, s));
            s = slab_after(at);
        }
    }
    /// Effects: calls f(T&) for every live object, slab by slab, in address order. The rules of
    /// for_each_slab apply: f may allocate, not free. Throws: what f throws.
    template <class F>
    void for_each_live(F&& f) const {
        for_each_slab([&](const slab_view& v) { v.for_each_live(f); });
    }

    /// Effects: visits every live object as for_each_live does, calls pred(T&) on it, and for each
    /// object where pred returns true runs ~T() and frees it. pred may modify the object (update
    /// and cull in one pass) and may allocate; it and ~T() may not free objects of this cache
    /// (refused as in a walk), and check() inside pred may fail for the slab being walked (its list
    /// is fixed once the walk leaves it). Empty slabs beyond max_empty_slabs go back to the source
    /// as with deallocate(). Inside another walk of this cache nothing is freed at any checks level
    /// (reported as invalid_argument at checks >= 1). Not for caching mode: there it frees without
    /// ~T() as deallocate_if does, reported as invalid_argument at checks >= 1.
    /// Returns: the number of objects freed. Throws: what pred throws; the objects freed until then
    /// stay freed and the lists are consistent. Complexity: O(slabs * (log slabs + objects per
    /// slab / 64)) plus one pred call per live object.
    template <class Pred>
    std::size_t destroy_if(Pred&& pred) {
        if (STRATA_UNLIKELY(options_.cache_objects)) { // as destroy(): the slab runs ~T() itself later
            (void)STRATA_VERIFY(1, false, invalid_argument, "strata::slab_cache", nullptr,
                                "destroy_if() on an object-caching slab_cache; use deallocate_if()");
            return free_if(pred, false);
        }
        return free_if(pred, true);
    }
    /// Effects: as destroy_if, without running ~T(): the storage of each object where pred(T&)
    /// returns true goes back (the raw counterpart of destroy_if, for objects placed with
    /// allocate(); in caching mode pred must leave a freed object in its constructed state, as for
    /// deallocate()). Returns: the number of objects freed. Throws: what pred throws.
    template <class Pred>
    std::size_t deallocate_if(Pred&& pred) {
        return free_if(pred, false);
    }

    /// Effects: returns every empty slab to the source. Complexity: O(empty slabs).
    void shrink() noexcept {
        while (empty_ != nullptr) {
            slab_header* s = empty_;
            unlink(s, empty_);
            --empty_count_;
            release_slab(s);
        }
    }

    [[nodiscard]] bool valid() const noexcept { return per_slab_ != 0; }
    /// Returns: objects handed out and not yet returned.
    [[nodiscard]] std::size_t live() const noexcept { return live_; }
    /// Returns: objects per slab.
    [[nodiscard]] std::size_t objects_per_slab() const noexcept { return per_slab_; }
    /// Returns: true in caching mode (slab_options::cache_objects): objects are handed out constructed.
    [[nodiscard]] bool caches_objects() const noexcept { return options_.cache_objects; }
    /// Returns: bytes per slab (a power of two).
    [[nodiscard]] std::size_t slab_bytes() const noexcept { return slab_bytes_; }
    /// Returns: slabs held (partial, full and empty).
    [[nodiscard]] std::size_t slab_count() const noexcept { return slabs_.size(); }
    /// Returns: empty slabs kept for reuse.
    [[nodiscard]] std::size_t empty_slab_count() const noexcept { return empty_count_; }

    /// Returns: in_use = live * stride, peak, capacity = slabs * slab_bytes, live_allocations,
    /// total_allocations, largest_free_block = stride when an object is free without a new slab.
    [[nodiscard]] strata::stats stats() const noexcept {
        strata::stats st;
        st.in_use = live_ * stride;
        st.peak = std::max(peak_, live_) * stride;
        st.capacity = slabs_.size() * slab_bytes_;
        st.live_allocations = live_;
        st.total_allocations = total_;
        st.largest_free_block = (partial_ != nullptr || empty_ != nullptr) ? stride : 0;
        return st;
    }

    /// Returns: true when every invariant holds: each slab is on the list its state says, its live
    /// count equals its live bits, its free stack holds exactly the clear bits, list counts add up.
    /// Complexity: O(slabs * objects per slab).
    [[nodiscard]] bool check() const noexcept {
        std::size_t slabs = 0, live = 0, empties = 0;
        std::vector<bool> seen;
        for (std::uint32_t which = 0; which < 3; ++which) {
            const slab_header* prev = nullptr;
            for (slab_header* s = which == 0   ? partial_
                                  : which == 1 ? full_
                                               : empty_;
                 s != nullptr; s = s->next) {
                if (s->list != which || s->prev != prev || s->owner != this || ++slabs > slabs_.size())
                    return false;
                prev = s;
                if (which == 0 && (s->live == 0 || s->live == per_slab_)) return false;
                if (which == 1 && s->live != per_slab_) return false;
                if (which == 2 && s->live != 0) return false;
                if (s->live + s->free_top != per_slab_) return false;
                std::size_t marked = 0;
                for (std::size_t w = 0; w < words_; ++w)
                    marked += static_cast<std::size_t>(std::popcount(bits(s)[w]));
                if (marked != s->live) return false;
                try {
                    seen.assign(per_slab_, false);
                } catch (...) {
                    return false;
                }
                for (std::uint32_t i = 0; i < s->free_top; ++i) {
                    const std::uint32_t idx = stack(s)[i];
                    if (idx >= per_slab_ || seen[idx] || ((bits(s)[idx / 64] >> (idx % 64)) & 1u))
                        return false;
                    seen[idx] = true;
                }
                if (!std::binary_search(slabs_.begin(), slabs_.end(), s, std::less<>{})) return false;
                live += s->live;
                empties += which == 2;
            }
        }
        return slabs == slabs_.size() && live == live_ && empties == empty_count_;
    }

private:
    // Objects per slab for `bytes`: header, index stack, live bits, then aligned objects.
    [[nodiscard]] static std::size_t first_offset(std::size_t n) noexcept {
        const std::size_t meta = sizeof(slab_header) + n * sizeof(std::uint32_t);
        const std::size_t bits_at = (meta + 7) / 8 * 8;
        const std::size_t end = bits_at + (n + 63) / 64 * 8;
        return (end + object_align - 1) / object_align * object_align;
    }
    [[nodiscard]] static std::size_t layout(std::size_t bytes) noexcept {
        if (bytes <= sizeof(slab_header)) return 0;
        std::size_t n = std::min<std::size_t>((bytes - sizeof(slab_header)) / (stride + 4), 0xFFFF'FFFFu);
        while (n > 0 && first_offset(n) + n * stride > bytes)
            --n;
        return n;
    }

    [[nodiscard]] std::uint32_t* stack(slab_header* s) const noexcept {
        return reinterpret_cast<std::uint32_t*>(reinterpret_cast<std::byte*>(s) + sizeof(slab_header));
    }
    [[nodiscard]] std::uint64_t* bits(slab_header* s) const noexcept {
        const std::size_t meta = sizeof(slab_header) + per_slab_ * sizeof(std::uint32_t);
        return reinterpret_cast<std::uint64_t*>(reinterpret_cast<std::byte*>(s) + (meta + 7) / 8 * 8);
    }
    [[nodiscard]] T* object(slab_header* s, std::size_t idx) const noexcept {
        return reinterpret_cast<T*>(reinterpret_cast<std::byte*>(s) + first_ + idx * stride);
    }
    [[nodiscard]] slab_header* header_of(const void* p) const noexcept {
        return reinterpret_cast<slab_header*>(reinterpret_cast<std::uintptr_t>(p) & ~(slab_bytes_ - 1));
    }
    [[nodiscard]] std::uint32_t index_of(slab_header* s, const void* p) const noexcept {
        const auto off =
            static_cast<std::size_t>(static_cast<const std::byte*>(p) - reinterpret_cast<std::byte*>(s)) -
            first_;
        return static_cast<std::uint32_t>(off >> shift_) * inverse_;
    }
    [[nodiscard]] slab_header* find_slab(const void* p) const noexcept {
        slab_header* s = header_of(p);
        return std::binary_search(slabs_.begin(), slabs_.end(), s, std::less<>{}) ? s : nullptr;
    }
    [[nodiscard]] static std::uintptr_t address_of(const slab_header* s) noexcept {
        return reinterpret_cast<std::uintptr_t>(s);
    }
    // The first slab above address `at`, or nullptr. The walks hold an address, not a pointer or an
    // index: the slab they left may have been released, and the directory may have grown since.
    [[nodiscard]] slab_header* slab_after(std::uintptr_t at) const noexcept {
        const auto it =
            std::upper_bound(slabs_.begin(), slabs_.end(), at,
                             [](std::uintptr_t a, const slab_header* s) { return a < address_of(s); });
        return it == slabs_.end() ? nullptr : *it;
    }
    [[nodiscard]] slab_header*& list_head(std::uint32_t list) noexcept {
        return list == 0 ? partial_ : list == 1 ? full_ : empty_;
    }

    STRATA_NOINLINE void refuse_free_in_walk(const void* p) const noexcept {
        (void)STRATA_VERIFY(1, false, invalid_argument, "strata::slab_cache", p,
                            "deallocate/destroy during a walk of the cache (for_each_slab, for_each_live, "
                            "destroy_if, deallocate_if); nothing freed: use destroy_if/deallocate_if, or "
                            "free after the walk");
    }

    // destroy_if / deallocate_if. Each slab is freed in place (bits, stack, counts: allocate() in
    // pred sees a consistent slab) with no list move, so the walk's own position cannot move; the
    // slab's list is fixed (or the slab released) only after the walk has left it.
    template <class Pred>
    std::size_t free_if(Pred& pred, bool run_destructor) {
        if (STRATA_UNLIKELY(iterating_ != 0)) {
            (void)STRATA_VERIFY(1, false, invalid_argument, "strata::slab_cache", nullptr,
                                "destroy_if/deallocate_if inside a walk of the same cache; nothing freed");
            return 0;
        }
        const detail::iteration_guard guard(iterating_);
        std::size_t freed = 0;
        for (slab_header* s = slab_after(0); s != nullptr;) {
            const std::uintptr_t at = address_of(s);
            if (s->live != 0) {
                try {
                    freed += free_in_slab(s, pred, run_destructor);
                } catch (...) {
                    settle(s);
                    throw;
                }
                settle(s); // may release s: only `at` is used below
            }
            s = slab_after(at);
        }
        return freed;
    }
    template <class Pred>
    std::size_t free_in_slab(slab_header* s, Pred& pred, bool run_destructor) {
        std::size_t freed = 0;
        std::uint64_t* b = bits(s);
        for (std::size_t w = 0; w < words_; ++w) {
            // A copy of the word: the bits this loop clears (and any allocate() in pred sets) do not
            // disturb the scan.
            for (std::uint64_t m = b[w]; m != 0; m &= m - 1) {
                const auto idx =
                    static_cast<std::uint32_t>(w * 64 + static_cast<std::size_t>(std::countr_zero(m)));
                T* p = object(s, idx);
                if (!static_cast<bool>(pred(*p))) continue;
                if (run_destructor) destroy_object(p);
                b[w] &= ~(std::uint64_t{1} << (idx % 64));
                if (!options_.cache_objects) release_bytes(p, stride);
                stack(s)[s->free_top++] = idx;
                if (live_ > peak_) peak_ = live_;
                --live_;
                --s->live;
                ++freed;
            }
        }
        return freed;
    }
    // Takes back live slot p: deallocate()'s work once its checks passed. create() also calls it
    // inside a walk, to undo an allocation whose constructor threw. That is safe there: the walks
    // go by address, and the slab being walked keeps the live objects it had before the allocation,
    // so only a slab the allocation itself took from the empty list or the source can empty again
    // (and go back).
    STRATA_ALWAYS_INLINE void free_slot(T* p) noexcept {
        slab_header* s = header_of(p);
        const std::uint32_t idx = index_of(s, p);
        bits(s)[idx / 64] &= ~(std::uint64_t{1} << (idx % 64));
        if (!options_.cache_objects) release_bytes(p, stride);
        stack(s)[s->free_top++] = idx;
        if (live_ > peak_) peak_ = live_;
        --live_;
        if (STRATA_UNLIKELY(s->live-- == per_slab_)) move(s, full_, partial_, 0);
        if (STRATA_UNLIKELY(s->live == 0)) retire(s);
    }
    // ~T() as destroy() runs it: a throwing destructor ends the program there too.
    static void destroy_object(T* p) noexcept { p->~T(); }
    // Puts s on the list its live count calls for, as deallocate() would have one free at a time
    // (an empty slab past max_empty_slabs goes back to the source).
    void settle(slab_header* s) noexcept {
        const std::uint32_t want = s->live == 0 ? 2u : s->live == per_slab_ ? 1u : 0u;
        if (s->list == want) return;
        if (s->list == 2) --empty_count_;
        move(s, list_head(s->list), list_head(want), want);
        if (want == 2 && ++empty_count_ > options_.max_empty_slabs) {
            unlink(s, empty_);
            --empty_count_;
            release_slab(s);
        }
    }

    static void push(slab_header* s, slab_header*& head) noexcept {
        s->prev = nullptr;
        s->next = head;
        if (head != nullptr) head->prev = s;
        head = s;
    }
    static void unlink(slab_header* s, slab_header*& head) noexcept {
        if (s->prev != nullptr)
            s->prev->next = s->next;
        else
            head = s->next;
        if (s->next != nullptr) s->next->prev = s->prev;
    }
    static void move(slab_header* s, slab_header*& from, slab_header*& to, std::uint32_t list) noexcept {
        unlink(s, from);
        push(s, to);
        s->list = list;
    }

    // A slab whose last object came back: keep it on the empty list or give it back.
    STRATA_NOINLINE void retire(slab_header* s) noexcept {
        move(s, partial_, empty_, 2);
        if (++empty_count_ > options_.max_empty_slabs) {
            unlink(s, empty_);
            --empty_count_;
            release_slab(s);
        }
    }

    // The partial list is empty: reuse an empty slab or make a new one; it becomes the partial head.
    STRATA_NOINLINE slab_header* refill() noexcept {
        if (empty_ != nullptr) {
            slab_header* s = empty_;
            move(s, empty_, partial_, 0);
            --empty_count_;
            return s;
        }
        if (per_slab_ == 0) return nullptr;
        try {
            // Doubling: reserve(size + 1) would allocate exactly that, and copy the list each time.
            if (slabs_.size() == slabs_.capacity())
                slabs_.reserve(std::max<std::size_t>(8, 2 * slabs_.size()));
        } catch (...) {
            return nullptr;
        }
        const memory_block b = source_.allocate_block(slab_bytes_, slab_bytes_);
        if (b.empty()) return nullptr;
        if (b.size < slab_bytes_ || !is_aligned(b.data, slab_bytes_)) { // a source that broke its contract
            source_.deallocate_block(b);
            return nullptr;
        }
        auto* s = ::new (b.data)
            slab_header{this, nullptr, nullptr, b, 0, static_cast<std::uint32_t>(per_slab_), 0, 0};
        // Hand out the lowest address first: the stack top is index 0.
        std::uint32_t* st = stack(s);
        for (std::size_t i = 0; i < per_slab_; ++i)
            st[i] = static_cast<std::uint32_t>(per_slab_ - 1 - i);
        std::fill_n(bits(s), words_, std::uint64_t{0});
        if (options_.cache_objects) {
            if constexpr (std::is_nothrow_default_constructible_v<T>) {
                for (std::size_t i = 0; i < per_slab_; ++i)
                    ::new (static_cast<void*>(reinterpret_cast<std::byte*>(s) + first_ + i * stride)) T();
            }
        } else {
            release_bytes(reinterpret_cast<std::byte*>(s) + first_, per_slab_ * stride);
        }
        slabs_.insert(std::upper_bound(slabs_.begin(), slabs_.end(), s, std::less<>{}), s);
        push(s, partial_);
        return s;
    }

    void release_slab(slab_header* s) noexcept {
        if (options_.cache_objects) {
            for (std::size_t i = 0; i < per_slab_; ++i)
                object(s, i)->~T();
        }
        unpoison(s, slab_bytes_);
        slabs_.erase(std::lower_bound(slabs_.begin(), slabs_.end(), s, std::less<>{}));
        source_.deallocate_block(s->block);
    }

    slab_header* partial_ = nullptr;
    slab_header* full_ = nullptr;
    slab_header* empty_ = nullptr;
    std::size_t live_ = 0;
    std::size_t peak_ = 0; // refreshed before each free; stats() adds the current value
    std::size_t total_ = 0;
    std::size_t empty_count_ = 0;
    std::size_t per_slab_ = 0; // 0 marks an invalid cache
    std::size_t words_ = 0;
    std::size_t slab_bytes_ = 0;
    std::size_t first_ = 0;
    unsigned shift_ = 0;
    std::uint32_t inverse_ = 1;
    std::vector<slab_header*> slabs_; // sorted, for owns(), the checks and the walks
    source_ref source_;
    slab_options options_;
    mutable int iterating_ = 0; // walks in progress (const walks count too): frees are refused
};

} // namespace strata
