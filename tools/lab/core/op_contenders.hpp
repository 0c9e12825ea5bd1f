#pragma once
// strata-lab replay contenders: one adapter per allocator (the contract is in replay.hpp) and the
// registry that race/replay take them from. Adding an allocator = one adapter here + one line in
// op_registry() (op_registry.cpp). The mallocs users would pick instead (mimalloc, jemalloc, tcmalloc) are in
// peer_contenders.hpp.
//
// The adapters are in this header so tests/lab can replay through any one of them.
#include <algorithm>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory_resource>
#include <new>
#include <optional>
#include <unordered_map>
#include <vector>

#if defined(__GLIBC__)
#include <malloc.h>
#endif

#include "strata/core/align.hpp"
#include "strata/core/bit.hpp"
#include "strata/device/device_pool.hpp"
#include "strata/device/offset_heap.hpp"
#include "strata/engine/engine_heap.hpp"
#include "strata/heap/buddy.hpp"
#include "strata/heap/free_list.hpp"
#include "strata/heap/tlsf.hpp"
#include "strata/linear/arena.hpp"
#include "strata/linear/stack_allocator.hpp"
#include "strata/pool/pool.hpp"
#include "strata/pool/size_class_pool.hpp"
#include "strata/source/heap_source.hpp"
#include "strata/source/virtual_memory.hpp"

#include "counting_resource.hpp"
#include "frame_contenders.hpp"
#include "peer_contenders.hpp"
#include "replay.hpp"

