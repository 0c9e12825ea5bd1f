// libFuzzer target: strata::offset_heap with its options drawn from the first bytes (min_alignment
// 1, 16 or 64; granularity none, 256 or 4096; 8, 64 or 1024 nodes, so the node pool runs out too).
// Ops decoded from the input: allocate (any size, alignment, kind and strategy, invalid ones
// included), allocate_lowest from the first block or a start node (a block's, or any id) checked
// against a reference search, free (counted at once, merged at the next free), a bad free (a stale,
// in-flight or forged allocation: one report, nothing changed), flush, reset, and the largest free
// block served. A model (a map of the used intervals, each with the size the heap granted) checks
// every answer: rounding and slack, alignment, no overlap, kinds kept a granularity page apart, the
// counters after every op and the walk as an op of its own; check() after every op (every 16th with
// 1024 nodes).
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <iterator>
#include <map>
#include <utility>
#include <vector>

#include "strata/device/offset_heap.hpp"

#include "fuzz_common.hpp"

namespace {

using namespace strata_fuzz;
using strata::allocation_strategy;
using strata::offset_allocation;
using strata::offset_heap;
using strata::resource_kind;

constexpr std::uint64_t npos = offset_heap::npos;

std::uint64_t round_up(std::uint64_t v, std::uint64_t a) { return (v + a - 1) / a * a; }

struct used_block {
    std::uint64_t size;
    resource_kind kind;
    std::uint32_t node;
};

// The used intervals of the heap; the free blocks are the gaps between them.
class heap_model {
public:
    heap_model(std::uint64_t size, std::uint64_t unit, std::uint64_t granularity)
        : size_(size), unit_(unit), page_(granularity > unit ? granularity : 0) {}

    void add(offset_allocation a, std::uint64_t size, std::uint64_t align, resource_kind kind,
             std::uint64_t granted) {
        // Rounded to min_alignment; without granularity, plus a slack of at most 1/16 of the request
        // and 32 bytes (at least one unit).
        const std::uint64_t rounded = round_up(size, unit_);
        const std::uint64_t slack =
            page_ == 0 ? ((rounded / unit_ >> 4) + std::max<std::uint64_t>(1, 32 / unit_)) * unit_ : 0;
        require(granted >= rounded && granted <= rounded + slack && granted % unit_ == 0,
                "size not rounded to min_alignment (plus slack)");
        require(a.offset % align == 0 && a.offset % unit_ == 0, "misaligned allocation");
        require(a.offset + granted <= size_, "allocation past the end");
        auto next = used_.lower_bound(a.offset);
        require(next == used_.end() || a.offset + granted <= next->first, "overlaps the next block");
        if (next != used_.begin()) {
            auto prev = std::prev(next);
            require(prev->first + prev->second.size <= a.offset, "overlaps the previous block");
            if (page_ != 0 && prev->second.kind != kind)
                require((prev->first + prev->second.size - 1) / page_ != a.offset / page_,
                        "kinds share a granularity page");
        }
        if (page_ != 0 && next != used_.end() && next->second.kind != kind)
            require((a.offset + granted - 1) / page_ != next->first / page_,
                    "kinds share a granularity page");
        used_.emplace(a.offset, used_block{granted, kind, a.node});
        used_bytes_ += granted;
    }
    used_block remove(std::uint64_t offset) {
        auto it = used_.find(offset);
        require(it != used_.end(), "model: unknown block");
        const used_block b = it->second;
        used_bytes_ -= b.size;
        used_.erase(it);
        return b;
    }
    void clear() {
        used_.clear();
        used_bytes_ = 0;
    }

    // The lowest offset below `below` where the request fits (see offset_heap::place()), in the
    // gaps that start at `from` or later (a walk from the block at `from`).
    [[nodiscard]] std::uint64_t lowest_fit(std::uint64_t size, std::uint64_t align, resource_kind kind,
                                           std::uint64_t below, std::uint64_t from = 0) const {
        const std::uint64_t bytes = round_up(size, unit_);
        std::uint64_t start = 0;
        const used_block* prev = nullptr;
        std::uint64_t prev_end = 0;
        auto try_gap = [&](std::uint64_t end, const used_block* next) -> std::uint64_t {
            if (end <= start || start < from) return npos - 1; // no gap, or one before the walk
            std::uint64_t at = round_up(start, std::max(align, unit_));
            if (page_ != 0 && prev != nullptr && prev->kind != kind && (prev_end - 1) / page_ == at / page_)
                at = round_up(at + 1, page_);
            if (at >= below) return npos;
            if (at + bytes > end) return npos - 1;
            if (page_ != 0 && next != nullptr && next->kind != kind &&
                (at + bytes - 1) / page_ == end / page_)
                return npos - 1;
            return at;
        };
        for (const auto& [off, u] : used_) {
            const std::uint64_t r = try_gap(off, &u);
            if (r != npos - 1) return r;
            start = off + u.size;
            prev = &u;
            prev_end = start;
        }
        const std::uint64_t r = try_gap(size_, nullptr);
        return r == npos - 1 ? npos : r;
    }

