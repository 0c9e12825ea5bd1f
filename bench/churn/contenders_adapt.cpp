// strata-churn contenders of the adapter family: strata::tlsf raw and wrapped in tracked<>,
// debug<> and locked<>, so the W1/W2/W3 tables show each adapter's cost on a real free+allocate
// churn next to the peers. The heap gets one pre-touched buffer sized from the workload: 2x the
// peak live bytes + 64 B per live block (debug's fences) + 1 MiB.
#include <cstddef>
#include <cstring>
#include <mutex>
#include <span>
#include <vector>

#include "strata/adapt/debug.hpp"
#include "strata/adapt/locked.hpp"
#include "strata/adapt/tracked.hpp"
#include "strata/heap/tlsf.hpp"

#include "churn.hpp"

namespace {

using strata::churn::workload;

/// tlsf over its own pre-touched buffer (the wrapped allocator of every contender below).
struct churn_tlsf {
    explicit churn_tlsf(const workload& w)
        : buffer(2 * w.peak_live_bytes + 64 * w.live() + (std::size_t{1} << 20)),
          heap(std::span<std::byte>(buffer.data(), buffer.size())) {}
    [[gnu::always_inline]] void* allocate(std::size_t size, std::size_t align) noexcept {
        return heap.allocate(size, align);
    }
    [[gnu::always_inline]] void deallocate(void* p, std::size_t size, std::size_t align) noexcept {
        heap.deallocate(p, size, align);
    }
    [[nodiscard]] strata::stats stats() const noexcept { return heap.stats(); }
    std::vector<std::byte> buffer; // value-initialized: every page touched before the race
    strata::tlsf heap;
};

struct tracked_tlsf_adapter {
    static bool accepts(const workload&) { return true; }
    explicit tracked_tlsf_adapter(const workload& w) : heap(root, w) {}
    [[gnu::always_inline]] void* allocate(std::size_t size) noexcept {
        return heap.allocate(size, workload::alignment);
    }
    [[gnu::always_inline]] void deallocate(void* p, std::size_t size) noexcept {
        heap.deallocate(p, size, workload::alignment);
    }
    bool check() noexcept {
        return heap.inner().heap.check() && root.in_use() <= heap.inner().heap.stats().in_use;
    }
    strata::tracker root{"churn"};
    strata::tracked<churn_tlsf> heap;
};
STRATA_CHURN_CONTENDER(tracked_tlsf_adapter, "tracked_tlsf", "strata::tracked<tlsf>: per-tracker accounting");

struct debug_tlsf_adapter {
    // Fills every byte on both calls: W4's 64-512 KiB blocks would take hours at 1M pairs.
    static bool accepts(const workload& w) { return w.max_size <= 65536; }
    explicit debug_tlsf_adapter(const workload& w) : heap(w) {}
    [[gnu::always_inline]] void* allocate(std::size_t size) noexcept {
        return heap.allocate(size, workload::alignment);
    }
    [[gnu::always_inline]] void deallocate(void* p, std::size_t size) noexcept {
        heap.deallocate(p, size, workload::alignment);
    }
    bool check() noexcept { return heap.verify() && heap.inner().heap.check(); }
    strata::debug<churn_tlsf> heap;
};
STRATA_CHURN_CONTENDER(debug_tlsf_adapter, "debug_tlsf",
                       "strata::debug<tlsf>: 16 B fences, 0xCD/0xDD fills, hashed block records");

struct locked_tlsf_adapter {
    static bool accepts(const workload&) { return true; }
    explicit locked_tlsf_adapter(const workload& w) : heap(w) {}
    [[gnu::always_inline]] void* allocate(std::size_t size) noexcept {
        return heap.allocate(size, workload::alignment);
    }
    [[gnu::always_inline]] void deallocate(void* p, std::size_t size) noexcept {
        heap.deallocate(p, size, workload::alignment);
    }
    bool check() noexcept {
        return heap.with_lock([](churn_tlsf& t) { return t.heap.check(); });
    }
    strata::locked<churn_tlsf, std::mutex> heap;
};
STRATA_CHURN_CONTENDER(locked_tlsf_adapter, "locked_tlsf", "strata::locked<tlsf, std::mutex>, uncontended");

/// The raw heap under the same wrapper, for the ratios (contenders_heap.cpp may list its own tlsf).
struct raw_tlsf_adapter {
    static bool accepts(const workload&) { return true; }
    explicit raw_tlsf_adapter(const workload& w) : heap(w) {}
    [[gnu::always_inline]] void* allocate(std::size_t size) noexcept {
        return heap.allocate(size, workload::alignment);
    }
    [[gnu::always_inline]] void deallocate(void* p, std::size_t size) noexcept {
        heap.deallocate(p, size, workload::alignment);
    }
    bool check() noexcept { return heap.heap.check(); }
    churn_tlsf heap;
};
STRATA_CHURN_CONTENDER(raw_tlsf_adapter, "raw_tlsf",
                       "strata::tlsf under the adapters' wrapper (their baseline)");

} // namespace
