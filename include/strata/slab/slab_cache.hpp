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
#include "strata/core/poison.hpp"
#include "strata/core/stats.hpp"
#include "strata/source/memory_source.hpp"

namespace strata {

/// Settings of a slab_cache.
struct slab_options {
    /// Bytes per slab, a power of two (the slab header is found by masking an object's address);
    /// 0 = the smallest power of two >= 16 KiB that holds at least `min_objects` objects.
    std::size_t slab_bytes = 0;
    std::size_t min_objects = 8;     ///< only used to choose slab_bytes when it is 0
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
/// Bad input: deallocate(nullptr) is a no-op; a foreign pointer (O(log slabs) lookup), a pointer into
/// the middle of an object, or an object already free: reported at checks >= 1 (foreign_pointer /
/// foreign_pointer / double_free) and ignored; undefined at checks 0. Invalid options (slab_bytes
/// not a power of two or too small for one object, caching without a nothrow default constructor)
/// make the cache invalid: valid() false, allocate() nullptr. Destroying the cache with live objects
/// reports `leak` at checks >= 1; the slabs go back to the source anyway.
template <class T>
class slab_cache {
public:
    using value_type = T;
    static constexpr std::size_t object_align = alignof(T) > alignof(void*) ? alignof(T) : alignof(void*);
    static constexpr std::size_t stride = (sizeof(T) + object_align - 1) / object_align * object_align;

    /// A view of one slab, for iteration over its live objects.
    class slab_view {
    public:
        /// Returns: objects handed out from this slab.
        [[nodiscard]] std::size_t live() const noexcept { return s_->live; }
        /// Returns: objects this slab holds.
        [[nodiscard]] std::size_t capacity() const noexcept { return cache_->per_slab_; }
        /// Effects: calls f(T&) for each live object, in address order (cache-friendly updates).
        template <class F>
        void for_each_live(F&& f) const {
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
            bytes = std::size_t{16} << 10;
            while (layout(bytes) < std::max<std::size_t>(options.min_objects, 1) &&
                   bytes < (std::size_t{1} << 30))
                bytes *= 2;
        }
        if (!is_pow2(bytes) || bytes < sizeof(slab_header) || bytes > (std::size_t{1} << 30)) return;
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
    /// most max_empty_slabs empty slabs. Complexity: O(1) (O(log slabs) at checks >= 1).
    STRATA_ALWAYS_INLINE void deallocate(T* p) noexcept {
        if (STRATA_UNLIKELY(p == nullptr)) return;
#if STRATA_CHECKS >= 1
        if (!verify_live(p)) return;
#endif
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

    /// Returns: a T constructed from args, or nullptr on exhaustion. Not for caching mode: nullptr
    /// there, reported as invalid_argument at checks >= 1. Throws: what T's constructor throws (the storage
    /// is returned first).
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
            deallocate(p);
            throw;
        }
    }

    /// Effects: runs ~T() then deallocate(p); nullptr is a no-op. Violations are reported before the
    /// destructor would run. Not for caching mode, where the slab destroys its objects itself when
    /// it is released: there destroy(p) is deallocate(p) (no ~T()), reported as invalid_argument at
    /// checks >= 1.
    void destroy(T* p) noexcept {
        if (p == nullptr) return;
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

    /// Effects: calls f(slab_view) for every slab holding live objects (partial, then full).
    template <class F>
    void for_each_slab(F&& f) const {
        for (slab_header* l : {partial_, full_})
            for (slab_header* s = l; s != nullptr; s = s->next)
                f(slab_view(this, s));
    }
    /// Effects: calls f(T&) for every live object, slab by slab in address order within a slab.
    template <class F>
    void for_each_live(F&& f) const {
        for_each_slab([&](const slab_view& v) { v.for_each_live(f); });
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
            slabs_.reserve(slabs_.size() + 1);
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
    std::vector<slab_header*> slabs_; // sorted, for owns() and the checks
    source_ref source_;
    slab_options options_;
};

} // namespace strata
