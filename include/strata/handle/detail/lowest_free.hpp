#pragma once
// detail::lowest_free: the set of free slot indices of policy::compact, answering "which is the
// lowest?" in O(levels) with one bit scan per level.
//
// Level 0 has one bit per index (set = free). Level l+1 has one bit per 64-bit word of level l, set
// when that word is non-zero. The top level is a single word, so the lowest member is found by
// descending from the top: 64^levels >= capacity, i.e. 3 levels up to 262,144 slots, 4 up to 2^24,
// 6 for the largest (32-bit) index space. The common cases stay in level 0: insert sets one bit and
// stops when its word was already non-zero; taking the lowest clears one bit and, when that word is
// still non-zero, its lowest remaining bit is the next lowest index overall (nothing below it is
// set), so the upper levels are read only when a whole word of 64 indices empties.
#include <array>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <utility>
#include <vector>

namespace strata::detail {

template <class Alloc>
class lowest_free {
    using bits_word = std::uint64_t;
    using bits_allocator = typename std::allocator_traits<Alloc>::template rebind_alloc<bits_word>;
    static constexpr unsigned max_levels = 6; // 64^6 = 2^36 > the largest index space (2^32)

public:
    static constexpr std::size_t none = ~std::size_t{0};

    explicit lowest_free(const Alloc& a) : bits_(bits_allocator(a)) {}
    lowest_free(const lowest_free&) = default;
    lowest_free& operator=(const lowest_free&) = default;
    /// Effects: takes `other`'s set; `other` is left empty (capacity 0) and usable.
    lowest_free(lowest_free&& other) noexcept
        : bits_(std::move(other.bits_)), offset_(other.offset_), levels_(std::exchange(other.levels_, 0)),
          capacity_(std::exchange(other.capacity_, 0)) {
        other.bits_.clear();
    }
    /// Effects: takes `other`'s set; `other` is left empty and usable. Throws: only where the
    /// allocators neither propagate nor compare equal (the words are then copied, which allocates).
    lowest_free& operator=(lowest_free&& other) noexcept(
        std::allocator_traits<bits_allocator>::propagate_on_container_move_assignment::value ||
        std::allocator_traits<bits_allocator>::is_always_equal::value) {
        if (this != &other) {
            bits_ = std::move(other.bits_);
            other.bits_.clear();
            offset_ = other.offset_;
            levels_ = std::exchange(other.levels_, 0);
            capacity_ = std::exchange(other.capacity_, 0);
        }
        return *this;
    }
    ~lowest_free() = default;

    /// Returns: how many indices the set can hold ([0, capacity())).
    [[nodiscard]] std::size_t capacity() const noexcept { return capacity_; }

    /// Effects: room for indices [0, n); members are kept. Throws: std::bad_alloc (then unchanged).
    void reserve(std::size_t n) {
        if (n <= capacity_) return;
        std::array<std::size_t, max_levels + 1> offset{};
        unsigned levels = 0;
        std::size_t words = (n + 63) / 64, total = 0;
        for (;;) {
            offset[levels++] = total;
            total += words;
            if (words == 1 || levels == max_levels) break;
            words = (words + 63) / 64;
        }
        offset[levels] = total;
        std::vector<bits_word, bits_allocator> bits(total, 0, bits_.get_allocator());
        // Level 0 carries over; the summaries are rebuilt from it (O(n / 64), once per doubling).
        const std::size_t old_words = levels_ == 0 ? 0 : offset_[1];
        for (std::size_t w = 0; w < old_words; ++w)
            bits[w] = bits_[w];
        for (unsigned l = 1; l < levels; ++l)
            for (std::size_t w = offset[l - 1]; w < offset[l]; ++w)
                if (bits[w] != 0) {
                    const std::size_t k = w - offset[l - 1];
                    bits[offset[l] + k / 64] |= bits_word{1} << (k % 64);
                }
        bits_.swap(bits);
        offset_ = offset;
        levels_ = levels;
        capacity_ = (offset[1] - offset[0]) * 64;
    }