namespace strata::lab {

/// glibc malloc/free/realloc. Footprint: the heap glibc holds (mallinfo2 arena + mmapped) less the
/// bytes the lab itself had in use when the adapter was made (its vectors share the heap), so it
/// counts this replay's blocks plus all free space in the heap: an upper bound. Usable sizes from
/// malloc_usable_size (internal waste includes glibc's rounding, not its size word).
class malloc_replay {
public:
    static bool applies(const op_workload&) noexcept { return true; }
    explicit malloc_replay(const op_workload&) noexcept : baseline_(in_use()) {}
    void* allocate(std::size_t size, std::size_t align) noexcept {
        if (align <= alignof(std::max_align_t)) return std::malloc(size);
        void* p = nullptr;
        return posix_memalign(&p, align, size) == 0 ? p : nullptr;
    }
    void deallocate(void* p, std::size_t, std::size_t) noexcept { std::free(p); }
    void* reallocate(void* p, std::size_t old_size, std::size_t n, std::size_t align) noexcept {
        if (align <= alignof(std::max_align_t)) return std::realloc(p, n);
        // realloc keeps only malloc's alignment: move an over-aligned block by hand, as a program
        // that needs the alignment kept would (the recorded realloc succeeded; so must this).
        void* q = allocate(n, align);
        if (q == nullptr) return nullptr;
        std::memcpy(q, p, std::min(old_size, n));
        std::free(p);
        return q;
    }
#if defined(__GLIBC__)
    [[nodiscard]] std::size_t footprint() const noexcept {
        const std::size_t now = held();
        return now > baseline_ ? now - baseline_ : 0;
    }
    [[nodiscard]] std::size_t usable_size(const void* p) const noexcept {
        return malloc_usable_size(const_cast<void*>(p));
    }
#endif

private:
#if defined(__GLIBC__)
    static std::size_t held() noexcept {
        const struct mallinfo2 mi = mallinfo2();
        return mi.arena + mi.hblkhd;
    }
    static std::size_t in_use() noexcept {
        const struct mallinfo2 mi = mallinfo2();
        return mi.uordblks + mi.hblkhd;
    }
#else
    static std::size_t in_use() noexcept { return 0; }
#endif
    std::size_t baseline_;
};

/// std::pmr::unsynchronized_pool_resource (pools up to 64 KiB) over a counting new/delete upstream.
/// Sizes go in rounded up to a multiple of the alignment: libstdc++ 12's pools carve blocks of the
/// size asked from 8-aligned chunks, so 24 bytes at alignment 16 would come back 8-aligned (and
/// clang's UBSan reports the broken alignment promise of memory_resource::allocate).
class pmr_pool_replay : public pmr_replay<std::pmr::unsynchronized_pool_resource> {
public:
    static bool applies(const op_workload&) noexcept { return true; }
    explicit pmr_pool_replay(const op_workload&) : pmr_replay(std::pmr::pool_options{0, 65536}) {}
    void* allocate(std::size_t size, std::size_t align) noexcept {
        const std::optional<std::size_t> n = align_up(size, align);
        return n ? pmr_replay::allocate(*n, align) : nullptr;
    }
    void deallocate(void* p, std::size_t size, std::size_t align) noexcept {
        resource_.deallocate(p, *align_up(size, align), align);
    }
};

/// strata::arena growing from a heap_source: frees are no-ops, end_frame() resets. Applies only to
/// frame-scoped workloads (every block dies in the frame it was born in).
using arena_replay = source_frame_replay<arena, &reset_of<arena>>;

/// A committed region for heaps that manage one block: reserved and committed up front, its pages
/// faulted in only as the heap touches them. Footprint = the highest byte any block has reached,
/// rounded to pages: the resident memory the heap costs.
class region {
public:
    explicit region(std::size_t bytes) : vm_(virtual_memory::reserve(bytes)) {
        if (!vm_.commit(0, vm_.size())) throw std::bad_alloc();
    }
    [[nodiscard]] std::span<std::byte> bytes() const noexcept { return {vm_.data(), vm_.size()}; }
    void touched(const void* p, std::size_t size) noexcept {
        const auto end = static_cast<std::size_t>(static_cast<const std::byte*>(p) - vm_.data()) + size;
        high_ = end > high_ ? end : high_;
    }
    [[nodiscard]] std::size_t footprint() const noexcept { return (high_ + 4095) / 4096 * 4096; }

private:
    virtual_memory vm_;
    std::size_t high_ = 0;
};

/// Bytes a general heap gets for `w`: twice its peak live bytes plus 64 B per block (room to
/// fragment, but not so much that fragmentation can never show), at least 64 KiB.
/// Saturates (a hostile trace's sizes would wrap it): the region's reservation then fails, which
/// the race reports as a skipped contender.
[[nodiscard]] inline std::size_t heap_bytes(const op_workload& w) noexcept {
    constexpr std::size_t most = std::size_t{1} << 46;
    const std::size_t peak = std::min<std::size_t>(w.peak_live_bytes, most);
    const std::size_t blocks = std::min<std::size_t>(w.peak_live_blocks, most / 64);
    return std::max<std::size_t>(std::size_t{64} << 10, 2 * peak + blocks * 64);
}

/// A walkable strata heap H over one region sized by heap_bytes().
template <class H>
class heap_replay {
public:
    static bool applies(const op_workload& w) noexcept { return w.max_align <= 4096; }
    explicit heap_replay(const op_workload& w) : heap_replay(heap_bytes(w)) {}
    void* allocate(std::size_t size, std::size_t align) noexcept {
        void* p = heap_.allocate(size, align);
        if (p != nullptr) region_.touched(p, size);
        return p;
    }
    void deallocate(void* p, std::size_t size, std::size_t align) noexcept {
        heap_.deallocate(p, size, align);
    }
    [[nodiscard]] std::size_t footprint() const noexcept { return region_.footprint(); }
    [[nodiscard]] heap_probe probe() const noexcept {
        const heap_metrics m = heap_.metrics();
        return {m.free_bytes, m.largest_free_block};
    }
    [[nodiscard]] std::size_t usable_size(const void* p) const noexcept { return heap_.usable_size(p); }
    bool check() noexcept { return heap_.check(); }

protected:
    /// A region of `bytes` (a heap that sizes its region otherwise, as buddy_replay).
    explicit heap_replay(std::size_t bytes) : region_(bytes), heap_(region_.bytes()) {}

