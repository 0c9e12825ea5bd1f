#pragma once
// detail::sparse_slots: the generation bookkeeping shared by handle_table, slot_map and
// soa_slot_map. One 2-word entry per slot: the generation word and a link.
//
//   live slot:  gen_word = its generation (>= 1)          link = container-defined (dense index)
//   free slot:  gen_word = next generation | free_bit      link = next free slot (npos ends the list)
//                                                          (policy::compact: unused; the free slots
//                                                          are the members of a lowest_free bitmap)
//   retired:    gen_word = free_bit                        not on the free list, never reused
//
// Because free and retired slots carry free_bit, which no handle generation has, validation is one
// compare of the slot's gen_word with the handle's generation, and the null handle (generation 0)
// never matches any slot.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <stdexcept>
#include <type_traits>
#include <utility>
#include <vector>

#include "strata/handle/detail/lowest_free.hpp"
#include "strata/handle/handle.hpp"
#include "strata/handle/policy.hpp"

namespace strata::detail {

template <class Handle, class Alloc, class WrapPolicy, class ReusePolicy>
class sparse_slots {
    static_assert(is_handle_v<Handle>, "Handle must be a strata::handle");
    static_assert(policy::is_wrap_policy<WrapPolicy>, "WrapPolicy must be policy::retire or policy::wrap");
    static_assert(policy::is_reuse_policy<ReusePolicy>,
                  "ReusePolicy must be policy::lifo, policy::fifo or policy::compact");
    static constexpr bool compact = std::is_same_v<ReusePolicy, policy::compact>;

public:
    using handle_type = Handle;
    using word = typename Handle::storage_type;
    static constexpr word npos = static_cast<word>(~word{0});
    static constexpr word free_bit = static_cast<word>(word{1} << (sizeof(word) * 8 - 1));

    struct slot {
        word gen_word; ///< generation when live; next generation | free_bit when free
        word link;     ///< dense index when live (container-defined); next free slot when free
    };
    using slot_allocator = typename std::allocator_traits<Alloc>::template rebind_alloc<slot>;

    explicit sparse_slots(const Alloc& a) : slots_(slot_allocator(a)), free_(a) {}
    sparse_slots(const sparse_slots&) = default;
    sparse_slots& operator=(const sparse_slots&) = default;
    /// Effects: takes `other`'s slots; `other` is left empty and usable.
    sparse_slots(sparse_slots&& other) noexcept
        : slots_(std::move(other.slots_)), free_(std::move(other.free_)),
          head_(std::exchange(other.head_, npos)), tail_(std::exchange(other.tail_, npos)),
          retired_(std::exchange(other.retired_, 0)), wraps_(std::exchange(other.wraps_, 0)) {
        other.slots_.clear();
    }
    /// Effects: takes `other`'s slots; `other` is left empty and usable. Throws: only where the
    /// allocators neither propagate nor compare equal (the slots are then copied, which allocates);
    /// the containers build aside and swap in for that case (slot_map, soa_slot_map).
    sparse_slots& operator=(sparse_slots&& other) noexcept(
        std::allocator_traits<slot_allocator>::propagate_on_container_move_assignment::value ||
        std::allocator_traits<slot_allocator>::is_always_equal::value) {
        if (this != &other) {
            slots_ = std::move(other.slots_);
            other.slots_.clear();
            free_ = std::move(other.free_);
            head_ = std::exchange(other.head_, npos);
            tail_ = std::exchange(other.tail_, npos);
            retired_ = std::exchange(other.retired_, 0);
            wraps_ = std::exchange(other.wraps_, 0);
        }
        return *this;
    }
    ~sparse_slots() = default;

