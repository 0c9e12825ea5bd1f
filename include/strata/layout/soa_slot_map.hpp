#pragma once
// basic_soa_slot_map<Handle, Alloc, WrapPolicy, ReusePolicy, Ts...>: a slot map whose dense storage
// is a basic_soa_vector<Alloc, Ts...>. Handles behave exactly as slot_map's (same sparse slots,
// same policies, same bad-input answers); iteration is per column, so systems that touch one field
// read only that column and the loops vectorize (see soa_vector.hpp).
//
// Bad input (the map is unchanged in every case):
//   index_of / get<I>(stale, null, out-of-range handle) -> npos / nullptr, no report
//   erase(same)                  -> false; reported as stale_handle at STRATA_CHECKS >= 1
//   key_of(i >= size())          -> null handle; reported as invalid_argument at STRATA_CHECKS >= 1
#include <cstddef>
#include <memory>
#include <span>
#include <vector>

#include "strata/core/check.hpp"
#include "strata/handle/detail/sparse_slots.hpp"
#include "strata/handle/handle.hpp"
#include "strata/handle/policy.hpp"
#include "strata/layout/fwd.hpp"
#include "strata/layout/soa_vector.hpp"

namespace strata {

/// Generational handles over structure-of-arrays dense storage.
template <class Handle, class Alloc, class WrapPolicy, class ReusePolicy, class... Ts>
class basic_soa_slot_map {
    using slots_type = detail::sparse_slots<Handle, Alloc, WrapPolicy, ReusePolicy>;
    using word = typename slots_type::word;
    using word_allocator = typename std::allocator_traits<Alloc>::template rebind_alloc<word>;
    // Move assignment hands the storage over (never allocates) when the allocator moves with it or
    // all allocators of the type are equal.
    static constexpr bool storage_moves =
        std::allocator_traits<Alloc>::propagate_on_container_move_assignment::value ||
        std::allocator_traits<Alloc>::is_always_equal::value;

public:
    using handle_type = Handle;
    using size_type = std::size_t;
    using dense_type = basic_soa_vector<Alloc, Ts...>;
    /// The type of column I.
    template <std::size_t I>
    using column_type = typename dense_type::template column_type<I>;
    /// What index_of returns for a handle that is not valid.
    static constexpr size_type npos = static_cast<size_type>(-1);

    /// Effects: an empty map whose arrays come from `alloc`.
    basic_soa_slot_map() : basic_soa_slot_map(Alloc()) {}
    explicit basic_soa_slot_map(const Alloc& alloc)
        : dense_(alloc), dense_to_slot_(word_allocator(alloc)), slots_(alloc) {}
    basic_soa_slot_map(const basic_soa_slot_map&) = default;
    basic_soa_slot_map(basic_soa_slot_map&&) noexcept = default;
    /// Effects: a copy of `other`. Throws: the allocator's exception; then this map is unchanged
    /// (the three arrays are copied aside first, then swapped in).
    basic_soa_slot_map& operator=(const basic_soa_slot_map& other) {
        if (this == &other) return *this;
        const Alloc a = dense_.get_allocator();
        dense_type dense(a);
        dense = other.dense_;
        std::vector<word, word_allocator> reverse{word_allocator(a)};
        reverse = other.dense_to_slot_;
        slots_type slots(a);
        slots = other.slots_;
        dense_.swap(dense);
        dense_to_slot_.swap(reverse);
        slots_ = std::move(slots);
        return *this;
    }
    /// Effects: takes `other`'s elements; `other` is left empty and usable. Where the allocators
    /// neither propagate nor compare equal this is a copy (made aside, then swapped in) followed by
    /// other.clear(). Throws: then only the allocator's exception, and both maps are unchanged.
    basic_soa_slot_map& operator=(basic_soa_slot_map&& other) noexcept(storage_moves) {
        if (this == &other) return *this;
        if constexpr (!storage_moves) {
            if (dense_.get_allocator() != other.dense_.get_allocator()) {
                *this = other; // columns are trivially copyable: the copy is the element-wise move
                other.clear();
                return *this;
            }
        }
        dense_ = std::move(other.dense_);
        dense_to_slot_ = std::move(other.dense_to_slot_);
        slots_ = std::move(other.slots_);
        other.dense_.clear();
        other.dense_to_slot_.clear();
        return *this;
    }
    ~basic_soa_slot_map() = default;