    region region_;
    H heap_;
};

/// A free list scans: once fragmented it costs microseconds per call, so it takes part only in
/// runs of at most 500,000 memory operations (the decay shows well before that).
template <class H>
class free_list_replay : public heap_replay<H> {
public:
    static constexpr std::uint64_t max_ops = 500'000;
    static bool applies(const op_workload& w) noexcept {
        return heap_replay<H>::applies(w) && w.memory_ops() <= max_ops;
    }
    using heap_replay<H>::heap_replay;
};

/// TLSF also grows and shrinks in place.
template <unsigned SLI>
class tlsf_replay : public heap_replay<basic_tlsf<SLI>> {
public:
    using heap_replay<basic_tlsf<SLI>>::heap_replay;
    void* reallocate(void* p, std::size_t, std::size_t n, std::size_t align) noexcept {
        void* q = this->heap_.reallocate(p, n, align);
        if (q != nullptr) this->region_.touched(q, n);
        return q;
    }
};

/// Binary buddy over a power-of-two region: four times the peak live bytes rounded up (a buddy
/// rounds every block to a power of two, so it needs more room than the other heaps).
class buddy_replay : public heap_replay<buddy> {
public:
    /// The region's bookkeeping is ~12 bytes per 16-byte min_block, outside it: a region above
    /// max_region would cost more memory than the replay is worth (and above 32 GiB buddy refuses it).
    static constexpr std::size_t max_region = std::size_t{4} << 30;
    static bool applies(const op_workload& w) noexcept {
        return w.max_align <= 4096 && w.peak_live_bytes <= max_region / 4;
    }
    explicit buddy_replay(const op_workload& w)
        : heap_replay<buddy>(next_pow2(std::max<std::size_t>(std::size_t{64} << 10, 4 * w.peak_live_bytes))) {
    }
};

/// strata::pool of the workload's one size, growing by chunks from a counting heap source (fixed-size
/// workloads with alignment <= 16).
class pool_replay {
public:
    static bool applies(const op_workload& w) noexcept { return w.fixed_size() && w.max_align <= 16; }
    explicit pool_replay(const op_workload& w) : pool_(w.max_size, 16, source_) {}
    void* allocate(std::size_t size, std::size_t align) noexcept { return pool_.allocate(size, align); }
    void deallocate(void* p, std::size_t size, std::size_t align) noexcept {
        pool_.deallocate(p, size, align);
    }
    [[nodiscard]] std::size_t footprint() const noexcept { return pool_.capacity() * pool_.slot_size(); }
    [[nodiscard]] heap_probe probe() const noexcept {
        // Every free slot is interchangeable, so all free space is usable by any request the pool
        // takes: external fragmentation is zero by construction (reported as largest = free).
        const std::size_t free_bytes = (pool_.capacity() - pool_.live()) * pool_.slot_size();
        return {free_bytes, free_bytes};
    }

private:
    heap_source source_;
    pool pool_;
};

/// strata::size_class_pool for workloads whose requests all fit its classes (up to 256 KiB).
class size_class_replay {
public:
    static bool applies(const op_workload& w) noexcept {
        return w.max_size <= size_class_pool::max_supported_size &&
               w.max_align <= size_class_pool::max_alignment;
    }
    explicit size_class_replay(const op_workload& w) : pool_(source_, options_for(w)) {}
    void* allocate(std::size_t size, std::size_t align) noexcept { return pool_.allocate(size, align); }
    void deallocate(void* p, std::size_t size, std::size_t align) noexcept {
        pool_.deallocate(p, size, align);
    }
    /// The classes' capacities (not stats(), whose live count walks every free list).
    [[nodiscard]] std::size_t footprint() const noexcept {
        std::size_t bytes = 0;
        for (std::size_t i = 0; i < pool_.class_count(); ++i)
            bytes += pool_.class_pool(i).capacity() * pool_.class_pool(i).slot_size();
        return bytes;
    }

private:
    static size_class_options options_for(const op_workload& w) noexcept {
        size_class_options o;
        o.max_size = std::max<std::size_t>(o.max_size, next_pow2(w.max_size));
        return o;
    }
    heap_source source_;
    size_class_pool pool_;
};

/// strata::stack_allocator over a fixed buffer: LIFO frees only, so it applies to frame-scoped
/// workloads, which free newest first.
class stack_replay {
public:
    static bool applies(const op_workload& w) noexcept { return w.frame_scoped; }
    explicit stack_replay(const op_workload& w)
        : buffer_(2 * w.peak_live_bytes + 64 * w.peak_live_blocks + 4096),
          stack_(std::span<std::byte>(buffer_.data(), buffer_.size())) {}
    void* allocate(std::size_t size, std::size_t align) noexcept { return stack_.allocate(size, align); }
    void deallocate(void* p, std::size_t size, std::size_t align) noexcept {
        stack_.deallocate(p, size, align);
    }
    void end_frame() noexcept { stack_.reset(); }
    [[nodiscard]] std::size_t footprint() const noexcept { return stack_.stats().peak; }

private:
    std::vector<std::byte> buffer_;
    stack_allocator stack_;
};

// The device-memory family: offset_heap and device_pool. Neither allocator ever touches the memory
// it manages; each adapter reserves a host region that stands in for device memory and turns the
// offsets it gets back into addresses in that region, because the replay writes the first and last
// byte of every block (the allocator's own bookkeeping never does). An application keeps the
// allocator's answer (the offset and node, or the pool's handle) next to its resource; a replay has
// only the pointer, so each adapter keeps that answer in a side table indexed by the block's offset
// in min_alignment units: one store per allocation, one load per free.

/// `count` values of T in a reserved, committed mapping: pages are faulted in only where a value is
/// written, so a table over a large region costs what the live blocks touch.
template <class T>
class side_table {
public:
    explicit side_table(std::size_t count)
        : vm_(virtual_memory::reserve(std::max<std::size_t>(count, 1) * sizeof(T))) {
        if (!vm_.commit(0, vm_.size())) throw std::bad_alloc();
    }
    T& operator[](std::size_t i) noexcept { return reinterpret_cast<T*>(vm_.data())[i]; }
    const T& operator[](std::size_t i) const noexcept { return reinterpret_cast<const T*>(vm_.data())[i]; }

private:
    virtual_memory vm_;
};

/// strata::offset_heap over [0, heap_bytes(w)) (the region the other heaps get), min_alignment 16,
/// no granularity, every block linear. Node pool: two nodes per live block and some to spare (a heap
/// of n used blocks has at most n + 1 free ones). Footprint: the highest byte any block has reached,
/// rounded to pages, as for the heaps over a region.
class offset_heap_replay {
public:
    static constexpr std::uint64_t unit = 16;
    static bool applies(const op_workload& w) noexcept {
        return w.max_align <= 4096 && heap_bytes(w) / unit < (std::uint64_t{1} << 32) &&
               w.peak_live_blocks < (std::uint64_t{1} << 29);
    }
    explicit offset_heap_replay(const op_workload& w)
        : region_(heap_bytes(w)), heap_(region_.bytes().size(), options_for(w)),
          node_(region_.bytes().size() / unit) {}
    void* allocate(std::size_t size, std::size_t align) noexcept {
        const offset_allocation a = heap_.allocate(size, align);
        if (!a) return nullptr;
        node_[a.offset / unit] = a.node;
        std::byte* p = region_.bytes().data() + a.offset;
        region_.touched(p, size);
        return p;
    }
    void deallocate(void* p, std::size_t, std::size_t) noexcept { (void)heap_.deallocate(allocation_of(p)); }
    [[nodiscard]] std::size_t footprint() const noexcept { return region_.footprint(); }
    [[nodiscard]] heap_probe probe() const noexcept {
        return {heap_.free_bytes(), heap_.largest_free_block()};
    }
    [[nodiscard]] std::size_t usable_size(const void* p) const noexcept {
        return heap_.size_of(allocation_of(p));
    }

private:
    static offset_heap_options options_for(const op_workload& w) noexcept {
        offset_heap_options o;
        o.max_nodes = static_cast<std::uint32_t>(2 * w.peak_live_blocks + 64);
        o.min_alignment = unit;
        return o;
    }
    [[nodiscard]] offset_allocation allocation_of(const void* p) const noexcept {
        const auto offset =
            static_cast<std::uint64_t>(static_cast<const std::byte*>(p) - region_.bytes().data());
        return {offset, node_[offset / unit]};
    }