    /// Returns: true when `h` names a live slot at its current generation. O(1), one compare.
    [[nodiscard]] bool valid(Handle h) const noexcept { return valid(h.index(), h.generation()); }
    /// Returns: as valid(h) for the handle of slot `i` at generation `gen`.
    [[nodiscard]] bool valid(word i, word gen) const noexcept {
        return i < slots_.size() && slots_[i].gen_word == gen;
    }
    /// Returns: the generation word of slot `i` (its generation when live). Requires: i < size().
    [[nodiscard]] word generation(word i) const noexcept { return slots_[i].gen_word; }
    /// Returns: the link of slot `i`. Requires: i < size().
    [[nodiscard]] word link(word i) const noexcept { return slots_[i].link; }
    /// Effects: sets the link of live slot `i`.
    void set_link(word i, word link) noexcept { slots_[i].link = link; }
    /// Returns: the current handle of live slot `i`.
    [[nodiscard]] Handle handle_of(word i) const noexcept {
        return Handle::from_parts(i, slots_[i].gen_word);
    }
    /// Returns: true when slot `i` exists and is live.
    [[nodiscard]] bool live(word i) const noexcept {
        return i < slots_.size() && (slots_[i].gen_word & free_bit) == 0;
    }

    /// Effects: makes sure the next acquire() cannot throw.
    /// Returns: the slot index acquire() will take.
    /// Throws: std::length_error when every index is live or retired; std::bad_alloc from the allocator.
    word prepare() {
        if (head_ != npos) return head_;
        if (slots_.size() >= Handle::index_space)
            throw std::length_error("strata: handle index space exhausted");
        if (slots_.size() == slots_.capacity()) reserve(slots_.empty() ? 16 : slots_.size() * 2);
        if constexpr (compact) {
            // A copy assignment may leave the slot array more capacity than the bitmap it copied.
            if (free_.capacity() <= slots_.size()) free_.reserve(slots_.capacity());
        }
        return static_cast<word>(slots_.size());
    }

    /// Effects: takes the slot prepare() named, makes it live with `link`.
    /// Requires: prepare() was called since the last acquire/release. Returns: its handle.
    Handle acquire(word link) noexcept {
        word i;
        if (head_ != npos) {
            i = head_;
            pop_free(i);
            slots_[i].gen_word &= static_cast<word>(~free_bit);
            slots_[i].link = link;
        } else {
            i = static_cast<word>(slots_.size());
            slots_.push_back(slot{1, link}); // capacity reserved by prepare(): no reallocation
        }
        return Handle::from_parts(i, slots_[i].gen_word);
    }

    /// Effects: as acquire(link) when has_free(): takes the head of the free list.
    /// Requires: has_free(). Returns: its handle.
    Handle acquire_free(word link) noexcept {
        const word i = head_;
        slot& s = slots_[i];
        pop_free(i);
        const word gen = static_cast<word>(s.gen_word & ~free_bit);
        s.gen_word = gen;
        s.link = link;
        return Handle::from_parts(i, gen);
    }

    /// Effects: frees live slot `i`: its generation advances (or the slot retires) and it joins
    /// the free list per ReusePolicy. Requires: live(i).
    void release(word i) noexcept { release(i, slots_[i].gen_word); }

    /// Effects: as release(i), for a slot whose live generation `gen` the caller has just
    /// validated (saves reloading it). Requires: live(i) and gen == its generation.
    void release(word i, word gen) noexcept {
        slot& s = slots_[i];
        if (gen >= Handle::max_generation) {
            if constexpr (std::is_same_v<WrapPolicy, policy::retire>) {
                s.gen_word = free_bit;
                s.link = npos;
                ++retired_;
                return;
            } else {
                s.gen_word = static_cast<word>(1 | free_bit);
                ++wraps_;
            }
        } else {
            s.gen_word = static_cast<word>((gen + 1) | free_bit);
        }
        push_free(i);
    }

    /// Effects: every slot becomes free (generations advance as by release), capacity kept.
    void release_all() noexcept {
        for (word i = 0; i < slots_.size(); ++i)
            if ((slots_[i].gen_word & free_bit) == 0) release(i);
    }