    /// Effects: adds index `i`. Requires: i < capacity(), i not a member.
    void insert(std::size_t i) noexcept {
        bits_word& w = bits_[i / 64];
        const bits_word old = w;
        w = old | (bits_word{1} << (i % 64));
        if (old == 0) insert_above(i / 64); // else the summaries above already say "non-empty"
    }

    /// Effects: removes index `i`, which must be the lowest member.
    /// Returns: the new lowest member, or none when the set is now empty.
    std::size_t take_lowest(std::size_t i) noexcept {
        bits_word& w = bits_[i / 64];
        const bits_word rest = w & (w - 1); // i's bit is the lowest of its word
        w = rest;
        if (rest != 0) return (i & ~std::size_t{63}) | static_cast<std::size_t>(std::countr_zero(rest));
        return take_above(i / 64);
    }

    /// Returns: the lowest member, or none when empty.
    [[nodiscard]] std::size_t lowest() const noexcept {
        if (levels_ == 0) return none;
        const bits_word top = bits_[offset_[levels_ - 1]];
        if (top == 0) return none;
        return descend(levels_ - 1, static_cast<std::size_t>(std::countr_zero(top)));
    }

    /// Returns: true when `i` is a member.
    [[nodiscard]] bool contains(std::size_t i) const noexcept {
        return i < capacity_ && ((bits_[i / 64] >> (i % 64)) & 1) != 0;
    }

    /// Returns: the number of members. O(capacity / 64).
    [[nodiscard]] std::size_t count() const noexcept {
        std::size_t n = 0;
        for (std::size_t w = 0; levels_ != 0 && w < offset_[1]; ++w)
            n += static_cast<std::size_t>(std::popcount(bits_[w]));
        return n;
    }

    /// Returns: true when every summary bit says exactly whether its word below is non-zero.
    [[nodiscard]] bool check() const noexcept {
        for (unsigned l = 1; l < levels_; ++l)
            for (std::size_t w = offset_[l - 1]; w < offset_[l]; ++w) {
                const std::size_t k = w - offset_[l - 1];
                const bool summary = ((bits_[offset_[l] + k / 64] >> (k % 64)) & 1) != 0;
                if (summary != (bits_[w] != 0)) return false;
            }
        return levels_ == 0 || offset_[levels_] - offset_[levels_ - 1] == 1; // lowest() reads one top word
    }

    [[nodiscard]] bits_allocator get_allocator() const { return bits_.get_allocator(); }

private:
    // Level 0 word `k` became non-empty: set its summary bit, and so on up while words were empty.
    void insert_above(std::size_t k) noexcept {
        for (unsigned l = 1; l < levels_; ++l) {
            bits_word& w = bits_[offset_[l] + k / 64];
            const bits_word old = w;
            w = old | (bits_word{1} << (k % 64));
            if (old != 0) return;
            k /= 64;
        }
    }

    // Level 0 word `k` emptied (it held the lowest member): clear its summary bit, the lowest of
    // its word too, and so on up; then descend to the new lowest member.
    [[nodiscard]] std::size_t take_above(std::size_t k) noexcept {
        for (unsigned l = 1; l < levels_; ++l) {
            bits_word& w = bits_[offset_[l] + k / 64];
            const bits_word rest = w & (w - 1);
            w = rest;
            if (rest != 0)
                return descend(l, (k & ~std::size_t{63}) | static_cast<std::size_t>(std::countr_zero(rest)));
            k /= 64;
        }
        return none;
    }

    // From member `k` of level `l` down to the lowest member of level 0 under it.
    [[nodiscard]] std::size_t descend(unsigned l, std::size_t k) const noexcept {
        while (l-- > 0)
            k = k * 64 + static_cast<std::size_t>(std::countr_zero(bits_[offset_[l] + k]));
        return k;
    }

    std::vector<bits_word, bits_allocator> bits_; // every level, level 0 first
    std::array<std::size_t, max_levels + 1> offset_{};
    unsigned levels_ = 0;
    std::size_t capacity_ = 0;
};

} // namespace strata::detail
