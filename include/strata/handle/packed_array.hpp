#pragma once
// packed_array<T>: a dense array with O(1) swap-and-pop erase and no handles.
//
// For owners that never hand out references: values are always contiguous in [0, size()), erase
// moves the last value into the hole, so an index or pointer names a different value after any
// erase. Iteration is a plain loop. When others must keep references, use slot_map.
//
// Complexity: push_back/emplace_back amortized O(1); erase O(1); iteration O(size).
// Bad input: erase(i) with i >= size() -> false, reported as violation_kind::invalid_argument at
// STRATA_CHECKS >= 1; nothing changes. operator[] is unchecked (as std::vector's).
#include <cstddef>
#include <memory>
#include <span>
#include <type_traits>
#include <utility>
#include <vector>

#include "strata/core/check.hpp"
#include "strata/handle/fwd.hpp"

namespace strata {

/// A dense swap-and-pop array. Requires: T is nothrow move assignable.
template <class T, class Alloc>
class packed_array {
    static_assert(std::is_nothrow_move_assignable_v<T>, "packed_array moves values on erase");
    using value_allocator = typename std::allocator_traits<Alloc>::template rebind_alloc<T>;

public:
    using value_type = T;
    using size_type = std::size_t;
    using allocator_type = value_allocator;
    using iterator = typename std::vector<T, value_allocator>::iterator;
    using const_iterator = typename std::vector<T, value_allocator>::const_iterator;

    /// Effects: an empty array whose storage comes from `alloc`.
    packed_array() : packed_array(Alloc()) {}
    explicit packed_array(const Alloc& alloc) : values_(value_allocator(alloc)) {}

    /// Effects: appends a value built from `args`. Returns: its index (valid until the next erase).
    /// Throws: what T's constructor or the allocator throws; then nothing changed.
    template <class... Args>
    size_type emplace_back(Args&&... args) {
        values_.emplace_back(std::forward<Args>(args)...);
        return values_.size() - 1;
    }
    /// Effects, returns, throws: as emplace_back(value).
    size_type push_back(const T& value) { return emplace_back(value); }
    /// Effects, returns, throws: as emplace_back(std::move(value)).
    size_type push_back(T&& value) { return emplace_back(std::move(value)); }

    /// Effects: moves the last value into index `i` and destroys the last slot.
    /// Returns: true; false when i >= size() (reported, see the header).
    bool erase(size_type i) noexcept {
        if (i >= values_.size()) {
            (void)STRATA_VERIFY(1, false, invalid_argument, "strata::packed_array", nullptr,
                                "erase: index out of range");
            return false;
        }
        if (i != values_.size() - 1) values_[i] = std::move(values_.back());
        values_.pop_back();
        return true;
    }

    /// Effects: erases every value for which pred(value) is true, each visited exactly once.
    /// Requires: pred does not change the array (an erase from it makes the walk skip values; the
    /// walk never reads past the end). Returns: how many were erased.
    template <class Pred>
    size_type erase_if(Pred&& pred) {
        size_type erased = 0;
        for (size_type i = values_.size(); i-- > 0 && i < values_.size();) {
            if (pred(std::as_const(values_[i]))) {
                (void)erase(i);
                ++erased;
            }
        }
        return erased;
    }

    void clear() noexcept { values_.clear(); }        ///< Effects: destroys every value
    void reserve(size_type n) { values_.reserve(n); } ///< Effects: room for n; throws as vector
    [[nodiscard]] size_type size() const noexcept { return values_.size(); }         ///< values held
    [[nodiscard]] bool empty() const noexcept { return values_.empty(); }            ///< no values
    [[nodiscard]] size_type capacity() const noexcept { return values_.capacity(); } ///< room reserved
    [[nodiscard]] T& operator[](size_type i) noexcept { return values_[i]; }         ///< Requires: i < size()
    [[nodiscard]] const T& operator[](size_type i) const noexcept {
        return values_[i];
    } ///< Requires: i < size()
    [[nodiscard]] T* data() noexcept { return values_.data(); }
    [[nodiscard]] const T* data() const noexcept { return values_.data(); }
    [[nodiscard]] std::span<T> values() noexcept { return {values_.data(), values_.size()}; }
    [[nodiscard]] std::span<const T> values() const noexcept { return {values_.data(), values_.size()}; }
    [[nodiscard]] iterator begin() noexcept { return values_.begin(); }
    [[nodiscard]] iterator end() noexcept { return values_.end(); }
    [[nodiscard]] const_iterator begin() const noexcept { return values_.begin(); }
    [[nodiscard]] const_iterator end() const noexcept { return values_.end(); }
    [[nodiscard]] allocator_type get_allocator() const { return values_.get_allocator(); }

private:
    std::vector<T, value_allocator> values_;
};

} // namespace strata
