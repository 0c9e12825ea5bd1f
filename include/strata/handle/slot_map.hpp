#pragma once
// slot_map<T>: dense values with generational handles.
//
// Values live contiguously in insertion order modified by swap-and-pop, so iteration is a plain
// loop over an array (as fast as packed_array). A sparse slot array maps handle index ->
// {generation, dense index}, and a reverse array maps dense index -> slot, which erase needs to
// fix up the value moved into the hole. Lookup validates the generation with one compare.
//
// Complexity: insert, erase, get, contains, key_of: O(1) (insert amortized). Iteration: O(size).
//
// Bad input (every case leaves the container unchanged):
//   get(stale, null or out-of-range handle)  -> nullptr, no report (asking is legitimate)
//   erase(same)                              -> false; reported as violation_kind::stale_handle
//                                               at STRATA_CHECKS >= 1
//   erase, erase_if, clear or assignment to the map, or move assignment from it, during its
//   for_each / erase_if                      -> refused (erase returns false, erase_if 0); reported as
//                                               violation_kind::invalid_argument at STRATA_CHECKS >= 1
//                                               (use erase_if or the backward-index pattern in
//                                               docs/handles.md)
//   move construction from the map during its for_each / erase_if
//                                            -> the new map takes the values and the loop ends
//                                               early (it never reads the emptied map); reported as
//                                               invalid_argument at STRATA_CHECKS >= 1
//   key_of(value not in this map) or key_of(index >= size())
//                                            -> null handle; reported as foreign_pointer /
//                                               invalid_argument at STRATA_CHECKS >= 1 (where T
//                                               converts to an index, key_of(x) is always the index
//                                               form; key_of_value(v) names the value form for any T)
//   index space exhausted                    -> std::length_error; allocator failure -> its exception
// A handle of another slot_map of the same type is indistinguishable from one of this map when its
// index and generation happen to be live here; distinct Tags make such mixing a compile error.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <type_traits>
#include <utility>
#include <vector>

#include "strata/core/check.hpp"
#include "strata/core/iteration_guard.hpp"
#include "strata/handle/detail/sparse_slots.hpp"
#include "strata/handle/fwd.hpp"
#include "strata/handle/handle.hpp"
#include "strata/handle/policy.hpp"

namespace strata {

/// Dense values addressed by generational handles.
/// Requires: T is nothrow move constructible and nothrow move assignable (swap-and-pop moves).
template <class T, class Handle, class Alloc, class WrapPolicy, class ReusePolicy>
class slot_map {
    static_assert(std::is_nothrow_move_constructible_v<T> && std::is_nothrow_move_assignable_v<T>,
                  "slot_map moves values on erase; T must be nothrow movable");
    using slots_type = detail::sparse_slots<Handle, Alloc, WrapPolicy, ReusePolicy>;
    using word = typename slots_type::word;
    using word_allocator = typename std::allocator_traits<Alloc>::template rebind_alloc<word>;
    using value_allocator = typename std::allocator_traits<Alloc>::template rebind_alloc<T>;
    // Move assignment hands the storage over (never allocates) when the allocator moves with it or
    // all allocators of the type are equal.
    static constexpr bool storage_moves =
        std::allocator_traits<value_allocator>::propagate_on_container_move_assignment::value ||
        std::allocator_traits<value_allocator>::is_always_equal::value;

public:
    using value_type = T;
    using handle_type = Handle;
    using allocator_type = value_allocator;
    using size_type = std::size_t;
    using iterator = typename std::vector<T, value_allocator>::iterator;
    using const_iterator = typename std::vector<T, value_allocator>::const_iterator;

    /// Effects: an empty map; its arrays come from `alloc` (e.g. strata::std_allocator over an arena).
    slot_map() : slot_map(Alloc()) {}
    explicit slot_map(const Alloc& alloc)
        : values_(value_allocator(alloc)), dense_to_slot_(word_allocator(alloc)), slots_(alloc) {}

