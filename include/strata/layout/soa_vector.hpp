#pragma once
// basic_soa_vector<Alloc, Ts...>: structure-of-arrays storage, one column per type.
//
// Touching one field of many entities reads only that field's bytes, so a loop over one column
// moves a fraction of the memory an array of structs would. That only pays off when the loop
// vectorizes, and g++ 12 at -O2 uses the "very cheap" vectorizer cost model, which refuses any loop
// that needs a scalar epilogue or a runtime alias check. Hence the layout:
//   - every column starts on a 64-byte boundary (column_data() tells the compiler so);
//   - capacity is a multiple of lane_multiple (64 bytes of the narrowest column), and the elements
//     in [size(), padded_size()) always exist (value-initialized padding), so a loop may run to
//     padded_size(), a multiple of lane_multiple the compiler can see, and needs no epilogue;
//   - loops that read one column and write another take `__restrict` pointers (the columns never
//     overlap), so no alias check is needed. docs/handles.md shows the loop; the codegen check in
//     tests/layout/family.cmake compiles it with -O2 -fopt-info-vec and fails if it stops vectorizing.
//
// Columns must be trivially copyable and default constructible: growth is memcpy, padding is T{}.
// Complexity: push_back amortized O(1); erase (swap-and-pop across all columns) O(columns).
// Bad input: erase(i)/get(i) with i >= size(): erase returns false and reports invalid_argument at
// STRATA_CHECKS >= 1; column<I>()[i] is unchecked like a span.
#include <algorithm>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <new>
#include <span>
#include <stdexcept>
#include <tuple>
#include <type_traits>
#include <utility>

#include "strata/core/check.hpp"
#include "strata/layout/fwd.hpp"

namespace strata {

/// Structure-of-arrays storage: column I holds the I-th field of every element.
template <class Alloc, class... Ts>
class basic_soa_vector {
    static_assert(sizeof...(Ts) >= 1, "an soa_vector needs at least one column");
    static_assert((std::is_trivially_copyable_v<Ts> && ...), "soa_vector columns must be trivially copyable");
    static_assert((std::is_default_constructible_v<Ts> && ...),
                  "soa_vector columns must be default constructible");
    static_assert(((alignof(Ts) <= 64) && ...), "soa_vector columns are aligned to 64 bytes at most");

    struct alignas(64) line {
        std::byte bytes[64];
    };
    using line_allocator = typename std::allocator_traits<Alloc>::template rebind_alloc<line>;
    using line_traits = std::allocator_traits<line_allocator>;
    using alloc_traits = std::allocator_traits<Alloc>;
    static constexpr std::size_t columns = sizeof...(Ts);
    static constexpr std::size_t narrowest = std::min({sizeof(Ts)...});

public:
    using size_type = std::size_t;
    using allocator_type = Alloc;
    /// The type of column I.
    template <std::size_t I>
    using column_type = std::tuple_element_t<I, std::tuple<Ts...>>;
    /// Column alignment in bytes.
    static constexpr size_type column_alignment = 64;
    /// Capacity and padded_size() are multiples of this: 64 bytes' worth of the narrowest column.
    static constexpr size_type lane_multiple = std::bit_floor(std::max<size_type>(1, 64 / narrowest));

