#pragma once
// strata-device-bench: shared pieces of the device-family benchmarks (bench/device/*.cpp): the
// churn contenders, each keeping its own native handle (tlsf: a pointer into a pre-faulted buffer;
// buddy and offset_heap: offsets of a range nothing touches), and small statistics helpers.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <new>
#include <span>
#include <string>
#include <vector>

#include "strata/core/bit.hpp"
#include "strata/device/offset_heap.hpp"
#include "strata/heap/buddy.hpp"
#include "strata/heap/tlsf.hpp"

#include "churn.hpp" // bench/churn: the W1/W2 generators, tools/lab's timer

namespace strata::device_bench {

using churn::pair_op;
using churn::workload;

/// Pre-faulted, 2 MiB-aligned memory (tlsf keeps its headers in band, so it needs real bytes).
class region {
public:
    explicit region(std::size_t n)
        : bytes_((n + alignment - 1) & ~(alignment - 1)),
          data_(static_cast<std::byte*>(::operator new (bytes_, std::align_val_t{alignment}))) {
        std::memset(data_, 0, bytes_);
    }
    ~region() { ::operator delete (data_, std::align_val_t{alignment}); }
    region(const region&) = delete;
    region& operator=(const region&) = delete;
    [[nodiscard]] std::span<std::byte> span() const noexcept { return {data_, bytes_}; }

private:
    static constexpr std::size_t alignment = std::size_t{2} << 20;
    std::size_t bytes_;
    std::byte* data_;
};

/// The range every TLSF-like contender manages for workload `w`: bench/churn's heap_bytes (2x the
/// peak live bytes + 32 B per live block + 1 MiB).
[[nodiscard]] inline std::size_t heap_bytes(const workload& w) {
    return 2 * w.peak_live_bytes + 32 * w.live() + (std::size_t{1} << 20);
}

/// strata::tlsf (SLI 5) over a pre-faulted buffer, pointer API, unsized free (as bench/churn's
/// "tlsf"). The pair loop writes the first byte of every block it gets, as strata-churn does.
struct tlsf_contender {
    using handle = void*;
    static constexpr const char* name = "tlsf";
    explicit tlsf_contender(const workload& w) : memory(heap_bytes(w)), heap(memory.span()) {}
    [[gnu::always_inline]] handle allocate(std::uint32_t size) noexcept { return heap.allocate(size, 16); }
    [[gnu::always_inline]] void deallocate(handle h, std::uint32_t) noexcept { heap.deallocate(h); }
    [[gnu::always_inline]] static bool ok(handle h) noexcept { return h != nullptr; }
    [[gnu::always_inline]] static void touch(handle h, std::uint32_t i) noexcept {
        *static_cast<unsigned char*>(h) = static_cast<unsigned char>(i);
    }
    bool check() noexcept { return heap.check(); }
    /// Metadata bytes per live block: tlsf's in-band headers and pool records over live blocks.
    [[nodiscard]] double metadata_per_live() const noexcept {
        const heap_metrics m = heap.metrics();
        return m.used_blocks == 0
                   ? 0.0
                   : static_cast<double>(m.overhead_bytes) / static_cast<double>(m.used_blocks);
    }
    region memory;
    tlsf heap;
};

/// strata::buddy's offsets API (allocate_offset / sized deallocate_offset), min_block 16, over the
/// power-of-two range bench/churn's "buddy" gets; nothing is touched.
struct buddy_offsets_contender {
    using handle = std::size_t;
    static constexpr const char* name = "buddy_offsets";
    explicit buddy_offsets_contender(const workload& w)
        : heap(next_pow2(2 * w.peak_live_bytes + 16 * w.live()), 16) {}
    [[gnu::always_inline]] handle allocate(std::uint32_t size) noexcept {
        return heap.allocate_offset(size, 16);
    }
    [[gnu::always_inline]] void deallocate(handle h, std::uint32_t size) noexcept {
        heap.deallocate_offset(h, size, 16);
    }
    [[gnu::always_inline]] static bool ok(handle h) noexcept { return h != buddy::npos; }
    [[gnu::always_inline]] static void touch(handle, std::uint32_t) noexcept {}
    bool check() noexcept { return heap.check(); }
    /// Metadata bytes per live block: the bookkeeping arrays (fixed) over live blocks.
    [[nodiscard]] double metadata_per_live() const noexcept {
        const std::size_t live = heap.stats().live_allocations;
        return live == 0 ? 0.0 : static_cast<double>(heap.bookkeeping_bytes()) / static_cast<double>(live);
    }
    buddy heap;
};

/// strata::offset_heap over heap_bytes(w) (the range tlsf gets), min_alignment 16, min_time, a node
/// pool of 4 x live + 64 (every block, used or free, takes a node); nothing is touched.
struct offset_heap_contender {
    using handle = offset_allocation;
    static constexpr const char* name = "offset_heap";
    explicit offset_heap_contender(const workload& w)
        : heap(heap_bytes(w), offset_heap_options{static_cast<std::uint32_t>(4 * w.live() + 64), 16, 1}) {}
    [[gnu::always_inline]] handle allocate(std::uint32_t size) noexcept { return heap.allocate(size); }
    [[gnu::always_inline]] void deallocate(handle h, std::uint32_t) noexcept { (void)heap.deallocate(h); }
    [[gnu::always_inline]] static bool ok(handle h) noexcept { return static_cast<bool>(h); }
    [[gnu::always_inline]] static void touch(handle, std::uint32_t) noexcept {}
    bool check() noexcept { return heap.check(); }
    /// Metadata bytes per live block: the nodes in use (live and free blocks) plus the fixed class
    /// heads and bitmaps, over live blocks. The spare nodes of the pool are not counted (see
    /// pool_metadata_per_live).
    [[nodiscard]] double metadata_per_live() const noexcept {
        const double live = heap.allocation_count();
        const double tables =
            static_cast<double>(heap.metadata_bytes() - heap.max_nodes() * offset_heap::node_bytes);
        return live == 0 ? 0.0 : (offset_heap::node_bytes * heap.nodes_in_use() + tables) / live;
    }
    offset_heap heap;
};

/// Returns: the median of `v` (sorted copy; 0 when empty).
[[nodiscard]] inline double median(std::vector<double> v) {
    if (v.empty()) return 0;
    std::sort(v.begin(), v.end());
    return (v[(v.size() - 1) / 2] + v[v.size() / 2]) / 2;
}

/// The three modes (bench/device/churn.cpp, frag.cpp, defrag.cpp). Each returns a process status.
int run_churn(int argc, char** argv);
int run_frag(int argc, char** argv);
int run_defrag(int argc, char** argv);
/// Count mode for bench/callgrind.py (`--strata_count=NAME --strata_fills=K`): see churn.cpp.
int run_count(const char* name, std::size_t fills);
/// Count mode's names.
void list_count();

} // namespace strata::device_bench
