// offset_heap: construction limits, every documented bad input and its answer, alignment and
// min_alignment rounding, both strategies, slack, the deferred free, allocate_lowest (from the first
// block or a start node) against a reference search, granularity pages between resource kinds,
// node-pool exhaustion, the statistics and walks against a reference model (a map of the used
// intervals with their granted sizes), to_json, check() against corrupted nodes (sentinels
// included), and a randomized run.
#include "strata/device/offset_heap.hpp"

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <iterator>
#include <limits>
#include <map>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#if __has_include(<nlohmann/json.hpp>)
#include <nlohmann/json.hpp>
#define STRATA_TEST_HAVE_JSON 1
#else
#define STRATA_TEST_HAVE_JSON 0
#endif

#include "support/heap_model.hpp"
#include "support/recording_handler.hpp"
#include "support/test_rng.hpp"

// Reaches the node pool so a test can break an invariant and see check() report it.
template <>
struct strata::detail::private_access<strata::offset_heap> {
    static std::uint32_t& offset(offset_heap& h, std::uint32_t n) { return h.nodes_[n].offset; }
    static std::uint32_t& size(offset_heap& h, std::uint32_t n) { return h.nodes_[n].size; }
    static std::uint32_t& prev_phys(offset_heap& h, std::uint32_t n) { return h.nodes_[n].prev_phys; }
    static std::uint32_t& next_phys(offset_heap& h, std::uint32_t n) { return h.nodes_[n].next_phys; }
    static std::uint32_t& prev_free(offset_heap& h, std::uint32_t n) { return h.nodes_[n].prev_free; }
    static std::uint32_t& next_free(offset_heap& h, std::uint32_t n) { return h.nodes_[n].next_free; }
    static std::uint32_t& spare_count(offset_heap& h) { return h.spare_count_; }
    static std::uint32_t& live(offset_heap& h) { return h.live_; }
    static std::uint32_t& fl_bitmap(offset_heap& h) { return h.fl_bitmap_; }
    static std::uint32_t& sl_bitmap(offset_heap& h, unsigned fl) { return h.sl_bitmap_[fl]; }
    static std::uint32_t spare_head(const offset_heap& h) { return h.spare_; }
};

namespace strata::test {
using offset_heap_access = detail::private_access<offset_heap>;
} // namespace strata::test

namespace {

using strata::allocation_strategy;
using strata::offset_allocation;
using strata::offset_block_info;
using strata::offset_heap;
using strata::offset_heap_options;
using strata::resource_kind;
using strata::test::offset_heap_access;
using strata::test::recording_handler;
using strata::test::test_rng;

constexpr std::uint64_t npos = offset_heap::npos;

// Expects `h` to refuse freeing `bad`, reported as `kind` at checks >= 1 (nothing at 0).
void expect_refused(offset_heap& h, offset_allocation bad, strata::violation_kind kind) {
    recording_handler rec;
    EXPECT_FALSE(h.deallocate(bad));
    if (strata::test::checks_on) {
        EXPECT_TRUE(rec.saw_one(kind));
        EXPECT_EQ(rec.last().allocator, "strata::offset_heap");
    } else {
        EXPECT_TRUE(rec.empty());
    }
}

std::uint64_t round_up(std::uint64_t v, std::uint64_t a) { return (v + a - 1) / a * a; }

// The heap as a map of its used intervals; the free blocks are the gaps between them (free blocks
// always merge, so each gap is exactly one free block). A used block is recorded with the size the
// heap granted, slack included.
class reference_heap {
public:
    struct used_block {
        std::uint64_t size;
        resource_kind kind;
        std::uint32_t node;
    };
    struct gap {
        std::uint64_t offset;
        std::uint64_t size;
        const used_block* prev; // the used block before it, or null
        const used_block* next; // the used block after it, or null
        std::uint64_t prev_end;
        std::uint64_t next_offset;
    };

    reference_heap(std::uint64_t size, std::uint64_t unit, std::uint64_t granularity)
        : size_(size), unit_(unit), page_(granularity > unit ? granularity : 0) {}

    // Records a fresh allocation of `size` bytes (before rounding) with `align` that the heap granted
    // `granted` bytes; checks that it is rounded (plus, only without granularity, a slack of at most
    // 1/16 of the request plus 32 bytes, at least one unit), aligned, in range and disjoint from
    // every live block, and keeps kinds apart.
    ::testing::AssertionResult add(offset_allocation a, std::uint64_t size, std::uint64_t align,
                                   resource_kind kind, std::uint64_t granted) {
        if (!a) return ::testing::AssertionFailure() << "failed allocation";
        const std::uint64_t rounded = round_up(size, unit_);
        const std::uint64_t slack =
            page_ == 0 ? ((rounded / unit_ >> 4) + std::max<std::uint64_t>(1, 32 / unit_)) * unit_ : 0;
        if (granted < rounded || granted > rounded + slack || granted % unit_ != 0)
            return ::testing::AssertionFailure() << "granted " << granted << " for " << size;
        if (a.offset % align != 0 || a.offset % unit_ != 0)
            return ::testing::AssertionFailure() << "offset " << a.offset << " misaligned for " << align;
        if (a.offset + granted > size_) return ::testing::AssertionFailure() << "past the end";
        auto next = used_.lower_bound(a.offset);
        if (next != used_.end() && a.offset + granted > next->first)
            return ::testing::AssertionFailure() << "overlaps the next used block";
        if (next != used_.begin()) {
            auto prev = std::prev(next);
            if (prev->first + prev->second.size > a.offset)
                return ::testing::AssertionFailure() << "overlaps the previous used block";
        }
        used_.emplace(a.offset, used_block{granted, kind, a.node});
        used_bytes_ += granted;
        peak_ = std::max(peak_, used_bytes_);
        ++total_;
        return granularity_ok();
    }

    void remove(std::uint64_t offset) {
        auto it = used_.find(offset);
        ASSERT_NE(it, used_.end());
        used_bytes_ -= it->second.size;
        used_.erase(it);
    }

    // Used blocks of different kinds share no page; same kinds may touch.
    [[nodiscard]] ::testing::AssertionResult granularity_ok() const {
        if (page_ == 0) return ::testing::AssertionSuccess();
        const std::pair<const std::uint64_t, used_block>* last = nullptr;
        for (const auto& u : used_) {
            if (last != nullptr && last->second.kind != u.second.kind &&
                (last->first + last->second.size - 1) / page_ == u.first / page_)
                return ::testing::AssertionFailure()
                       << "blocks at " << last->first << " and " << u.first << " share a page";
            last = &u;
        }
        return ::testing::AssertionSuccess();
    }

    [[nodiscard]] std::vector<gap> gaps() const {
        std::vector<gap> out;
        std::uint64_t at = 0;
        const used_block* prev = nullptr;
        std::uint64_t prev_end = 0;
        for (const auto& [off, u] : used_) {
            if (off > at) out.push_back({at, off - at, prev, &u, prev_end, off});
            at = off + u.size;
            prev = &u;
            prev_end = at;
        }
        if (at < size_) out.push_back({at, size_ - at, prev, nullptr, prev_end, size_});
        return out;
    }

    // The lowest offset below `below` where a block of `size` bytes aligned to `align` and of `kind`
    // fits, by the rule: the first page shared with a used neighbour of another kind is skipped,
    // a last page shared with one refuses the gap.
    [[nodiscard]] std::uint64_t lowest_fit(std::uint64_t size, std::uint64_t align, resource_kind kind,
                                           std::uint64_t below) const {
        const std::uint64_t bytes = round_up(size, unit_);
        for (const gap& g : gaps()) {
            std::uint64_t at = round_up(g.offset, std::max(align, unit_));
            if (page_ != 0 && g.prev != nullptr && g.prev->kind != kind &&
                (g.prev_end - 1) / page_ == at / page_)
                at = round_up(at + 1, page_);
            if (at >= below) return npos;
            if (at + bytes > g.offset + g.size) continue;
            if (page_ != 0 && g.next != nullptr && g.next->kind != kind &&
                (at + bytes - 1) / page_ == g.next_offset / page_)
                continue;
            return at;
        }
        return npos;
    }

    [[nodiscard]] std::uint64_t free_bytes() const { return size_ - used_bytes_; }
    [[nodiscard]] std::uint64_t largest_free() const {
        std::uint64_t l = 0;
        for (const gap& g : gaps())
            l = std::max(l, g.size);
        return l;
    }

