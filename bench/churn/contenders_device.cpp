// strata-churn contenders of the device family: offset_heap and buddy's offsets API. Both manage
// offsets of a range they never touch; here the range is a pre-faulted buffer, so the churn loop
// gets base + offset as its pointer and writes its byte there as with every contender. offset_heap
// also needs the node of an allocation to free it, and the churn loop keeps only the pointer: the
// adapter stores the node in bytes 8-11 of the block, standing for the application's resource
// record that holds it next to the offset. A free then reads the node from a block long untouched,
// a cache miss the heap's own node load waits on (tlsf overlaps the same miss on its header by
// completing each free one call late), so these rows carry a cost of the harness: on W2 about
// 15 ns a pair. (A side table indexed by offset / 16 costs as much: 6 MiB for W2's 25 MiB range.)
// bench/device (strata-device-bench churn), where every contender keeps its own handle and nothing
// is written, gives offset_heap's own cost.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <new>

#include "strata/core/bit.hpp"
#include "strata/device/offset_heap.hpp"
#include "strata/heap/buddy.hpp"

#include "churn.hpp"

namespace {

using strata::churn::workload;

/// Pre-faulted, 2 MiB-aligned bytes standing for the device memory.
class shadow {
public:
    explicit shadow(std::size_t n)
        : bytes_((n + alignment - 1) & ~(alignment - 1)),
          data_(static_cast<std::byte*>(::operator new (bytes_, std::align_val_t{alignment}))) {
        std::memset(data_, 0, bytes_);
    }
    ~shadow() { ::operator delete (data_, std::align_val_t{alignment}); }
    shadow(const shadow&) = delete;
    shadow& operator=(const shadow&) = delete;
    [[nodiscard]] std::byte* data() const noexcept { return data_; }
    [[nodiscard]] std::size_t size() const noexcept { return bytes_; }

private:
    static constexpr std::size_t alignment = std::size_t{2} << 20;
    std::size_t bytes_;
    std::byte* data_;
};

/// As contenders_heap.cpp's heap_bytes: the range tlsf gets.
[[nodiscard]] std::size_t range_bytes(const workload& w) {
    return 2 * w.peak_live_bytes + 32 * w.live() + (std::size_t{1} << 20);
}

/// strata::offset_heap, min_alignment 16, min_time, 4 x live + 64 nodes; the node in the block.
struct offset_heap_adapter {
    static bool accepts(const workload&) { return true; }
    explicit offset_heap_adapter(const workload& w)
        : memory_(range_bytes(w)),
          heap_(memory_.size(),
                strata::offset_heap_options{static_cast<std::uint32_t>(4 * w.live() + 64), 16, 1}) {}
    [[gnu::always_inline]] void* allocate(std::size_t size) noexcept {
        const strata::offset_allocation a = heap_.allocate(size);
        if (!a) return nullptr;
        std::byte* p = memory_.data() + a.offset;
        std::memcpy(p + 8, &a.node, sizeof a.node);
        return p;
    }
    [[gnu::always_inline]] void deallocate(void* p, std::size_t) noexcept {
        const auto offset = static_cast<std::uint64_t>(static_cast<std::byte*>(p) - memory_.data());
        std::uint32_t node = 0;
        std::memcpy(&node, static_cast<std::byte*>(p) + 8, sizeof node);
        (void)heap_.deallocate({offset, node});
    }
    bool check() noexcept { return heap_.check(); }
    shadow memory_;
    strata::offset_heap heap_;
};

/// strata::buddy's offsets API (allocate_offset, sized deallocate_offset), min_block 16, over the
/// power-of-two region churn's "buddy" gets.
struct buddy_offsets_adapter {
    static bool accepts(const workload&) { return true; }
    explicit buddy_offsets_adapter(const workload& w)
        : memory_(strata::next_pow2(2 * w.peak_live_bytes + 16 * w.live())), heap_(memory_.size(), 16) {}
    [[gnu::always_inline]] void* allocate(std::size_t size) noexcept {
        const std::size_t off = heap_.allocate_offset(size, workload::alignment);
        return off == strata::buddy::npos ? nullptr : memory_.data() + off;
    }
    [[gnu::always_inline]] void deallocate(void* p, std::size_t size) noexcept {
        heap_.deallocate_offset(static_cast<std::size_t>(static_cast<std::byte*>(p) - memory_.data()), size,
                                workload::alignment);
    }
    bool check() noexcept { return heap_.check(); }
    shadow memory_;
    strata::buddy heap_;
};

} // namespace

STRATA_CHURN_CONTENDER(offset_heap_adapter, "offset_heap",
                       "strata::offset_heap (offsets; node kept in the block), over a pre-faulted buffer");
STRATA_CHURN_CONTENDER(buddy_offsets_adapter, "buddy_offsets",
                       "strata::buddy offsets API, min_block 16, over a pre-faulted buffer");
