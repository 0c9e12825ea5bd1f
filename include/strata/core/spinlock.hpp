#pragma once
// spinlock: a lock of one atomic flag for code that runs inside malloc (the engine heap, the malloc
// shim, the trace recorder). It never allocates and never calls into libc's locks.
//
// Exports: strata::spin_backoff (pause, then yield), strata::spinlock (lock, try_lock, unlock,
// reset), strata::spin_guard (scoped lock).
#include <sched.h>

#include <atomic>

namespace strata {

/// The wait of one spin loop: a CPU pause for the first 64 rounds, then sched_yield. On a machine
/// with fewer cores than threads, spinning long against a descheduled holder only burns the
/// holder's time slice.
class spin_backoff {
public:
    /// Effects: waits a little; longer (a yield) once this backoff has paused 64 times.
    void wait() noexcept {
        if (spins_ < 64) {
            ++spins_;
#if defined(__x86_64__) || defined(__i386__)
            __builtin_ia32_pause();
#endif
        } else {
            (void)sched_yield();
        }
    }

private:
    unsigned spins_ = 0;
};

/// A test-and-test-and-set lock of one byte. BasicLockable and Lockable; constinit-constructible,
/// so a static one needs no constructor to run.
class spinlock {
public:
    constexpr spinlock() noexcept = default;
    spinlock(const spinlock&) = delete;
    spinlock& operator=(const spinlock&) = delete;

    /// Effects: takes the lock; uncontended, one exchange.
    void lock() noexcept {
        if (!flag_.exchange(true, std::memory_order_acquire)) return;
        lock_slow();
    }
    /// Returns: true when the lock was free and is now taken.
    [[nodiscard]] bool try_lock() noexcept {
        return !flag_.load(std::memory_order_relaxed) && !flag_.exchange(true, std::memory_order_acquire);
    }
    void unlock() noexcept { flag_.store(false, std::memory_order_release); }
    /// Effects: releases the lock whoever holds it. For a fork child, where only the forking
    /// thread exists and a lock another thread held would never be released.
    void reset() noexcept { flag_.store(false, std::memory_order_relaxed); }

private:
    [[gnu::noinline]] void lock_slow() noexcept {
        for (spin_backoff b;; b.wait())
            if (try_lock()) return;
    }
    std::atomic<bool> flag_{false};
};

/// Holds a spinlock for a scope.
class spin_guard {
public:
    explicit spin_guard(spinlock& l) noexcept : l_(l) { l_.lock(); }
    ~spin_guard() { l_.unlock(); }
    spin_guard(const spin_guard&) = delete;
    spin_guard& operator=(const spin_guard&) = delete;

private:
    spinlock& l_;
};

} // namespace strata
