#pragma once
// object_pool<T>: a typed pool. create() constructs a T in a free slot, destroy() runs its
// destructor and frees the slot. Destroying the pool with live objects is a leak report.
#include <cstddef>
#include <cstdio>
#include <new>
#include <span>
#include <type_traits>
#include <utility>

#include "strata/core/check.hpp"
#include "strata/pool/pool.hpp"

namespace strata {

/// A pool of T. Same storage, complexity and thread-safety as `pool` with slot size sizeof(T) and
/// alignment alignof(T).
///
/// Bad input: destroy(nullptr) is a no-op; destroy of a foreign pointer, a pointer into the middle
/// of a slot or an object already destroyed is reported at checks >= 1 (foreign_pointer /
/// foreign_pointer / double_free) and ignored: the destructor does not run. Destroying the pool with
/// live objects reports one `leak` at checks >= 1; their destructors do not run (the pool cannot
/// know whether someone still refers to them), their memory goes back to the source.
template <class T>
class object_pool {
public:
    using value_type = T;

    /// Effects: a pool of T over `buffer`; never grows. Requires: `buffer` outlives the pool.
    explicit object_pool(std::span<std::byte> buffer) noexcept : pool_(sizeof(T), alignof(T), buffer) {}
    /// Effects: a pool of T growing by chunks from `source`.
    explicit object_pool(source_ref source, pool_options options = {}) noexcept
        : pool_(sizeof(T), alignof(T), source, options) {}
    /// Effects: a pool of T over `buffer` first, then `source`.
    object_pool(std::span<std::byte> buffer, source_ref source, pool_options options) noexcept
        : pool_(sizeof(T), alignof(T), buffer, source, options) {}

    object_pool(object_pool&&) noexcept = default;
    object_pool& operator=(object_pool&& other) noexcept {
        if (this != &other) {
            report_leaks();
            pool_ = std::move(other.pool_);
        }
        return *this;
    }
    object_pool(const object_pool&) = delete;
    object_pool& operator=(const object_pool&) = delete;

    /// Effects: reports a leak at checks >= 1 when objects are still live; returns the chunks.
    ~object_pool() { report_leaks(); }

    /// Returns: a T constructed from `args` in a free slot, or nullptr when the pool is exhausted.
    /// Throws: whatever T's constructor throws; the slot is freed first. Complexity: O(1).
    template <class... Args>
    [[nodiscard]] T* create(Args&&... args) noexcept(std::is_nothrow_constructible_v<T, Args...>) {
        void* p = pool_.allocate();
        if (STRATA_UNLIKELY(p == nullptr)) return nullptr;
        if constexpr (std::is_nothrow_constructible_v<T, Args...>) {
            return ::new (p) T(std::forward<Args>(args)...);
        } else {
            try {
                return ::new (p) T(std::forward<Args>(args)...);
            } catch (...) {
                pool_.deallocate(p);
                throw;
            }
        }
    }

    /// Effects: runs ~T() and frees the slot; nullptr is a no-op. Violations (see the class comment)
    /// are reported before the destructor would run. Complexity: O(1).
    void destroy(T* p) noexcept {
        if (p == nullptr) return;
#if STRATA_CHECKS >= 1
        if (!pool_.verify_live(p)) return;
#endif
        p->~T();
        pool_.deallocate(p);
    }

    /// Returns: true when `p` lies in one of this pool's slots.
    [[nodiscard]] bool owns(const void* p) const noexcept { return pool_.owns(p); }
    /// Returns: objects created and not yet destroyed.
    [[nodiscard]] std::size_t live() const noexcept { return pool_.live(); }
    /// Returns: slots held (live objects plus free slots).
    [[nodiscard]] std::size_t capacity() const noexcept { return pool_.capacity(); }
    /// Returns: the underlying pool's accounting (bytes are slot strides).
    [[nodiscard]] strata::stats stats() const noexcept { return pool_.stats(); }
    /// Returns: the underlying pool's check().
    [[nodiscard]] bool check() const noexcept { return pool_.check(); }
    /// Returns: the untyped pool underneath (for owns/for_each_slot and the allocator contract).
    [[nodiscard]] const pool& storage() const noexcept { return pool_; }

private:
    void report_leaks() noexcept {
        if (STRATA_CHECKS >= 1 && pool_.live() != 0) { // the message names the count
            char msg[96];
            std::snprintf(msg, sizeof msg,
                          "object_pool destroyed with %zu live objects; their destructors did not run",
                          pool_.live());
            (void)STRATA_VERIFY(1, pool_.live() == 0, leak, "strata::object_pool", nullptr, msg);
        }
    }

    pool pool_;
};

} // namespace strata