    // Compares the heap's counters and walk with the model.
    void compare(const offset_heap& h) const {
        require(h.used_bytes() == used_bytes_, "used_bytes drifted");
        require(h.allocation_count() == used_.size(), "allocation_count drifted");
        std::uint64_t at = 0, largest = 0, free_blocks = 0;
        auto u = used_.begin();
        h.for_each_block([&](const strata::offset_block_info& b) {
            require(b.offset == at, "walk: blocks do not tile");
            at += b.size;
            if (b.used) {
                require(u != used_.end() && u->first == b.offset && u->second.size == b.size &&
                            u->second.kind == b.kind && u->second.node == b.node,
                        "walk: a used block the model does not have");
                ++u;
            } else {
                ++free_blocks;
                largest = std::max(largest, b.size);
            }
        });
        require(u == used_.end() && at == size_, "walk: blocks missing");
        require(h.free_block_count() == free_blocks, "free_block_count drifted");
        require(h.nodes_in_use() == used_.size() + free_blocks, "nodes_in_use drifted");
        require(h.metrics().largest_free_block == largest, "metrics().largest_free_block wrong");
        require(h.largest_free_block() <= largest && (largest == 0) == (h.largest_free_block() == 0),
                "largest_free_block() out of range");
    }

    [[nodiscard]] const std::map<std::uint64_t, used_block>& used() const noexcept { return used_; }
    [[nodiscard]] std::uint64_t used_bytes() const noexcept { return used_bytes_; }

private:
    std::uint64_t size_;
    std::uint64_t unit_;
    std::uint64_t page_;
    std::map<std::uint64_t, used_block> used_;
    std::uint64_t used_bytes_ = 0;
};

namespace detail {
inline unsigned reports = 0;
inline strata::violation_kind last_kind{};
} // namespace detail

// A free the heap must refuse: one double_free or foreign_pointer report, nothing changed.
void refused_free(offset_heap& h, offset_allocation a) {
    const strata::stats before = h.stats();
    detail::reports = 0;
    bool answer = true;
    {
        strata::scoped_violation_handler catcher([](const strata::violation& v) {
            detail::last_kind = v.kind;
            ++detail::reports;
        });
        answer = h.deallocate(a);
    }
    require(!answer, "a bad free was accepted");
    require(detail::reports == 1, "a bad free was not reported exactly once");
    require(detail::last_kind == strata::violation_kind::double_free ||
                detail::last_kind == strata::violation_kind::foreign_pointer,
            "a bad free reported as something else");
    require(h.stats() == before, "a bad free changed the heap");
}

std::uint64_t draw_bytes(reader& in) {
    const std::uint8_t kind = in.byte();
    const std::uint16_t v = in.u16();
    switch (kind % 16) {
    case 0: return 0;
    case 1: return ~std::uint64_t{0} - v;
    case 2: return std::uint64_t{v} << 6;
    case 3: return std::uint64_t{v} << 4;
    default: return 1 + (v & 2047);
    }
}

std::uint64_t draw_alignment(reader& in) {
    const std::uint8_t a = in.byte();
    if (a % 32 == 31) return a % 3 == 0 ? 0 : 48;
    if (a % 32 == 30) return std::uint64_t{1} << 40;
    return std::uint64_t{1} << (a % 17);
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    abort_on_violation();
    reader in(data, size);
    const std::uint8_t config = in.byte();
    const std::uint64_t unit = config % 3 == 0 ? 1 : config % 3 == 1 ? 16 : 64;
    const std::uint64_t gran = (config / 3) % 3 == 0 ? 1 : (config / 3) % 3 == 1 ? 256 : 4096;
    const std::uint32_t nodes = (config / 9) % 3 == 0 ? 8 : (config / 9) % 3 == 1 ? 64 : 1024;
    const std::uint64_t heap_bytes = (std::uint64_t{1} << 20) + in.u16();
    offset_heap h(heap_bytes, {nodes, unit, gran});
    heap_model m(h.size(), unit, gran);
    std::vector<offset_allocation> freed; // a few freed allocations, for bad frees
    unsigned ops = 0;
    while (!in.done()) {
        switch (in.byte() % 10) {
        case 0:
        case 1:
        case 2:
        case 3: { // allocate
            const std::uint64_t n = draw_bytes(in);
            const std::uint64_t align = draw_alignment(in);
            const std::uint8_t ks = in.byte();
            const auto kind = ks & 1 ? resource_kind::optimal : resource_kind::linear;
            const auto strategy = ks & 2 ? allocation_strategy::min_memory : allocation_strategy::min_time;
            const strata::stats before = h.stats();
            const offset_allocation a = h.allocate(n, align, kind, strategy);
            const bool valid = n != 0 && n <= h.size() && is_pow2(align) && align <= h.size();
            if (!valid) require(!a, "invalid request served");
            if (a) {
                require(a.offset != offset_allocation::npos && a.node >= 2 && a.node < h.node_id_limit(),
                        "bad allocation fields");
                m.add(a, n, align, kind, h.size_of(a));
                require(h.kind_of(a) == kind && h.is_live(a), "kind_of / is_live wrong");
            } else {
                require(a.offset == offset_allocation::npos && a.node == offset_allocation::no_node,
                        "failed allocation fields");
                require(h.stats() == before, "a failed allocation changed the heap");
            }
            break;
        }
        case 4: { // allocate_lowest, against the reference search
            const std::uint64_t n = 1 + (in.u16() & 8191);
            const std::uint64_t align = std::uint64_t{1} << (in.byte() % 14);
            const auto kind = in.byte() & 1 ? resource_kind::optimal : resource_kind::linear;
            const std::uint64_t below =
                in.byte() % 4 == 0 ? npos : std::uint64_t{in.u16()} * 16 + in.byte() % 16;
            // The start: none, the node of a block the walk reports, or any id (a spare node, a
            // sentinel, out of range: the walk then starts at the first block).
            const std::uint8_t sk = in.byte();
            const std::uint16_t sv = in.u16();
            std::uint32_t start = offset_allocation::no_node;
            std::uint64_t from = 0;
            if (sk % 3 != 0) {
                std::vector<std::pair<std::uint32_t, std::uint64_t>> blocks;
                h.for_each_block(
                    [&](const strata::offset_block_info& b) { blocks.emplace_back(b.node, b.offset); });
                start = sk % 3 == 1 ? blocks[sv % blocks.size()].first : sv % (h.node_id_limit() + 4);
                for (const auto& [node, offset] : blocks)
                    if (node == start) from = offset;
            }
            const bool nodes_spare = h.nodes_in_use() + 2 <= h.max_nodes();
            const offset_allocation a = h.allocate_lowest(n, align, kind, below, start);
            const std::uint64_t expect = m.lowest_fit(n, align, kind, below, from);
            // With fewer than two spare nodes a fit whose splits need them is passed over for a
            // later one that needs fewer.
            if (nodes_spare)
                require((a ? a.offset : npos) == expect, "allocate_lowest: not the lowest fit");
            else if (a)
                require(expect != npos && a.offset >= expect, "allocate_lowest: below the lowest fit");
            if (a) m.add(a, n, align, kind, h.size_of(a));
            break;
        }
        case 5:
        case 6: { // free
            if (m.used().empty()) break;
            auto it = m.used().begin();
            std::advance(it, static_cast<long>(in.u16() % m.used().size()));
            const offset_allocation a{it->first, it->second.node};
            m.remove(a.offset);
            require(h.deallocate(a), "a live allocation was refused");
            require(!h.is_live(a), "an allocation in flight is live");
            if (freed.size() < 16) {
                freed.push_back(a);
            } else {
                freed[in.byte() % 16] = a;
            }
            break;
        }
        case 7: { // a bad free: stale, forged node, forged offset
            const std::uint8_t k = in.byte();
            offset_allocation a;
            if (k % 3 == 0 && !freed.empty()) {
                a = freed[in.byte() % freed.size()];
            } else if (k % 3 == 1) { // the sentinels 0 and 1, or from node_id_limit() on
                const std::uint8_t v = in.byte();
                a = {std::uint64_t{in.u16()} * 16, v < 2 ? std::uint32_t{v} : h.node_id_limit() + v};
            } else if (!m.used().empty()) {
                const auto& [off, u] = *m.used().begin();
                a = {off + unit * (1 + in.byte() % 4), u.node};
            }
            if (a.node == offset_allocation::no_node || h.is_live(a)) break; // reused since: not bad
            refused_free(h, a);
            break;
        }
        case 8: { // the walk and the figures against the model; sometimes a flush first; rarely, reset
            const std::uint8_t k = in.byte();
            if (k % 16 == 0) {
                h.reset();
                m.clear();
                freed.clear();
            } else if (k % 4 == 1) {
                h.flush();
            }
            m.compare(h);
            break;
        }
        default: { // what largest_free_block() reports can be had
            const std::uint64_t largest = h.largest_free_block();
            if (gran == 1 && largest != 0 && h.nodes_in_use() < h.max_nodes()) {
                const offset_allocation a = h.allocate(largest, 1, resource_kind::linear,
                                                       in.byte() & 1 ? allocation_strategy::min_memory
                                                                     : allocation_strategy::min_time);
                require(static_cast<bool>(a), "largest_free_block() not servable");
                m.add(a, largest, 1, resource_kind::linear, h.size_of(a));
            }
            break;
        }
        }
        // check() walks every node: after every op on the small pools, every 16th on the large one
        // (a broken invariant stays broken until it is seen).
        if (nodes <= 64 || ++ops % 16 == 0) require(h.check(), "check() failed");
        require(h.used_bytes() == m.used_bytes() && h.allocation_count() == m.used().size(),
                "the counters drifted");
    }
    m.compare(h);
    for (const auto& [off, u] : std::map<std::uint64_t, used_block>(m.used()))
        require(h.deallocate({off, u.node}), "a live allocation was refused at the end");
    require(h.check(), "check() failed after freeing everything");
    require(h.free_block_count() == 1 && h.largest_free_block() == h.size() && h.nodes_in_use() == 1,
            "blocks left unmerged");
    return 0;
}