    // Copies and moves keep the emplace fast path's invariant (the reverse map is at least as long
    // as the values' capacity): a copy assignment may keep this map's larger value capacity, and a
    // move assignment between unequal non-propagating allocators moves element-wise. A copy is
    // never "inside for_each", whatever the source was.
    slot_map(const slot_map& other)
        : values_(other.values_), dense_to_slot_(other.dense_to_slot_), slots_(other.slots_) {
        restore_room();
    }
    /// Effects: takes `other`'s values; `other` is left empty and usable. Handles issued before the
    /// move name values of the new map; given to `other` they are foreign (its slots start over,
    /// so one may validate against a value inserted there later). Inside `other`'s for_each /
    /// erase_if the loop ends early; reported (see the header).
    slot_map(slot_map&& other) noexcept
        : values_(std::move(other.values_)), dense_to_slot_(std::move(other.dense_to_slot_)),
          slots_(std::move(other.slots_)) {
        other.values_.clear();
        other.dense_to_slot_.clear();
        (void)STRATA_VERIFY(1, other.iterating_ == 0, invalid_argument, "strata::slot_map", nullptr,
                            "move from the map during its for_each/erase_if; the loop ends early");
    }
    slot_map& operator=(const slot_map& other) {
        // Strong guarantee: the three arrays are copied aside (with this map's allocators, or
        // other's where they propagate) and swapped in only once all of them exist.
        if (this != &other && !refused_while_iterating()) {
            std::vector<T, value_allocator> values(values_.get_allocator());
            values = other.values_;
            std::vector<word, word_allocator> reverse(dense_to_slot_.get_allocator());
            reverse = other.dense_to_slot_;
            if (reverse.size() < values.capacity()) reverse.resize(values.capacity()); // restore_room()
            slots_type slots{Alloc(values_.get_allocator())};
            slots = other.slots_;
            values_.swap(values);
            dense_to_slot_.swap(reverse);
            slots_ = std::move(slots);
        }
        return *this;
    }
    /// Effects: takes `other`'s values; `other` is left empty and usable. Where the allocators
    /// neither propagate nor compare equal the values are moved one by one into arrays made aside
    /// with this map's allocators, and `other` keeps its slots (its earlier handles stay stale
    /// there); otherwise as the move constructor. Refused while either map is inside its
    /// for_each / erase_if (reported, see the header). Throws: only the allocator's exception, and
    /// then both maps are unchanged.
    slot_map& operator=(slot_map&& other) noexcept(storage_moves) {
        if (this == &other || refused_while_iterating() || other.refused_while_iterating()) return *this;
        if constexpr (!storage_moves) {
            if (values_.get_allocator() != other.values_.get_allocator()) {
                // Every allocation first (a throw changes nothing), then nothrow moves and swaps.
                std::vector<T, value_allocator> values(values_.get_allocator());
                values.reserve(other.values_.size());
                std::vector<word, word_allocator> reverse(dense_to_slot_.get_allocator());
                reverse = other.dense_to_slot_;
                if (reverse.size() < values.capacity()) reverse.resize(values.capacity());
                slots_type slots{Alloc(values_.get_allocator())};
                slots = other.slots_;
                for (T& v : other.values_)
                    values.emplace_back(std::move(v)); // room reserved: T's nothrow move only
                values_.swap(values);
                dense_to_slot_.swap(reverse);
                slots_ = std::move(slots); // equal allocators: the storage moves, nothing allocated
                other.values_.clear();     // other keeps its arrays, so its invariant holds
                other.slots_.release_all();
                return *this;
            }
        }
        values_ = std::move(other.values_);
        dense_to_slot_ = std::move(other.dense_to_slot_);
        slots_ = std::move(other.slots_);
        other.values_.clear();
        other.dense_to_slot_.clear();
        restore_room();
        return *this;
    }
    ~slot_map() = default;

    /// Effects: constructs a value from `args` at the end of the dense array.
    /// Returns: its handle. Throws: std::length_error when the index space is exhausted (every
    /// index live or retired); whatever T's constructor or the allocator throws. On throw the map
    /// is unchanged.
    template <class... Args>
#if defined(__GNUC__)
    // flatten: the append is inlined and its reallocation branch folds away against the capacity
    // test (otherwise g++ may call an out-of-line vector::emplace_back with the value on the stack).
    [[gnu::flatten]]
#endif
    Handle
    emplace(Args&&... args) {
        // One predictable branch on the hot path: a free slot exists and the values have room (the
        // reverse map is kept at least as long as the values' capacity).
        const std::size_t d = values_.size();
        if (STRATA_UNLIKELY(!slots_.has_free() || d == values_.capacity()))
            return emplace_slow(std::forward<Args>(args)...);
        values_.emplace_back(std::forward<Args>(args)...);
        const Handle h = slots_.acquire_free(static_cast<word>(d));
        dense_to_slot_[d] = h.index();
        return h;
    }
    /// Effects, returns, throws: as emplace(value).
    Handle insert(const T& value) { return emplace(value); }
    /// Effects, returns, throws: as emplace(std::move(value)).
    Handle insert(T&& value) { return emplace(std::move(value)); }