    region region_;
    offset_heap heap_;
    side_table<std::uint32_t> node_; // by offset / unit: the node of the live block there
};

/// strata::device_pool with host callbacks. The "device" is a host region of twice heap_bytes(w)
/// plus two blocks, handed out by an offset_heap of 4 KiB pages (the driver's part: the callbacks
/// allocate and free ranges of it; a refusal is the device out of memory). Blocks are the peak live
/// bytes rounded up to a power of two, from 256 KiB to 64 MiB, so a workload fills one block or a
/// few; a request of half a block or more gets memory of its own (dedicated). No budget: the pool
/// grows by blocks and keeps one empty block. Footprint: the device bytes the pool holds (blocks and
/// dedicated allocations). Free space and the largest free block are over all shared blocks, so
/// free space split between blocks counts as fragmentation (device_pool_stats::fragmentation).
class device_pool_replay {
public:
    static constexpr std::uint64_t unit = 16;
    static constexpr std::uint64_t page = 4096;
    static constexpr std::uint64_t min_block = std::uint64_t{256} << 10;
    static constexpr std::uint64_t max_block = std::uint64_t{64} << 20;

    static bool applies(const op_workload& w) noexcept {
        return w.max_align <= 4096 && device_bytes_for(w) / page < (std::uint64_t{1} << 32) &&
               w.peak_live_blocks < (std::uint64_t{1} << 29);
    }
    explicit device_pool_replay(const op_workload& w)
        : region_(device_bytes_for(w)),
          device_(region_.bytes().size(), device_options(region_.bytes().size(), block_size_for(w))),
          handle_(region_.bytes().size() / unit),
          pool_(
              device_memory_callbacks{
                  [this](std::uint64_t size, std::uint64_t* memory) { return device_allocate(size, memory); },
                  [this](std::uint64_t memory, std::uint64_t size) { device_free(memory, size); }},
              pool_options(w)) {}

