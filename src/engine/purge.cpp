// Purging: giving resident pages of free memory back to the OS (madvise(MADV_DONTNEED); the range
// stays mapped and reads as zero). Free medium blocks of purge_medium_bytes or more are purged at
// once or, with medium_retain_bytes, by budgeted sweeps; trim() purges everything free.
//
// Exports: engine_heap::purge_medium, purge_free_medium, trim.
#include <sys/mman.h>

#include <algorithm>

#include "strata/core/poison.hpp"

#include "engine_internal.hpp"

namespace strata {

using namespace engine_detail;

// TLSF never reads a free block's interior, only its header and the two list links at the start of
// its payload, which stay resident; so a free medium block can lose its other pages. Without this a
// program that grows a vector through the medium sizes keeps every abandoned copy resident in the
// arena. Smaller blocks stay resident, so churn of small medium blocks never faults.
//
// By default each is purged as it is freed. With medium_retain_bytes, up to that many bytes of them
// stay resident: every half of it freed (medium frees of any size), a sweep asks the kernel which
// of their pages are resident (mincore) and purges past the budget, the blocks an earlier sweep saw
// first before those freed since. The kernel is asked rather than bytes counted: a never-touched
// arena tail, the remainder of a purged block and a region merged from purged parts are not
// resident, and a block reused and dirtied since it was purged is.
//
// A mark after the list links (a tag, the size, and the resident bytes the sweep counted; it stays
// resident with the links) tells the sweep that first saw the block free. medium_handed_out clears
// its tag, so a mark cannot outlive an allocation of the block that carries it.
namespace {
constexpr std::size_t purge_mark_words = 3; // tag, size, resident bytes
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

// -------------------------------------------------------------------------------------------------
// Purge now
// -------------------------------------------------------------------------------------------------

/// Effects: purges the whole pages of the free medium block `p` past its mark.
void engine_heap::purge_medium(void* p, std::size_t usable) noexcept {
    const purge_range r = purge_range_of(p, usable);
    if (r.hi > r.lo) (void)::madvise(reinterpret_cast<void*>(r.lo), r.hi - r.lo, MADV_DONTNEED);
}

// -------------------------------------------------------------------------------------------------
// Purge sweeps
// -------------------------------------------------------------------------------------------------

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

// -------------------------------------------------------------------------------------------------
// trim
// -------------------------------------------------------------------------------------------------

/// Effects: frees emptied abandoned runs, purges every big free medium block and every dirty free span.
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

} // namespace strata
