// engine_heap's entry points that are not inline: construction and the registry of live heaps (one
// thread-local slot each), the allocation slow path's dispatch to the tiers, realloc, calloc,
// usable size, frame arenas, and the fork hooks. The tiers live in span.cpp, small.cpp, medium.cpp,
// large.cpp, the depot in depot.cpp; thread caches in thread_cache.cpp; purging in purge.cpp;
// statistics in stats.cpp.
//
// Exports: engine_heap's constructor and destructor, allocate_slow, reallocate, allocate_zeroed,
// usable_size, frame_arena, lock_all, unlock_all, prepare_fork, after_fork_parent,
// after_fork_child; engine_detail::tls, empty_run, registry, block_source.
#include <pthread.h>

#include <algorithm>
#include <cstring>
#include <new>
#include <stdexcept>

#include "strata/engine/detail/purge_batch.hpp"

#include "engine_internal.hpp"

namespace strata {
namespace engine_detail {

__thread tls_slot tls[max_instances] __attribute__((tls_model("initial-exec")));
__thread bool thread_gone __attribute__((tls_model("initial-exec"))) = false;
__thread std::uint32_t cacheless_frees __attribute__((tls_model("initial-exec"))) = 0;
constinit run empty_run{};
constinit registry_type registry;

/// Returns: a block of the heap for a frame arena (empty when out of memory).
memory_block block_source::allocate_block(std::size_t size, std::size_t align) noexcept {
    void* p = heap->allocate(size, align);
    return p != nullptr ? memory_block{static_cast<std::byte*>(p), size, align} : memory_block{};
}

/// Effects: gives a frame arena's block back to the heap.
void block_source::deallocate_block(memory_block b) noexcept { heap->deallocate(b.data); }

} // namespace engine_detail

using namespace engine_detail;

// -------------------------------------------------------------------------------------------------
// Construction
// -------------------------------------------------------------------------------------------------

/// Effects: reserves the heap's address space and takes a TLS slot in the registry.
engine_heap::engine_heap(engine_options options) : options_(options) {
    const std::size_t page = virtual_memory::page_size();
    // At most 2^48 bytes of data: a run's thread_free word holds a block's offset in 48 bits.
    granule_count_ = std::clamp<std::size_t>(options.reserve_bytes >> granule_shift, 16,
                                             std::size_t{1} << (remote_count_shift - granule_shift));
    // The descriptors, then the tags, then the data.
    tags_offset_ = (granule_count_ * sizeof(run) + page - 1) & ~(page - 1);
    meta_bytes_ = tags_offset_ + ((granule_count_ * sizeof(std::uint32_t) + page - 1) & ~(page - 1));
    // Data on a 2 MiB boundary, committed in 4 MiB steps: every step can be backed by huge pages.
    constexpr std::size_t huge = std::size_t{2} << 20;
    vm_ = virtual_memory::reserve(meta_bytes_ + (granule_count_ << granule_shift) + huge);
    const auto base = reinterpret_cast<std::uintptr_t>(vm_.data());
    data_ = (base + meta_bytes_ + huge - 1) & ~std::uintptr_t{huge - 1};
    data_offset_ = data_ - base;
    data_size_ = granule_count_ << granule_shift;
    runs_ = reinterpret_cast<run*>(vm_.data());
    tags_ = reinterpret_cast<std::atomic<std::uint32_t>*>(vm_.data() + tags_offset_);
    retain_granules_ = options.retain_bytes >> granule_shift;
    populate_granules_ = options.populate_after_bytes >> granule_shift;
    keep_granules_ = options.large_keep_bytes >> granule_shift;
    // A class's stash holds stash_bytes, and at least 16 blocks: with fewer, a few blocks would
    // switch the class between the stash and its run on nearly every allocation. Classes of 8 KiB
    // and more are not stashed (their free blocks are the ones the in-run purge gives back).
    for (unsigned c = 0; c < class_count; ++c) {
        const std::size_t n = std::max<std::size_t>(options.stash_bytes / class_size(c), 16);
        stash_cap_[c] = options.stash_bytes == 0 || class_size(c) >= page_sized_block
                            ? 0
                            : static_cast<std::uint16_t>(std::min<std::size_t>(n, 4096));
        // A depot batch is half a full stash, at most 32 blocks (a stash holds at least 16).
        if (stash_cap_[c] != 0 && options.depot_bytes != 0) {
            depot_batch_[c] = static_cast<std::uint16_t>(std::min<unsigned>(stash_cap_[c] / 2, 32));
            const std::size_t batch_bytes = std::size_t{depot_batch_[c]} * class_size(c);
            depot_max_[c] = static_cast<std::uint32_t>(
                std::clamp<std::size_t>(options.depot_bytes / batch_bytes, 1, std::size_t{1} << 20));
        }
    }
    clock_origin_ = now_ms();
    // Ticks are 32-bit milliseconds compared by signed difference: ages past 2^31 do not exist, and
    // the in-run purge waits up to 32 * decay_ms.
    options_.decay_ms = std::min<std::uint32_t>(options.decay_ms, std::uint32_t{1} << 29);
    step_interval_ = options_.decay_ms / 8;
    // The first step: nothing can have decayed before decay_ms, and a short-lived process (a shell
    // pipeline's tools) never pays for a step.
    next_step_.store(options_.decay_ms, std::memory_order_relaxed);
    // Fewer TLB misses on a churned working set of megabytes; a hint (THP may be off).
    if (options.huge_pages) (void)vm_.hint_huge_pages(data_offset_, data_size_);

    lock_guard g(registry.lock);
    // Slot 0 only for the heap that asks for it: the fast paths of slot_use::first_for_life read
    // it without an epoch, so no other heap's caches may ever be found there.
    unsigned slot = max_instances;
    if (options.first_slot) {
        if (registry.instances[0] != nullptr)
            throw std::length_error("strata::engine_heap: another heap holds thread-local slot 0");
        slot = 0;
    } else {
        for (unsigned i = 1; i < max_instances; ++i) {
            if (registry.instances[i] == nullptr) {
                slot = i;
                break;
            }
        }
        if (slot == max_instances)
            throw std::length_error("strata::engine_heap: 15 engine heaps exist already");
    }
    if (!registry.key_made) {
        // pthread_key_create takes no memory from malloc, so this is safe inside the first malloc.
        if (pthread_key_create(&registry.key, &engine_heap::thread_exit) != 0)
            throw std::length_error("strata::engine_heap: no pthread key left");
        registry.key_made = true;
    }
    slot_ = slot;
    epoch_ = registry.next_epoch++;
    if (registry.next_epoch == 0) registry.next_epoch = 1;
    registry.instances[slot] = this;
    registry.epochs[slot] = epoch_;
}

/// Effects: frees the TLS slot (the reservation goes with vm_).
engine_heap::~engine_heap() {
    stop_purge_thread();
    lock_guard g(registry.lock);
    registry.instances[slot_] = nullptr;
    registry.epochs[slot_] = 0;
    tls[slot_] = {nullptr, 0, 0};
}

// -------------------------------------------------------------------------------------------------
// Allocation slow path: which tier serves a request
// -------------------------------------------------------------------------------------------------

/// Returns: a block for a request the inline path did not serve: a small class that fits the
/// alignment, a medium block, else a large span.
void* engine_heap::allocate_slow(std::size_t size, std::size_t align) noexcept {
    if (align == 0 || (align & (align - 1)) != 0) return nullptr;
    align = std::max(align, default_alignment);
    if (size <= small_max && align <= granule) {
        // A class whose block size is a multiple of `align` gives aligned blocks: runs start on a
        // granule, and every power of two up to 64 KiB is a class.
        unsigned c = class_of(std::max(size, align));
        if (align > default_alignment) {
            while (class_size(c) % align != 0)
                ++c;
        }
        if (thread_heap* h = thread_cache()) {
            run* r = h->current[c];
            if (free_block* b = r->free) {
                r->free = b->next;
                ++r->used;
                h->allocs[c].add(1);
                return b;
            }
            return small_slow(h, c);
        }
        // No cache (a thread past its exit, or no record left): the tiers below serve it.
    }
    if (size <= medium_max && align <= 4096) {
        if (void* p = medium_allocate(size, align)) return p;
        // Every arena full and no room for another (at most max_arenas: ~16 GiB of medium blocks
        // with the default arena size): a span of its own, as a large block, rather than failing
        // with the reservation far from full. deallocate, usable_size and reallocate go by the
        // span's kind, so such a block is a large block everywhere.
    }
    return large_allocate(size, align, nullptr);
}

// -------------------------------------------------------------------------------------------------
// realloc, calloc, usable size
// -------------------------------------------------------------------------------------------------

/// Returns: `p` resized in place when its tier allows, else a new block with its bytes copied.
void* engine_heap::reallocate(void* p, std::size_t new_size, std::size_t align) noexcept {
    if (p == nullptr) return allocate(new_size, align);
    if (new_size == 0) {
        deallocate(p);
        return nullptr;
    }
    if (!owns(p) || align == 0 || (align & (align - 1)) != 0) return nullptr;
    run* d = head_of(p);
    const bool aligned = (reinterpret_cast<std::uintptr_t>(p) & (align - 1)) == 0;
    const std::size_t old = usable_size(p);
    if (aligned) {
        switch (d->kind) {
        case span_kind::small:
            // Keep the block while the new size still uses at least half of it.
            if (new_size <= old && (new_size > old / 2 || old <= 32)) return p;
            break;
        case span_kind::medium:
            if (new_size > small_max && new_size <= medium_max && medium_resize_in_place(p, d, new_size))
                return p;
            break;
        case span_kind::large:
            // Above data_size_ nothing can serve it, and rounding up to granules would wrap near
            // SIZE_MAX (need 0: "fits", the whole span freed under a live block): allocate refuses.
            if (new_size > medium_max && new_size <= data_size_ && large_resize_in_place(d, new_size))
                return p;
            break;
        default: return nullptr;
        }
    }
    void* q = allocate(new_size, align);
    if (q == nullptr) return nullptr;
    std::memcpy(q, p, std::min(old, new_size));
    deallocate(p);
    return q;
}

/// Returns: a zeroed block; a large span that is still clean (never written, or purged) is not
/// written twice, unless the OS ever refused a purge (locked pages keep their contents).
void* engine_heap::allocate_zeroed(std::size_t size, std::size_t align) noexcept {
    if (size > medium_max || align > granule) {
        if (align == 0 || (align & (align - 1)) != 0) return nullptr;
        bool clean = false;
        void* p = large_allocate(size, std::max(align, default_alignment), &clean);
        if (p != nullptr && (!clean || purge_batch::refused())) std::memset(p, 0, size);
        return p;
    }
    void* p = allocate(size, align);
    if (p != nullptr) std::memset(p, 0, size);
    return p;
}

/// Returns: the usable bytes of `p` by its span kind: the class size, the TLSF block, the span.
std::size_t engine_heap::usable_size(const void* p) const noexcept {
    if (!owns(p)) return 0;
    const run* d = head_of(p);
    switch (d->kind) {
    case span_kind::small: return d->block_size;
    case span_kind::medium: {
        lock_guard g(medium_lock_);
        return tlsf_of(const_cast<run*>(d), data_, runs_)->usable_size(p);
    }
    case span_kind::large: {
        lock_guard g(span_lock_);
        return std::size_t{d->granules} << granule_shift;
    }
    default: return 0;
    }
}

// -------------------------------------------------------------------------------------------------
// Frame arenas
// -------------------------------------------------------------------------------------------------

/// Returns: the calling thread's frame arena, made in its cache on first use.
arena& engine_heap::frame_arena() {
    thread_heap* h = thread_cache();
    if (h == nullptr) throw std::bad_alloc();
    auto* a = reinterpret_cast<arena*>(h->arena_storage);
    if (!h->has_arena) {
        arena_options o;
        o.block_size = options_.frame_block_bytes;
        a = new (h->arena_storage) arena(source_ref(source_), o);
        h->has_arena = true;
    }
    return *std::launder(a);
}

// -------------------------------------------------------------------------------------------------
// fork
// -------------------------------------------------------------------------------------------------

/// Effects: takes this heap's locks in their order (the five of its tiers, then the depots'),
/// medium_lock_ and span_lock_ once no purge that let one go holds a block or spans out of reach
/// (such a purge needs only that lock to put them back).
void engine_heap::lock_all() noexcept {
    heaps_lock_.lock();
    abandon_lock_.lock();
    lock_when_idle(medium_lock_, medium_purges_);
    lock_when_idle(span_lock_, span_purges_);
    handoff_lock_.lock(); // the purge thread holds no block of the hand-off stack
    for (depot_slot& d : depot_)
        d.lock.lock();
}

/// Effects: releases this heap's locks in reverse order.
void engine_heap::unlock_all() noexcept {
    for (depot_slot& d : depot_)
        d.lock.unlock();
    handoff_lock_.unlock();
    span_lock_.unlock();
    medium_lock_.unlock();
    abandon_lock_.unlock();
    heaps_lock_.unlock();
}

/// Effects: takes the registry lock and every live heap's locks (pthread_atfork prepare).
void engine_heap::prepare_fork() noexcept {
    registry.lock.lock();
    for (engine_heap* e : registry.instances)
        if (e != nullptr) e->lock_all();
}

/// Effects: releases what prepare_fork took.
void engine_heap::after_fork_parent() noexcept {
    for (engine_heap* e : registry.instances)
        if (e != nullptr) e->unlock_all();
    registry.lock.unlock();
}

void engine_heap::after_fork_child() noexcept {
    // Only the forking thread exists: it holds every lock, and releasing them leaves consistent
    // structures. Other threads' caches stay unreachable (a thread stopped in the middle of its
    // lock-free fast path may have left its own lists half updated, so nothing walks them); their
    // blocks stay valid. No purge thread runs here: start_purge_thread may start one, and the
    // destructor joins nothing.
    for (engine_heap* e : registry.instances)
        if (e != nullptr) {
            e->thread_running_.store(false, std::memory_order_relaxed);
            e->thread_stop_.store(false, std::memory_order_relaxed);
            e->handoff_open_.store(false, std::memory_order_relaxed);
            e->depot_draining_.store(false, std::memory_order_relaxed); // its drainer is not here
        }
    after_fork_parent();
    // Blocks walks handed the parent's purge thread go home (purged) here: no thread takes them.
    for (engine_heap* e : registry.instances)
        if (e != nullptr) {
            (void)e->purge_handed(0);
            // A walk of another thread may have counted blocks it had not pushed yet.
            e->handoff_count_.store(0, std::memory_order_relaxed);
        }
}

} // namespace strata