    /// Effects: an empty vector (no allocation) whose storage will come from `alloc`.
    basic_soa_vector() : basic_soa_vector(Alloc()) {}
    explicit basic_soa_vector(const Alloc& alloc) noexcept : alloc_(alloc) {}
    basic_soa_vector(const basic_soa_vector& other)
        : alloc_(alloc_traits::select_on_container_copy_construction(other.alloc_)) {
        assign_from(other);
    }
    basic_soa_vector(basic_soa_vector&& other) noexcept : alloc_(other.alloc_) { take_storage(other); }
    /// Effects: a copy of `other`'s elements, in storage from this vector's allocator (or from
    /// `other`'s where the allocator propagates on copy assignment). Throws: as reserve; then
    /// unchanged.
    basic_soa_vector& operator=(const basic_soa_vector& other) {
        if (this == &other) return *this;
        constexpr bool propagate = alloc_traits::propagate_on_container_copy_assignment::value;
        basic_soa_vector copy(propagate ? other.alloc_ : alloc_);
        copy.assign_from(other);
        release();
        if constexpr (propagate) alloc_ = copy.alloc_;
        take_storage(copy);
        return *this;
    }
    /// Effects: takes `other`'s storage where the allocators allow (propagating or equal); copies
    /// its elements into this vector's own storage otherwise. `other` is left empty.
    basic_soa_vector& operator=(basic_soa_vector&& other) noexcept(
        alloc_traits::propagate_on_container_move_assignment::value || alloc_traits::is_always_equal::value) {
        if (this == &other) return *this;
        if constexpr (alloc_traits::propagate_on_container_move_assignment::value) {
            release();
            alloc_ = other.alloc_;
            take_storage(other);
        } else {
            if (alloc_ == other.alloc_) {
                release();
                take_storage(other);
            } else {
                *this = static_cast<const basic_soa_vector&>(other);
                other.release();
                other.reset_storage();
            }
        }
        return *this;
    }
    ~basic_soa_vector() { release(); }

    /// Effects: exchanges contents with `other`; the allocators too where they propagate on swap.
    /// Requires: they propagate on swap or compare equal (as for the standard containers).
    void swap(basic_soa_vector& other) noexcept {
        if constexpr (alloc_traits::propagate_on_container_swap::value) {
            using std::swap;
            swap(alloc_, other.alloc_);
        }
        swap_storage(other);
    }

    /// Effects: appends one element whose fields are `values...` (they may name elements of this
    /// vector: growing copies them first). Returns: its index. Throws: std::bad_alloc (or the
    /// allocator's exception); then unchanged.
    size_type push_back(const Ts&... values) {
        if (STRATA_UNLIKELY(size_ == capacity_)) return push_back_grow(Ts(values)...);
        store(size_, std::index_sequence_for<Ts...>{}, values...);
        return size_++;
    }

    /// Effects: moves the last element into `i` in every column and shrinks by one; the vacated
    /// element becomes T{} padding. Returns: true; false when i >= size() (reported, see header).
    bool erase(size_type i) noexcept {
        if (i >= size_) {
            (void)STRATA_VERIFY(1, false, invalid_argument, "strata::soa_vector", nullptr,
                                "erase: index out of range");
            return false;
        }
        move_last_into(i, std::index_sequence_for<Ts...>{});
        --size_;
        return true;
    }
    /// Effects: removes the last element. Requires: !empty() (no effect otherwise).
    void pop_back() noexcept {
        if (size_ != 0) (void)erase(size_ - 1);
    }

    /// Effects: capacity becomes at least `n` rounded up to lane_multiple; elements are kept.
    /// Throws: std::bad_alloc, std::length_error for impossible sizes; then unchanged.
    void reserve(size_type n) {
        if (n <= capacity_) return;
        if (n > max_size()) throw std::length_error("strata::soa_vector: reserve beyond max_size");
        const size_type cap = (n + lane_multiple - 1) / lane_multiple * lane_multiple;
        basic_soa_vector bigger(alloc_);
        bigger.allocate(cap);
        bigger.copy_columns(*this, size_);
        bigger.size_ = size_;
        swap_storage(bigger); // the allocators are the same one: only the storage changes hands
    }
    /// Effects: size becomes `n`; new elements are T{} in every column (padding a loop wrote to
    /// included). Throws: as reserve.
    void resize(size_type n) {
        reserve(n);
        if (n < size_) {
            clear_range(n, size_);
        } else {
            clear_range(size_, n);
        }
        size_ = n;
    }
    /// Effects: removes every element (they become padding); capacity is kept.
    void clear() noexcept {
        clear_range(0, size_);
        size_ = 0;
    }