    [[nodiscard]] std::size_t size() const noexcept { return slots_.size(); } ///< slots ever made
    /// Returns: the reusable (free, not retired) slots. O(free slots): a walk of the free list, so
    /// that insert and erase keep no counter (compact: a popcount of the bitmap, O(slots / 64)).
    [[nodiscard]] std::size_t free_count() const noexcept {
        if constexpr (compact) return free_.count();
        std::size_t n = 0;
        for (word i = head_; i != npos && n <= slots_.size(); i = slots_[i].link)
            ++n;
        return n;
    }
    [[nodiscard]] std::size_t retired_count() const noexcept { return retired_; }     ///< retired slots
    [[nodiscard]] std::size_t wrap_count() const noexcept { return wraps_; }          ///< wraps so far
    [[nodiscard]] std::size_t capacity() const noexcept { return slots_.capacity(); } ///< slots reserved
    /// Effects: reserves room for `n` slots. Throws: as vector::reserve (then nothing observable
    /// changed: at most a capacity grew).
    void reserve(std::size_t n) {
        slots_.reserve(n);
        // compact: release() is noexcept, so the bitmap covers every slot the array can hold.
        if constexpr (compact) free_.reserve(slots_.capacity());
    }
    [[nodiscard]] slot_allocator get_allocator() const { return slots_.get_allocator(); }

    /// Returns: true when the free list, the counters and the free bits agree (O(slots)).
    [[nodiscard]] bool check() const noexcept {
        if constexpr (compact) return check_compact();
        std::size_t on_list = 0, retired = 0;
        word last = npos;
        for (word i = head_; i != npos; i = slots_[i].link) {
            if (i >= slots_.size() || (slots_[i].gen_word & free_bit) == 0) return false;
            if (++on_list > slots_.size()) return false; // a cycle
            last = i;
        }
        for (const slot& s : slots_)
            if (s.gen_word == free_bit) ++retired;
        if (std::is_same_v<ReusePolicy, policy::fifo> && last != tail_) return false;
        return on_list + retired <= slots_.size() && retired == retired_;
    }

    /// Returns: true when acquire() will reuse a free slot (so prepare() has nothing to do).
    [[nodiscard]] bool has_free() const noexcept { return head_ != npos; }

    /// Returns: the number of live slots implied by the free list and the retired count.
    /// O(free slots).
    [[nodiscard]] std::size_t live_count() const noexcept { return slots_.size() - free_count() - retired_; }

private:
    // Removes the head of the free slots (slot i == head_); head_ becomes the next one to reuse.
    void pop_free(word i) noexcept {
        if constexpr (compact) {
            const std::size_t next = free_.take_lowest(i);
            head_ = next == free_.none ? npos : static_cast<word>(next);
        } else {
            head_ = slots_[i].link;
            if constexpr (std::is_same_v<ReusePolicy, policy::fifo>) {
                if (head_ == npos) tail_ = npos;
            }
        }
    }

    void push_free(word i) noexcept {
        if constexpr (compact) {
            free_.insert(i);          // the link of a free slot is unused under compact
            if (i < head_) head_ = i; // npos is the largest word: an empty set takes any i
        } else if constexpr (std::is_same_v<ReusePolicy, policy::lifo>) {
            slots_[i].link = head_;
            head_ = i;
        } else {
            slots_[i].link = npos;
            if (tail_ == npos) {
                head_ = i;
            } else {
                slots_[tail_].link = i;
            }
            tail_ = i;
        }
    }

    // compact: every free slot (free_bit set, not retired) is a member; the free list is unused.
    [[nodiscard]] bool check_compact() const noexcept {
        std::size_t retired = 0;
        if (free_.capacity() < slots_.size() || !free_.check()) return false; // prepare() grows it lazily
        for (word i = 0; i < slots_.size(); ++i) {
            const word g = slots_[i].gen_word;
            if (g == free_bit) ++retired;
            if (free_.contains(i) != ((g & free_bit) != 0 && g != free_bit)) return false;
        }
        const std::size_t lowest = free_.lowest();
        if (head_ != (lowest == free_.none ? npos : static_cast<word>(lowest))) return false;
        return retired == retired_;
    }

    struct no_bitmap {
        explicit no_bitmap(const Alloc&) noexcept {}
    };

    std::vector<slot, slot_allocator> slots_;
    [[no_unique_address]] std::conditional_t<compact, lowest_free<Alloc>, no_bitmap> free_;
    word head_ = npos;
    word tail_ = npos; // fifo only
    std::size_t retired_ = 0;
    std::size_t wraps_ = 0;
};

} // namespace strata::detail