    /// Effects: destroys the value of `h` by moving the last value into its place (swap-and-pop);
    /// `h` and every copy of it become stale. Returns: true if erased; false for a null, stale or
    /// foreign handle or during for_each/erase_if (reported at checks >= 1, see the header).
    bool erase(Handle h) noexcept {
        // Take the handle apart before the first branch. Inlined after key_of, the index then folds
        // to the slot key_of loaded instead of waiting for the generation load and the compose (see
        // docs/handles.md, "Erase by handle").
        const word slot = h.index();
        const word gen = h.generation();
        if (iterating_ != 0) {
            (void)STRATA_VERIFY(1, false, invalid_argument, "strata::slot_map", nullptr,
                                "erase during for_each/erase_if; use erase_if or iterate indices backward");
            return false;
        }
        if (!slots_.valid(slot, gen)) {
            (void)STRATA_VERIFY(1, false, stale_handle, "strata::slot_map", nullptr,
                                "erase with a null, stale or foreign handle");
            return false;
        }
        // The slot and its generation are h's own (just validated): nothing to look up again.
        erase_dense(slots_.link(slot), slot, gen);
        return true;
    }

    /// Effects: erases the value at dense index `i` (as erase(key_of(i)), without the handle round
    /// trip: for systems that walk the dense array). Returns: true; false when i >= size() or during
    /// for_each (reported as invalid_argument at checks >= 1).
    bool erase_at(size_type i) noexcept {
        if (i >= values_.size() || iterating_ != 0) {
            (void)STRATA_VERIFY(1, false, invalid_argument, "strata::slot_map", nullptr,
                                "erase_at: index out of range, or called during for_each/erase_if");
            return false;
        }
        const word slot = dense_to_slot_[i];
        erase_dense(static_cast<word>(i), slot, slots_.generation(slot));
        return true;
    }

    /// Returns: the value of `h`, or nullptr when `h` is null, stale or out of range. O(1).
    /// The pointer is valid until the next insert or erase (values move).
    [[nodiscard]] T* get(Handle h) noexcept {
        return STRATA_LIKELY(slots_.valid(h)) ? values_.data() + slots_.link(h.index()) : nullptr;
    }
    /// Returns: as get(h), const.
    [[nodiscard]] const T* get(Handle h) const noexcept {
        return STRATA_LIKELY(slots_.valid(h)) ? values_.data() + slots_.link(h.index()) : nullptr;
    }
    /// Returns: true when `h` names a live value of this map.
    [[nodiscard]] bool contains(Handle h) const noexcept { return slots_.valid(h); }
    /// Returns: the dense index of `h`'s value, or size() when `h` is not valid.
    [[nodiscard]] size_type index_of(Handle h) const noexcept {
        return slots_.valid(h) ? static_cast<size_type>(slots_.link(h.index())) : values_.size();
    }

    /// Returns: the handle of the value at dense index `i`; null handle (reported as
    /// invalid_argument at checks >= 1) when i >= size().
    [[nodiscard]] Handle key_of(size_type i) const noexcept {
        if (i >= values_.size()) {
            (void)STRATA_VERIFY(1, false, invalid_argument, "strata::slot_map", nullptr,
                                "key_of: index out of range");
            return Handle{};
        }
        return slots_.handle_of(dense_to_slot_[i]);
    }
    /// Returns: key_of_value(value). Only where T does not convert to an index: for a slot_map of
    /// integers key_of(x) would otherwise pick the value form for an int index (an exact match)
    /// and be ambiguous for a size_t one.
    [[nodiscard]] Handle key_of(const T& value) const noexcept
        requires(!std::is_convertible_v<const T&, size_type>) {
        return key_of_value(value);
    }
    /// Returns: the handle of `value`, which must be an element of this map; null handle (reported
    /// as foreign_pointer at checks >= 1) otherwise.
    [[nodiscard]] Handle key_of_value(const T& value) const noexcept {
        const T* p = std::addressof(value);
        const T* b = values_.data();
        // Compare as integers: relational comparison of unrelated pointers is unspecified.
        const auto pa = reinterpret_cast<std::uintptr_t>(p);
        const auto ba = reinterpret_cast<std::uintptr_t>(b);
        if (pa < ba || pa >= ba + values_.size() * sizeof(T) || (pa - ba) % sizeof(T) != 0) {
            (void)STRATA_VERIFY(1, false, foreign_pointer, "strata::slot_map", p,
                                "key_of: value is not in this map");
            return Handle{};
        }
        return slots_.handle_of(dense_to_slot_[static_cast<size_type>(p - b)]);
    }

