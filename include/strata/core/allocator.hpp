#pragma once
// The allocator contract every strata allocator models (docs/design.md, "The allocator contract").
#include <concepts>
#include <cstddef>

#include "strata/core/stats.hpp"

namespace strata {

/// One block as a walker reports it: offset from the allocator's base, size, used or free.
struct block_info {
    std::size_t offset;
    std::size_t size;
    bool used;
};

// clang-format 14 mangles requires-expressions; keep the concepts as written.
// clang-format off
/// The core contract.
///  - `allocate(size, align)` returns memory aligned to `align`, or nullptr on exhaustion or an
///    invalid request (size 0, non-power-of-two align, size that overflows once aligned). noexcept.
///  - `deallocate(p, size, align)` releases what `allocate(size, align)` returned. noexcept.
///  - `stats()` reports the accounting.
template <class A>
concept allocator = requires(A& a, const A& ca, void* p, std::size_t n) {
    { a.allocate(n, n) } noexcept -> std::same_as<void*>;
    { a.deallocate(p, n, n) } noexcept;
    { ca.stats() } noexcept -> std::same_as<strata::stats>;
};

/// An allocator that can tell its own pointers from others cheaply.
template <class A>
concept owning_allocator = allocator<A> && requires(const A& a, const void* p) {
    { a.owns(p) } noexcept -> std::same_as<bool>;
};

/// An allocator that checks every free itself, at every STRATA_CHECKS level, and reports (and
/// ignores) one it refuses: a double free, a foreign pointer. It says so with
/// `static constexpr bool verifies_frees = true;` (debug<A> does, the wrappers that only
/// forward: locked, allocator_ref, tracked, and fallback and segregator when both sides do). Its owns(p) means "p is a live block". Wrappers let
/// it answer rather than judge the pointer first (their own check would call a double free a
/// foreign pointer), and tracked<A> counts a free by whether the block was live before the call and
/// is not after it (debug frees a block whose fence it reports broken).
template <class A>
concept self_verifying_allocator = allocator<A> && requires {
    requires A::verifies_frees;
};

/// Returns: whether a free of `p` belongs to `a`, for wrappers that route frees (fallback,
/// segregator): a.claims(p) where A has it, else a.owns(p). An allocator whose owns() means "live"
/// (debug<A>) also claims the blocks it freed, so a double free is sent to it and reported as one
/// rather than handed to the other allocator.
template <owning_allocator A>
[[nodiscard]] bool claims(const A& a, const void* p) noexcept {
    if constexpr (requires { { a.claims(p) } noexcept -> std::same_as<bool>; }) {
        return a.claims(p);
    } else {
        return a.owns(p);
    }
}

/// Returns: a.holds(p) where A has it (debug<A> and the wrappers that forward it: `p` is live, or
/// freed and still held back from the allocator underneath, so no other allocator over the same
/// memory can have handed it out), else false. fallback and segregator route by it first.
template <class A>
[[nodiscard]] bool holds(const A& a, const void* p) noexcept {
    if constexpr (requires { { a.holds(p) } noexcept -> std::same_as<bool>; }) {
        return a.holds(p);
    } else {
        return false;
    }
}

/// An allocator that knows its block sizes and so can free without being told.
template <class A>
concept unsized_deallocator = allocator<A> && requires(A& a, void* p) {
    { a.deallocate(p) } noexcept;
};

/// An allocator whose every allocation is released at once by `reset()`.
template <class A>
concept resettable_allocator = allocator<A> && requires(A& a) {
    { a.reset() } noexcept;
};

/// An allocator with LIFO markers: `rewind(mark())` releases everything allocated after the mark.
template <class A>
concept marking_allocator = allocator<A> && requires(A& a) {
    { a.mark() } noexcept;
    { a.rewind(a.mark()) } noexcept;
};

// clang-format on
} // namespace strata