    void* allocate(std::size_t size, std::size_t align) noexcept {
        const device_allocation h = pool_.allocate(size, align);
        if (!h) return nullptr;
        const device_allocation_info& i = *pool_.info(h);
        const std::uint64_t at = i.memory + i.offset;
        handle_[at / unit] = h.raw();
        return region_.bytes().data() + at;
    }
    void deallocate(void* p, std::size_t, std::size_t) noexcept { (void)pool_.deallocate(handle_of(p)); }
    [[nodiscard]] std::size_t footprint() const noexcept { return held_; }
    [[nodiscard]] heap_probe probe() const noexcept {
        const device_pool_stats s = pool_.stats();
        return {s.free_bytes, s.largest_free_block};
    }
    [[nodiscard]] std::size_t usable_size(const void* p) const noexcept {
        return pool_.info(handle_of(p))->size;
    }

    /// Returns: the bytes of each shared block for `w`.
    [[nodiscard]] static std::uint64_t block_size_for(const op_workload& w) noexcept {
        return std::bit_ceil(std::clamp<std::uint64_t>(w.peak_live_bytes, min_block, max_block));
    }
    /// Returns: the pool as it is (for the tests: its check() and stats()).
    [[nodiscard]] const device_pool& pool() const noexcept { return pool_; }

private:
    static std::uint64_t device_bytes_for(const op_workload& w) noexcept {
        const std::uint64_t block = block_size_for(w);
        const std::uint64_t heap = heap_bytes(w);
        return heap > (std::uint64_t{1} << 46) ? heap : 2 * heap + 2 * block;
    }
    static offset_heap_options device_options(std::uint64_t bytes, std::uint64_t block) noexcept {
        // Ranges of the device: at most one per half block (a smaller request is never dedicated),
        // with a free range between each two.
        offset_heap_options o;
        o.max_nodes = static_cast<std::uint32_t>(
            std::min<std::uint64_t>(4 * (bytes / block) + 64, std::uint64_t{1} << 30));
        o.min_alignment = page;
        return o;
    }
    static device_pool_options pool_options(const op_workload& w) noexcept {
        device_pool_options o;
        o.block_size = block_size_for(w);
        o.min_alignment = unit;
        const std::uint64_t blocks = std::min<std::uint64_t>(w.peak_live_blocks + 2, o.block_size / unit);
        o.nodes_per_block = static_cast<std::uint32_t>(std::max<std::uint64_t>(2 * blocks + 64, 1024));
        return o;
    }
    bool device_allocate(std::uint64_t size, std::uint64_t* memory) {
        const offset_allocation a = device_.allocate(size, page);
        if (!a) return false;
        ranges_.emplace(a.offset, a.node);
        held_ += device_.size_of(a);
        *memory = a.offset;
        return true;
    }
    void device_free(std::uint64_t memory, std::uint64_t) {
        const auto it = ranges_.find(memory);
        if (it == ranges_.end()) return;
        const offset_allocation a{memory, it->second};
        held_ -= device_.size_of(a);
        (void)device_.deallocate(a);
        ranges_.erase(it);
    }
    [[nodiscard]] device_allocation handle_of(const void* p) const noexcept {
        const auto at = static_cast<std::uint64_t>(static_cast<const std::byte*>(p) - region_.bytes().data());
        return device_allocation::from_raw(handle_[at / unit]);
    }