    /// Effects: calls f(value) (or f(handle, value) if that is what f takes) for every value in
    /// dense order. Erase is refused inside (see the header); insert is allowed but the new values
    /// are not visited.
    template <class F>
    void for_each(F&& f) {
        const iteration_guard guard(iterating_);
        const size_type n = values_.size();
        // values_.size() only grows here (erase and clear are refused) unless f moves the map away.
        for (size_type i = 0; i < n && i < values_.size(); ++i) {
            if constexpr (std::is_invocable_v<F&, Handle, T&>) {
                f(slots_.handle_of(dense_to_slot_[i]), values_[i]);
            } else {
                f(values_[i]);
            }
        }
    }

    /// Effects: erases every value for which pred(value) is true, visiting each value exactly once.
    /// Returns: how many were erased; 0 inside this map's for_each / erase_if (refused, reported
    /// as invalid_argument at checks >= 1: the outer loop would go on over moved values).
    template <class Pred>
    size_type erase_if(Pred&& pred) {
        if (iterating_ != 0) {
            (void)STRATA_VERIFY(1, false, invalid_argument, "strata::slot_map", nullptr,
                                "erase_if during for_each/erase_if");
            return 0;
        }
        size_type erased = 0;
        const iteration_guard guard(iterating_);
        // Backward: the value swap-and-pop moves into slot i comes from the end, already visited.
        // i < size() holds unless pred moved the map away (then the loop ends).
        for (size_type i = values_.size(); i-- > 0 && i < values_.size();) {
            if (pred(std::as_const(values_[i]))) {
                const word slot = dense_to_slot_[i];
                erase_dense(static_cast<word>(i), slot, slots_.generation(slot));
                ++erased;
            }
        }
        return erased;
    }

    /// Effects: erases every value; every handle becomes stale. Capacity is kept. Refused inside
    /// for_each / erase_if (reported, see the header): the loop would go on over destroyed values.
    void clear() noexcept {
        if (refused_while_iterating()) return;
        values_.clear();
        slots_.release_all();
    }
    /// Effects: reserves room for `n` values without reallocation. Throws: as vector::reserve.
    void reserve(size_type n) {
        if (dense_to_slot_.size() < n) dense_to_slot_.resize(n);
        values_.reserve(n);
        if (dense_to_slot_.size() < values_.capacity()) dense_to_slot_.resize(values_.capacity());
        slots_.reserve(n);
    }

    [[nodiscard]] size_type size() const noexcept { return values_.size(); }         ///< live values
    [[nodiscard]] bool empty() const noexcept { return values_.empty(); }            ///< no values
    [[nodiscard]] size_type capacity() const noexcept { return values_.capacity(); } ///< values reserved
    [[nodiscard]] size_type slot_count() const noexcept { return slots_.size(); }    ///< slots ever made
    [[nodiscard]] size_type retired_count() const noexcept {
        return slots_.retired_count();
    } ///< retired slots
    /// Returns: the most values this map can ever hold (the index space).
    [[nodiscard]] static constexpr size_type max_size() noexcept {
        return static_cast<size_type>(Handle::index_space);
    }