    /// Effects: appends an element with fields `values...`. Returns: its handle.
    /// Throws: std::length_error when the index space is exhausted; the allocator's exception.
    /// On throw the map is unchanged.
    Handle emplace(const Ts&... values) {
        (void)slots_.prepare();
        if (dense_to_slot_.size() == dense_to_slot_.capacity())
            dense_to_slot_.reserve(dense_to_slot_.size() < 8 ? 16 : dense_to_slot_.size() * 2);
        const size_type d = dense_.push_back(values...);
        const Handle h = slots_.acquire(static_cast<word>(d));
        dense_to_slot_.push_back(h.index()); // capacity reserved above
        return h;
    }

    /// Effects: swap-and-pop erase of `h`'s element across every column; `h` becomes stale.
    /// Returns: true; false for a null, stale or foreign handle (reported, see the header).
    bool erase(Handle h) noexcept {
        const word slot = h.index(); // before the branch: see slot_map::erase
        const word gen = h.generation();
        if (!slots_.valid(slot, gen)) {
            (void)STRATA_VERIFY(1, false, stale_handle, "strata::soa_slot_map", nullptr,
                                "erase with a null, stale or foreign handle");
            return false;
        }
        const word d = slots_.link(slot);
        const word last = static_cast<word>(dense_.size() - 1);
        if (d != last) {
            const word moved = dense_to_slot_[last];
            dense_to_slot_[d] = moved;
            slots_.set_link(moved, d);
        }
        (void)dense_.erase(d);
        dense_to_slot_.pop_back();
        slots_.release(slot, gen);
        return true;
    }

    /// Returns: the dense index of `h`'s element, or npos when `h` is not valid. O(1).
    [[nodiscard]] size_type index_of(Handle h) const noexcept {
        return slots_.valid(h) ? static_cast<size_type>(slots_.link(h.index())) : npos;
    }
    /// Returns: true when `h` names a live element.
    [[nodiscard]] bool contains(Handle h) const noexcept { return slots_.valid(h); }
    /// Returns: field I of `h`'s element, or nullptr when `h` is not valid. Valid until the next
    /// emplace or erase.
    template <std::size_t I>
    [[nodiscard]] column_type<I>* get(Handle h) noexcept {
        return slots_.valid(h) ? dense_.template column_data<I>() + slots_.link(h.index()) : nullptr;
    }
    /// Returns: the handle of dense element `i`; null (reported) when i >= size().
    [[nodiscard]] Handle key_of(size_type i) const noexcept {
        if (i >= dense_.size()) {
            (void)STRATA_VERIFY(1, false, invalid_argument, "strata::soa_slot_map", nullptr,
                                "key_of: index out of range");
            return Handle{};
        }
        return slots_.handle_of(dense_to_slot_[i]);
    }

    /// Column access, as soa_vector's (spans are invalidated by emplace and erase).
    template <std::size_t I>
    [[nodiscard]] std::span<column_type<I>> column() noexcept {
        return dense_.template column<I>();
    }
    template <std::size_t I>
    [[nodiscard]] std::span<const column_type<I>> column() const noexcept {
        return dense_.template column<I>();
    }
    template <std::size_t I>
    [[nodiscard]] std::span<column_type<I>> padded_column() noexcept {
        return dense_.template padded_column<I>();
    }
    template <std::size_t I>
    [[nodiscard]] column_type<I>* column_data() noexcept {
        return dense_.template column_data<I>();
    }
    /// Returns: the dense storage, read-only (changing it directly would desynchronize the handles).
    [[nodiscard]] const dense_type& dense() const noexcept { return dense_; }

    /// Effects: erases every element; every handle becomes stale; capacity is kept.
    void clear() noexcept {
        dense_.clear();
        dense_to_slot_.clear();
        slots_.release_all();
    }
    /// Effects: room for `n` elements. Throws: the allocator's exception.
    void reserve(size_type n) {
        dense_.reserve(n);
        dense_to_slot_.reserve(n);
        slots_.reserve(n);
    }
    [[nodiscard]] size_type size() const noexcept { return dense_.size(); }               ///< live elements
    [[nodiscard]] bool empty() const noexcept { return dense_.empty(); }                  ///< no elements
    [[nodiscard]] size_type padded_size() const noexcept { return dense_.padded_size(); } ///< see soa_vector

    /// Returns: true when the dense storage, the reverse map and the slots agree. O(slots).
    [[nodiscard]] bool check() const noexcept {
        if (!dense_.check() || dense_.size() != dense_to_slot_.size() || slots_.live_count() != dense_.size())
            return false;
        for (size_type i = 0; i < dense_to_slot_.size(); ++i) {
            const word s = dense_to_slot_[i];
            if (!slots_.live(s) || slots_.link(s) != i) return false;
        }
        return slots_.check();
    }

private:
    dense_type dense_;
    std::vector<word, word_allocator> dense_to_slot_;
    slots_type slots_;
};

} // namespace strata