    region region_;                                           // the device memory, as host pages
    offset_heap device_;                                      // the driver: ranges of region_
    std::unordered_map<std::uint64_t, std::uint32_t> ranges_; // device range offset -> its node
    std::uint64_t held_ = 0;                                  // device bytes handed to the pool
    side_table<std::uint64_t> handle_; // by address / unit: the live allocation's handle
    device_pool pool_;                 // last: its destructor calls device_free
};

/// strata::engine_heap, a fresh one per replay (its own reservation): thread-cached size classes,
/// TLSF arenas, spans. Footprint: bytes it has committed; reallocate in place where it can.
class engine_replay {
public:
    static bool applies(const op_workload&) noexcept { return true; }
    explicit engine_replay(const op_workload&) : heap_(options()) {}
    void* allocate(std::size_t size, std::size_t align) noexcept { return heap_.allocate(size, align); }
    void deallocate(void* p, std::size_t, std::size_t) noexcept { heap_.deallocate(p); }
    void* reallocate(void* p, std::size_t, std::size_t n, std::size_t align) noexcept {
        return heap_.reallocate(p, n, align);
    }
    [[nodiscard]] std::size_t footprint() const noexcept { return heap_.committed_bytes(); }
    [[nodiscard]] std::size_t usable_size(const void* p) const noexcept { return heap_.usable_size(p); }
    bool check() noexcept { return heap_.check(); }

private:
    static engine_options options() noexcept {
        engine_options o;
        o.reserve_bytes = std::size_t{16} << 30;
        return o;
    }
    engine_heap heap_;
};

/// Returns: every replay contender, in report order (defined in op_registry.cpp, so that a file
/// that only walks the registry does not instantiate every replay).
[[nodiscard]] const std::vector<op_contender>& op_registry();

} // namespace strata::lab