    /// Returns: the allocator the storage comes from.
    [[nodiscard]] allocator_type get_allocator() const noexcept { return alloc_; }
    [[nodiscard]] size_type size() const noexcept { return size_; }         ///< elements
    [[nodiscard]] bool empty() const noexcept { return size_ == 0; }        ///< no elements
    [[nodiscard]] size_type capacity() const noexcept { return capacity_; } ///< a multiple of lane_multiple
    /// Returns: size() rounded up to lane_multiple (<= capacity()). Elements in [size(),
    /// padded_size()) are padding: valid objects a loop may read and write, ignored otherwise and
    /// reset to T{} by erase and clear.
    [[nodiscard]] size_type padded_size() const noexcept {
        return (size_ + lane_multiple - 1) & ~(lane_multiple - 1);
    }
    /// Returns: the most elements a reserve can ask for.
    [[nodiscard]] static constexpr size_type max_size() noexcept {
        return (std::size_t{1} << (sizeof(std::size_t) * 8 - 8)) / (sizeof(Ts) + ...);
    }

    /// Returns: column I's first element, 64-byte aligned (nullptr before the first allocation).
    /// Not wrapped in std::assume_aligned: with g++ 12 that, combined with a `__restrict` copy of the
    /// pointer, makes the vectorizer give up ("no vectype for stmt"); unaligned vector loads of
    /// aligned data cost nothing on current x86 and ARM cores.
    template <std::size_t I>
    [[nodiscard]] column_type<I>* column_data() noexcept {
        if (block_ == nullptr) return nullptr;
        return reinterpret_cast<column_type<I>*>(base() + offsets_[I]);
    }
    template <std::size_t I>
    [[nodiscard]] const column_type<I>* column_data() const noexcept {
        if (block_ == nullptr) return nullptr;
        return reinterpret_cast<const column_type<I>*>(base() + offsets_[I]);
    }
    /// Returns: column I over [0, size()).
    template <std::size_t I>
    [[nodiscard]] std::span<column_type<I>> column() noexcept {
        return {column_data<I>(), size_};
    }
    template <std::size_t I>
    [[nodiscard]] std::span<const column_type<I>> column() const noexcept {
        return {column_data<I>(), size_};
    }
    /// Returns: column I over [0, padded_size()): the span vectorizable loops run over.
    template <std::size_t I>
    [[nodiscard]] std::span<column_type<I>> padded_column() noexcept {
        return {column_data<I>(), padded_size()};
    }
    /// Returns: field I of element i. Requires: i < size() (unchecked).
    template <std::size_t I>
    [[nodiscard]] column_type<I>& get(size_type i) noexcept {
        return column_data<I>()[i];
    }
    template <std::size_t I>
    [[nodiscard]] const column_type<I>& get(size_type i) const noexcept {
        return column_data<I>()[i];
    }

    /// Returns: true when every column is 64-byte aligned, disjoint and inside the block, and the
    /// size and capacity are consistent. O(1).
    [[nodiscard]] bool check() const noexcept {
        if (size_ > capacity_ || capacity_ % lane_multiple != 0) return false;
        if (block_ == nullptr) return capacity_ == 0 && size_ == 0;
        constexpr std::size_t sizes[] = {sizeof(Ts)...};
        std::size_t end = 0;
        for (std::size_t c = 0; c < columns; ++c) {
            if (offsets_[c] % 64 != 0 || offsets_[c] < end) return false;
            if (reinterpret_cast<std::uintptr_t>(base() + offsets_[c]) % 64 != 0) return false;
            end = offsets_[c] + capacity_ * sizes[c];
        }
        return end <= lines_ * sizeof(line);
    }

private:
    // The whole block, not block_->bytes: columns extend past the first line, and indexing the
    // 64-byte member array beyond its end is what g++'s -Warray-bounds (rightly) objects to.
    [[nodiscard]] std::byte* base() const noexcept { return reinterpret_cast<std::byte*>(block_); }

