#pragma once
// handle<Tag, IndexBits, GenerationBits>: a typed generational reference to a slot of a container.
//
// A handle is an index (which slot) and a generation (which occupant of that slot). Containers
// bump a slot's generation when its occupant is erased, so a handle kept past the erase no longer
// matches and is rejected in O(1) instead of silently reaching the next occupant.
//
// Encoding: raw = generation << IndexBits | index, in 32-bit storage when IndexBits +
// GenerationBits <= 32, else 64-bit. Generations of live slots start at 1 and never are 0, so the
// all-zero value is the null handle (what `handle{}` makes) and never validates anywhere.
#include <compare>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <ostream>
#include <type_traits>

#include "strata/handle/fwd.hpp"

#if defined(__has_include)
#if __has_include(<version>)
#include <version>
#endif
#endif
#if defined(__cpp_lib_format)
#include <format>
#endif

namespace strata {

/// A generational handle. Distinct `Tag` types give distinct, non-convertible handle types, so a
/// handle into the particle table cannot be passed to the mesh table.
///
/// Requires: 1 <= IndexBits <= 32, 1 <= GenerationBits, IndexBits + GenerationBits <= 64.
template <class Tag, unsigned IndexBits, unsigned GenerationBits>
class handle {
    static_assert(IndexBits >= 1 && IndexBits <= 32, "IndexBits must be in [1, 32]");
    static_assert(GenerationBits >= 1, "GenerationBits must be at least 1");
    static_assert(IndexBits + GenerationBits <= 64, "a handle holds at most 64 bits");

public:
    /// The stored integer: 32-bit when the fields fit, else 64-bit.
    using storage_type = std::conditional_t<(IndexBits + GenerationBits <= 32), std::uint32_t, std::uint64_t>;
    using tag_type = Tag;                                       ///< the distinguishing tag
    static constexpr unsigned index_bits = IndexBits;           ///< bits of the slot index
    static constexpr unsigned generation_bits = GenerationBits; ///< bits of the generation
    static constexpr storage_type max_index = static_cast<storage_type>((std::uint64_t{1} << IndexBits) - 1);
    static constexpr storage_type max_generation = static_cast<storage_type>(
        GenerationBits >= 64 ? ~std::uint64_t{0} : (std::uint64_t{1} << GenerationBits) - 1);
    /// How many slots a container of this handle type can address.
    static constexpr std::uint64_t index_space = std::uint64_t{1} << IndexBits;

    /// Effects: the null handle (index 0, generation 0); it never validates.
    constexpr handle() noexcept = default;

    /// Returns: the handle of slot `index` at `generation`.
    /// Requires: index <= max_index, generation <= max_generation (extra bits are masked off).
    [[nodiscard]] static constexpr handle from_parts(storage_type index, storage_type generation) noexcept {
        handle h;
        h.raw_ = static_cast<storage_type>(
            (static_cast<storage_type>(generation & max_generation) << IndexBits) | (index & max_index));
        return h;
    }

    /// Returns: the handle whose encoding is `raw` (the inverse of raw()).
    [[nodiscard]] static constexpr handle from_raw(storage_type raw) noexcept {
        handle h;
        h.raw_ = raw;
        return h;
    }

    /// Returns: the slot index.
    [[nodiscard]] constexpr storage_type index() const noexcept { return raw_ & max_index; }
    /// Returns: the generation (0 only for the null handle or a forged one).
    [[nodiscard]] constexpr storage_type generation() const noexcept {
        if constexpr (IndexBits >= sizeof(storage_type) * 8) {
            return 0;
        } else {
            return static_cast<storage_type>(raw_ >> IndexBits);
        }
    }
    /// Returns: the encoded value (for hashing, serialization of transient data, debugging).
    [[nodiscard]] constexpr storage_type raw() const noexcept { return raw_; }
    /// Returns: true for the null handle.
    [[nodiscard]] constexpr bool is_null() const noexcept { return raw_ == 0; }
    /// Returns: true unless this is the null handle (it may still be stale: ask the container).
    constexpr explicit operator bool() const noexcept { return raw_ != 0; }

    /// Handles compare by encoding: equal handles name the same slot at the same generation.
    friend constexpr bool operator==(handle, handle) noexcept = default;
    friend constexpr auto operator<=>(handle, handle) noexcept = default;

    /// Effects: prints `handle(null)` or `handle(index I, gen G)`.
    friend std::ostream& operator<<(std::ostream& os, handle h) {
        if (h.is_null()) return os << "handle(null)";
        return os << "handle(index " << static_cast<std::uint64_t>(h.index()) << ", gen "
                  << static_cast<std::uint64_t>(h.generation()) << ")";
    }

private:
    storage_type raw_ = 0;
};

/// True for every specialization of strata::handle.
template <class H>
inline constexpr bool is_handle_v = false;
template <class Tag, unsigned I, unsigned G>
inline constexpr bool is_handle_v<handle<Tag, I, G>> = true;

} // namespace strata

/// Hashes a handle by its encoding.
template <class Tag, unsigned I, unsigned G>
struct std::hash<strata::handle<Tag, I, G>> {
    [[nodiscard]] std::size_t operator()(strata::handle<Tag, I, G> h) const noexcept {
        return std::hash<typename strata::handle<Tag, I, G>::storage_type>{}(h.raw());
    }
};

#if defined(__cpp_lib_format)
/// Formats a handle like operator<<: `handle(index I, gen G)` or `handle(null)`.
template <class Tag, unsigned I, unsigned G>
struct std::formatter<strata::handle<Tag, I, G>, char> {
    constexpr auto parse(std::format_parse_context& ctx) { return ctx.begin(); }
    auto format(strata::handle<Tag, I, G> h, std::format_context& ctx) const {
        if (h.is_null()) return std::format_to(ctx.out(), "handle(null)");
        return std::format_to(ctx.out(), "handle(index {}, gen {})", static_cast<std::uint64_t>(h.index()),
                              static_cast<std::uint64_t>(h.generation()));
    }
};
#endif
