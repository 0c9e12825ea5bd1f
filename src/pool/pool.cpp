#include "strata/pool/pool.hpp"

#include <algorithm>
#include <bit>
#include <functional>
#include <new>
#include <utility>

#include "strata/core/bit.hpp"
#include "strata/core/check.hpp"

namespace strata {

namespace {

constexpr const char* who = "strata::pool";
constexpr std::size_t default_chunk_bytes = std::size_t{64} << 10;
constexpr bool keep_bits = STRATA_CHECKS >= 1;

std::size_t bit_words(std::size_t count) noexcept { return (count + 63) / 64; }

} // namespace

pool::pool(std::size_t slot_size, std::size_t slot_align, std::span<std::byte> buffer, source_ref source,
           pool_options options) noexcept
    : source_(source), options_(options) {
    if (slot_size == 0 || !is_pow2(slot_align)) return; // invalid: slot_size_ stays 0
    slot_align = std::max(slot_align, alignof(void*));
    const auto stride = align_up(std::max(slot_size, sizeof(void*)), slot_align);
    if (!stride || *stride > static_cast<std::size_t>(PTRDIFF_MAX) / 2) return;
    slot_size_ = *stride;
    slot_align_ = slot_align;
    if (!buffer.empty()) (void)add_chunk(buffer, memory_block{});
}

pool::pool(pool&& other) noexcept
    : free_(std::exchange(other.free_, nullptr)), allocs_(std::exchange(other.allocs_, 0)),
      frees_(std::exchange(other.frees_, 0)), peak_live_(std::exchange(other.peak_live_, 0)),
      slot_size_(other.slot_size_), slot_align_(other.slot_align_), slots_(std::exchange(other.slots_, 0)),
      chunks_(std::move(other.chunks_)), source_(other.source_), options_(other.options_) {
    other.chunks_.clear();
}

pool& pool::operator=(pool&& other) noexcept {
    if (this != &other) {
        release_chunks();
        free_ = std::exchange(other.free_, nullptr);
        allocs_ = std::exchange(other.allocs_, 0);
        frees_ = std::exchange(other.frees_, 0);
        peak_live_ = std::exchange(other.peak_live_, 0);
        slot_size_ = other.slot_size_;
        slot_align_ = other.slot_align_;
        slots_ = std::exchange(other.slots_, 0);
        chunks_ = std::move(other.chunks_);
        other.chunks_.clear();
        source_ = other.source_;
        options_ = other.options_;
    }
    return *this;
}

pool::~pool() { release_chunks(); }

void pool::release_chunks() noexcept {
    for (const chunk& c : chunks_) {
        // Free slots and the redzone after them are poisoned: hand the block back clean so the
        // source (or the caller's buffer) can reuse it.
        unpoison(c.first, c.count * slot_size_ + sizeof(chunk) + alignof(chunk));
        source_.deallocate_block(c.block);
    }
    chunks_.clear();
    free_ = nullptr;
    slots_ = 0;
}

// Layout of a chunk: [slots ... | redzone | state bits (checks >= 1)]. Slots first, so the block's
// own alignment is the slot alignment and no padding is lost in front of them. The redzone is the
// room of the chunk header, which is kept in chunks_ instead.
bool pool::add_chunk(std::span<std::byte> memory, memory_block block) noexcept {
    auto* begin = memory.data();
    const std::size_t pad = align_padding(reinterpret_cast<std::uintptr_t>(begin), slot_align_);
    if (memory.size() <= pad) return false;
    const std::size_t avail = memory.size() - pad;
    auto meta_bytes = [](std::size_t count) {
        return sizeof(chunk) + alignof(chunk) + (keep_bits ? bit_words(count) * 8 : 0);
    };
    // Estimate (one state bit per slot at checks >= 1), then settle on the largest count that fits.
    // Both without overflow: slot sizes reach 2^62, where n * slot_size and 8 * slot_size would
    // wrap and a small buffer would seem to hold hundreds of such slots.
    const std::size_t cap = options_.max_slots - std::min(options_.max_slots, slots_);
    auto fits = [&](std::size_t n) {
        const std::size_t meta = meta_bytes(n);
        return n <= cap && meta <= avail && n <= (avail - meta) / slot_size_;
    };
    std::size_t count = avail > meta_bytes(0) ? (avail - meta_bytes(0)) / slot_size_ : 0;
    // Each slot's state bit costs 1/8 byte more: n (8 slot + 1) <= 8 room, nearly.
    if (keep_bits && slot_size_ < (std::size_t{1} << 60)) count -= count / (8 * slot_size_ + 1);
    count = std::min(count, cap);
    while (count > 0 && !fits(count))
        --count;
    while (fits(count + 1))
        ++count;
    if (count == 0) return false;
    try {
        // Doubling: reserve(size + 1) would allocate exactly that, and copy the list each time.
        if (chunks_.size() == chunks_.capacity())
            chunks_.reserve(std::max<std::size_t>(8, 2 * chunks_.size()));
    } catch (...) {
        return false;
    }
    std::byte* first = begin + pad;
    std::byte* header = first + count * slot_size_;
    header += align_padding(reinterpret_cast<std::uintptr_t>(header), alignof(chunk));
    chunk c{block, first, count, nullptr};
    if constexpr (keep_bits) {
        c.bits = ::new (header + sizeof(chunk)) std::uint64_t[bit_words(count)]{};
    }
    // The header itself lives in chunks_, where no slot overrun reaches it (in the chunk, a write
    // past the last slot bent `block` and ~pool handed the source a wild pointer). Its room in the
    // chunk stays as a redzone: under ASan a write past the last slot is reported there.
    std::byte* const end = first + count * slot_size_;
    poison(end, static_cast<std::size_t>(header + sizeof(chunk) - end));
    const auto at = std::upper_bound(chunks_.begin(), chunks_.end(), c, [](const chunk& a, const chunk& b) {
        return std::less<>{}(a.first, b.first);
    });
    const auto inserted = chunks_.insert(at, c); // room reserved above: no throw
    slots_ += count;
    thread_chunk(*inserted);
    return true;
}

// Pushes the chunk's slots so that the lowest address is handed out first; with `free_only`, only
// those whose state bit says free, rewriting their links alone (rebuilding the list after a bad
// link, checks >= 1): refilling them would wipe other writes after free that checks 2 would see.
void pool::thread_chunk(const chunk& c, bool free_only) noexcept {
    for (std::size_t i = c.count; i-- > 0;) {
        if constexpr (keep_bits) {
            if (free_only && ((c.bits[i / 64] >> (i % 64)) & 1u)) continue;
        }
        std::byte* s = c.first + i * slot_size_;
        // The whole slot: on reset() a free slot is already poisoned, and checks 2 fills it.
        const bool fill = STRATA_CHECKS >= 2 && !free_only;
        unpoison(s, fill ? slot_size_ : sizeof(void*));
        *reinterpret_cast<void**>(s) = free_;
        free_ = s;
        if (fill) std::memset(s + sizeof(void*), fill_freed, slot_size_ - sizeof(void*));
        poison(s, slot_size_);
    }
}

std::size_t pool::live() const noexcept {
    std::size_t live = 0;
#if STRATA_POOL_CHECKED_PATH
    live = allocs_ - frees_;
#else
    std::size_t free_count = 0;
    for (const void* n = free_; n != nullptr && free_count <= slots_; n = read_link(n))
        ++free_count;
    live = slots_ - std::min(free_count, slots_);
#endif
    if (live > peak_live_) peak_live_ = live;
    return live;
}

void* pool::allocate_slow() noexcept {
    if (free_ == nullptr && slots_ > peak_live_) peak_live_ = slots_; // every slot is live right now
    if (!valid() || !source_ || slots_ >= options_.max_slots) return nullptr;
    std::size_t want = options_.slots_per_chunk;
    if (want == 0) want = std::max<std::size_t>(8, default_chunk_bytes / slot_size_);
    want = std::min(want, options_.max_slots - slots_);
    const auto slot_bytes = checked_mul(want, slot_size_);
    if (!slot_bytes) return nullptr;
    const auto bytes =
        checked_add(*slot_bytes, sizeof(chunk) + alignof(chunk) + (keep_bits ? bit_words(want) * 8 : 0));
    if (!bytes) return nullptr;
    const memory_block b = source_.allocate_block(*bytes, std::max(slot_align_, alignof(chunk)));
    if (b.empty()) return nullptr;
    if (!add_chunk({b.data, b.size}, b)) {
        source_.deallocate_block(b);
        return nullptr;
    }
    return allocate();
}

void* pool::read_link(const void* slot) noexcept {
    // Free slots are poisoned under ASan; open the link word just long enough to read it.
    unpoison(slot, sizeof(void*));
    void* next = *static_cast<void* const*>(slot);
    poison(slot, sizeof(void*));
    return next;
}

const pool::chunk* pool::find_chunk(const void* p) const noexcept {
    auto* b = static_cast<const std::byte*>(p);
    auto it = std::upper_bound(chunks_.begin(), chunks_.end(), b,
                               [](const std::byte* x, const chunk& c) { return std::less<>{}(x, c.first); });
    if (it == chunks_.begin()) return nullptr;
    const chunk* c = &*std::prev(it);
    return std::less<>{}(b, c->first + c->count * slot_size_) ? c : nullptr;
}

void* pool::take_checked(void* p) noexcept {
    unpoison(p, slot_size_);
#if STRATA_CHECKS >= 1
    // The link is the one word a use after free can change unseen at checks 1. Followed blindly, a
    // bad one hands out a live slot or memory outside the pool; so it must name a free slot.
    if (!STRATA_VERIFY(1, free_link_ok(p), corruption, who, p,
                       "a free slot's link was overwritten (write after free)")) {
        free_ = nullptr;
        for (auto it = chunks_.rbegin(); it != chunks_.rend(); ++it)
            thread_chunk(*it, true);
        p = free_;
        if (p == nullptr) return allocate_slow();
        unpoison(p, slot_size_);
    }
#endif
#if STRATA_CHECKS >= 2
    // A freed slot still holds 0xDD after its link: anything else is a write after free. (After
    // the link check, so the slot a rebuilt list hands out is scanned too.)
    const auto* bytes = static_cast<const unsigned char*>(p);
    for (std::size_t i = sizeof(void*); i < slot_size_; ++i) {
        if (bytes[i] != fill_freed) {
            (void)STRATA_VERIFY(2, false, corruption, who, p, "a free slot was written after it was freed");
            break;
        }
    }
#endif
    free_ = *static_cast<void**>(p);
#if STRATA_CHECKS >= 1
    if (const chunk* c = find_chunk(p)) {
        const auto i = static_cast<std::size_t>(static_cast<std::byte*>(p) - c->first) / slot_size_;
        c->bits[i / 64] |= std::uint64_t{1} << (i % 64);
    }
#endif
    ++allocs_;
    acquire_bytes(p, slot_size_);
    return p;
}

#if STRATA_CHECKS >= 1
bool pool::slot_is_free(const void* p) const noexcept {
    const chunk* c = find_chunk(p);
    if (c == nullptr) return false;
    const auto off = static_cast<std::size_t>(static_cast<const std::byte*>(p) - c->first);
    if (off % slot_size_ != 0) return false;
    const std::size_t i = off / slot_size_;
    return ((c->bits[i / 64] >> (i % 64)) & 1u) == 0;
}

bool pool::free_link_ok(const void* head) const noexcept {
    const void* next = *static_cast<void* const*>(head);
    // A null link ends the list, so it is right only on the last free slot: a write after free
    // that zeroes the link (`obj->next = nullptr`, a memset) would otherwise strand every free slot
    // behind it, unreported.
    if (next == nullptr) return slot_is_free(head) && slots_ - (allocs_ - frees_) == 1;
    return next != head && slot_is_free(head) && slot_is_free(next);
}
#endif

bool pool::verify_live(const void* p) const noexcept {
#if STRATA_CHECKS >= 1
    if (p == nullptr) return true;
    const chunk* c = find_chunk(p);
    if (!STRATA_VERIFY(1, c != nullptr, foreign_pointer, who, p, "pointer not from this pool")) return false;
    const auto off = static_cast<std::size_t>(static_cast<const std::byte*>(p) - c->first);
    if (!STRATA_VERIFY(1, off % slot_size_ == 0, foreign_pointer, who, p,
                       "pointer into the middle of a slot"))
        return false;
    const std::size_t i = off / slot_size_;
    const bool live = (c->bits[i / 64] >> (i % 64)) & 1u;
    return STRATA_VERIFY(1, live, double_free, who, p, "slot freed twice (it is already free)");
#else
    (void)p;
    return true;
#endif
}

bool pool::verify_size(const void* p, std::size_t size) const noexcept {
    (void)p, (void)size;
    return STRATA_VERIFY(1, size <= slot_size_, size_mismatch, who, p, "sized free names more than a slot");
}

void pool::give_back_checked(void* p) noexcept {
    if (p == nullptr) return;
    if (!verify_live(p)) return;
#if STRATA_CHECKS >= 1
    const chunk* c = find_chunk(p);
    const std::size_t i = static_cast<std::size_t>(static_cast<std::byte*>(p) - c->first) / slot_size_;
    c->bits[i / 64] &= ~(std::uint64_t{1} << (i % 64));
#endif
    (void)live(); // refreshes the peak
    auto* s = static_cast<std::byte*>(p);
    *reinterpret_cast<void**>(s) = free_;
#if STRATA_CHECKS >= 2
    std::memset(s + sizeof(void*), fill_freed, slot_size_ - sizeof(void*));
#endif
    poison(s, slot_size_);
    free_ = p;
    ++frees_;
}

bool pool::is_live(const void* p) const noexcept {
    const chunk* c = find_chunk(p);
    if (c == nullptr) return false;
    const auto off = static_cast<std::size_t>(static_cast<const std::byte*>(p) - c->first);
    if (off % slot_size_ != 0) return false;
#if STRATA_CHECKS >= 1
    const std::size_t i = off / slot_size_;
    return (c->bits[i / 64] >> (i % 64)) & 1u;
#else
    return true;
#endif
}

void pool::reset() noexcept {
    (void)live(); // refreshes the peak
    frees_ = allocs_;
    free_ = nullptr;
    // Highest chunk first, so the lowest address ends up at the head of the list.
    for (auto it = chunks_.rbegin(); it != chunks_.rend(); ++it) {
        if constexpr (keep_bits) std::fill_n(it->bits, bit_words(it->count), std::uint64_t{0});
        thread_chunk(*it);
    }
}

strata::stats pool::stats() const noexcept {
    strata::stats s;
    const std::size_t n = live();
    s.in_use = n * slot_size_;
    s.peak = std::max(peak_live_, n) * slot_size_;
    s.capacity = slots_ * slot_size_;
    s.live_allocations = n;
    s.total_allocations = allocs_;
    s.largest_free_block = free_ != nullptr ? slot_size_ : 0;
    return s;
}

std::vector<bool> pool::live_map() const {
    std::vector<bool> live(slots_, true);
#if STRATA_CHECKS >= 1
    std::size_t base = 0;
    for (const chunk& c : chunks_) {
        for (std::size_t i = 0; i < c.count; ++i)
            live[base + i] = (c.bits[i / 64] >> (i % 64)) & 1u;
        base += c.count;
    }
#else
    // No state bits: the free list is the truth. Each node's chunk is one binary search; the
    // chunk's first slot index comes from the prefix sums (chunks_ is sorted, as find_chunk needs).
    std::vector<std::size_t> first_index(chunks_.size());
    std::size_t base = 0;
    for (std::size_t k = 0; k < chunks_.size(); ++k) {
        first_index[k] = base;
        base += chunks_[k].count;
    }
    std::size_t steps = 0;
    for (void* n = free_; n != nullptr && steps <= slots_; n = read_link(n), ++steps) {
        const auto* b = static_cast<const std::byte*>(n);
        const auto it =
            std::upper_bound(chunks_.begin(), chunks_.end(), b,
                             [](const std::byte* x, const chunk& c) { return std::less<>{}(x, c.first); });
        if (it == chunks_.begin()) continue; // not in a chunk: check() reports it
        const chunk* c = &*std::prev(it);
        if (!std::less<>{}(b, c->first + c->count * slot_size_)) continue;
        const auto k = static_cast<std::size_t>(std::prev(it) - chunks_.begin());
        live[first_index[k] + static_cast<std::size_t>(b - c->first) / slot_size_] = false;
    }
#endif
    return live;
}

bool pool::check() const noexcept {
    if (!valid()) return free_ == nullptr && live() == 0 && slots_ == 0;
    std::size_t free_count = 0;
    for (const void* n = free_; n != nullptr; n = read_link(n)) {
        if (++free_count > slots_) return false; // longer than the pool: a cycle or a stray link
        const chunk* c = find_chunk(n);
        if (c == nullptr) return false;
        const auto off = static_cast<std::size_t>(static_cast<const std::byte*>(n) - c->first);
        if (off % slot_size_ != 0) return false;
#if STRATA_CHECKS >= 1
        const std::size_t i = off / slot_size_;
        if ((c->bits[i / 64] >> (i % 64)) & 1u) return false; // on the free list yet marked live
#endif
    }
    if (free_count + live() != slots_) return false;
#if STRATA_CHECKS >= 1
    std::size_t marked = 0;
    for (const chunk& c : chunks_)
        for (std::size_t w = 0; w < bit_words(c.count); ++w)
            marked += static_cast<std::size_t>(std::popcount(c.bits[w]));
    if (marked != live()) return false;
#endif
    for (std::size_t i = 1; i < chunks_.size(); ++i) // sorted and disjoint
        if (!std::less<>{}(chunks_[i - 1].first + chunks_[i - 1].count * slot_size_, chunks_[i].first + 1))
            return false;
    return true;
}

} // namespace strata