    // Compares every figure and walk of `h` with the model.
    ::testing::AssertionResult matches(const offset_heap& h) const {
        const std::vector<gap> free = gaps();
        const std::uint64_t largest = largest_free();
        if (h.used_bytes() != used_bytes_ || h.free_bytes() != free_bytes())
            return ::testing::AssertionFailure() << "used " << h.used_bytes() << " vs " << used_bytes_;
        if (h.allocation_count() != used_.size()) return ::testing::AssertionFailure() << "allocation_count";
        if (h.free_block_count() != free.size())
            return ::testing::AssertionFailure()
                   << "free_block_count " << h.free_block_count() << " vs " << free.size();
        if (h.nodes_in_use() != used_.size() + free.size()) return ::testing::AssertionFailure() << "nodes";
        // largest_free_block() reports what an allocation reaches: the largest block unless more
        // than own_class_probes blocks share its class.
        const std::uint64_t reach = h.largest_free_block();
        std::size_t same_class = 0;
        for (const gap& g : free)
            same_class +=
                largest != 0 && offset_heap::class_index(static_cast<std::uint32_t>(g.size / unit_)) ==
                                    offset_heap::class_index(static_cast<std::uint32_t>(largest / unit_));
        if (same_class <= offset_heap::own_class_probes ? reach != largest : (reach > largest || reach == 0))
            return ::testing::AssertionFailure() << "largest " << reach << " vs " << largest;
        const double frag =
            free_bytes() == 0 ? 0.0 : 1.0 - static_cast<double>(reach) / static_cast<double>(free_bytes());
        if (h.fragmentation() != frag) return ::testing::AssertionFailure() << "fragmentation";
        const strata::stats s = h.stats();
        if (s.in_use != used_bytes_ || s.peak != peak_ || s.capacity != size_ ||
            s.live_allocations != used_.size() || s.total_allocations != total_ ||
            s.largest_free_block != reach)
            return ::testing::AssertionFailure()
                   << "stats: in_use " << s.in_use << "/" << used_bytes_ << " peak " << s.peak << "/" << peak_
                   << " live " << s.live_allocations << "/" << used_.size() << " cap " << s.capacity << "/"
                   << size_ << " total " << s.total_allocations << "/" << total_ << " largest "
                   << s.largest_free_block << "/" << reach;
        const strata::heap_metrics m = h.metrics();
        if (m.capacity != size_ || m.used_bytes != used_bytes_ || m.requested_bytes != used_bytes_ ||
            m.overhead_bytes != 0 || m.free_bytes != free_bytes() || m.largest_free_block != largest ||
            m.used_blocks != used_.size() || m.free_blocks != free.size())
            return ::testing::AssertionFailure() << "metrics";
        // The walk: used blocks as recorded, free blocks exactly the gaps, in address order.
        std::vector<offset_block_info> walked;
        h.for_each_block([&](const offset_block_info& b) { walked.push_back(b); });
        auto u = used_.begin();
        std::size_t f = 0;
        for (const offset_block_info& b : walked) {
            if (b.used) {
                if (u == used_.end() || u->first != b.offset || u->second.size != b.size ||
                    u->second.kind != b.kind || u->second.node != b.node)
                    return ::testing::AssertionFailure() << "walk: used block at " << b.offset;
                ++u;
            } else {
                if (f == free.size() || free[f].offset != b.offset || free[f].size != b.size ||
                    b.kind != resource_kind::linear)
                    return ::testing::AssertionFailure() << "walk: free block at " << b.offset;
                ++f;
            }
        }
        if (u != used_.end() || f != free.size())
            return ::testing::AssertionFailure() << "walk: missing blocks";
        return ::testing::AssertionSuccess();
    }

    [[nodiscard]] const std::map<std::uint64_t, used_block>& used() const noexcept { return used_; }
    [[nodiscard]] std::uint64_t total() const noexcept { return total_; }

private:
    std::uint64_t size_;
    std::uint64_t unit_;
    std::uint64_t page_; // 0: no granularity constraint
    std::map<std::uint64_t, used_block> used_;
    std::uint64_t used_bytes_ = 0;
    std::uint64_t peak_ = 0;
    std::uint64_t total_ = 0;
};

// Allocates through the heap and records the result in the model (asserting on failure).
struct checked_heap {
    offset_heap heap;
    reference_heap model;
    checked_heap(std::uint64_t size, const offset_heap_options& o)
        : heap(size, o), model(heap.size(), heap.min_alignment(), o.granularity) {}

