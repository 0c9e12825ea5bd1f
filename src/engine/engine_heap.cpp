#include "strata/engine/engine_heap.hpp"

#include <pthread.h>
#include <sched.h>
#include <sys/mman.h>

#include <algorithm>
#include <bit>
#include <cstring>
#include <new>
#include <stdexcept>

#include "strata/core/poison.hpp"
#include "strata/heap/tlsf.hpp"

namespace strata {
namespace engine_detail {

__thread tls_slot tls[max_instances] __attribute__((tls_model("initial-exec")));
constinit run empty_run{};

void spinlock::lock_slow() noexcept {
    for (unsigned spins = 0;; ++spins) {
        if (!flag_.load(std::memory_order_relaxed) && !flag_.exchange(true, std::memory_order_acquire))
            return;
        // Two cores shared by many threads: spinning long against a descheduled holder only burns
        // the holder's time slice.
        if (spins < 64) {
#if defined(__x86_64__) || defined(__i386__)
            __builtin_ia32_pause();
#endif
        } else {
            sched_yield();
        }
    }
}

memory_block block_source::allocate_block(std::size_t size, std::size_t align) noexcept {
    void* p = heap->allocate(size, align);
    return p != nullptr ? memory_block{static_cast<std::byte*>(p), size, align} : memory_block{};
}

void block_source::deallocate_block(memory_block b) noexcept { heap->deallocate(b.data); }

namespace {

/// Granules of one run of class `c`: one for blocks up to 1 KiB (64+ blocks), otherwise enough
/// for 16 blocks (1 MiB for 64 KiB blocks). 8 blocks made a big class switch runs every few
/// allocations under mixed sizes: the slow path served 6% of W2's allocations and all of its
/// 100 slowest; 16 halve that (the price: a few hundred KiB more per big class in use).
constexpr std::uint32_t class_granules(unsigned c) noexcept {
    const std::size_t bs = class_size(c);
    if (bs <= 1024) return 1;
    return static_cast<std::uint32_t>((16 * bs + granule - 1) / granule);
}

/// Adds `delta` (wrapping: pass 0 - n to subtract) to a counter that only holders of one lock
/// write and anyone may read: a plain load and store, not a locked read-modify-write (five of
/// those per medium free+allocate pair: W4 ran at 0.90-1.00x, about 0.94x, without them).
inline void add_under_lock(std::atomic<std::size_t>& counter, std::size_t delta) noexcept {
    counter.store(counter.load(std::memory_order_relaxed) + delta, std::memory_order_relaxed);
}

struct lock_guard {
    explicit lock_guard(spinlock& l) noexcept : l_(l) { l_.lock(); }
    ~lock_guard() { l_.unlock(); }
    lock_guard(const lock_guard&) = delete;
    lock_guard& operator=(const lock_guard&) = delete;
    spinlock& l_;
};

/// Releases a held lock for a scope (a lock_guard's scope, which takes it back at its end).
struct unlock_guard {
    explicit unlock_guard(spinlock& l) noexcept : l_(l) { l_.unlock(); }
    ~unlock_guard() { l_.lock(); }
    unlock_guard(const unlock_guard&) = delete;
    unlock_guard& operator=(const unlock_guard&) = delete;
    spinlock& l_;
};

/// Every live engine_heap, by TLS slot. The epoch tells a thread's slot from a stale one left by a
/// destroyed heap whose slot was reused.
struct registry_type {
    spinlock lock;
    engine_heap* instances[max_instances] = {};
    std::uint64_t epochs[max_instances] = {};
    std::uint64_t next_epoch = 1;
    pthread_key_t key = 0;
    bool key_made = false;
};
constinit registry_type registry;

void push(run*& head, run* r) noexcept {
    r->prev = nullptr;
    r->next = head;
    if (head != nullptr) head->prev = r;
    head = r;
}

void unlink(run*& head, run* r) noexcept {
    if (r->prev != nullptr)
        r->prev->next = r->next;
    else
        head = r->next;
    if (r->next != nullptr) r->next->prev = r->prev;
    r->next = r->prev = nullptr;
}

unsigned bin_of(std::size_t n) noexcept {
    if (n <= 32) return static_cast<unsigned>(n - 1);
    return std::min(63u, 32u + static_cast<unsigned>(std::bit_width(n)) - 6u);
}

tlsf* tlsf_of(run* head, std::uintptr_t data, const run* runs) noexcept {
    const auto index = static_cast<std::size_t>(head - runs);
    return reinterpret_cast<tlsf*>(data + (index << granule_shift));
}

constexpr std::size_t tlsf_room = (sizeof(tlsf) + 63) & ~std::size_t{63};

} // namespace
} // namespace engine_detail

using namespace engine_detail;

// -------------------------------------------------------------------------------------------------
// Construction
// -------------------------------------------------------------------------------------------------

engine_heap::engine_heap(engine_options options) : options_(options) {
    const std::size_t page = virtual_memory::page_size();
    granule_count_ = std::max<std::size_t>(options.reserve_bytes >> granule_shift, 16);
    meta_bytes_ = (granule_count_ * sizeof(run) + page - 1) & ~(page - 1);
    // Data on a 2 MiB boundary, committed in 4 MiB steps: every step can be backed by huge pages.
    constexpr std::size_t huge = std::size_t{2} << 20;
    vm_ = virtual_memory::reserve(meta_bytes_ + (granule_count_ << granule_shift) + huge);
    const auto base = reinterpret_cast<std::uintptr_t>(vm_.data());
    data_ = (base + meta_bytes_ + huge - 1) & ~std::uintptr_t{huge - 1};
    data_offset_ = data_ - base;
    data_size_ = granule_count_ << granule_shift;
    runs_ = reinterpret_cast<run*>(vm_.data());
    retain_granules_ = options.retain_bytes >> granule_shift;
    populate_granules_ = options.populate_after_bytes >> granule_shift;
    // Fewer TLB misses on a churned working set of megabytes; a hint (THP may be off).
    if (options.huge_pages) (void)vm_.hint_huge_pages(data_offset_, data_size_);

    lock_guard g(registry.lock);
    unsigned slot = max_instances;
    for (unsigned i = 0; i < max_instances; ++i) {
        if (registry.instances[i] == nullptr) {
            slot = i;
            break;
        }
    }
    if (slot == max_instances) throw std::length_error("strata::engine_heap: 16 engine heaps exist already");
    if (!registry.key_made) {
        // pthread_key_create takes no memory from malloc, so this is safe inside the first malloc.
        if (pthread_key_create(&registry.key, &engine_heap::thread_exit) != 0)
            throw std::length_error("strata::engine_heap: no pthread key left");
        registry.key_made = true;
    }
    slot_ = slot;
    epoch_ = registry.next_epoch++;
    registry.instances[slot] = this;
    registry.epochs[slot] = epoch_;
}

engine_heap::~engine_heap() {
    lock_guard g(registry.lock);
    registry.instances[slot_] = nullptr;
    registry.epochs[slot_] = 0;
    tls[slot_] = {nullptr, 0};
}

// -------------------------------------------------------------------------------------------------
// Span tier: granule spans tile [0, top_); free ones sit in 64 bins (exact up to 32 granules,
// then one per power of two) with a bitmap; heads and tails are marked so frees coalesce in O(1).
// -------------------------------------------------------------------------------------------------

bool engine_heap::grow_commit(std::size_t need) noexcept {
    if (need <= commit_top_) return true;
    // Commit in 4 MiB steps: fewer mprotect calls, and adjacent commits merge into one mapping.
    const std::size_t want =
        std::min(granule_count_, (std::max(need, commit_top_ + 64) + 31) & ~std::size_t{31});
    const std::size_t data_from = data_offset_ + (commit_top_ << granule_shift);
    if (!vm_.commit(data_from, (want - commit_top_) << granule_shift)) return false;
    const std::size_t meta_from = commit_top_ * sizeof(run);
    if (!vm_.commit(meta_from, (want - commit_top_) * sizeof(run))) return false;
    for (std::size_t i = commit_top_; i < want; ++i)
        new (runs_ + i) run();
    commit_top_ = want;
    return true;
}

void engine_heap::mark_span(run* head, std::size_t n, span_kind kind) noexcept {
    head->kind = kind;
    head->granules = static_cast<std::uint32_t>(n);
    head->back = 0;
    if (kind == span_kind::small || kind == span_kind::medium) {
        // Interior pointers (blocks past the first granule) find the head through `back`.
        for (std::size_t i = 1; i < n; ++i)
            head[i].back = static_cast<std::uint32_t>(i);
    } else if (n > 1) {
        head[n - 1].back = static_cast<std::uint32_t>(n - 1);
    }
}

void engine_heap::bin_insert(run* head) noexcept {
    const unsigned b = bin_of(head->granules);
    push(bins_[b], head);
    bin_map_ |= std::uint64_t{1} << b;
    free_granules_ += head->granules;
    if (head->dirty) dirty_free_ += head->granules;
}

void engine_heap::bin_remove(run* head) noexcept {
    const unsigned b = bin_of(head->granules);
    unlink(bins_[b], head);
    if (bins_[b] == nullptr) bin_map_ &= ~(std::uint64_t{1} << b);
    free_granules_ -= head->granules;
    if (head->dirty) dirty_free_ -= head->granules;
}

engine_heap::run* engine_heap::span_alloc(std::size_t n, span_kind kind, bool* clean) noexcept {
    if (n == 0 || n > granule_count_) return nullptr;
    const unsigned b = bin_of(n);
    run* found = nullptr;
    if (b >= 32) {
        for (run* r = bins_[b]; r != nullptr; r = r->next) {
            if (r->granules >= n) {
                found = r;
                break;
            }
        }
    }
    if (found == nullptr) {
        const unsigned from = b < 32 ? b : b + 1;
        const std::uint64_t m = from < 64 ? bin_map_ & (~std::uint64_t{0} << from) : 0;
        if (m != 0) found = bins_[std::countr_zero(m)];
    }
    bool was_clean = true;
    if (found != nullptr) {
        bin_remove(found);
        was_clean = !found->dirty;
        if (found->granules > n) {
            run* rest = found + n;
            rest->dirty = found->dirty;
            rest->populated = found->populated;
            mark_span(rest, found->granules - n, span_kind::free);
            bin_insert(rest);
        }
    } else {
        if (top_ + n > granule_count_ || !grow_commit(top_ + n)) return nullptr;
        found = runs_ + top_;
        top_ += n;
    }
    found->dirty = false;
    mark_span(found, n, kind);
    if (clean != nullptr) *clean = was_clean;
    return found;
}

void engine_heap::span_free(run* head, bool dirty) noexcept {
    std::size_t n = head->granules;
    // Only a run is known to have every page touched (it was populated when it was made).
    if (head->kind != span_kind::small) head->populated = false;
    if (dirty && dirty_free_ + n > retain_granules_) {
        head->populated = false;
        // Past the retention limit: the pages go back to the OS; the range stays committed
        // (readable, zero on next touch), so one mapping keeps covering the whole heap.
        (void)::madvise(address_of(head), n << granule_shift, MADV_DONTNEED);
        dirty = false;
    }
    head->dirty = dirty;
    std::size_t g = index_of(head);
    if (g + n < top_) {
        run* next = runs_ + g + n;
        if (next->kind == span_kind::free) {
            bin_remove(next);
            head->dirty = head->dirty || next->dirty;
            head->populated = head->populated && next->populated;
            n += next->granules;
        }
    }
    if (g > 0) {
        run* tail = runs_ + g - 1;
        run* prev = tail - tail->back;
        if (prev->kind == span_kind::free && index_of(prev) + prev->granules == g) {
            bin_remove(prev);
            prev->dirty = prev->dirty || head->dirty;
            prev->populated = prev->populated && head->populated;
            n += prev->granules;
            head = prev;
            g = index_of(prev);
        }
    }
    mark_span(head, n, span_kind::free);
    bin_insert(head);
}

// -------------------------------------------------------------------------------------------------
// Thread caches
// -------------------------------------------------------------------------------------------------

inline engine_heap::thread_heap* engine_heap::thread_cache() noexcept {
    const tls_slot& s = tls[slot_];
    if (s.epoch == epoch_) return s.heap;
    return make_thread_heap();
}

engine_heap::thread_heap* engine_heap::make_thread_heap() noexcept {
    thread_heap* h = nullptr;
    {
        lock_guard g(heaps_lock_);
        if (free_heaps_ == nullptr) {
            // Heaps are carved one at a time from a meta span (a process with one thread
            // touches one heap's pages, not the span's).
            if (heap_cursor_ + sizeof(thread_heap) > heap_end_) {
                const std::size_t n = (16 * sizeof(thread_heap) + granule - 1) >> granule_shift;
                run* m = nullptr;
                {
                    lock_guard s(span_lock_);
                    m = span_alloc(n, span_kind::meta, nullptr);
                }
                if (m == nullptr) return nullptr;
                heap_cursor_ = address_of(m);
                heap_end_ = heap_cursor_ + (n << granule_shift);
            }
            auto* fresh = new (heap_cursor_) thread_heap();
            heap_cursor_ += sizeof(thread_heap);
            fresh->next_heap = free_heaps_;
            free_heaps_ = fresh;
        }
        h = free_heaps_;
        free_heaps_ = h->next_heap;
        // Field by field, not a fresh object: a remote free that read this heap as a run's owner
        // before the heap was recycled may still set a `pending` flag (atomically; a spurious
        // flag only costs one walk of a full list).
        for (unsigned c = 0; c < class_count; ++c) {
            h->current[c] = &empty_run;
            h->allocs[c].v.store(0, std::memory_order_relaxed);
            h->frees[c].v.store(0, std::memory_order_relaxed);
            h->partial[c] = h->full[c] = h->spare[c] = nullptr;
            h->pending[c].store(0, std::memory_order_relaxed);
        }
        h->full_freed = 0;
        h->run_bytes.v.store(0, std::memory_order_relaxed);
        h->cache = nullptr;
        h->cache_count = 0;
        h->has_arena = false;
        h->prev_heap = nullptr;
        h->engine = this;
        h->next_heap = heaps_;
        if (heaps_ != nullptr) heaps_->prev_heap = h;
        heaps_ = h;
    }
    tls[slot_] = {h, epoch_};
    // A non-null value makes pthread call thread_exit when this thread ends.
    (void)pthread_setspecific(registry.key, &tls[0]);
    return h;
}

void engine_heap::collect(thread_heap*, run* r) noexcept {
    // A plain load first: the locked exchange only when there is something to take.
    if (r->thread_free.load(std::memory_order_relaxed) == nullptr) return;
    free_block* list = r->thread_free.exchange(nullptr, std::memory_order_acquire);
    if (list == nullptr) return;
    std::uint16_t n = 1;
    free_block* tail = list;
    while (tail->next != nullptr) {
        tail = tail->next;
        ++n;
    }
    tail->next = r->free;
    r->free = list;
    r->used = static_cast<std::uint16_t>(r->used - n);
}

void engine_heap::retire(thread_heap* h, run* r) noexcept {
    class_committed_[r->cls].fetch_sub(std::size_t{r->granules} << granule_shift, std::memory_order_relaxed);
    if (h->cache_count < options_.thread_cache_runs) {
        r->where = run_list::cache;
        push(h->cache, r);
        ++h->cache_count;
        return;
    }
    h->run_bytes.add(-(std::uint64_t{r->granules} << granule_shift));
    r->owner.store(nullptr, std::memory_order_relaxed);
    r->where = run_list::none;
    lock_guard g(span_lock_);
    span_free(r, true);
}

void engine_heap::populate(run* r, std::size_t carved_bytes) noexcept {
    std::byte* at = address_of(r);
    const std::size_t bytes = std::size_t{r->granules} << granule_shift;
#ifdef MADV_POPULATE_WRITE
    if (::madvise(at, bytes, MADV_POPULATE_WRITE) != 0) // EINVAL before Linux 5.14
#endif
    {
        // By hand: a zero byte per page, only on pages above the carved blocks. Below them live
        // blocks (and remote frees' links) may start on a page boundary; a read-modify-write would
        // race with those frees, so those pages are left to fault on their own.
        const std::size_t page = virtual_memory::page_size();
        for (std::size_t off = (carved_bytes + page - 1) & ~(page - 1); off < bytes; off += page)
            *reinterpret_cast<volatile char*>(at + off) = 0;
    }
    r->populated = true;
}

bool engine_heap::thread_populates(const thread_heap* h) const noexcept {
    return (h->run_bytes.get() >> granule_shift) >= populate_granules_;
}

engine_heap::run* engine_heap::new_run(thread_heap* h, unsigned c) noexcept {
    const std::uint32_t n = class_granules(c);
    run* r = nullptr;
    for (run* p = h->cache; p != nullptr; p = p->next) {
        if (p->granules == n) {
            unlink(h->cache, p);
            --h->cache_count;
            r = p;
            break;
        }
    }
    bool fresh = false;
    if (r == nullptr) {
        {
            lock_guard g(span_lock_);
            r = span_alloc(n, span_kind::small, &fresh);
        }
        if (r == nullptr) return nullptr;
        h->run_bytes.add(std::uint64_t{n} << granule_shift);
    }
    if (fresh) r->populated = false;
    // Fault a run in whole (once) when it is recycled memory, partly touched by its last use, or
    // when this thread's runs are past `populate_after_bytes`: otherwise, as runs move between
    // classes and classes reach new highs, carving keeps reaching untouched pages in the middle of
    // steady churn. Below the threshold fresh runs stay lazy, so a small program stays small, and so
    // does each of a program's many light threads (with the process-wide total, 200 threads keeping
    // a block of each of 8 classes each had every run faulted in whole: 95 MiB against glibc's 1).
    if (!r->populated && (!fresh || thread_populates(h))) populate(r, 0); // nothing carved yet
    const std::size_t bs = class_size(c);
    r->free = nullptr;
    r->used = 0;
    r->carved = 0;
    r->capacity = static_cast<std::uint16_t>((std::size_t{n} << granule_shift) / bs);
    r->block_size = static_cast<std::uint32_t>(bs);
    r->cls = static_cast<std::uint8_t>(c);
    r->where = run_list::none;
    r->thread_free.store(nullptr, std::memory_order_relaxed);
    r->owner.store(h, std::memory_order_relaxed);
    class_committed_[c].fetch_add(std::size_t{n} << granule_shift, std::memory_order_relaxed);
    return r;
}

engine_heap::run* engine_heap::adopt(thread_heap* h, unsigned c) noexcept {
    if (abandoned_count_[c].load(std::memory_order_relaxed) == 0) return nullptr;
    run* r = nullptr;
    {
        lock_guard g(abandon_lock_);
        r = abandoned_[c];
        if (r == nullptr) return nullptr;
        abandoned_[c] = r->next;
        abandoned_count_[c].fetch_sub(1, std::memory_order_relaxed);
    }
    r->next = r->prev = nullptr;
    r->where = run_list::none;
    // Store owner, then look at thread_free; a remote free pushes to thread_free, then looks at
    // owner. Both pairs sequentially consistent, or each side could miss the other's write (a store
    // passing a later load, as x86 allows) and the block would wait unseen on a full run.
    r->owner.store(h, std::memory_order_seq_cst);
    h->run_bytes.add(std::uint64_t{r->granules} << granule_shift);
    if (r->thread_free.load(std::memory_order_seq_cst) != nullptr) collect(h, r);
    return r;
}

void* engine_heap::small_slow(thread_heap* h, unsigned c) noexcept {
    for (;;) {
        run* r = h->current[c];
        if (r != &empty_run) {
            if (r->free == nullptr) collect(h, r);
            if (r->free == nullptr && r->carved < r->capacity) {
                // A lazy run whose class grows on after the heap passed the populate threshold
                // is faulted in whole, once.
                if (!r->populated && thread_populates(h)) populate(r, std::size_t{r->carved} * r->block_size);
                // Thread the next never-used blocks, 2 KiB of them (one block above 2 KiB): a fresh run is
                // written a piece at a time, and each slow path touches at most one new page or so.
                const std::size_t bs = r->block_size;
                const std::size_t k =
                    std::min<std::size_t>(r->capacity - r->carved, std::max<std::size_t>(1, 2048 / bs));
                std::byte* first = address_of(r) + std::size_t{r->carved} * bs;
                for (std::size_t i = 0; i + 1 < k; ++i)
                    reinterpret_cast<free_block*>(first + i * bs)->next =
                        reinterpret_cast<free_block*>(first + (i + 1) * bs);
                reinterpret_cast<free_block*>(first + (k - 1) * bs)->next = nullptr;
                r->free = reinterpret_cast<free_block*>(first);
                r->carved = static_cast<std::uint16_t>(r->carved + k);
                // The next carve of this run writes the block after these, often on a page this
                // thread has not touched for a long time: start its TLB walk and line fill now,
                // so that carve does not wait for them (those waits were W2's slowest allocations).
                if (r->carved < r->capacity) __builtin_prefetch(first + k * bs, 1);
            }
            if (free_block* b = r->free) {
                r->free = b->next;
                ++r->used;
                h->allocs[c].add(1);
                return b;
            }
            r->where = run_list::full;
            push(h->full[c], r);
            h->current[c] = &empty_run;
        }
        if (run* p = h->partial[c]) {
            if (p == h->spare[c]) h->spare[c] = nullptr;
            unlink(h->partial[c], p);
            p->where = run_list::none;
            h->current[c] = p;
            continue;
        }
        const std::uint64_t bit = std::uint64_t{1} << c;
        bool freed = (h->full_freed & bit) != 0;
        if (h->pending[c].load(std::memory_order_relaxed) != 0 &&
            h->pending[c].exchange(0, std::memory_order_acquire) != 0)
            freed = true;
        if (freed) {
            h->full_freed &= ~bit;
            // O(full runs of the class), and only after frees reached them: a class that only
            // grows never walks.
            for (run* f = h->full[c]; f != nullptr;) {
                run* next = f->next;
                collect(h, f);
                if (f->free != nullptr) {
                    unlink(h->full[c], f);
                    f->where = run_list::partial;
                    push(h->partial[c], f);
                }
                f = next;
            }
            if (h->partial[c] != nullptr) continue;
        }
        if (run* a = adopt(h, c)) {
            h->current[c] = a;
            continue;
        }
        run* n = new_run(h, c);
        if (n == nullptr) return nullptr;
        h->current[c] = n;
    }
}

void engine_heap::local_free_slow(thread_heap* h, run* d) noexcept {
    const unsigned c = d->cls;
    if (d->where == run_list::full) {
        unlink(h->full[c], d);
        d->where = run_list::partial;
        push(h->partial[c], d);
    }
    if (d->used == 0 && h->current[c] != d) {
        // One empty run per class stays parked in the partial list, carved and ready: a class that
        // oscillates around a run boundary (8-block runs of the big classes do) neither gives the
        // run up nor re-threads it on every cycle.
        if (h->spare[c] == nullptr || h->spare[c] == d) {
            h->spare[c] = d;
            return;
        }
        if (d->where == run_list::partial) unlink(h->partial[c], d);
        d->where = run_list::none;
        retire(h, d);
    }
}

void engine_heap::abandon(thread_heap* h) noexcept {
    if (h->has_arena) {
        std::launder(reinterpret_cast<arena*>(h->arena_storage))->~arena();
        h->has_arena = false;
    }
    for (unsigned c = 0; c < class_count; ++c) {
        auto give_up = [&](run* r) {
            collect(h, r);
            r->where = run_list::none;
            r->next = r->prev = nullptr;
            if (r->used == 0) {
                class_committed_[c].fetch_sub(std::size_t{r->granules} << granule_shift,
                                              std::memory_order_relaxed);
                r->owner.store(nullptr, std::memory_order_relaxed);
                lock_guard g(span_lock_);
                span_free(r, true);
                return;
            }
            // Remote frees that race with this see either this heap (and flag it, harmlessly) or
            // no owner; the adopter collects whatever they pushed.
            r->owner.store(nullptr, std::memory_order_release);
            lock_guard g(abandon_lock_);
            r->next = abandoned_[c];
            abandoned_[c] = r;
            abandoned_count_[c].fetch_add(1, std::memory_order_relaxed);
        };
        if (h->current[c] != &empty_run) give_up(h->current[c]);
        h->current[c] = &empty_run;
        for (run* lists : {h->partial[c], h->full[c]}) {
            for (run* r = lists; r != nullptr;) {
                run* next = r->next;
                give_up(r);
                r = next;
            }
        }
        h->partial[c] = h->full[c] = nullptr;
        h->spare[c] = nullptr;
    }
    h->full_freed = 0;
    {
        lock_guard g(span_lock_);
        for (run* r = h->cache; r != nullptr;) {
            run* next = r->next;
            r->owner.store(nullptr, std::memory_order_relaxed);
            r->where = run_list::none;
            span_free(r, true);
            r = next;
        }
    }
    h->cache = nullptr;
    h->cache_count = 0;
    lock_guard g(heaps_lock_);
    for (unsigned c = 0; c < class_count; ++c) {
        retired_allocs_[c] += h->allocs[c].get();
        retired_frees_[c] += h->frees[c].get();
    }
    if (h->prev_heap != nullptr)
        h->prev_heap->next_heap = h->next_heap;
    else
        heaps_ = h->next_heap;
    if (h->next_heap != nullptr) h->next_heap->prev_heap = h->prev_heap;
    h->engine = nullptr;
    h->prev_heap = nullptr;
    h->next_heap = free_heaps_;
    free_heaps_ = h;
}

void engine_heap::thread_exit(void*) noexcept {
    for (unsigned i = 0; i < max_instances; ++i) {
        const tls_slot s = tls[i];
        if (s.heap == nullptr) continue;
        {
            lock_guard g(registry.lock);
            if (registry.epochs[i] == s.epoch && registry.instances[i] != nullptr)
                registry.instances[i]->abandon(s.heap);
        }
        tls[i] = {nullptr, 0};
    }
}

void engine_heap::flush_thread_cache() noexcept {
    const tls_slot s = tls[slot_];
    if (s.epoch != epoch_) return;
    abandon(s.heap);
    tls[slot_] = {nullptr, 0};
}

// -------------------------------------------------------------------------------------------------
// Slow paths of allocate / deallocate
// -------------------------------------------------------------------------------------------------

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
        thread_heap* h = thread_cache();
        if (h == nullptr) return nullptr;
        run* r = h->current[c];
        if (free_block* b = r->free) {
            r->free = b->next;
            ++r->used;
            h->allocs[c].add(1);
            return b;
        }
        return small_slow(h, c);
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

void engine_heap::deallocate_slow(void* p, run* d) noexcept {
    switch (d->kind) {
    case span_kind::small: {
        // Counted here, by the thread that frees, so statistics are exact once threads are quiet
        // (the owner only learns of the block when it collects).
        // The class is read once, before the block is published: once it is on thread_free the
        // owner may collect it and reuse the run for another class (a data race on d->cls).
        const auto cls = d->cls;
        const tls_slot& s = tls[slot_];
        if (s.epoch == epoch_)
            s.heap->frees[cls].add(1);
        else
            remote_frees_[cls].fetch_add(1, std::memory_order_relaxed);
        auto* b = static_cast<free_block*>(p);
        // A thread without a cache for this heap, or the owner's own free while it is not the
        // owner any more (abandoned), goes the remote way too.
        free_block* old = d->thread_free.load(std::memory_order_relaxed);
        do {
            b->next = old;
        } while (!d->thread_free.compare_exchange_weak(old, b, std::memory_order_seq_cst,
                                                       std::memory_order_relaxed));
        if (old == nullptr) {
            // The first block on an empty list tells the owner to look at its full runs; later
            // ones ride along (the owner takes the whole list at once). seq_cst pairs with adopt()
            // (a lock cmpxchg and a plain load on x86 either way).
            if (thread_heap* o = d->owner.load(std::memory_order_seq_cst))
                o->pending[cls].store(1, std::memory_order_release);
        }
        return;
    }
    case span_kind::medium: medium_deallocate(p, d); return;
    case span_kind::large: {
        if (p != address_of(d)) return; // not a block start: ignored like any foreign pointer
        lock_guard g(span_lock_);
        large_bytes_.fetch_sub(std::size_t{d->granules} << granule_shift, std::memory_order_relaxed);
        large_live_.fetch_sub(1, std::memory_order_relaxed);
        span_free(d, true);
        return;
    }
    default: return;
    }
}

// -------------------------------------------------------------------------------------------------
// Medium tier: TLSF arenas, each a span whose first bytes hold the tlsf object.
// -------------------------------------------------------------------------------------------------

void* engine_heap::medium_allocate(std::size_t size, std::size_t align) noexcept {
    lock_guard g(medium_lock_);
    for (unsigned i = 0; i < arena_count_; ++i) {
        const unsigned a = (arena_hint_ + i) % arena_count_;
        tlsf* t = tlsf_of(arenas_[a], data_, runs_);
        if (void* p = t->allocate(size, align)) {
            arena_hint_ = a;
            return medium_handed_out(p, t->usable_size(p));
        }
    }
    if (arena_count_ == max_arenas) return nullptr;
    // Arenas grow 1x, 2x, 4x the configured size: a program with a few medium blocks spans 16 MiB.
    const std::size_t want =
        std::max(options_.medium_arena_bytes << std::min(arena_count_, 2u), size + align + tlsf_room + 4096);
    const std::size_t n = (want + granule - 1) >> granule_shift;
    run* head = nullptr;
    {
        lock_guard s(span_lock_);
        head = span_alloc(n, span_kind::medium, nullptr);
    }
    if (head == nullptr) return nullptr;
    std::byte* at = address_of(head);
    auto* t = new (at) tlsf(std::span<std::byte>(at + tlsf_room, (n << granule_shift) - tlsf_room));
    arena_hint_ = arena_count_;
    arenas_[arena_count_++] = head;
    void* p = t->allocate(size, align);
    return p != nullptr ? medium_handed_out(p, t->usable_size(p)) : nullptr;
}

// Free medium blocks of purge_medium_bytes or more give their whole pages back to the OS (the
// range stays mapped and reads as zero): TLSF never reads a free block's interior, only its header
// and the two list links at the start of its payload, which stay resident. Without this a program
// that grows a vector through the medium sizes keeps every abandoned copy resident in the arena.
// Smaller blocks stay resident, so churn of small medium blocks never faults.
//
// By default each is purged as it is freed. With medium_retain_bytes, up to that many bytes of them
// stay resident: every half of it freed (medium frees of any size), a sweep asks the kernel which
// of their pages are resident (mincore) and purges past the budget, the blocks an earlier sweep saw
// first before those freed since. Purged on each free, two threads churning 1-8 MiB blocks faulted
// every page of every block in again (9x glibc's time). Counted rather than asked, a never-touched
// arena tail, the remainder of a purged block and a region merged from purged parts all counted as
// resident, and warm blocks within the budget were purged for them (found by review); a "purged"
// mark in the block was trusted after the block had been reused and dirtied (trim() kept it).
//
// A mark after the list links (a tag, the size, and the resident bytes the sweep counted; it stays
// resident with the links) tells the sweep that first saw the block free. medium_allocate clears its
// tag, so a mark cannot outlive an allocation of the block that carries it.
namespace {
constexpr std::size_t purge_mark_offset = 2 * sizeof(void*); // after the tlsf list links
constexpr std::size_t purge_mark_words = 3;                  // tag, size, resident bytes
constexpr std::size_t purge_keep = purge_mark_offset + purge_mark_words * sizeof(std::uint64_t);
constexpr std::uint64_t purge_magic = 0x9E3779B97F4A7C14u; // even: a tag's low bit is 0
constexpr std::uint64_t seen_tag(std::uint64_t sweep) noexcept { return purge_magic ^ (sweep << 1); }

/// The pages purge_medium() would give back, [lo, hi): the whole pages of the payload past the mark.
struct purge_range {
    std::uintptr_t lo = 0;
    std::uintptr_t hi = 0;
};
purge_range purge_range_of(const void* p, std::size_t usable) noexcept {
    const std::uintptr_t page = virtual_memory::page_size();
    const auto at = reinterpret_cast<std::uintptr_t>(p);
    const std::uintptr_t lo = (at + purge_keep + page - 1) & ~(page - 1);
    const std::uintptr_t hi = (at + usable) & ~(page - 1);
    return {lo, hi > lo ? hi : lo};
}

/// Returns: the bytes of [r.lo, r.hi) resident now, by mincore in 2 MiB steps (a stack buffer: this
/// runs inside malloc). A kernel that refuses counts every page, so the budget still holds.
std::size_t resident_bytes(purge_range r) noexcept {
    const std::size_t page = virtual_memory::page_size();
    unsigned char v[512];
    std::size_t resident = 0;
    for (std::uintptr_t at = r.lo; at < r.hi;) {
        const std::size_t n = std::min<std::size_t>((r.hi - at) / page, sizeof v);
        if (::mincore(reinterpret_cast<void*>(at), n * page, v) != 0) return r.hi - r.lo;
        for (std::size_t i = 0; i < n; ++i)
            resident += v[i] & 1u;
        at += n * page;
    }
    return resident * page;
}
} // namespace

// Requires: medium_lock_ held; p just allocated from an arena, `usable` its usable size.
void* engine_heap::medium_handed_out(void* p, std::size_t usable) noexcept {
    // TLSF poisons the slack past `size` for ASan; usable_size() promises all of it.
    unpoison(p, usable);
    // A block handed out starts where a free block started (unless aligned past it), so it may
    // carry that block's purge mark (purge_free_medium). One store breaks the tag: freed again as
    // the same block, unwritten there, it counts as new, not as seen free by an old sweep. At
    // checks >= 2 tlsf has filled the block already.
    if constexpr (STRATA_CHECKS < 2)
        *reinterpret_cast<std::uint64_t*>(static_cast<std::byte*>(p) + purge_mark_offset) = 0;
    add_under_lock(medium_in_use_, usable);
    add_under_lock(medium_count_, 1);
    add_under_lock(medium_total_, 1);
    return p;
}

void engine_heap::purge_medium(void* p, std::size_t usable) noexcept {
    const purge_range r = purge_range_of(p, usable);
    if (r.hi > r.lo) (void)::madvise(reinterpret_cast<void*>(r.lo), r.hi - r.lo, MADV_DONTNEED);
}

// Requires: medium_lock_ held. Asks which pages of the free blocks of purge_medium_bytes or more are
// resident; past medium_retain_bytes, purges blocks until within it: those an earlier sweep saw
// free first, then, when those are not enough, those first seen now. So right after a sweep at
// most the budget is resident in them. `all` (trim) purges every one. User data that happens to
// look like a mark (tag and size) only makes a freshly freed block count as seen before.
void engine_heap::purge_free_medium(bool all) noexcept {
    medium_dirty_ = 0;
    const std::uint64_t sweep = ++medium_sweeps_;
    const std::size_t page = virtual_memory::page_size();
    const auto each = [&](auto&& visit) {
        for (unsigned a = 0; a < arena_count_; ++a)
            tlsf_of(arenas_[a], data_, runs_)
                ->for_each_free_block(options_.purge_medium_bytes, [&](void* q, std::size_t bytes) noexcept {
                    if (bytes < purge_keep + page) return; // no whole page past the mark
                    auto* mark =
                        reinterpret_cast<std::uint64_t*>(static_cast<std::byte*>(q) + purge_mark_offset);
                    unpoison(mark, purge_mark_words * sizeof(std::uint64_t)); // tlsf poisons free payloads
                    visit(q, bytes, mark);
                    poison(mark, purge_mark_words * sizeof(std::uint64_t));
                });
    };
    if (all) {
        each([&](void* q, std::size_t bytes, std::uint64_t* mark) {
            purge_medium(q, bytes);
            mark[2] = 0;
        });
        return;
    }
    std::size_t resident = 0;
    each([&](void* q, std::size_t bytes, std::uint64_t* mark) {
        const std::uint64_t seen = (mark[0] ^ purge_magic) >> 1;
        if (mark[1] != bytes || (mark[0] & 1) != 0 || seen == 0 || seen > sweep) { // new, or merged
            mark[0] = seen_tag(sweep);
            mark[1] = bytes;
        }
        mark[2] = resident_bytes(purge_range_of(q, bytes));
        resident += mark[2];
    });
    // Blocks first seen now were freed within the last half budget of frees, the likeliest to be
    // reused: they go last.
    const std::size_t keep = options_.medium_retain_bytes;
    for (const bool fresh : {false, true}) {
        if (resident <= keep) return;
        each([&](void* q, std::size_t bytes, std::uint64_t* mark) {
            if (resident <= keep || mark[2] == 0 || (mark[0] == seen_tag(sweep)) != fresh) return;
            purge_medium(q, bytes);
            resident -= mark[2];
            mark[2] = 0;
        });
    }
}

void engine_heap::medium_deallocate(void* p, run* head) noexcept {
    lock_guard g(medium_lock_);
    tlsf* t = tlsf_of(head, data_, runs_);
    if (static_cast<std::byte*>(p) < address_of(head) + tlsf_room) return; // the arena's own record
    const std::size_t usable = t->usable_size(p);
    // At checks >= 2 tlsf fills a freed block at the call (core/poison.hpp, release_bytes), which
    // would fault every purged page back in: purge after the free there, under the lock.
    constexpr bool fills_on_free = STRATA_CHECKS >= 2;
    const bool purge_now = usable >= options_.purge_medium_bytes && options_.medium_retain_bytes == 0;
    if (purge_now && !fills_on_free) {
        // Purged before it is freed, outside the lock: p is still the caller's, so no other thread
        // can be handed its pages meanwhile, and its arena cannot go (p is live in it). Under the
        // lock, two threads churning 1-8 MiB blocks waited on each other's madvise.
        unlock_guard u(medium_lock_);
        purge_medium(p, usable);
    }
    add_under_lock(medium_in_use_, 0 - usable);
    add_under_lock(medium_count_, 0 - std::size_t{1});
    t->deallocate(p);
    if (purge_now && fills_on_free) purge_medium(p, usable); // in flight: its interior unread
    // Half the budget freed since the last sweep: the big free blocks hold at most 1.5x of it
    // resident between calls. Frees of every size count: a smaller block merges into a big one.
    if (options_.medium_retain_bytes != 0 && (medium_dirty_ += usable) > options_.medium_retain_bytes / 2)
        purge_free_medium(false);
    // An empty arena other than the first goes back to the span pool (retention decides whether
    // its pages stay resident). live_allocations() is O(1) and leaves the free in flight; stats()
    // completed it and scanned the top class on every medium free (W4: 0.75x the time).
    if (t->live_allocations() == 0 && head != arenas_[0]) {
        unsigned a = 0;
        while (arenas_[a] != head)
            ++a;
        arenas_[a] = arenas_[--arena_count_];
        arena_hint_ = 0;
        t->~tlsf();
        // TLSF poisons free blocks for ASan; the span may become a run of small blocks next.
        unpoison(address_of(head), std::size_t{head->granules} << granule_shift);
        lock_guard s(span_lock_);
        span_free(head, true);
    }
}

// -------------------------------------------------------------------------------------------------
// Large tier: a span per block.
// -------------------------------------------------------------------------------------------------

void* engine_heap::large_allocate(std::size_t size, std::size_t align, bool* clean) noexcept {
    if (size > data_size_ || align > data_size_) return nullptr;
    const std::size_t n = std::max<std::size_t>(1, (size + granule - 1) >> granule_shift);
    const std::size_t extra = align > granule ? (align >> granule_shift) - 1 : 0;
    lock_guard g(span_lock_);
    bool was_clean = false;
    run* head = span_alloc(n + extra, span_kind::large, &was_clean);
    if (head == nullptr) return nullptr;
    if (extra != 0) {
        const auto addr = reinterpret_cast<std::uintptr_t>(address_of(head));
        const std::size_t front = ((((addr + align - 1) & ~(align - 1)) - addr) >> granule_shift);
        const std::size_t tail = extra - front;
        run* mid = head + front;
        mark_span(mid, n, span_kind::large);
        if (front != 0) {
            mark_span(head, front, span_kind::free);
            span_free(head, !was_clean);
        }
        if (tail != 0) {
            mark_span(mid + n, tail, span_kind::free);
            span_free(mid + n, !was_clean);
        }
        head = mid;
    }
    large_bytes_.fetch_add(n << granule_shift, std::memory_order_relaxed);
    large_live_.fetch_add(1, std::memory_order_relaxed);
    large_total_.fetch_add(1, std::memory_order_relaxed);
    if (clean != nullptr) *clean = was_clean;
    return address_of(head);
}

// -------------------------------------------------------------------------------------------------
// realloc, calloc, usable size
// -------------------------------------------------------------------------------------------------

void* engine_heap::reallocate(void* p, std::size_t new_size, std::size_t align) noexcept {
    if (p == nullptr) return allocate(new_size, align);
    if (new_size == 0) {
        deallocate(p);
        return nullptr;
    }
    if (!owns(p) || align == 0 || (align & (align - 1)) != 0) return nullptr;
    run* d = runs_ + ((reinterpret_cast<std::uintptr_t>(p) - data_) >> granule_shift);
    d -= d->back;
    const bool aligned = (reinterpret_cast<std::uintptr_t>(p) & (align - 1)) == 0;
    const std::size_t old = usable_size(p);
    if (aligned) {
        switch (d->kind) {
        case span_kind::small:
            // Keep the block while the new size still uses at least half of it.
            if (new_size <= old && (new_size > old / 2 || old <= 32)) return p;
            break;
        case span_kind::medium:
            if (new_size > small_max && new_size <= medium_max) {
                lock_guard g(medium_lock_);
                tlsf* t = tlsf_of(d, data_, runs_);
                const std::size_t before = t->usable_size(p);
                // In place only: a move inside the arena would copy under the lock.
                if (new_size <= before) {
                    void* q = t->reallocate(p, new_size, align);
                    if (q == p) {
                        unpoison(p, t->usable_size(p));
                        const std::size_t after = t->usable_size(p);
                        const std::size_t released = before - after;
                        add_under_lock(medium_in_use_, 0 - released);
                        // The tail went back as a free block (a header, then its payload, right
                        // after p's): treated like a free of that size. Purged at once without a
                        // budget (under the lock: the tail is free now), counted toward the next
                        // sweep with one.
                        if (options_.medium_retain_bytes == 0) {
                            if (released >= options_.purge_medium_bytes && released > tlsf::header_size)
                                purge_medium(static_cast<std::byte*>(p) + after + tlsf::header_size,
                                             released - tlsf::header_size);
                        } else if ((medium_dirty_ += released) > options_.medium_retain_bytes / 2) {
                            purge_free_medium(false);
                        }
                        return p;
                    }
                }
            }
            break;
        case span_kind::large:
            // Above data_size_ nothing can serve it, and rounding up to granules would wrap near
            // SIZE_MAX (need 0: "fits", the whole span freed under a live block): allocate refuses.
            if (new_size > medium_max && new_size <= data_size_) {
                const std::size_t need = (new_size + granule - 1) >> granule_shift;
                lock_guard g(span_lock_);
                const std::size_t have = d->granules;
                if (need <= have) {
                    if (have - need >= 16) { // give back the tail when it is worth it
                        mark_span(d, need, span_kind::large);
                        run* tail = d + need;
                        mark_span(tail, have - need, span_kind::free);
                        span_free(tail, true);
                        large_bytes_.fetch_sub((have - need) << granule_shift, std::memory_order_relaxed);
                    }
                    return p;
                }
                // Grow into a free successor span.
                const std::size_t at = index_of(d);
                if (at + have < top_) {
                    run* next = runs_ + at + have;
                    if (next->kind == span_kind::free && have + next->granules >= need) {
                        bin_remove(next);
                        const std::size_t rest = have + next->granules - need;
                        const bool next_dirty = next->dirty;
                        mark_span(d, need, span_kind::large);
                        if (rest != 0) {
                            run* tail = d + need;
                            tail->dirty = next_dirty;
                            mark_span(tail, rest, span_kind::free);
                            bin_insert(tail);
                        }
                        large_bytes_.fetch_add((need - have) << granule_shift, std::memory_order_relaxed);
                        return p;
                    }
                }
            }
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

void* engine_heap::allocate_zeroed(std::size_t size, std::size_t align) noexcept {
    if (size > medium_max || align > granule) {
        if (align == 0 || (align & (align - 1)) != 0) return nullptr;
        bool clean = false;
        void* p = large_allocate(size, std::max(align, default_alignment), &clean);
        if (p != nullptr && !clean) std::memset(p, 0, size);
        return p;
    }
    void* p = allocate(size, align);
    if (p != nullptr) std::memset(p, 0, size);
    return p;
}

std::size_t engine_heap::usable_size(const void* p) const noexcept {
    if (!owns(p)) return 0;
    const run* d = runs_ + ((reinterpret_cast<std::uintptr_t>(p) - data_) >> granule_shift);
    d -= d->back;
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
// Statistics, check, trim, frame arenas, fork
// -------------------------------------------------------------------------------------------------

engine_class_stats engine_heap::class_stats(unsigned c) const noexcept {
    engine_class_stats s;
    if (c >= class_count) return s;
    s.block_size = class_size(c);
    lock_guard g(heaps_lock_);
    std::uint64_t a = retired_allocs_[c];
    std::uint64_t f = retired_frees_[c] + remote_frees_[c].load(std::memory_order_relaxed);
    for (const thread_heap* h = heaps_; h != nullptr; h = h->next_heap) {
        a += h->allocs[c].get();
        f += h->frees[c].get();
    }
    s.allocations = a;
    s.frees = f;
    s.live_bytes = a > f ? (a - f) * s.block_size : 0;
    s.committed_bytes = class_committed_[c].load(std::memory_order_relaxed);
    return s;
}

engine_thread_stats engine_heap::thread_stats() const noexcept {
    engine_thread_stats s;
    const tls_slot& t = tls[slot_];
    if (t.epoch != epoch_) return s;
    const thread_heap* h = t.heap;
    // One net figure over the classes: a thread that frees other threads' blocks of one class
    // offsets what it holds of another (clamping each class at 0 counted only the holdings).
    std::size_t allocated_bytes = 0, freed_bytes = 0;
    for (unsigned c = 0; c < class_count; ++c) {
        const std::uint64_t a = h->allocs[c].get();
        const std::uint64_t f = h->frees[c].get();
        s.allocations += a;
        s.frees += f;
        allocated_bytes += a * class_size(c);
        freed_bytes += f * class_size(c);
    }
    s.live_bytes = allocated_bytes > freed_bytes ? allocated_bytes - freed_bytes : 0;
    s.committed_bytes = h->run_bytes.get();
    return s;
}

strata::stats engine_heap::stats() const noexcept {
    strata::stats s;
    for (unsigned c = 0; c < class_count; ++c) {
        const engine_class_stats cs = class_stats(c);
        s.in_use += cs.live_bytes;
        s.live_allocations += cs.allocations > cs.frees ? cs.allocations - cs.frees : 0;
        s.total_allocations += cs.allocations;
    }
    s.in_use += medium_in_use_.load(std::memory_order_relaxed) + large_bytes_.load(std::memory_order_relaxed);
    s.live_allocations +=
        medium_count_.load(std::memory_order_relaxed) + large_live_.load(std::memory_order_relaxed);
    s.total_allocations +=
        medium_total_.load(std::memory_order_relaxed) + large_total_.load(std::memory_order_relaxed);
    s.capacity = committed_bytes();
    return s;
}

std::size_t engine_heap::committed_bytes() const noexcept {
    lock_guard g(span_lock_);
    return (top_ - free_granules_ + dirty_free_) << granule_shift;
}

std::size_t engine_heap::retained_bytes() const noexcept {
    lock_guard g(span_lock_);
    return dirty_free_ << granule_shift;
}

bool engine_heap::check() const noexcept {
    auto* self = const_cast<engine_heap*>(this);
    self->lock_all();
    bool ok = true;
    std::size_t free_spans = 0;
    std::size_t dirty = 0;
    for (std::size_t g = 0; ok && g < top_;) {
        const run* head = runs_ + g;
        const std::size_t n = head->granules;
        if (n == 0 || g + n > top_ || head->back != 0) {
            ok = false;
            break;
        }
        if (n > 1 && head[n - 1].back != n - 1) ok = false;
        switch (head->kind) {
        case span_kind::free:
            ++free_spans;
            if (head->dirty) dirty += n;
            if (g + n < top_ && runs_[g + n].kind == span_kind::free) ok = false; // not coalesced
            break;
        case span_kind::small: {
            for (std::size_t i = 1; i < n; ++i)
                if (head[i].back != i) ok = false;
            const std::size_t bs = head->block_size;
            if (head->cls >= class_count || bs != class_size(head->cls) ||
                head->capacity != (n << granule_shift) / bs || head->carved > head->capacity ||
                head->used > head->carved) {
                ok = false;
                break;
            }
            const auto base = reinterpret_cast<std::uintptr_t>(address_of(head));
            auto walk = [&](const free_block* b, std::size_t& count) {
                for (; b != nullptr && ok; b = b->next) {
                    const auto off = reinterpret_cast<std::uintptr_t>(b) - base;
                    if (off % bs != 0 || off / bs >= head->carved || ++count > head->carved) ok = false;
                }
            };
            std::size_t local = 0;
            std::size_t remote = 0;
            walk(head->free, local);
            walk(head->thread_free.load(std::memory_order_acquire), remote);
            if (local + head->used != head->carved || remote > head->used) ok = false;
            if (head->where == run_list::cache && head->used != 0) ok = false;
            break;
        }
        case span_kind::medium: {
            for (std::size_t i = 1; i < n; ++i)
                if (head[i].back != i) ok = false;
            if (!tlsf_of(const_cast<run*>(head), data_, runs_)->check()) ok = false;
            break;
        }
        case span_kind::large:
        case span_kind::meta: break;
        }
        g += n;
    }
    std::size_t binned = 0;
    for (unsigned b = 0; ok && b < bin_count; ++b) {
        if (((bin_map_ >> b) & 1) != (bins_[b] != nullptr)) ok = false;
        for (const run* r = bins_[b]; ok && r != nullptr; r = r->next) {
            if (r->kind != span_kind::free || bin_of(r->granules) != b) ok = false;
            ++binned;
        }
    }
    if (binned != free_spans || dirty != dirty_free_) ok = false;
    self->unlock_all();
    return ok;
}

void engine_heap::sweep_abandoned() noexcept {
    for (unsigned c = 0; c < class_count; ++c) {
        if (abandoned_count_[c].load(std::memory_order_relaxed) == 0) continue;
        run* empty = nullptr;
        {
            // Under the lock adopt() takes its runs with: no thread owns these. A remote free that
            // lands after the collect stays on thread_free and keeps `used` above 0, so a run
            // found empty has no live block left for anyone to free.
            lock_guard g(abandon_lock_);
            for (run** link = &abandoned_[c]; *link != nullptr;) {
                run* r = *link;
                collect(nullptr, r);
                if (r->used != 0) {
                    link = &r->next;
                    continue;
                }
                *link = r->next;
                abandoned_count_[c].fetch_sub(1, std::memory_order_relaxed);
                r->next = empty;
                empty = r;
            }
        }
        while (empty != nullptr) {
            run* r = empty;
            empty = r->next;
            r->next = r->prev = nullptr;
            class_committed_[c].fetch_sub(std::size_t{r->granules} << granule_shift,
                                          std::memory_order_relaxed);
            lock_guard g(span_lock_);
            span_free(r, true);
        }
    }
}

void engine_heap::trim() noexcept {
    sweep_abandoned();
    {
        lock_guard m(medium_lock_);
        purge_free_medium(true);
    }
    lock_guard g(span_lock_);
    for (run* head : bins_) {
        for (run* r = head; r != nullptr; r = r->next) {
            if (!r->dirty) continue;
            (void)::madvise(address_of(r), std::size_t{r->granules} << granule_shift, MADV_DONTNEED);
            r->dirty = false;
            r->populated = false;
        }
    }
    dirty_free_ = 0;
}

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

void engine_heap::lock_all() noexcept {
    heaps_lock_.lock();
    abandon_lock_.lock();
    medium_lock_.lock();
    span_lock_.lock();
}

void engine_heap::unlock_all() noexcept {
    span_lock_.unlock();
    medium_lock_.unlock();
    abandon_lock_.unlock();
    heaps_lock_.unlock();
}

void engine_heap::prepare_fork() noexcept {
    registry.lock.lock();
    for (engine_heap* e : registry.instances)
        if (e != nullptr) e->lock_all();
}

void engine_heap::after_fork_parent() noexcept {
    for (engine_heap* e : registry.instances)
        if (e != nullptr) e->unlock_all();
    registry.lock.unlock();
}

void engine_heap::after_fork_child() noexcept {
    // Only the forking thread exists: it holds every lock, and releasing them leaves consistent
    // structures. Other threads' caches stay unreachable; their blocks stay valid.
    after_fork_parent();
}

} // namespace strata
