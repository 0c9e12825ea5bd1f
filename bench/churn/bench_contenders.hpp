#pragma once
// Op contenders that only the benches race (strata-churn): the adapter wrappers over tlsf, tlsf's
// unsized free, buddy's offsets API, the fixed-size pools of one 96-byte particle, Boost.Pool and the
// intrusive free list that is the physical limit for a fixed size. Same contract as every other
// contender (replay.hpp); with_bench_contenders() appends them to a registry (op_registry()), so a
// bench races the lab's contenders plus these.
//
// Every request of a churn workload asks for alignment 16; these adapters serve only such
// workloads (applies: max_align <= 16) unless said otherwise.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <mutex>
#include <new>
#include <span>
#include <vector>

#if __has_include(<boost/pool/pool.hpp>)
#include <boost/pool/pool.hpp>
#define STRATA_LAB_HAS_BOOST_POOL 1
#endif

#include "strata/adapt/debug.hpp"
#include "strata/adapt/locked.hpp"
#include "strata/adapt/tracked.hpp"
#include "strata/core/bit.hpp"
#include "strata/heap/buddy.hpp"
#include "strata/heap/tlsf.hpp"
#include "strata/pool/object_pool.hpp"
#include "strata/slab/magazine.hpp"
#include "strata/slab/slab_cache.hpp"
#include "strata/source/heap_source.hpp"

#include "op_contenders.hpp"

