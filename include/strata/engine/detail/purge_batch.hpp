#pragma once
// A batch of page ranges the engine heap gives back to the OS together: one process_madvise call
// (MADV_DONTNEED on the calling process) for up to 32 ranges, where the kernel takes it.
//
// Exports (strata::engine_detail): purge_batch.
#include <sys/uio.h>

#include <cstddef>
#include <cstdint>

namespace strata::engine_detail {

/// Ranges of whole pages to purge (their contents dropped; they stay mapped and read as zero).
/// - Each madvise call has a fixed cost (a TLB flush; on a virtual machine, a trip to the
///   hypervisor) that a purge of many small ranges pays once per range. process_madvise with
///   PIDFD_SELF (Linux 6.15) takes a vector of ranges in one call, and the kernel flushes the TLB
///   once for the lot.
/// - Where that call is refused (an older kernel), each range gets its own madvise; the first
///   refusal decides for the whole process. Under a seccomp filter (/proc/self/status says so) the
///   call is never tried: a filter may kill the process on a call it does not list.
/// - A flush takes at most max_ranges ranges and max_bytes bytes (a range that would pass either
///   flushes what waits first; one range may be bigger by itself).
/// - With a deadline, the batch counts itself full once flushing it would take the time left
///   (a running estimate of the cost per range), so a budgeted step overruns by about one flush.
/// - The OS may refuse a range (locked pages: mlock, mlockall): its pages stay as they were, and
///   refused() tells the heap not to count on purged memory reading as zero.
/// - The owner flushes before anyone may reuse a range: the engine keeps a batch inside the lock
///   (or the thread) that owns its ranges, and flushes before it lets go. Not thread-safe.
class purge_batch {
public:
    static constexpr std::size_t max_ranges = 32;
    static constexpr std::size_t max_bytes = std::size_t{1} << 20;

    /// A batch. `vectored` false (or the kernel refused the vectored call before): one madvise per
    /// range, and full() after each range. `deadline_ns`: a time of now_ns(), 0 for none.
    explicit purge_batch(bool vectored = true, std::uint64_t deadline_ns = 0) noexcept;
    purge_batch(const purge_batch&) = delete;
    purge_batch& operator=(const purge_batch&) = delete;
    /// Effects: flush().
    ~purge_batch() { flush(); }

    /// Effects: adds [lo, hi) (page-aligned; nothing when empty), joined to the last range when they
    /// touch. Returns: full(), so the caller can flush and look at its clock.
    bool add(std::uintptr_t lo, std::uintptr_t hi) noexcept;
    /// Effects: purges every range added since the last flush; the batch is empty after. errno is
    /// left as it was.
    void flush() noexcept;

    /// Returns: true when max_ranges ranges (one where the call is not vectored) or max_bytes bytes
    /// wait, or flushing them would reach the deadline.
    [[nodiscard]] bool full() const noexcept;
    [[nodiscard]] bool empty() const noexcept { return count_ == 0; }
    /// Returns: bytes waiting.
    [[nodiscard]] std::size_t bytes() const noexcept { return bytes_; }
    /// Returns: ranges one flush takes (max_ranges, or 1 where the call is not vectored).
    [[nodiscard]] std::size_t range_limit() const noexcept { return limit_; }
    /// Returns: system calls the flushes of this batch made.
    [[nodiscard]] std::size_t calls() const noexcept { return calls_; }

    /// Returns: CLOCK_MONOTONIC in nanoseconds (the clock of deadlines).
    [[nodiscard]] static std::uint64_t now_ns() noexcept;

    /// Effects: purges [lo, hi) at once, outside any batch (nothing when empty); a refusal is noted
    /// as a flush's is.
    static void purge_now(std::uintptr_t lo, std::uintptr_t hi) noexcept;
    /// Returns: whether the OS refused a purge of this process (an mlock'ed range, or mlockall:
    /// such pages stay resident and keep their contents). From then on a purged range cannot be
    /// taken to read as zero.
    [[nodiscard]] static bool refused() noexcept;

private:
    iovec ranges_[max_ranges];
    std::size_t count_ = 0;
    std::size_t bytes_ = 0;
    std::size_t calls_ = 0;
    std::size_t limit_;         // ranges a flush takes at once
    std::uint64_t deadline_ns_; // 0: none
};

} // namespace strata::engine_detail