    void allocate(size_type cap) {
        constexpr std::size_t sizes[] = {sizeof(Ts)...};
        std::size_t bytes = 0;
        for (std::size_t c = 0; c < columns; ++c) {
            offsets_[c] = bytes;
            bytes += (cap * sizes[c] + 63) / 64 * 64;
        }
        line_allocator la(alloc_);
        lines_ = bytes / sizeof(line);
        block_ = line_traits::allocate(la, lines_);
        capacity_ = cap;
        clear_range(0, cap); // every element exists: padding is T{}
    }
    void release() noexcept {
        if (block_ != nullptr) {
            line_allocator la(alloc_);
            line_traits::deallocate(la, block_, lines_);
            block_ = nullptr;
        }
    }
    // Storage only, never the allocators.
    void swap_storage(basic_soa_vector& other) noexcept {
        using std::swap;
        swap(block_, other.block_);
        swap(lines_, other.lines_);
        swap(size_, other.size_);
        swap(capacity_, other.capacity_);
        swap(offsets_, other.offsets_);
    }
    // Requires: this holds no block. Takes other's; other is left empty.
    void take_storage(basic_soa_vector& other) noexcept {
        block_ = std::exchange(other.block_, nullptr);
        lines_ = std::exchange(other.lines_, 0);
        size_ = std::exchange(other.size_, 0);
        capacity_ = std::exchange(other.capacity_, 0);
        std::copy(std::begin(other.offsets_), std::end(other.offsets_), std::begin(offsets_));
    }
    void reset_storage() noexcept {
        block_ = nullptr;
        lines_ = size_ = capacity_ = 0;
    }
    // Requires: this is empty. Copies other's elements into storage from alloc_.
    void assign_from(const basic_soa_vector& other) {
        reserve(other.size_);
        copy_columns(other, other.size_);
        size_ = other.size_;
    }
    // push_back when full: the values are copies made before the old storage goes away.
    STRATA_NOINLINE size_type push_back_grow(Ts... values) {
        reserve(capacity_ == 0 ? lane_multiple : capacity_ * 2);
        store(size_, std::index_sequence_for<Ts...>{}, values...);
        return size_++;
    }
    void copy_columns(const basic_soa_vector& from, size_type n) noexcept {
        if (n == 0) return;
        constexpr std::size_t sizes[] = {sizeof(Ts)...};
        for (std::size_t c = 0; c < columns; ++c)
            std::memcpy(base() + offsets_[c], from.base() + from.offsets_[c], n * sizes[c]);
    }
    template <std::size_t... I>
    void store(size_type i, std::index_sequence<I...>, const Ts&... values) noexcept {
        ((column_data<I>()[i] = values), ...);
    }
    template <std::size_t... I>
    void move_last_into(size_type i, std::index_sequence<I...>) noexcept {
        const size_type last = size_ - 1;
        ((column_data<I>()[i] = column_data<I>()[last], column_data<I>()[last] = column_type<I>{}), ...);
    }
    void clear_range(size_type from, size_type to) noexcept {
        if (from < to) clear_range_impl(from, to, std::index_sequence_for<Ts...>{});
    }
    // Column I without the null check of column_data (callers hold a block): the check's null
    // branch made g++ warn about a memset through a null pointer on a path that cannot happen.
    template <std::size_t I>
    [[nodiscard]] column_type<I>* column_ptr() const noexcept {
        return reinterpret_cast<column_type<I>*>(base() + offsets_[I]);
    }
    template <std::size_t... I>
    void clear_range_impl(size_type from, size_type to, std::index_sequence<I...>) noexcept {
        (std::fill(column_ptr<I>() + from, column_ptr<I>() + to, column_type<I>{}), ...);
    }

    Alloc alloc_;
    line* block_ = nullptr;
    size_type lines_ = 0;
    size_type size_ = 0;
    size_type capacity_ = 0;
    size_type offsets_[columns] = {};
};

} // namespace strata