    /// The dense values. Pointers and spans are invalidated by insert and erase.
    [[nodiscard]] T* data() noexcept { return values_.data(); }
    [[nodiscard]] const T* data() const noexcept { return values_.data(); }
    [[nodiscard]] std::span<T> values() noexcept { return {values_.data(), values_.size()}; }
    [[nodiscard]] std::span<const T> values() const noexcept { return {values_.data(), values_.size()}; }
    [[nodiscard]] T& operator[](size_type i) noexcept { return values_[i]; } ///< Requires: i < size()
    [[nodiscard]] const T& operator[](size_type i) const noexcept {
        return values_[i];
    } ///< Requires: i < size()
    [[nodiscard]] iterator begin() noexcept { return values_.begin(); }
    [[nodiscard]] iterator end() noexcept { return values_.end(); }
    [[nodiscard]] const_iterator begin() const noexcept { return values_.begin(); }
    [[nodiscard]] const_iterator end() const noexcept { return values_.end(); }
    [[nodiscard]] allocator_type get_allocator() const { return values_.get_allocator(); }

    /// Returns: true when every invariant holds: the dense and reverse arrays agree with the slots,
    /// the free list is sound. O(slots). Tests call it as they go.
    [[nodiscard]] bool check() const noexcept {
        if (dense_to_slot_.size() < values_.capacity() || slots_.live_count() != values_.size()) return false;
        for (size_type i = 0; i < values_.size(); ++i) {
            const word s = dense_to_slot_[i];
            if (!slots_.live(s) || slots_.link(s) != i) return false;
        }
        return slots_.check();
    }

private:
    using iteration_guard = detail::iteration_guard;

    static size_type grow(size_type n) noexcept { return n < 8 ? 16 : n * 2; }

    void restore_room() {
        if (dense_to_slot_.size() < values_.capacity()) dense_to_slot_.resize(values_.capacity());
    }

    // True (and reported) when the map is inside its own for_each / erase_if: a clear, an
    // assignment to it or a move assignment from it is refused there.
    bool refused_while_iterating() const noexcept {
        if (STRATA_LIKELY(iterating_ == 0)) return false;
        (void)STRATA_VERIFY(1, false, invalid_argument, "strata::slot_map", nullptr,
                            "clear, assignment or move from the map during its for_each/erase_if");
        return true;
    }

    // Slow path of emplace: a new slot (or length_error) and room for one more value and its
    // reverse entry, made before anything visible changes; then as the fast path.
    template <class... Args>
    STRATA_NOINLINE Handle emplace_slow(Args&&... args) {
        (void)slots_.prepare();
        const std::size_t d = values_.size();
        if (d == values_.capacity()) {
            // The value is made first: `args` may name an element of this map (insert(m[0])),
            // which the growth below moves away. The new array is made aside and the reverse map
            // grown before it replaces the old one, so a throw from either leaves the map as it was.
            T value(std::forward<Args>(args)...);
            std::vector<T, value_allocator> grown(values_.get_allocator());
            grown.reserve(grow(d));
            if (dense_to_slot_.size() < grown.capacity()) dense_to_slot_.resize(grown.capacity());
            for (T& v : values_)
                grown.emplace_back(std::move(v)); // room reserved: T's nothrow move only
            grown.emplace_back(std::move(value));
            values_.swap(grown);
        } else {
            values_.emplace_back(std::forward<Args>(args)...); // no reallocation: throws only from T
        }
        const Handle h = slots_.acquire(static_cast<word>(d));
        dense_to_slot_[d] = h.index();
        return h;
    }

    // Swap-and-pop dense index d, whose slot is `slot` at generation `gen`, and free the slot.
    void erase_dense(word d, word slot, word gen) noexcept {
        const word last = static_cast<word>(values_.size() - 1);
        if constexpr (std::is_trivially_copyable_v<T>) {
            // Branch-free: when d == last this copies the value onto itself and points the erased
            // slot at d, which release() then overwrites. The branch would be unpredictable.
            values_[d] = values_[last];
            const word moved = dense_to_slot_[last];
            dense_to_slot_[d] = moved;
            slots_.set_link(moved, d);
        } else if (d != last) {
            values_[d] = std::move(values_[last]);
            const word moved = dense_to_slot_[last];
            dense_to_slot_[d] = moved;
            slots_.set_link(moved, d);
        }
        values_.pop_back();
        slots_.release(slot, gen);
    }

    std::vector<T, value_allocator> values_;
    std::vector<word, word_allocator> dense_to_slot_; // size >= the values' capacity, not their count
    slots_type slots_;
    int iterating_ = 0;
};

} // namespace strata