    offset_allocation take(std::uint64_t size, std::uint64_t align = 1,
                           resource_kind kind = resource_kind::linear,
                           allocation_strategy s = allocation_strategy::min_time) {
        const offset_allocation a = heap.allocate(size, align, kind, s);
        EXPECT_TRUE(a) << size << " align " << align;
        if (a) {
            EXPECT_TRUE(model.add(a, size, align, kind, heap.size_of(a)));
        }
        return a;
    }
    // allocate_lowest, checked against the model's search; the block is freed again at once.
    std::uint64_t lowest(std::uint64_t size, std::uint64_t align, resource_kind kind, std::uint64_t below) {
        const offset_allocation a = heap.allocate_lowest(size, align, kind, below);
        EXPECT_EQ(a ? a.offset : npos, model.lowest_fit(size, align, kind, below))
            << size << " below " << below;
        if (!a) return npos;
        EXPECT_TRUE(model.add(a, size, align, kind, heap.size_of(a)));
        give(a);
        return a.offset;
    }
    void give(offset_allocation a) {
        EXPECT_TRUE(heap.deallocate(a));
        model.remove(a.offset);
    }
};

// -- construction ----------------------------------------------------------------------------------

TEST(OffsetHeap, ConstructionRoundsTheSizeDownToMinAlignment) {
    offset_heap h(1000, {64, 256, 1});
    EXPECT_EQ(h.size(), 768u);
    EXPECT_EQ(h.min_alignment(), 256u);
    EXPECT_EQ(h.granularity(), 256u); // a granularity at or below min_alignment: every unit is a page
    EXPECT_EQ(h.free_bytes(), 768u);
    EXPECT_EQ(h.free_block_count(), 1u);
    EXPECT_EQ(h.nodes_in_use(), 1u);
    EXPECT_EQ(h.max_nodes(), 64u);
    EXPECT_EQ(h.metadata_bytes() >= 64 * offset_heap::node_bytes, true);
    EXPECT_TRUE(h.check());
    offset_heap g(std::uint64_t{1} << 20, {16, 16, 4096});
    EXPECT_EQ(g.granularity(), 4096u);
}

TEST(OffsetHeap, ConstructionRefusesInvalidOptions) {
    EXPECT_THROW(offset_heap(1024, {16, 0, 1}), std::invalid_argument);
    EXPECT_THROW(offset_heap(1024, {16, 24, 1}), std::invalid_argument);
    EXPECT_THROW(offset_heap(1024, {16, 16, 0}), std::invalid_argument);
    EXPECT_THROW(offset_heap(1024, {16, 16, 3000}), std::invalid_argument);
    EXPECT_THROW(offset_heap(1024, {1, 16, 1}), std::invalid_argument);
    EXPECT_THROW(offset_heap(1024, {(std::uint32_t{1} << 31) + 1, 16, 1}), std::invalid_argument);
    EXPECT_THROW(offset_heap(0, {}), std::invalid_argument);
    EXPECT_THROW(offset_heap(15, {}), std::invalid_argument);                     // no 16-byte unit
    EXPECT_THROW(offset_heap(std::uint64_t{1} << 36, {}), std::invalid_argument); // 2^32 units
    EXPECT_NO_THROW(offset_heap((std::uint64_t{1} << 36) - 16, {}));              // 2^32 - 1 units
    EXPECT_NO_THROW(offset_heap(16, {2, 16, 1}));
}

// -- bad input ---------------------------------------------------------------------------------------

TEST(OffsetHeap, InvalidRequestsFailWithNoStateChange) {
    offset_heap h(1 << 20, {});
    const offset_allocation keep = h.allocate(100);
    ASSERT_TRUE(keep);
    const strata::stats before = h.stats();
    const std::string json = h.to_json();
    const std::uint64_t big = std::uint64_t{1} << 20;
    for (auto s : {allocation_strategy::min_time, allocation_strategy::min_memory}) {
        EXPECT_FALSE(h.allocate(0, 1, resource_kind::linear, s));
        EXPECT_FALSE(h.allocate(big + 1, 1, resource_kind::linear, s));
        EXPECT_FALSE(h.allocate(~std::uint64_t{0}, 1, resource_kind::linear, s));
        EXPECT_FALSE(h.allocate(big, 1, resource_kind::linear, s)); // the heap's size, but 112 used
        EXPECT_FALSE(h.allocate(64, 0, resource_kind::linear, s));
        EXPECT_FALSE(h.allocate(64, 3, resource_kind::linear, s));
        EXPECT_FALSE(h.allocate(64, 48, resource_kind::linear, s));
        EXPECT_FALSE(h.allocate(64, big * 2, resource_kind::optimal, s)); // above the heap
        EXPECT_FALSE(h.allocate(64, std::uint64_t{1} << 63, resource_kind::linear, s));
    }
    EXPECT_FALSE(h.allocate_lowest(0, 1, resource_kind::linear));
    EXPECT_FALSE(h.allocate_lowest(big + 1, 1, resource_kind::linear));
    EXPECT_FALSE(h.allocate_lowest(64, 0, resource_kind::linear));
    EXPECT_FALSE(h.allocate_lowest(64, 12, resource_kind::linear));
    EXPECT_FALSE(h.allocate_lowest(64, big * 2, resource_kind::linear));
    EXPECT_FALSE(h.allocate_lowest(64, 1, resource_kind::linear, 0)); // nothing starts below 0
    const offset_allocation failed = h.allocate(0);
    EXPECT_EQ(failed.offset, offset_allocation::npos);
    EXPECT_EQ(failed.node, offset_allocation::no_node);
    EXPECT_EQ(h.stats(), before);
    EXPECT_EQ(h.to_json(), json);
    EXPECT_TRUE(h.check());
    EXPECT_TRUE(h.deallocate(keep));
}

TEST(OffsetHeap, AlignmentEqualToTheHeapSizeIsServedAtZero) {
    offset_heap h(std::uint64_t{1} << 30, {});
    const offset_allocation a = h.allocate(16, std::uint64_t{1} << 30);
    ASSERT_TRUE(a);
    EXPECT_EQ(a.offset, 0u);
    EXPECT_FALSE(h.allocate(16, std::uint64_t{1} << 30)); // offset 0 is taken
    EXPECT_TRUE(h.deallocate(a));
    EXPECT_TRUE(h.check());
}

TEST(OffsetHeap, DoubleFreeIsRefusedAndReported) {
    offset_heap h(1 << 16, {});
    const offset_allocation a = h.allocate(64);
    const offset_allocation b = h.allocate(64);
    ASSERT_TRUE(a && b);
    EXPECT_TRUE(h.deallocate(a));
    // A second free while the first is still in flight (not merged yet) is refused.
    expect_refused(h, a, strata::violation_kind::double_free);
    EXPECT_EQ(h.allocation_count(), 1u);
    EXPECT_EQ(h.used_bytes(), 64u);
    // And once it is merged (stats() completes it).
    const strata::stats before = h.stats();
    const std::string json = h.to_json();
    expect_refused(h, a, strata::violation_kind::double_free);
    EXPECT_EQ(h.stats(), before);
    EXPECT_EQ(h.to_json(), json);
    EXPECT_TRUE(h.check());
    EXPECT_TRUE(h.deallocate(b));
    EXPECT_EQ(h.free_block_count(), 1u);
}

TEST(OffsetHeap, ForeignNodeIsRefusedAndReported) {
    offset_heap h(1 << 16, {8, 16, 1});
    const offset_allocation a = h.allocate(64);
    ASSERT_TRUE(a);
    const strata::stats before = h.stats();
    // Block nodes are [2, node_id_limit()): the two sentinels and everything from the limit are foreign.
    ASSERT_EQ(h.node_id_limit(), 10u);
    for (const offset_allocation bad :
         {offset_allocation{a.offset, 0}, offset_allocation{a.offset, 1}, offset_allocation{a.offset, 10},
          offset_allocation{a.offset, 1000}, offset_allocation{}}) {
        expect_refused(h, bad, strata::violation_kind::foreign_pointer);
    }
    // A node in range that describes a free block, a spare node, or a live block at another offset.
    const offset_allocation wrong_offset{a.offset + 16, a.node};
    const std::uint32_t spare = offset_heap_access::spare_head(h);
    offset_allocation tail;
    h.for_each_block([&](const offset_block_info& b) {
        if (!b.used) tail = {b.offset, b.node};
    });
    ASSERT_TRUE(tail);
    ASSERT_GE(spare, 2u);
    ASSERT_LT(spare, h.node_id_limit());
    for (const offset_allocation bad : {wrong_offset, tail, offset_allocation{0, spare}}) {
        if (bad == a) continue;
        expect_refused(h, bad, strata::violation_kind::double_free);
    }
    EXPECT_EQ(h.stats(), before);
    EXPECT_TRUE(h.check());
    EXPECT_TRUE(h.deallocate(a));
}

TEST(OffsetHeap, StaleAllocationWhoseNodeNowDescribesAnotherBlockIsRefused) {
    offset_heap h(1 << 16, {64, 16, 1});
    std::vector<offset_allocation> live;
    for (int i = 0; i < 8; ++i)
        live.push_back(h.allocate(32 + 16 * i));
    const offset_allocation stale = live[3];
    EXPECT_TRUE(h.deallocate(stale));
    EXPECT_TRUE(h.deallocate(live[2])); // merges: stale's node may go back to the spare chain
    h.flush();                          // (the merge of live[2] completes at the next free or here)
    live.erase(live.begin() + 2, live.begin() + 4);
    // Allocate until stale's node is reused for a block at another offset.
    bool reused = false;
    for (int i = 0; i < 40 && !reused; ++i) {
        const offset_allocation x = h.allocate(16 + 16 * (i % 5));
        ASSERT_TRUE(x);
        live.push_back(x);
        reused = x.node == stale.node && x.offset != stale.offset;
    }
    ASSERT_TRUE(reused);
    ASSERT_FALSE(h.is_live(stale));
    const strata::stats before = h.stats();
    expect_refused(h, stale, strata::violation_kind::double_free);
    EXPECT_EQ(h.stats(), before);
    EXPECT_TRUE(h.check());
    for (const offset_allocation& a : live)
        EXPECT_TRUE(h.deallocate(a));
    EXPECT_EQ(h.free_block_count(), 1u);
    EXPECT_TRUE(h.check());
}

TEST(OffsetHeap, NodePoolExhaustionFailsCleanly) {
    // 4 nodes: three allocations each splitting off the tail leave one free tail and no spare.
    checked_heap c(1 << 12, {4, 16, 1});
    offset_heap& h = c.heap;
    c.take(64);
    c.take(64);
    const offset_allocation third = c.take(64);
    EXPECT_EQ(h.nodes_in_use(), 4u);
    const strata::stats before = h.stats();
    const std::string json = h.to_json();
    // Anything but the whole tail needs a split: no spare node.
    EXPECT_FALSE(h.allocate(64));
    EXPECT_FALSE(h.allocate(64, 1, resource_kind::linear, allocation_strategy::min_memory));
    EXPECT_FALSE(h.allocate(64, 1024));
    EXPECT_FALSE(h.allocate_lowest(64, 1, resource_kind::linear));
    EXPECT_EQ(h.stats(), before);
    EXPECT_EQ(h.to_json(), json);
    EXPECT_TRUE(h.check());
    EXPECT_TRUE(c.model.matches(h));
    // The whole tail needs no node.
    const offset_allocation tail = c.take(h.free_bytes());
    EXPECT_EQ(h.free_bytes(), 0u);
    EXPECT_EQ(h.largest_free_block(), 0u);
    EXPECT_EQ(h.fragmentation(), 0.0);
    EXPECT_TRUE(c.model.matches(h));
    // An aligned request needs two spare nodes (front and back): with one it fails cleanly.
    c.give(third);
    c.give(tail); // merges with third's hole: node back to spare
    EXPECT_TRUE(h.check());
    EXPECT_TRUE(c.model.matches(h));
    const strata::stats s2 = h.stats();
    const std::uint32_t spare = h.max_nodes() - h.nodes_in_use();
    ASSERT_EQ(spare, 1u);
    EXPECT_FALSE(h.allocate(64, 1024)); // 128 is not 1024-aligned: front and back splits
    EXPECT_EQ(h.stats(), s2);
    EXPECT_TRUE(h.check());
    c.take(64); // one split only: fits
    EXPECT_TRUE(c.model.matches(h));
}

// -- alignment and rounding ---------------------------------------------------------------------------

TEST(OffsetHeap, EveryPowerOfTwoAlignmentIsHonoured) {
    for (std::uint64_t unit : {std::uint64_t{1}, std::uint64_t{16}, std::uint64_t{256}}) {
        checked_heap c(std::uint64_t{1} << 31, {256, unit, 1});
        const offset_allocation first = c.take(unit); // so offset 0 is taken
        for (unsigned k = 0; k < 31; ++k) {
            for (auto s : {allocation_strategy::min_time, allocation_strategy::min_memory}) {
                const std::uint64_t align = std::uint64_t{1} << k;
                const offset_allocation a = c.take(100, align, resource_kind::linear, s);
                ASSERT_TRUE(a);
                EXPECT_EQ(a.offset % align, 0u) << align;
                EXPECT_EQ(a.offset % unit, 0u);
                EXPECT_NE(a.offset, 0u);
                const std::uint64_t expect = c.model.lowest_fit(100, align, resource_kind::linear, npos);
                const offset_allocation l = c.heap.allocate_lowest(100, align, resource_kind::linear);
                EXPECT_EQ(l ? l.offset : npos, expect) << align;
                if (l) {
                    EXPECT_TRUE(c.model.add(l, 100, align, resource_kind::linear, c.heap.size_of(l)));
                    c.give(l);
                }
                c.give(a);
                ASSERT_TRUE(c.heap.check());
            }
        }
        // 2^31 equals the heap size: only offset 0, which is taken.
        EXPECT_FALSE(c.heap.allocate(16, std::uint64_t{1} << 31));
        c.give(first);
        EXPECT_TRUE(c.model.matches(c.heap));
    }
}

TEST(OffsetHeap, SizesRoundUpToMinAlignment) {
    checked_heap c(1 << 16, {64, 256, 1});
    const offset_allocation a = c.take(1);
    EXPECT_EQ(c.heap.size_of(a), 256u);
    const offset_allocation b = c.take(257);
    EXPECT_EQ(c.heap.size_of(b), 512u);
    EXPECT_EQ(b.offset, 256u);
    const offset_allocation d = c.take(256, 16); // an alignment below min_alignment: min_alignment rules
    EXPECT_EQ(d.offset, 768u);
    EXPECT_EQ(c.heap.used_bytes(), 1024u);
    EXPECT_TRUE(c.model.matches(c.heap));
    c.give(b);
    c.give(a);
    c.give(d);
    EXPECT_EQ(c.heap.free_block_count(), 1u);
}

TEST(OffsetHeap, SizeAndKindOfReportTheBlock) {
    offset_heap h(1 << 16, {64, 16, 4096});
    const offset_allocation a = h.allocate(100, 1, resource_kind::optimal);
    const offset_allocation b = h.allocate(33, 1, resource_kind::linear);
    ASSERT_TRUE(a && b);
    EXPECT_TRUE(h.is_live(a));
    EXPECT_EQ(h.size_of(a), 112u);
    EXPECT_EQ(h.size_of(b), 48u);
    EXPECT_EQ(h.kind_of(a), resource_kind::optimal);
    EXPECT_EQ(h.kind_of(b), resource_kind::linear);
    EXPECT_FALSE(h.is_live(offset_allocation{}));
    EXPECT_STREQ(strata::to_string(resource_kind::optimal), "optimal");
    EXPECT_STREQ(strata::to_string(resource_kind::linear), "linear");
    EXPECT_TRUE(h.deallocate(a));
    EXPECT_FALSE(h.is_live(a));
    EXPECT_TRUE(h.deallocate(b));
}

// -- strategies -----------------------------------------------------------------------------------------

// Holes of 130 units (class [128, 132)) between walls, and the rest of the heap free.
struct strategy_fixture {
    checked_heap c{1 << 20, {256, 16, 1}};
    std::vector<offset_allocation> walls, holes;
    strategy_fixture() {
        for (int i = 0; i < 4; ++i) {
            holes.push_back(c.take(130 * 16));
            walls.push_back(c.take(16));
        }
        for (const offset_allocation& h : holes)
            c.give(h);
        c.heap.flush(); // the last free merges now: every hole is on its class list
    }
};

TEST(OffsetHeap, MinTimeTakesTheFirstClassWhoseEveryBlockFits) {
    strategy_fixture f;
    // 128 units: every block of class [128, 132) fits: the most recently freed hole. Its 2-unit
    // tail is within 128 / 16 units plus 32 bytes: it stays in the block as slack.
    const offset_allocation a = f.c.take(128 * 16);
    EXPECT_EQ(a.offset, f.holes.back().offset);
    EXPECT_EQ(f.c.heap.size_of(a), 130u * 16);
    // 129 units: that class may hold a 128-unit block: min_time looks above it (the tail).
    const offset_allocation b = f.c.take(129 * 16);
    EXPECT_GT(b.offset, f.walls.back().offset);
    EXPECT_TRUE(f.c.model.matches(f.c.heap));
    EXPECT_TRUE(f.c.heap.check());
}

TEST(OffsetHeap, MinMemoryProbesTheOwnClassFirst) {
    strategy_fixture f;
    const offset_allocation b = f.c.take(129 * 16, 1, resource_kind::linear, allocation_strategy::min_memory);
    EXPECT_LT(b.offset, f.walls.back().offset); // one of the 130-unit holes, not the tail
    EXPECT_EQ(b.offset % (131 * 16), 0u);
    EXPECT_EQ(f.c.heap.size_of(b), 130u * 16); // its 1-unit tail kept as slack
    EXPECT_TRUE(f.c.model.matches(f.c.heap));
    EXPECT_TRUE(f.c.heap.check());
}

TEST(OffsetHeap, MinMemoryPrefersTheSmallestBlockOfItsClass) {
    checked_heap c(1 << 20, {256, 16, 1});
    // Holes of 131, 129 and 130 units, in that order (the class list is most recently freed first).
    std::vector<offset_allocation> holes;
    for (std::uint64_t units : {131, 129, 130}) {
        holes.push_back(c.take(units * 16));
        c.take(16);
    }
    c.take(1 << 18); // the tail stays free, but larger
    c.give(holes[0]);
    c.give(holes[1]);
    c.give(holes[2]);
    const offset_allocation a = c.take(129 * 16, 1, resource_kind::linear, allocation_strategy::min_memory);
    EXPECT_EQ(a.offset, holes[1].offset);
    EXPECT_EQ(c.heap.size_of(a), 129u * 16); // an exact fit
    const offset_allocation b = c.take(129 * 16, 1, resource_kind::linear, allocation_strategy::min_memory);
    EXPECT_EQ(b.offset, holes[2].offset);
    EXPECT_EQ(c.heap.size_of(b), 130u * 16); // the 1-unit tail kept as slack
    EXPECT_TRUE(c.model.matches(c.heap));
}

// -- slack and the deferred free ----------------------------------------------------------------------------

// Two holes of `kept` and `split` units (min_alignment `unit`) between walls, nothing else free.
struct slack_fixture {
    checked_heap c;
    offset_allocation kept, split;
    slack_fixture(std::uint64_t unit, std::uint64_t granularity, std::uint64_t kept_units,
                  std::uint64_t split_units)
        : c(1 << 16, {64, unit, granularity}) {
        kept = c.take(kept_units * unit);
        c.take(unit);
        split = c.take(split_units * unit);
        c.take(unit);
        c.take(c.heap.free_bytes());
        c.give(split);
        c.give(kept); // the head of its class when both share one
        c.heap.flush();
    }
};

// Slack is (request units >> 4) + max(1, 32 / min_alignment) units: a tail of that many units stays
// in the block, one unit more is split off as a free block.
TEST(OffsetHeap, ATailOfASixteenthOfTheRequestPlus32BytesStaysAsSlack) {
    struct slack_case {
        std::uint64_t unit, request_units, kept_units;
    };
    for (const slack_case k :
         {slack_case{16, 16, 16 + 1 + 2}, slack_case{16, 1, 1 + 0 + 2}, slack_case{16, 160, 160 + 10 + 2},
          slack_case{64, 1, 1 + 0 + 1}, slack_case{64, 32, 32 + 2 + 1}, slack_case{1, 64, 64 + 4 + 32}}) {
        for (bool lowest : {false, true}) {
            slack_fixture f(k.unit, 1, k.kept_units, k.kept_units + 1);
            const std::uint64_t request = k.request_units * k.unit;
            const auto take = [&] {
                if (!lowest) return f.c.take(request);
                const offset_allocation a = f.c.heap.allocate_lowest(request, 1, resource_kind::linear);
                EXPECT_TRUE(f.c.model.add(a, request, 1, resource_kind::linear, f.c.heap.size_of(a)));
                return a;
            };
            // The tail of the first hole is exactly the slack: kept in the block.
            const offset_allocation a = take();
            EXPECT_EQ(a.offset, f.kept.offset) << k.unit << " " << k.request_units;
            EXPECT_EQ(f.c.heap.size_of(a), k.kept_units * k.unit);
            // One unit more: split off as a free block.
            const offset_allocation b = take();
            EXPECT_EQ(b.offset, f.split.offset);
            EXPECT_EQ(f.c.heap.size_of(b), request);
            const std::uint64_t tail = (k.kept_units + 1 - k.request_units) * k.unit;
            EXPECT_EQ(f.c.heap.free_block_count(), 1u);
            EXPECT_EQ(f.c.heap.free_bytes(), tail);
            // used_bytes, stats and the walk report the slack (the model holds the granted sizes).
            EXPECT_EQ(f.c.heap.used_bytes(), f.c.heap.size() - tail);
            EXPECT_EQ(f.c.heap.stats().in_use, f.c.heap.size() - tail);
            EXPECT_TRUE(f.c.model.matches(f.c.heap));
            EXPECT_TRUE(f.c.heap.check());
            // Freeing the block frees its slack with it.
            f.c.give(a);
            EXPECT_EQ(f.c.heap.free_bytes(), tail + k.kept_units * k.unit);
            EXPECT_TRUE(f.c.model.matches(f.c.heap));
        }
    }
}

TEST(OffsetHeap, WithGranularityThereIsNoSlack) {
    for (bool lowest : {false, true}) {
        slack_fixture f(16, 1024, 17, 18);
        const offset_allocation a =
            lowest ? f.c.heap.allocate_lowest(16 * 16, 1, resource_kind::linear) : f.c.heap.allocate(16 * 16);
        ASSERT_TRUE(a);
        EXPECT_EQ(a.offset, f.kept.offset);
        EXPECT_EQ(f.c.heap.size_of(a), 16u * 16);
        EXPECT_TRUE(f.c.model.add(a, 16 * 16, 1, resource_kind::linear, f.c.heap.size_of(a)));
        EXPECT_EQ(f.c.heap.free_block_count(), 2u); // the 1-unit tail is a free block
        EXPECT_TRUE(f.c.model.matches(f.c.heap));
        EXPECT_TRUE(f.c.heap.check());
    }
}

TEST(OffsetHeap, AFreeCountsAtOnceAndMergesAtTheNextFree) {
    offset_heap h(1 << 16, {64, 16, 1});
    const offset_allocation a = h.allocate(256);
    const offset_allocation b = h.allocate(256);
    const offset_allocation c = h.allocate(256);
    ASSERT_TRUE(a && b && c);
    ASSERT_EQ(c.offset, 512u);
    // Counted free at once: the figures drop and the allocation is no longer live.
    EXPECT_TRUE(h.deallocate(c));
    EXPECT_FALSE(h.is_live(c));
    EXPECT_EQ(h.used_bytes(), 512u);
    EXPECT_EQ(h.free_bytes(), h.size() - 512);
    EXPECT_EQ(h.allocation_count(), 2u);
    // Not merged yet: allocation takes the tail rather than c's block.
    const offset_allocation x = h.allocate(256);
    ASSERT_TRUE(x);
    EXPECT_EQ(x.offset, 768u);
    // A flush merges it (with no free neighbour: c's block keeps its node): the next allocation of
    // its size takes it.
    h.flush();
    EXPECT_EQ(h.free_block_count(), 2u);
    const offset_allocation y = h.allocate(256);
    EXPECT_EQ(y, c);
    // The next free completes the one before: a's block is listed once b's free is asked for.
    EXPECT_TRUE(h.deallocate(a));
    EXPECT_TRUE(h.deallocate(b));
    const offset_allocation z = h.allocate(256);
    EXPECT_EQ(z, a);
    // The queries see a settled heap: b's block, alone, then the tail.
    EXPECT_EQ(h.free_block_count(), 2u);
    EXPECT_EQ(h.stats().in_use, 3u * 256);
    EXPECT_TRUE(h.check());
    EXPECT_TRUE(h.deallocate(x));
    EXPECT_TRUE(h.deallocate(y));
    EXPECT_TRUE(h.deallocate(z));
    EXPECT_EQ(h.stats().in_use, 0u);
    EXPECT_EQ(h.free_block_count(), 1u);
    EXPECT_EQ(h.nodes_in_use(), 1u);
    EXPECT_TRUE(h.check());
}

// When nothing fits, allocation completes the free in flight and tries again.
TEST(OffsetHeap, AnAllocationThatFindsNoFitCompletesTheFreeInFlight) {
    offset_heap h(1 << 16, {64, 16, 1});
    const offset_allocation a = h.allocate(h.size() / 2);
    const offset_allocation b = h.allocate(h.size() / 2);
    ASSERT_TRUE(a && b);
    EXPECT_TRUE(h.deallocate(b));
    const offset_allocation c = h.allocate(h.size() / 2);
    EXPECT_EQ(c, b);
    EXPECT_TRUE(h.deallocate(a));
    const offset_allocation d =
        h.allocate(h.size() / 2, 1, resource_kind::linear, allocation_strategy::min_memory);
    EXPECT_EQ(d, a);
    EXPECT_TRUE(h.check());
}

// The same when the fit needs a node for its split and the merge of the free in flight would give
// one back: the header promises that allocation completes the free before it reports failure.
TEST(OffsetHeap, AnAllocationShortOfASpareNodeCompletesTheFreeInFlight) {
    offset_heap h(1 << 12, {3, 16, 1});
    const offset_allocation a = h.allocate(64);
    const offset_allocation b = h.allocate(64);
    ASSERT_TRUE(a && b);
    ASSERT_EQ(h.nodes_in_use(), 3u); // a, b and the free tail: no spare node
    EXPECT_TRUE(h.deallocate(b));    // merging b with the tail gives a node back
    const offset_allocation c = h.allocate(64);
    EXPECT_TRUE(c) << "min_time fast path: no spare node, the free in flight not completed";
    EXPECT_EQ(c.offset, 64u);
    EXPECT_TRUE(h.check());
}

// largest_free_block() reports what an allocation can reach: the largest class may hold more blocks
// than the own-class probe looks at, the largest behind them. metrics() walks them all.
TEST(OffsetHeap, LargestFreeBlockIsServable) {
    for (auto s : {allocation_strategy::min_time, allocation_strategy::min_memory}) {
        const std::uint64_t n = offset_heap::own_class_probes + 4;
        checked_heap c((n + 1) * (132 + 1) * 16, {1024, 16, 1});
        std::vector<offset_allocation> holes;
        holes.push_back(c.take(131 * 16));
        c.take(16);
        for (std::uint64_t i = 0; i < n; ++i) {
            holes.push_back(c.take(129 * 16));
            c.take(16);
        }
        c.take(c.heap.free_bytes()); // nothing else free
        for (const offset_allocation& h : holes)
            c.give(h); // the 131-unit hole first: last on its list, out of the probe's reach
        EXPECT_EQ(c.heap.metrics().largest_free_block, 131u * 16);
        EXPECT_EQ(c.heap.largest_free_block(), 129u * 16);
        EXPECT_EQ(c.heap.stats().largest_free_block, 129u * 16);
        EXPECT_TRUE(c.model.matches(c.heap));
        const offset_allocation a = c.heap.allocate(c.heap.largest_free_block(), 1, resource_kind::linear, s);
        EXPECT_TRUE(a);
        EXPECT_TRUE(c.heap.check());
        // Once the list is short enough, the largest block is in reach again.
        c.give(c.take(16)); // nothing: keeps the model in step
        for (std::size_t i = 2; i < holes.size(); ++i)
            c.model.add(c.heap.allocate(129 * 16), 129 * 16, 1, resource_kind::linear, 129 * 16);
        EXPECT_EQ(c.heap.largest_free_block(), 131u * 16);
    }
}

// -- allocate_lowest ------------------------------------------------------------------------------------

TEST(OffsetHeap, AllocateLowestTakesTheLowestFitBelowTheLimit) {
    checked_heap c(1 << 16, {256, 16, 1});
    std::vector<offset_allocation> a;
    for (int i = 0; i < 10; ++i)
        a.push_back(c.take(256));
    c.give(a[2]); // hole [512, 768)
    c.give(a[5]); // hole [1280, 1536)
    c.give(a[6]); // hole [1280, 1792)
    EXPECT_EQ(c.lowest(512, 1, resource_kind::linear, npos), 1280u);
    EXPECT_EQ(c.lowest(100, 1, resource_kind::linear, 1280), 512u);
    EXPECT_EQ(c.lowest(512, 1, resource_kind::linear, 1280), npos); // the hole below is 256
    EXPECT_EQ(c.lowest(100, 1, resource_kind::linear, 512), npos);  // nothing starts below 512
    EXPECT_EQ(c.lowest(100, 256, resource_kind::linear, 513), 512u);
    // A limit that is not a multiple of min_alignment: a block starting below it still counts.
    EXPECT_EQ(c.lowest(16, 1, resource_kind::linear, 520), 512u);
    EXPECT_TRUE(c.model.matches(c.heap));
    EXPECT_TRUE(c.heap.check());
}

TEST(OffsetHeap, AllocateLowestWalksFromTheStartNode) {
    checked_heap c(1 << 16, {256, 16, 1});
    std::vector<offset_allocation> a;
    for (int i = 0; i < 10; ++i)
        a.push_back(c.take(256));
    c.give(a[2]); // hole [512, 768)
    c.give(a[5]);
    c.give(a[6]); // hole [1280, 1792): a[6]'s node merges into a[5]'s and goes spare
    std::map<std::uint64_t, std::uint32_t> node_at;
    c.heap.for_each_block([&](const offset_block_info& b) { node_at[b.offset] = b.node; });
    ASSERT_TRUE(c.model.matches(c.heap));
    const auto lowest_from = [&](std::uint64_t size, std::uint64_t below, std::uint32_t start) {
        const offset_allocation l = c.heap.allocate_lowest(size, 1, resource_kind::linear, below, start);
        if (!l) return npos;
        EXPECT_TRUE(c.model.add(l, size, 1, resource_kind::linear, c.heap.size_of(l)));
        c.give(l);
        return l.offset;
    };
    // From a later block: the fits before it are skipped.
    EXPECT_EQ(lowest_from(100, npos, node_at.at(1280)), 1280u);
    EXPECT_EQ(lowest_from(100, npos, a[3].node), 1280u);       // a used block between the holes
    EXPECT_EQ(lowest_from(100, npos, a[9].node), 2560u);       // the last used block: the tail after it
    EXPECT_EQ(lowest_from(100, 1280, node_at.at(1280)), npos); // nothing from there starts below 1280
    // From the first fit, or an earlier block: the lowest fit.
    EXPECT_EQ(lowest_from(100, npos, node_at.at(512)), 512u);
    EXPECT_EQ(lowest_from(100, npos, a[0].node), 512u);
    EXPECT_EQ(lowest_from(512, npos, a[0].node), 1280u);
    // A start that describes no block now (a spare node, a sentinel, out of range): the first block.
    ASSERT_EQ(node_at.count(1536), 0u);
    EXPECT_EQ(lowest_from(100, npos, a[6].node), 512u);
    EXPECT_EQ(lowest_from(100, npos, offset_heap_access::spare_head(c.heap)), 512u);
    for (std::uint32_t foreign : {0u, 1u, c.heap.node_id_limit(), offset_allocation::no_node})
        EXPECT_EQ(lowest_from(100, npos, foreign), 512u) << foreign;
    EXPECT_TRUE(c.model.matches(c.heap));
    EXPECT_TRUE(c.heap.check());
}

// -- granularity ------------------------------------------------------------------------------------------

TEST(OffsetHeap, SameKindsPackTightlyAndKindsChangeOnAPageBoundary) {
    checked_heap c(1 << 20, {256, 16, 4096});
    const offset_allocation l1 = c.take(100, 1, resource_kind::linear);
    const offset_allocation l2 = c.take(100, 1, resource_kind::linear);
    EXPECT_EQ(l1.offset, 0u);
    EXPECT_EQ(l2.offset, 112u); // adjacent, no padding
    const offset_allocation o1 = c.take(100, 1, resource_kind::optimal);
    EXPECT_EQ(o1.offset, 4096u); // the next page, no further
    const offset_allocation o2 = c.take(100, 1, resource_kind::optimal);
    EXPECT_EQ(o2.offset, 4096u + 112u);
    // The hole [224, 4096) follows linear l2 and ends on o1's page boundary: a linear block goes
    // right after l2, an optimal one never does.
    const offset_allocation l3 = c.take(100, 1, resource_kind::linear);
    EXPECT_EQ(l3.offset, 224u);
    const offset_allocation o3 = c.heap.allocate_lowest(16, 1, resource_kind::optimal);
    ASSERT_TRUE(o3);
    EXPECT_EQ(o3.offset, 4096u + 224u);
    EXPECT_TRUE(c.model.add(o3, 16, 1, resource_kind::optimal, c.heap.size_of(o3)));
    EXPECT_TRUE(c.model.granularity_ok());
    EXPECT_TRUE(c.model.matches(c.heap));
    EXPECT_TRUE(c.heap.check());
}

TEST(OffsetHeap, AHoleSharingPagesWithBothKindsIsSettledAtBothEnds) {
    checked_heap c(1 << 16, {256, 16, 1024});
    c.take(512, 1, resource_kind::linear);                                  // [0, 512)
    const offset_allocation filler = c.take(512, 1, resource_kind::linear); // [512, 1024)
    const offset_allocation x = c.take(256, 1, resource_kind::optimal);     // [1024, 1280)
    const offset_allocation o = c.take(256, 1, resource_kind::optimal);     // [1280, 1536)
    ASSERT_EQ(x.offset, 1024u);
    ASSERT_EQ(o.offset, 1280u);
    c.give(filler);
    c.give(x); // hole [512, 1280): linear page 0 before it, optimal on page 1 after it
    // A linear block may use the rest of page 0, but not reach into page 1.
    EXPECT_EQ(c.model.lowest_fit(256, 1, resource_kind::linear, npos), 512u);
    EXPECT_EQ(c.model.lowest_fit(768, 1, resource_kind::linear, npos), 2048u);
    EXPECT_EQ(c.model.lowest_fit(256, 1, resource_kind::optimal, npos), 1024u);
    const offset_allocation big_linear = c.heap.allocate_lowest(768, 1, resource_kind::linear);
    ASSERT_TRUE(big_linear);
    EXPECT_EQ(big_linear.offset, 2048u); // after o, on the next page
    EXPECT_TRUE(c.model.add(big_linear, 768, 1, resource_kind::linear, c.heap.size_of(big_linear)));
    const offset_allocation opt = c.heap.allocate_lowest(256, 1, resource_kind::optimal);
    ASSERT_TRUE(opt);
    EXPECT_EQ(opt.offset, 1024u); // skips the rest of page 0, touches o
    EXPECT_TRUE(c.model.add(opt, 256, 1, resource_kind::optimal, c.heap.size_of(opt)));
    const offset_allocation lin = c.heap.allocate_lowest(512, 1, resource_kind::linear);
    ASSERT_TRUE(lin);
    EXPECT_EQ(lin.offset, 512u); // right after the first block: same page, same kind
    EXPECT_TRUE(c.model.add(lin, 512, 1, resource_kind::linear, c.heap.size_of(lin)));
    // Good fit settles the same way.
    const offset_allocation opt2 = c.take(200, 1, resource_kind::optimal);
    EXPECT_TRUE(opt2.offset >= 3072u || (opt2.offset >= 1536 && opt2.offset < 2048)) << opt2.offset;
    EXPECT_TRUE(c.model.matches(c.heap));
    EXPECT_TRUE(c.heap.check());
}

TEST(OffsetHeap, RandomKindsNeverShareAGranularityPage) {
    for (std::uint64_t gran : {std::uint64_t{256}, std::uint64_t{1024}, std::uint64_t{65536}}) {
        test_rng rng{gran};
        checked_heap c(std::uint64_t{8} << 20, {2048, 16, gran});
        std::vector<offset_allocation> live;
        for (int op = 0; op < 4000; ++op) {
            if (live.empty() || rng.between(0, 9) < 6) {
                const std::uint64_t size = rng.between(1, 8192);
                const std::uint64_t align = std::uint64_t{1} << rng.between(0, 12);
                const auto kind = rng.between(0, 1) ? resource_kind::optimal : resource_kind::linear;
                offset_allocation a;
                if (rng.between(0, 3) == 0) {
                    const std::uint64_t expect = c.model.lowest_fit(size, align, kind, npos);
                    a = c.heap.allocate_lowest(size, align, kind);
                    ASSERT_EQ(a ? a.offset : npos, expect) << "gran " << gran << " op " << op;
                } else {
                    a = c.heap.allocate(size, align, kind,
                                        rng.between(0, 1) ? allocation_strategy::min_memory
                                                          : allocation_strategy::min_time);
                }
                if (a) {
                    ASSERT_TRUE(c.model.add(a, size, align, kind, c.heap.size_of(a))) << "op " << op;
                    live.push_back(a);
                }
            } else {
                const std::size_t k = rng.between(0, live.size() - 1);
                c.give(live[k]);
                live[k] = live.back();
                live.pop_back();
            }
            if (op % 97 == 0) {
                ASSERT_TRUE(c.heap.check());
                ASSERT_TRUE(c.model.matches(c.heap));
            }
        }
        for (const offset_allocation& a : live)
            c.give(a);
        EXPECT_TRUE(c.heap.check());
        EXPECT_EQ(c.heap.free_block_count(), 1u);
    }
}

// -- statistics, walks, JSON
// ---------------------------------------------------------------------------------

TEST(OffsetHeap, StatisticsFollowTheModelExactly) {
    checked_heap c(1 << 20, {1024, 16, 1});
    EXPECT_TRUE(c.model.matches(c.heap));
    EXPECT_EQ(c.heap.fragmentation(), 0.0);
    std::vector<offset_allocation> a;
    for (int i = 0; i < 64; ++i)
        a.push_back(c.take(64 + 48 * i));
    for (int i = 0; i < 64; i += 2)
        c.give(a[i]);
    EXPECT_TRUE(c.model.matches(c.heap));
    EXPECT_GT(c.heap.fragmentation(), 0.0);
    EXPECT_LT(c.heap.fragmentation(), 1.0);
    for (int i = 1; i < 64; i += 2)
        c.give(a[i]);
    EXPECT_TRUE(c.model.matches(c.heap));
    EXPECT_EQ(c.heap.free_block_count(), 1u);
    EXPECT_EQ(c.heap.stats().total_allocations, 64u);
    c.heap.reset();
    EXPECT_EQ(c.heap.stats().total_allocations, 0u);
    EXPECT_EQ(c.heap.stats().peak, 0u);
    EXPECT_TRUE(c.heap.check());
}

TEST(OffsetHeap, MovingAHeapKeepsItsAllocations) {
    offset_heap h(1 << 16, {64, 16, 1024});
    const offset_allocation a = h.allocate(100, 1, resource_kind::optimal);
    const offset_allocation b = h.allocate(300, 256);
    ASSERT_TRUE(a && b);
    const std::string json = h.to_json();
    offset_heap g(std::move(h));
    EXPECT_EQ(g.to_json(), json);
    EXPECT_TRUE(g.is_live(a));
    EXPECT_TRUE(g.check());
    offset_heap k(1 << 10, {});
    k = std::move(g);
    EXPECT_TRUE(k.deallocate(a));
    EXPECT_TRUE(k.deallocate(b));
    EXPECT_TRUE(k.check());
    EXPECT_EQ(k.free_block_count(), 1u);
}

TEST(OffsetHeap, ResetFreesEverythingAndOldAllocationsAreStale) {
    offset_heap h(1 << 16, {64, 16, 256});
    const offset_allocation a = h.allocate(100, 1, resource_kind::optimal);
    const offset_allocation b = h.allocate(100, 64);
    ASSERT_TRUE(a && b);
    h.reset();
    EXPECT_TRUE(h.check());
    EXPECT_EQ(h.allocation_count(), 0u);
    EXPECT_EQ(h.free_bytes(), h.size());
    EXPECT_EQ(h.nodes_in_use(), 1u);
    expect_refused(h, b, strata::violation_kind::double_free);
    EXPECT_TRUE(h.check());
}

#if STRATA_TEST_HAVE_JSON
void expect_json_matches(const offset_heap& h, bool blocks) {
    const nlohmann::json j = nlohmann::json::parse(h.to_json(blocks));
    EXPECT_EQ(j.at("size").get<std::uint64_t>(), h.size());
    EXPECT_EQ(j.at("min_alignment").get<std::uint64_t>(), h.min_alignment());
    EXPECT_EQ(j.at("granularity").get<std::uint64_t>(), h.granularity());
    EXPECT_EQ(j.at("used_bytes").get<std::uint64_t>(), h.used_bytes());
    EXPECT_EQ(j.at("free_bytes").get<std::uint64_t>(), h.free_bytes());
    EXPECT_EQ(j.at("allocations").get<std::uint32_t>(), h.allocation_count());
    EXPECT_EQ(j.at("free_blocks").get<std::uint32_t>(), h.free_block_count());
    EXPECT_EQ(j.at("largest_free_block").get<std::uint64_t>(), h.largest_free_block());
    EXPECT_NEAR(j.at("fragmentation").get<double>(), h.fragmentation(), 1e-6);
    EXPECT_EQ(j.at("nodes_in_use").get<std::uint32_t>(), h.nodes_in_use());
    EXPECT_EQ(j.at("max_nodes").get<std::uint32_t>(), h.max_nodes());
    if (!blocks) {
        EXPECT_FALSE(j.contains("blocks"));
        return;
    }
    std::vector<offset_block_info> walked;
    h.for_each_block([&](const offset_block_info& b) { walked.push_back(b); });
    const nlohmann::json& list = j.at("blocks");
    ASSERT_EQ(list.size(), walked.size());
    for (std::size_t i = 0; i < walked.size(); ++i) {
        EXPECT_EQ(list[i].at("offset").get<std::uint64_t>(), walked[i].offset);
        EXPECT_EQ(list[i].at("size").get<std::uint64_t>(), walked[i].size);
        EXPECT_EQ(list[i].at("type").get<std::string>(),
                  walked[i].used ? strata::to_string(walked[i].kind) : "free");
    }
}
#else
// Without nlohmann/json: balanced braces and brackets, and one block object per block.
void expect_json_matches(const offset_heap& h, bool blocks) {
    const std::string s = h.to_json(blocks);
    int depth = 0;
    std::size_t objects = 0;
    for (char ch : s) {
        if (ch == '{' || ch == '[') ++depth;
        if (ch == '}' || ch == ']') --depth;
        if (ch == '{') ++objects;
        ASSERT_GE(depth, 0);
    }
    EXPECT_EQ(depth, 0);
    EXPECT_EQ(objects, 1 + (blocks ? h.allocation_count() + h.free_block_count() : 0));
    EXPECT_NE(s.find("\"allocations\":" + std::to_string(h.allocation_count())), std::string::npos);
}
#endif

TEST(OffsetHeap, ToJsonParsesAndAgreesWithTheHeap) {
    offset_heap h(1 << 20, {256, 16, 4096});
    expect_json_matches(h, true);
    std::vector<offset_allocation> a;
    for (int i = 0; i < 20; ++i)
        a.push_back(
            h.allocate(100 + 300 * i, 1, i % 3 == 0 ? resource_kind::optimal : resource_kind::linear));
    for (int i = 1; i < 20; i += 4)
        h.deallocate(a[i]);
    expect_json_matches(h, true);
    expect_json_matches(h, false);
    const std::string s = h.to_json();
    EXPECT_NE(s.find("\"type\":\"free\""), std::string::npos);
    EXPECT_NE(s.find("\"type\":\"linear\""), std::string::npos);
    EXPECT_NE(s.find("\"type\":\"optimal\""), std::string::npos);
}

// The JSON's figures describe one state: nodes_in_use is allocations + free_blocks, the free in
// flight merged for all of them.
TEST(OffsetHeap, ToJsonCountsNodesAfterTheFreeInFlightMerges) {
    offset_heap h(1 << 16, {64, 16, 1});
    const offset_allocation a = h.allocate(256);
    const offset_allocation b = h.allocate(256);
    ASSERT_TRUE(a && h.allocate(256));
    EXPECT_TRUE(h.deallocate(a));
    EXPECT_TRUE(h.deallocate(b)); // in flight: merges with a's block into [0, 512)
    const std::string s = h.to_json(false);
    EXPECT_NE(s.find("\"allocations\":1,"), std::string::npos) << s;
    EXPECT_NE(s.find("\"free_blocks\":2,"), std::string::npos) << s;
    EXPECT_NE(s.find("\"nodes_in_use\":3,"), std::string::npos) << s;
    EXPECT_EQ(h.nodes_in_use(), 3u);
}

// -- check() against corruption -----------------------------------------------------------------------------

// A heap with used blocks of both kinds and free blocks between them; n[i] is the i-th block's node.
struct corruptible {
    offset_heap h{1 << 16, {64, 16, 1024}};
    std::vector<offset_allocation> a;
    corruptible() {
        for (int i = 0; i < 8; ++i)
            a.push_back(h.allocate(512, 1, i < 4 ? resource_kind::linear : resource_kind::optimal));
        h.deallocate(a[1]);
        h.deallocate(a[5]);
        h.flush(); // both merged: the corruption below meets a settled heap
    }
};

template <class Corrupt>
void expect_corruption_seen(Corrupt corrupt, const char* what) {
    corruptible c;
    ASSERT_TRUE(c.h.check());
    corrupt(c);
    recording_handler rec;
    EXPECT_FALSE(c.h.check()) << what;
    ASSERT_FALSE(rec.empty()) << what;
    EXPECT_EQ(rec.all().front().kind, strata::violation_kind::corruption) << what;
    EXPECT_EQ(rec.count(), 1u) << what;
    EXPECT_EQ(rec.last().allocator, "strata::offset_heap");
}

TEST(OffsetHeap, CheckSeesCorruptedNodes) {
    using A = offset_heap_access;
    expect_corruption_seen([](corruptible& c) { A::offset(c.h, c.a[2].node) += 1; }, "gap in the tiling");
    expect_corruption_seen([](corruptible& c) { A::size(c.h, c.a[2].node) += 1; }, "overlap");
    expect_corruption_seen([](corruptible& c) { A::prev_phys(c.h, c.a[3].node) = c.a[0].node; }, "prev_phys");
    expect_corruption_seen([](corruptible& c) { A::next_phys(c.h, c.a[3].node) = 9999; },
                           "link out of range");
    expect_corruption_seen([](corruptible& c) { A::next_phys(c.h, c.a[3].node) = c.h.node_id_limit(); },
                           "link at the node id limit");
    expect_corruption_seen([](corruptible& c) { A::next_phys(c.h, c.a[3].node) = 1; },
                           "link to the list_end sentinel");
    expect_corruption_seen([](corruptible& c) { A::next_phys(c.h, c.a[3].node) = 0; },
                           "link to the edge sentinel mid-range: the blocks stop short");
    expect_corruption_seen([](corruptible& c) { A::next_phys(c.h, c.a[3].node) = c.a[0].node; }, "loop");
    expect_corruption_seen([](corruptible& c) { A::prev_free(c.h, c.a[2].node) = 7; }, "unknown kind");
    expect_corruption_seen([](corruptible& c) { A::next_free(c.h, c.a[2].node) = 1; },
                           "used block turned free: two free blocks adjacent or unlisted");
    expect_corruption_seen([](corruptible& c) { A::next_free(c.h, c.a[1].node) = c.h.node_id_limit(); },
                           "free-list link at the node id limit");
    expect_corruption_seen([](corruptible& c) { A::next_free(c.h, c.a[1].node) = 0; },
                           "free-list link to the edge sentinel");
    expect_corruption_seen([](corruptible& c) { A::next_free(c.h, 0) = 1; },
                           "edge sentinel no longer looks used");
    expect_corruption_seen(
        [](corruptible& c) { A::next_free(c.h, A::spare_head(c.h)) = c.h.node_id_limit(); },
        "spare link at the node id limit");
    expect_corruption_seen([](corruptible& c) { A::next_free(c.h, A::spare_head(c.h)) = 0; },
                           "spare link to the edge sentinel");
    expect_corruption_seen([](corruptible& c) { A::next_free(c.h, c.a[1].node) = c.a[1].node; },
                           "free list loop");
    expect_corruption_seen([](corruptible& c) { A::prev_free(c.h, c.a[1].node) = c.a[0].node; },
                           "free list back link");
    expect_corruption_seen([](corruptible& c) { A::spare_count(c.h) -= 1; }, "spare count");
    expect_corruption_seen([](corruptible& c) { A::live(c.h) += 1; }, "live counter");
    expect_corruption_seen([](corruptible& c) { A::fl_bitmap(c.h) ^= 1u << 20; }, "first-level bit");
    expect_corruption_seen([](corruptible& c) { A::sl_bitmap(c.h, 0) ^= 1u; }, "second-level bit");
    expect_corruption_seen([](corruptible& c) { A::size(c.h, A::spare_head(c.h)) = 5; }, "spare node sized");
    // a[3] is linear, a[4] optimal, adjacent on one 1024-byte page boundary: make a[4] linear and a[3]
    // optimal so that a[2] (linear) and a[3] (optimal) share page 1.
    expect_corruption_seen(
        [](corruptible& c) {
            A::prev_free(c.h, c.a[3].node) = static_cast<std::uint32_t>(resource_kind::optimal);
        },
        "kinds sharing a page");
}

// -- randomized model run
// ---------------------------------------------------------------------------------------

TEST(OffsetHeap, RandomizedRunAgreesWithTheModel) {
    for (std::uint64_t seed : {1u, 2u, 3u}) {
        test_rng rng{seed * 7919};
        const std::uint64_t gran = seed == 1 ? 1 : seed == 2 ? 4096 : 65536;
        const std::uint64_t unit = seed == 3 ? 64 : 16;
        checked_heap c(std::uint64_t{32} << 20, {seed == 2 ? 64u : 8192u, unit, gran});
        std::vector<offset_allocation> live;
        std::vector<offset_allocation> freed;
        const int ops = 20000;
        for (int op = 0; op < ops; ++op) {
            const std::size_t roll = rng.between(0, 99);
            if (roll < 55 || live.empty()) {
                const std::uint64_t size =
                    rng.between(0, 9) == 0 ? rng.between(1, 1 << 20) : rng.between(1, 4096);
                const std::uint64_t align = std::uint64_t{1} << rng.between(0, rng.between(0, 1) ? 6 : 16);
                const auto kind = rng.between(0, 1) ? resource_kind::optimal : resource_kind::linear;
                const auto s =
                    rng.between(0, 1) ? allocation_strategy::min_memory : allocation_strategy::min_time;
                const strata::stats before = c.heap.stats();
                offset_allocation a;
                if (roll < 10) {
                    const std::uint64_t below =
                        rng.between(0, 1) ? npos : rng.between(0, c.heap.size() / unit) * unit;
                    const std::uint64_t expect = c.model.lowest_fit(size, align, kind, below);
                    // With fewer than two spare nodes a fit whose splits need them is passed over
                    // for a later one that needs fewer.
                    const bool roomy = c.heap.nodes_in_use() + 2 <= c.heap.max_nodes();
                    a = c.heap.allocate_lowest(size, align, kind, below);
                    if (roomy) {
                        ASSERT_EQ(a ? a.offset : npos, expect) << "op " << op;
                    } else if (a) {
                        ASSERT_GE(a.offset, expect) << "op " << op;
                    }
                } else {
                    a = c.heap.allocate(size, align, kind, s);
                }
                if (a) {
                    ASSERT_TRUE(c.model.add(a, size, align, kind, c.heap.size_of(a))) << "op " << op;
                    live.push_back(a);
                } else {
                    ASSERT_EQ(c.heap.stats(), before);
                }
            } else if (roll < 95) {
                const std::size_t k = rng.between(0, live.size() - 1);
                c.give(live[k]);
                freed.push_back(live[k]);
                live[k] = live.back();
                live.pop_back();
            } else if (!freed.empty()) { // a stale free: refused unless the node came back at that offset
                const offset_allocation f = freed[rng.between(0, freed.size() - 1)];
                if (!c.heap.is_live(f)) {
                    const strata::stats before = c.heap.stats();
                    recording_handler rec;
                    ASSERT_FALSE(c.heap.deallocate(f));
                    if (strata::test::checks_on) {
                        ASSERT_TRUE(rec.saw_one(strata::violation_kind::double_free));
                    }
                    ASSERT_EQ(c.heap.stats(), before);
                }
            }
            if (op % 64 == 0) {
                ASSERT_TRUE(c.heap.check()) << "op " << op;
                ASSERT_TRUE(c.model.matches(c.heap)) << "op " << op;
                // What largest_free_block() reports can be had (when a node is spare for the split and
                // no kind spoils it).
                const std::uint64_t largest = c.heap.largest_free_block();
                if (gran == 1 && largest != 0 && c.heap.nodes_in_use() < c.heap.max_nodes()) {
                    const offset_allocation a = c.heap.allocate(largest);
                    ASSERT_TRUE(a) << "op " << op;
                    ASSERT_TRUE(c.model.add(a, largest, 1, resource_kind::linear, c.heap.size_of(a)));
                    c.give(a);
                }
            }
        }
        ASSERT_TRUE(c.model.matches(c.heap));
        while (!live.empty()) {
            const std::size_t k = rng.between(0, live.size() - 1);
            c.give(live[k]);
            live[k] = live.back();
            live.pop_back();
        }
        EXPECT_TRUE(c.heap.check());
        EXPECT_TRUE(c.model.matches(c.heap));
        EXPECT_EQ(c.heap.free_block_count(), 1u);
        EXPECT_EQ(c.heap.largest_free_block(), c.heap.size());
        EXPECT_EQ(c.heap.nodes_in_use(), 1u);
    }
}

// A granularity page larger than the heap makes it one page: a linear and an optimal block never
// both live in it.
TEST(OffsetHeap, GranularityLargerThanTheHeapKeepsKindsApart) {
    const std::uint64_t size = (std::uint64_t{1} << 32) - 1;
    offset_heap h(size, offset_heap_options{64, 1, std::uint64_t{1} << 32});
    const offset_allocation lin = h.allocate(16, 1, resource_kind::linear);
    ASSERT_TRUE(lin);
    const offset_allocation opt = h.allocate(16, 1, resource_kind::optimal);
    if (opt) {
        // Both lie in the one 2^32-byte page [0, 2^32).
        ADD_FAILURE() << "optimal block at " << opt.offset
                      << " shares the 2^32-byte page with the linear block at " << lin.offset;
    }
    EXPECT_EQ(h.granularity(), std::uint64_t{1} << 32);
    EXPECT_TRUE(h.check());
}

// A heap of the largest size (2^32 - 1 units) serves requests in its top class, the whole heap too.
TEST(OffsetHeap, AHeapOfTheLargestSizeServesAWholeHeapRequest) {
    const std::uint64_t size = ((std::uint64_t{1} << 32) - 1) * 16;
    offset_heap h(size, offset_heap_options{8, 16, 1});
    ASSERT_EQ(h.size(), size);
    EXPECT_EQ(h.largest_free_block(), size);
    const offset_allocation a = h.allocate(h.largest_free_block());
    EXPECT_TRUE(a) << "allocate(largest_free_block()) fails on a fresh heap of 2^32 - 1 units";
    offset_heap g(size, offset_heap_options{8, 16, 1});
    EXPECT_TRUE(g.allocate(size - (std::uint64_t{1} << 29), 1, resource_kind::linear,
                           allocation_strategy::min_memory));
    offset_heap k(size, offset_heap_options{8, 16, 1});
    EXPECT_TRUE(k.allocate(size - 1600)); // 2^32 - 101 units
    EXPECT_TRUE(h.check() && g.check() && k.check());
}

// With no spare node, a block of exactly the request's size (no split, no node) still serves it.
TEST(OffsetHeap, WithNoSpareNodeAnExactFitInTheOwnClassIsStillServed) {
    offset_heap h(1 << 20, offset_heap_options{5, 16, 1});
    const offset_allocation x0 = h.allocate(1000 * 16); // [0, 1000) units
    const offset_allocation s1 = h.allocate(16);
    const offset_allocation x2 = h.allocate(3000 * 16);
    const offset_allocation s3 = h.allocate(16);
    const offset_allocation rest = h.allocate(h.free_bytes()); // the whole tail: 5 nodes, none spare
    ASSERT_TRUE(x0 && s1 && x2 && s3 && rest);
    ASSERT_TRUE(h.deallocate(x0));
    ASSERT_TRUE(h.deallocate(x2));
    h.flush();
    ASSERT_EQ(h.nodes_in_use(), h.max_nodes());        // free holes of 1000 and 3000 units, no spare node
    const offset_allocation t = h.allocate(1000 * 16); // the 1000-unit hole takes it whole: no node needed
    EXPECT_TRUE(t) << "min_time fails although the 1000-unit hole fits exactly";
    if (t) {
        EXPECT_EQ(t.offset, 0u);
    }
    EXPECT_TRUE(h.check());
}

// to_json stays whole with figures of 20 digits.
TEST(OffsetHeap, ToJsonOfAHeapWithLargeFiguresIsComplete) {
    const std::uint64_t unit = std::uint64_t{1} << 62;
    offset_heap h(3 * unit, offset_heap_options{64, unit, 1});
    const offset_allocation a = h.allocate(2 * unit);
    ASSERT_TRUE(a);
    const std::string json = h.to_json(false);
    // Every key of the totals is present and the object is closed.
    EXPECT_NE(json.find("\"max_nodes\":64"), std::string::npos) << json;
    EXPECT_EQ(json.back(), '}') << json;
    EXPECT_EQ(std::count(json.begin(), json.end(), '{'), std::count(json.begin(), json.end(), '}')) << json;
}

} // namespace
