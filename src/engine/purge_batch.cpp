// purge_batch: page ranges given back to the OS in one process_madvise call, or one madvise each
// where the kernel refuses the vectored call.
//
// Exports: purge_batch::purge_batch, add, flush, full, now_ns, purge_now, refused.
#include "strata/engine/detail/purge_batch.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>

namespace strata::engine_detail {

namespace {

// PIDFD_SELF_THREAD (Linux 6.15): the calling thread, so the call reaches this process's memory
// whatever a fork or a closed descriptor did.
constexpr int pidfd_self = -10000;

// 0: not tried yet; 1: process_madvise works; 2: refused once (or a seccomp filter is on), madvise
// per range from then on.
std::atomic<int> vectored_state{0};

/// Returns: true when this process runs under a seccomp filter, or when /proc cannot say. A filter
/// may kill the process on a system call it does not list instead of failing it, so the vectored
/// call is only tried without one. Reads /proc/self/status into a stack buffer (this runs inside
/// malloc: nothing allocates).
bool seccomp_filtered() noexcept {
    const int fd = ::open("/proc/self/status", O_RDONLY | O_CLOEXEC);
    if (fd < 0) return true;
    char text[4096];
    std::size_t n = 0;
    for (ssize_t got; n < sizeof text - 1 && (got = ::read(fd, text + n, sizeof text - 1 - n)) > 0;)
        n += static_cast<std::size_t>(got);
    ::close(fd);
    text[n] = '\0';
    const char* line = std::strstr(text, "\nSeccomp:");
    if (line == nullptr) return true;
    line += 9;
    while (*line == ' ' || *line == '\t')
        ++line;
    return *line != '0';
}

// Set once a madvise of this process is refused (locked pages): purged memory may hold old data.
std::atomic<bool> refusal{false};

// Purges one range; notes a refusal.
void dontneed(void* at, std::size_t bytes) noexcept {
    if (::madvise(at, bytes, MADV_DONTNEED) != 0) refusal.store(true, std::memory_order_relaxed);
}

// Nanoseconds one range of a vectored flush of 8 ranges or more took, averaged over such flushes
// so far (any thread's; a guess that only sizes batches, so relaxed loads and stores are enough).
std::atomic<std::uint32_t> ns_per_range{30'000};

} // namespace

void purge_batch::purge_now(std::uintptr_t lo, std::uintptr_t hi) noexcept {
    if (hi <= lo) return;
    const int saved = errno;
    dontneed(reinterpret_cast<void*>(lo), hi - lo);
    errno = saved;
}

bool purge_batch::refused() noexcept { return refusal.load(std::memory_order_relaxed); }

std::uint64_t purge_batch::now_ns() noexcept {
    timespec ts{};
    ::clock_gettime(CLOCK_MONOTONIC, &ts);
    return static_cast<std::uint64_t>(ts.tv_sec) * 1000000000 + static_cast<std::uint64_t>(ts.tv_nsec);
}

purge_batch::purge_batch(bool vectored, std::uint64_t deadline_ns) noexcept
    : limit_(1), deadline_ns_(deadline_ns) {
#ifdef SYS_process_madvise
    if (vectored && vectored_state.load(std::memory_order_relaxed) != 2) limit_ = max_ranges;
#else
    (void)vectored;
#endif
}

bool purge_batch::full() const noexcept {
    if (count_ >= limit_ || bytes_ >= max_bytes) return true;
    if (deadline_ns_ == 0 || count_ == 0) return false;
    return now_ns() + count_ * ns_per_range.load(std::memory_order_relaxed) >= deadline_ns_;
}

bool purge_batch::add(std::uintptr_t lo, std::uintptr_t hi) noexcept {
    if (hi <= lo) return full();
    if (count_ != 0) {
        iovec& last = ranges_[count_ - 1];
        const auto at = reinterpret_cast<std::uintptr_t>(last.iov_base);
        if (at + last.iov_len == lo || hi == at) { // touches the last range (a span's pieces go down)
            if (hi == at) last.iov_base = reinterpret_cast<void*>(lo);
            last.iov_len += hi - lo;
            bytes_ += hi - lo;
            return full();
        }
        if (count_ == limit_ || bytes_ + (hi - lo) > max_bytes) flush(); // a flush stays within the limits
    }
    ranges_[count_++] = {reinterpret_cast<void*>(lo), hi - lo};
    bytes_ += hi - lo;
    return full();
}

void purge_batch::flush() noexcept {
    if (count_ == 0) return;
    const int saved = errno;
    std::size_t first = 0; // the first range not purged yet
    std::size_t skip = 0;  // bytes of that range already purged
#ifdef SYS_process_madvise
    if (count_ > 1 && vectored_state.load(std::memory_order_relaxed) == 0 && seccomp_filtered()) {
        vectored_state.store(2, std::memory_order_relaxed);
        limit_ = 1;
    }
    if (count_ > 1 && limit_ > 1) {
        const std::uint64_t t0 = now_ns();
        const long done = ::syscall(SYS_process_madvise, pidfd_self, ranges_, count_, MADV_DONTNEED, 0u);
        ++calls_;
        if (done < 0) {
            // EBADF: no PIDFD_SELF; EINVAL: no MADV_DONTNEED through it; ENOSYS, EPERM: no call.
            vectored_state.store(2, std::memory_order_relaxed);
            limit_ = 1;
        } else {
            vectored_state.store(1, std::memory_order_relaxed);
            if (count_ >= 8) { // a small batch is mostly the call's fixed cost: it would shrink the next
                const std::uint64_t each = std::min<std::uint64_t>((now_ns() - t0) / count_, 10'000'000);
                const std::uint32_t was = ns_per_range.load(std::memory_order_relaxed);
                ns_per_range.store(static_cast<std::uint32_t>((3 * std::uint64_t{was} + each) / 4),
                                   std::memory_order_relaxed);
            }
            // A short count means the kernel stopped part way: the rest goes range by range.
            auto left = static_cast<std::size_t>(done);
            while (first < count_ && left >= ranges_[first].iov_len)
                left -= ranges_[first++].iov_len;
            skip = left;
        }
    }
#endif
    for (; first < count_; ++first, skip = 0) {
        auto* at = static_cast<char*>(ranges_[first].iov_base) + skip;
        dontneed(at, ranges_[first].iov_len - skip);
        ++calls_;
    }
    count_ = 0;
    bytes_ = 0;
    errno = saved;
}

} // namespace strata::engine_detail