namespace strata::lab {

namespace bench_detail {

/// tlsf over its own buffer of 2x the peak live bytes + 64 B per live block (debug's fences) +
/// 1 MiB, touched before the race (the wrapped allocator of the adapter contenders).
struct buffered_tlsf {
    explicit buffered_tlsf(const op_workload& w)
        : buffer(2 * w.peak_live_bytes + 64 * w.peak_live_blocks + (std::size_t{1} << 20)),
          heap(std::span<std::byte>(buffer.data(), buffer.size())) {}
    [[gnu::always_inline]] void* allocate(std::size_t size, std::size_t align) noexcept {
        return heap.allocate(size, align);
    }
    [[gnu::always_inline]] void deallocate(void* p, std::size_t size, std::size_t align) noexcept {
        heap.deallocate(p, size, align);
    }
    [[nodiscard]] strata::stats stats() const noexcept { return heap.stats(); }
    std::vector<std::byte> buffer; // value-initialized: every page touched before the race
    strata::tlsf heap;
};

/// A 96-byte particle whose constructor initialises nothing (as an engine's particle is filled by
/// its emitter), so create() measures the allocator rather than a 96-byte memset.
struct alignas(16) particle96 {
    particle96() noexcept {} // NOLINT(modernize-use-equals-default): = default would zero-fill on T()
    std::byte bytes[96];
};

[[nodiscard]] inline bool aligned16(const op_workload& w) noexcept { return w.max_align <= 16; }
[[nodiscard]] inline bool particles96(const op_workload& w) noexcept {
    return w.fixed_size() && w.max_size == sizeof(particle96) && aligned16(w);
}

} // namespace bench_detail

/// strata::tlsf under the adapters' wrapper buffer (their baseline).
class raw_tlsf_replay {
public:
    static bool applies(const op_workload& w) noexcept { return bench_detail::aligned16(w); }
    explicit raw_tlsf_replay(const op_workload& w) : heap_(w) {}
    void* allocate(std::size_t size, std::size_t align) noexcept { return heap_.allocate(size, align); }
    void deallocate(void* p, std::size_t size, std::size_t align) noexcept {
        heap_.deallocate(p, size, align);
    }
    bool check() noexcept { return heap_.heap.check(); }

private:
    bench_detail::buffered_tlsf heap_;
};

/// strata::tracked<tlsf>: per-tracker accounting.
class tracked_tlsf_replay {
public:
    static bool applies(const op_workload& w) noexcept { return bench_detail::aligned16(w); }
    explicit tracked_tlsf_replay(const op_workload& w) : heap_(root_, w) {}
    void* allocate(std::size_t size, std::size_t align) noexcept { return heap_.allocate(size, align); }
    void deallocate(void* p, std::size_t size, std::size_t align) noexcept {
        heap_.deallocate(p, size, align);
    }
    bool check() noexcept {
        return heap_.inner().heap.check() && root_.in_use() <= heap_.inner().heap.stats().in_use;
    }

private:
    strata::tracker root_{"churn"};
    strata::tracked<bench_detail::buffered_tlsf> heap_;
};

/// strata::debug<tlsf>: fences, fills and block records. It fills every byte on both calls, so it
/// applies to requests of at most 64 KiB (larger ones would take hours at a million pairs).
class debug_tlsf_replay {
public:
    static bool applies(const op_workload& w) noexcept {
        return bench_detail::aligned16(w) && w.max_size <= 65536;
    }
    explicit debug_tlsf_replay(const op_workload& w) : heap_(w) {}
    void* allocate(std::size_t size, std::size_t align) noexcept { return heap_.allocate(size, align); }
    void deallocate(void* p, std::size_t size, std::size_t align) noexcept {
        heap_.deallocate(p, size, align);
    }
    bool check() noexcept { return heap_.verify() && heap_.inner().heap.check(); }

private:
    strata::debug<bench_detail::buffered_tlsf> heap_;
};

/// strata::locked<tlsf, std::mutex>, uncontended.
class locked_tlsf_replay {
public:
    static bool applies(const op_workload& w) noexcept { return bench_detail::aligned16(w); }
    explicit locked_tlsf_replay(const op_workload& w) : heap_(w) {}
    void* allocate(std::size_t size, std::size_t align) noexcept { return heap_.allocate(size, align); }
    void deallocate(void* p, std::size_t size, std::size_t align) noexcept {
        heap_.deallocate(p, size, align);
    }
    bool check() noexcept {
        return heap_.with_lock([](bench_detail::buffered_tlsf& t) { return t.heap.check(); });
    }

private:
    strata::locked<bench_detail::buffered_tlsf, std::mutex> heap_;
};

/// strata::tlsf freed without the size (the heap finds it in the block's header), as free() is
/// called; the lab's "tlsf" contender frees with the size, as std::pmr and std::allocator do (tlsf
/// takes it as a prefetch hint).
class tlsf_unsized_replay : public tlsf_replay<5> {
public:
    using tlsf_replay<5>::tlsf_replay;
    void deallocate(void* p, std::size_t, std::size_t) noexcept { this->heap_.deallocate(p); }
};

/// strata::buddy's offsets API (allocate_offset, sized deallocate_offset), min_block 16, over the
/// region the "buddy" contender gets.
class buddy_offsets_replay {
public:
    static bool applies(const op_workload& w) noexcept {
        return buddy_replay::applies(w) && w.max_align <= 16;
    }
    explicit buddy_offsets_replay(const op_workload& w)
        : region_(next_pow2(std::max<std::size_t>(std::size_t{64} << 10, 4 * w.peak_live_bytes))),
          heap_(region_.bytes().size(), 16) {}
    void* allocate(std::size_t size, std::size_t align) noexcept {
        const std::size_t off = heap_.allocate_offset(size, align);
        if (off == buddy::npos) return nullptr;
        std::byte* p = region_.bytes().data() + off;
        region_.touched(p, size);
        return p;
    }
    void deallocate(void* p, std::size_t size, std::size_t align) noexcept {
        heap_.deallocate_offset(static_cast<std::size_t>(static_cast<std::byte*>(p) - region_.bytes().data()),
                                size, align);
    }
    [[nodiscard]] std::size_t footprint() const noexcept { return region_.footprint(); }
    bool check() noexcept { return heap_.check(); }

private:
    region region_;
    buddy heap_;
};

/// strata::object_pool<particle96>: create()/destroy() of a trivial 96-byte type.
class object_pool_replay {
public:
    static bool applies(const op_workload& w) noexcept { return bench_detail::particles96(w); }
    explicit object_pool_replay(const op_workload&) : pool_(source_) {}
    void* allocate(std::size_t, std::size_t) noexcept { return pool_.create(); }
    void deallocate(void* p, std::size_t, std::size_t) noexcept {
        pool_.destroy(static_cast<bench_detail::particle96*>(p));
    }
    bool check() noexcept { return pool_.check() && pool_.live() == 0; }

private:
    heap_source source_;
    object_pool<bench_detail::particle96> pool_;
};

/// strata::slab_cache<particle96> alone (single-threaded, 16 KiB slabs).
class slab_cache_replay {
public:
    static bool applies(const op_workload& w) noexcept { return bench_detail::particles96(w); }
    explicit slab_cache_replay(const op_workload&) : cache_(source_) {}
    void* allocate(std::size_t, std::size_t) noexcept { return cache_.allocate(); }
    void deallocate(void* p, std::size_t, std::size_t) noexcept {
        cache_.deallocate(static_cast<bench_detail::particle96*>(p));
    }
    bool check() noexcept { return cache_.check() && cache_.live() == 0; }

private:
    heap_source source_;
    slab_cache<bench_detail::particle96> cache_;
};

/// strata::magazine_cache<particle96>: the thread-safe slab cache, used from one thread.
class slab_magazines_replay {
public:
    static bool applies(const op_workload& w) noexcept { return bench_detail::particles96(w); }
    explicit slab_magazines_replay(const op_workload&) : cache_(source_) {}
    void* allocate(std::size_t, std::size_t) noexcept { return cache_.allocate(); }
    void deallocate(void* p, std::size_t, std::size_t) noexcept {
        cache_.deallocate(static_cast<bench_detail::particle96*>(p));
    }
    bool check() noexcept {
        cache_.flush();
        return cache_.check() && cache_.slab_live() == 0;
    }

private:
    heap_source source_;
    magazine_cache<bench_detail::particle96> cache_;
};

#if defined(STRATA_LAB_HAS_BOOST_POOL)
/// boost::pool<> with the workload's one size.
class boost_pool_replay {
public:
    static bool applies(const op_workload& w) noexcept {
        return w.fixed_size() && bench_detail::aligned16(w);
    }
    explicit boost_pool_replay(const op_workload& w) : pool_(w.max_size) {}
    void* allocate(std::size_t, std::size_t) noexcept { return pool_.malloc(); }
    void deallocate(void* p, std::size_t, std::size_t) noexcept { pool_.free(p); }

private:
    boost::pool<boost::default_user_allocator_malloc_free> pool_;
};
#endif

/// The physical limit for a fixed size: preallocated slots and one singly linked free list through
/// them, no checks at all.
class intrusive_list_replay {
public:
    static bool applies(const op_workload& w) noexcept {
        return w.fixed_size() && bench_detail::aligned16(w);
    }
    explicit intrusive_list_replay(const op_workload& w) {
        const std::size_t slot = (w.max_size + 15) & ~std::size_t{15};
        const std::size_t n = w.peak_live_blocks + 1;
        memory_.reset(static_cast<std::byte*>(::operator new (slot* n, std::align_val_t{64})));
        for (std::size_t i = n; i-- > 0;) {
            auto* node = reinterpret_cast<void**>(memory_.get() + i * slot);
            *node = head_;
            head_ = node;
        }
    }
    void* allocate(std::size_t, std::size_t) noexcept {
        void** p = static_cast<void**>(head_);
        if (p == nullptr) return nullptr;
        head_ = *p;
        return p;
    }
    void deallocate(void* p, std::size_t, std::size_t) noexcept {
        *static_cast<void**>(p) = head_;
        head_ = p;
    }

private:
    struct aligned_delete {
        void operator()(std::byte* p) const noexcept { ::operator delete (p, std::align_val_t{64}); }
    };
    std::unique_ptr<std::byte, aligned_delete> memory_;
    void* head_ = nullptr;
};

/// Returns: `r` followed by the bench-only contenders.
[[nodiscard]] inline std::vector<op_contender> with_bench_contenders(std::vector<op_contender> r) {
    const char* align16 = "alignment <= 16";
    const char* fixed = "one request size, alignment <= 16";
    const char* particle = "every request 96 B, alignment <= 16";
    r.push_back(make_op_contender<raw_tlsf_replay>(
        "raw_tlsf", "strata::tlsf under the adapters' wrapper buffer (their baseline)", align16));
    r.push_back(make_op_contender<tracked_tlsf_replay>(
        "tracked_tlsf", "strata::tracked<tlsf>: per-tracker accounting", align16));
    r.push_back(make_op_contender<debug_tlsf_replay>(
        "debug_tlsf", "strata::debug<tlsf>: 16 B fences, 0xCD/0xDD fills, hashed block records",
        "requests <= 64 KiB, alignment <= 16"));
    r.push_back(make_op_contender<locked_tlsf_replay>(
        "locked_tlsf", "strata::locked<tlsf, std::mutex>, uncontended", align16));
    r.push_back(make_op_contender<tlsf_unsized_replay>(
        "tlsf_unsized", "strata::tlsf (SLI 5), freed without the size", "alignment <= 4096"));
    r.push_back(make_op_contender<buddy_offsets_replay>(
        "buddy_offsets", "strata::buddy offsets API, min_block 16, over the buddy contender's region",
        "peak live bytes of at most 1 GiB, alignment <= 16"));
    r.push_back(make_op_contender<object_pool_replay>(
        "object_pool", "strata::object_pool<particle96>, create/destroy", particle));
    r.push_back(make_op_contender<slab_cache_replay>(
        "slab_cache", "strata::slab_cache<particle96>, 16 KiB slabs, no magazines", particle));
    r.push_back(make_op_contender<slab_magazines_replay>(
        "slab_magazines", "strata::magazine_cache<particle96>: per-thread magazines over a slab_cache",
        particle));
#if defined(STRATA_LAB_HAS_BOOST_POOL)
    r.push_back(make_op_contender<boost_pool_replay>("boost_pool",
                                                     "boost::pool<> (Boost.Pool), one chunk size", fixed));
#endif
    r.push_back(make_op_contender<intrusive_list_replay>(
        "intrusive_list", "the physical limit: preallocated slots, one singly linked free list, no checks",
        fixed));
    return r;
}

} // namespace strata::lab
