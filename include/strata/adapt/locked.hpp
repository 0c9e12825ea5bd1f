#pragma once
// locked<A, Mutex>: thread safety by composition. Every verb of `A` runs under one mutex, so a
// single-threaded allocator can be shared between threads without changing it (docs/design.md,
// "Threading"). For hot shared allocation prefer per-thread allocators; this is the simple, correct
// baseline, and cheap when uncontended (one uncontended lock/unlock pair per call).
#include <cstddef>
#include <mutex>
#include <utility>

#include "strata/adapt/free_reports.hpp"
#include "strata/adapt/fwd.hpp"
#include "strata/core/align.hpp"
#include "strata/core/allocator.hpp"

namespace strata {

/// A mutex that does nothing: locked<A, null_mutex> is `A` with the locked<> interface, for code
/// that is generic over the locking policy.
struct null_mutex {
    void lock() noexcept {}
    bool try_lock() noexcept { return true; }
    void unlock() noexcept {}
};

/// `A` (owned by value; wrap an allocator_ref<A> to share one that lives elsewhere) behind a
/// `Mutex` (any BasicLockable: std::mutex, a spin lock, null_mutex).
///
/// Every forwarded verb holds the lock for the duration of `A`'s call: allocate, both deallocates,
/// owns, claims, reset, stats. Bad input: what `A` answers. `Mutex::lock` must not throw
/// (std::mutex's throws only on system errors, which then terminate: the verbs are noexcept).
/// Not copyable or movable (the mutex is not).
///
/// Whatever `A` calls back from inside a verb runs under the lock: a tracker's budget callback
/// behind locked<tracked<B>> may use unsafe_inner() (this thread holds the lock) but must not call
/// this wrapper again, which with std::mutex relocks a mutex the thread holds (a deadlock); with
/// Mutex = std::recursive_mutex it may.
template <allocator A, class Mutex = std::mutex>
class locked {
public:
    using upstream_type = A;  ///< the allocator wrapped
    using mutex_type = Mutex; ///< the lock
    /// As `A`'s (core/allocator.hpp, self_verifying_allocator): the lock checks nothing itself.
    static constexpr bool verifies_frees = self_verifying_allocator<A>;
    /// As `A`'s (adapt/free_reports.hpp, reporting_allocator).
    static constexpr bool reports_frees = reporting_allocator<A>;

    /// Effects: constructs `A` from `args`.
    template <class... Args>
    explicit locked(Args&&... args) : inner_(std::forward<Args>(args)...) {}
    locked(const locked&) = delete;
    locked& operator=(const locked&) = delete;

    /// Returns: inner().allocate(size, align) under the lock.
    [[nodiscard]] void* allocate(std::size_t size, std::size_t align = default_alignment) noexcept {
        const std::lock_guard<Mutex> hold(mutex_);
        return inner_.allocate(size, align);
    }
    /// Effects: inner().deallocate(p, size, align) under the lock.
    void deallocate(void* p, std::size_t size, std::size_t align = default_alignment) noexcept {
        const std::lock_guard<Mutex> hold(mutex_);
        inner_.deallocate(p, size, align);
    }
    /// Effects: inner().deallocate(p) under the lock. Only where `A` frees unsized.
    void deallocate(void* p) noexcept requires unsized_deallocator<A> {
        const std::lock_guard<Mutex> hold(mutex_);
        inner_.deallocate(p);
    }
    /// Returns: inner().owns(p) under the lock. Only where `A` can answer.
    [[nodiscard]] bool owns(const void* p) const noexcept requires owning_allocator<A> {
        const std::lock_guard<Mutex> hold(mutex_);
        return inner_.owns(p);
    }
    /// Returns: strata::holds(inner(), p) under the lock (core/allocator.hpp).
    [[nodiscard]] bool holds(const void* p) const noexcept {
        const std::lock_guard<Mutex> hold(mutex_);
        return strata::holds(inner_, p);
    }
    /// Returns: strata::claims(inner(), p) under the lock (core/allocator.hpp). Only where `A` can
    /// answer owns().
    [[nodiscard]] bool claims(const void* p) const noexcept requires owning_allocator<A> {
        const std::lock_guard<Mutex> hold(mutex_);
        return strata::claims(inner_, p);
    }
    /// Effects: inner().reset() under the lock. Only where `A` resets.
    void reset() noexcept requires resettable_allocator<A> {
        const std::lock_guard<Mutex> hold(mutex_);
        inner_.reset();
    }
    /// Returns: inner().stats() under the lock (a consistent snapshot).
    [[nodiscard]] strata::stats stats() const noexcept {
        const std::lock_guard<Mutex> hold(mutex_);
        return inner_.stats();
    }

    /// Effects: calls f(inner()) under the lock and returns what it returns: for verbs locked<>
    /// does not forward (mark/rewind, for_each_block, check) or several calls made atomically.
    template <class F>
    decltype(auto) with_lock(F&& f) {
        const std::lock_guard<Mutex> hold(mutex_);
        return std::forward<F>(f)(inner_);
    }

    /// Returns: the wrapped allocator, unlocked: for single-threaded phases (setup, teardown), and
    /// for code that runs inside a verb of this wrapper (a budget callback), the lock being held.
    [[nodiscard]] A& unsafe_inner() noexcept { return inner_; }
    [[nodiscard]] Mutex& mutex() const noexcept { return mutex_; }

private:
    mutable Mutex mutex_;
    A inner_;
};

} // namespace strata
