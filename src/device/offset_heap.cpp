// offset_heap: construction, the slow allocation paths (alignment, granularity, strategy, the
// own-class probe, lowest-offset placement), the walks (metrics, JSON) and the checker. The hot
// paths (good-fit allocate, free) are inline in the header.
#include "strata/device/offset_heap.hpp"

#include <algorithm>
#include <cstdio>
#include <stdexcept>

namespace strata {

namespace {
constexpr const char* heap_name = "strata::offset_heap";

bool pow2(std::uint64_t v) noexcept { return v != 0 && (v & (v - 1)) == 0; }
} // namespace

// ---------------------------------------------------------------------------------------------------
// Construction
// ---------------------------------------------------------------------------------------------------

offset_heap::offset_heap(std::uint64_t size, const offset_heap_options& options) {
    if (!pow2(options.min_alignment))
        throw std::invalid_argument("strata::offset_heap: min_alignment must be a power of two");
    if (!pow2(options.granularity))
        throw std::invalid_argument("strata::offset_heap: granularity must be a power of two");
    if (options.max_nodes < 2 || options.max_nodes > (std::uint32_t{1} << 31))
        throw std::invalid_argument("strata::offset_heap: max_nodes must be in [2, 2^31]");
    unit_ = options.min_alignment;
    unit_shift_ = static_cast<unsigned>(std::countr_zero(unit_));
    const std::uint64_t units = size >> unit_shift_;
    if (units == 0 || units >= (std::uint64_t{1} << 32))
        throw std::invalid_argument("strata::offset_heap: size must hold 1 to 2^32 - 1 min_alignment units");
    bytes_ = units << unit_shift_;
    const std::uint64_t g = options.granularity > unit_ ? options.granularity >> unit_shift_ : 1;
    // Every offset is below 2^32 units, so a page of 2^32 units holds the whole heap, as any larger one.
    gran_units_ = std::min<std::uint64_t>(g, std::uint64_t{1} << 32);
    granularity_ = std::max(options.granularity, unit_); // a smaller page never separates two blocks
    gran_shift_ = static_cast<unsigned>(std::countr_zero(gran_units_));
    sliver_units_ = unit_ >= 32 ? 1u : static_cast<std::uint32_t>(32 >> unit_shift_);
    max_nodes_ = options.max_nodes;
    nodes_ = std::make_unique<node[]>(std::size_t{max_nodes_} + first_node);
    reset();
}

void offset_heap::reset() noexcept {
    const std::uint32_t end = max_nodes_ + first_node;
    // The sentinels: edge looks used (and has no offset a live allocation could name).
    nodes_[edge] = node{~std::uint32_t{0}, 0, edge, edge, list_end, used_tag};
    nodes_[list_end] = node{~std::uint32_t{0}, 0, edge, edge, list_end, list_end};
    for (std::uint32_t i = first_node; i < end; ++i)
        nodes_[i] = node{0, 0, edge, edge, list_end, i + 1 < end ? i + 1 : list_end};
    std::fill(std::begin(heads_), std::end(heads_), list_end);
    std::fill(std::begin(sl_bitmap_), std::end(sl_bitmap_), 0u);
    fl_bitmap_ = 0;
    pending_ = edge;
    spare_ = first_node;
    spare_count_ = max_nodes_;
    used_units_ = 0;
    peak_units_ = 0;
    live_ = 0;
    total_ = 0;
    first_ = take_spare();
    node& b = nodes_[first_];
    b.offset = 0;
    b.size = static_cast<std::uint32_t>(bytes_ >> unit_shift_);
    b.prev_phys = edge;
    b.next_phys = edge;
    link(first_, b);
}

// ---------------------------------------------------------------------------------------------------
// Allocation slow paths
// ---------------------------------------------------------------------------------------------------

// Splits `front` units off the start of unlisted free node `n` as a free block of its own.
void offset_heap::split_front(std::uint32_t n, std::uint32_t front) noexcept {
    node& b = nodes_[n];
    const std::uint32_t f = take_spare();
    node& g = nodes_[f];
    g.offset = b.offset;
    g.size = front;
    g.prev_phys = b.prev_phys;
    g.next_phys = n;
    nodes_[b.prev_phys].next_phys = f; // edge's link at the start: harmless
    if (b.prev_phys == edge) first_ = f;
    b.prev_phys = f;
    b.offset += front;
    b.size -= front;
    link(f, g);
}

// Probes at most own_class_probes blocks at the head of the class `units` falls in: the first that
// fits, or (smallest) the smallest that fits.
offset_allocation offset_heap::probe_class(std::uint32_t units, std::uint64_t align, resource_kind kind,
                                           bool smallest) noexcept {
    const unsigned index = class_index(units);
    std::uint32_t best = list_end;
    std::uint64_t best_at = npos;
    std::uint32_t best_size = 0;
    unsigned probes = 0;
    for (std::uint32_t n = heads_[index]; n != list_end && probes < own_class_probes;
         n = nodes_[n].next_free, ++probes) {
        const std::uint32_t size = nodes_[n].size;
        if (size < units || (best != list_end && size >= best_size)) continue;
        const std::uint64_t at = place(n, units, align, kind);
        if (at == npos) continue;
        if (!smallest) { // the first that can be had (use() refuses a split with no spare node)
            if (offset_allocation r = use(n, static_cast<std::uint32_t>(at), units, kind)) return r;
            continue;
        }
        best = n;
        best_at = at;
        best_size = size;
        if (size == units) break;
    }
    if (best == list_end) return {};
    return use(best, static_cast<std::uint32_t>(best_at), units, kind);
}

// Alignment above min_alignment, granularity conflicts, min_memory and exhaustion come here.
// Good fit first for the size plus the worst alignment padding; when a neighbour's kind spoils that
// block, the size plus the worst granularity padding too (front: up to the larger of the alignment
// and the page, back: up to a page); then the own-class probe.
offset_allocation offset_heap::allocate_slow(std::uint32_t units, std::uint64_t align, resource_kind kind,
                                             allocation_strategy strategy) noexcept {
    flush(); // the block in flight may be what fits
    const std::uint64_t a = align > unit_ ? align >> unit_shift_ : 1;
    const bool smallest = strategy == allocation_strategy::min_memory;
    if (smallest) {
        if (offset_allocation r = probe_class(units, a, kind, true)) return r;
    }
    std::uint32_t n = find_fit(std::uint64_t{units} + (a - 1));
    if (n != list_end) {
        const std::uint64_t at = place(n, units, a, kind);
        if (at != npos) {
            if (offset_allocation r = use(n, static_cast<std::uint32_t>(at), units, kind)) return r;
        }
    }
    if (gran_units_ > 1) {
        const std::uint64_t front = std::max<std::uint64_t>(a, gran_units_) - 1;
        n = find_fit(std::uint64_t{units} + front + (gran_units_ - 1));
        if (n != list_end) {
            const std::uint64_t at = place(n, units, a, kind);
            if (at != npos) {
                if (offset_allocation r = use(n, static_cast<std::uint32_t>(at), units, kind)) return r;
            }
        }
    }
    // The own class last: a block there may fit exactly, which needs no spare node.
    if (!smallest) {
        if (offset_allocation r = probe_class(units, a, kind, false)) return r;
    }
    return {};
}

offset_allocation offset_heap::allocate_lowest(std::uint64_t size, std::uint64_t align, resource_kind kind,
                                               std::uint64_t below, std::uint32_t start) noexcept {
    if (size - 1 >= bytes_ || align - 1 >= bytes_ || (align & (align - 1)) != 0) return {};
    const auto units = static_cast<std::uint32_t>((size + (unit_ - 1)) >> unit_shift_);
    const std::uint64_t a = align > unit_ ? align >> unit_shift_ : 1;
    // The first unit that does not start below `below` (a block at unit u starts below it when
    // u * min_alignment < below, so a limit inside a unit keeps that unit).
    const std::uint64_t limit =
        below == npos ? npos : (below >> unit_shift_) + ((below & (unit_ - 1)) != 0 ? 1 : 0);
    flush();
    // A start that describes no block (a spare node, or out of range) walks from the first block.
    if (start - first_node >= max_nodes_ || nodes_[start].size == 0) start = first_;
    std::uint32_t steps = 0;
    for (std::uint32_t n = start; n != edge && steps < max_nodes_; n = nodes_[n].next_phys, ++steps) {
        const node& b = nodes_[n];
        if (b.offset >= limit) break;
        if (b.next_free == used_tag || b.size < units) continue;
        const std::uint64_t at = place(n, units, a, kind);
        if (at == npos) continue;
        if (at >= limit) break;
        // A split this fit needs may find no spare node: a later block may need none.
        if (offset_allocation r = use(n, static_cast<std::uint32_t>(at), units, kind)) return r;
    }
    return {};
}

bool offset_heap::refuse(offset_allocation a) const noexcept {
    if (a.node - first_node >= max_nodes_) {
        (void)STRATA_VERIFY(1, false, foreign_pointer, heap_name, nullptr,
                            "deallocate of an allocation whose node this heap does not have");
    } else {
        (void)STRATA_VERIFY(1, false, double_free, heap_name, nullptr,
                            "deallocate of an allocation that is not live (freed already, or its node now "
                            "describes another block)");
    }
    return false;
}

// ---------------------------------------------------------------------------------------------------
// Queries and walks
// ---------------------------------------------------------------------------------------------------

std::uint64_t offset_heap::largest_free_block() const noexcept {
    settle();
    if (fl_bitmap_ == 0) return 0;
    const unsigned fl = 31u - static_cast<unsigned>(std::countl_zero(fl_bitmap_));
    const unsigned sl = 31u - static_cast<unsigned>(std::countl_zero(sl_bitmap_[fl]));
    std::uint32_t largest = 0;
    std::uint32_t steps = 0;
    // As far as the own-class probe of allocate() looks, so that the answer can be had.
    for (std::uint32_t n = heads_[(fl << sli) + sl]; n != list_end && steps < own_class_probes;
         n = nodes_[n].next_free, ++steps)
        largest = std::max(largest, nodes_[n].size);
    return std::uint64_t{largest} << unit_shift_;
}

heap_metrics offset_heap::metrics() const noexcept {
    heap_metrics_builder b;
    for_each_block([&](const offset_block_info& i) {
        b.add(block_info{static_cast<std::size_t>(i.offset), static_cast<std::size_t>(i.size), i.used});
    });
    b.m.capacity = bytes_;
    b.m.requested_bytes = b.m.used_bytes;
    return b.m;
}

std::string offset_heap::to_json(bool blocks) const {
    settle(); // every figure below describes one state
    std::string out;
    char buf[640]; // the totals line: 11 figures of up to 20 digits and their names
    std::snprintf(
        buf, sizeof buf,
        "{\"size\":%llu,\"min_alignment\":%llu,\"granularity\":%llu,\"used_bytes\":%llu,"
        "\"free_bytes\":%llu,\"allocations\":%u,\"free_blocks\":%u,\"largest_free_block\":%llu,"
        "\"fragmentation\":%.6f,\"nodes_in_use\":%u,\"max_nodes\":%u",
        static_cast<unsigned long long>(bytes_), static_cast<unsigned long long>(unit_),
        static_cast<unsigned long long>(granularity()), static_cast<unsigned long long>(used_bytes()),
        static_cast<unsigned long long>(free_bytes()), live_, free_block_count(),
        static_cast<unsigned long long>(largest_free_block()), fragmentation(), nodes_in_use(), max_nodes_);
    out += buf;
    if (blocks) {
        out += ",\"blocks\":[";
        bool first = true;
        for_each_block([&](const offset_block_info& i) {
            std::snprintf(buf, sizeof buf, "%s{\"offset\":%llu,\"size\":%llu,\"type\":\"%s\"}",
                          first ? "" : ",", static_cast<unsigned long long>(i.offset),
                          static_cast<unsigned long long>(i.size), i.used ? to_string(i.kind) : "free");
            out += buf;
            first = false;
        });
        out += ']';
    }
    out += '}';
    return out;
}

// ---------------------------------------------------------------------------------------------------
// Checker
// ---------------------------------------------------------------------------------------------------

bool offset_heap::corrupt(const char* what) const noexcept {
    (void)STRATA_VERIFY(0, false, corruption, heap_name, nullptr, what);
    return false;
}

bool offset_heap::check() const noexcept {
    settle();
    const auto in_range = [&](std::uint32_t n) { return n - first_node < max_nodes_; };
    if (nodes_[edge].next_free != used_tag) return corrupt("the edge sentinel no longer looks used");
    // The blocks, in address order.
    std::uint64_t at = 0;
    std::uint32_t blocks = 0, used = 0, free_blocks = 0;
    std::uint64_t used_units = 0;
    std::uint32_t prev = edge;
    bool prev_free = false;
    std::uint32_t last_used = edge; // for the granularity rule
    if (!in_range(first_)) return corrupt("no first block");
    for (std::uint32_t n = first_; n != edge; n = nodes_[n].next_phys) {
        if (!in_range(n)) return corrupt("a neighbour link out of range");
        if (++blocks > max_nodes_) return corrupt("the block list loops");
        const node& b = nodes_[n];
        if (b.size == 0) return corrupt("a spare node in the block list");
        if (b.prev_phys != prev) return corrupt("a block's prev_phys is not the block before it");
        if (b.offset != at) return corrupt("the blocks do not tile the range (gap or overlap)");
        at += b.size;
        const bool is_used = b.next_free == used_tag;
        if (is_used) {
            ++used;
            used_units += b.size;
            if (b.prev_free > static_cast<std::uint32_t>(resource_kind::optimal))
                return corrupt("a used block of no known kind");
            if (last_used != edge && gran_units_ > 1) {
                const node& l = nodes_[last_used];
                if (l.prev_free != b.prev_free && (std::uint64_t{l.offset} + l.size - 1) >> gran_shift_ ==
                                                      std::uint64_t{b.offset} >> gran_shift_)
                    return corrupt("used blocks of different kinds share a granularity page");
            }
            last_used = n;
        } else {
            ++free_blocks;
            if (prev_free) return corrupt("two free blocks are adjacent (a merge was missed)");
        }
        prev_free = !is_used;
        prev = n;
    }
    if (at != bytes_ >> unit_shift_) return corrupt("the blocks do not cover the range");
    if (used != live_ || used_units != used_units_)
        return corrupt("the live counters disagree with the blocks");
    // The class lists.
    std::uint32_t listed = 0;
    for (unsigned index = 0; index < class_count; ++index) {
        const unsigned fl = index >> sli;
        const bool bit = (sl_bitmap_[fl] >> (index & (sl_count - 1)) & 1u) != 0;
        if (bit != (heads_[index] != list_end)) return corrupt("a second-level bit disagrees with its list");
        std::uint32_t back = list_end;
        for (std::uint32_t n = heads_[index]; n != list_end; n = nodes_[n].next_free) {
            if (!in_range(n)) return corrupt("a free-list link out of range");
            if (++listed > free_blocks)
                return corrupt("more listed blocks than free blocks (a loop or a used block)");
            const node& b = nodes_[n];
            if (b.size == 0 || b.next_free == used_tag) return corrupt("a listed node is not a free block");
            if (class_index(b.size) != index) return corrupt("a free block is listed in the wrong class");
            if (b.prev_free != back) return corrupt("a free-list back link is wrong");
            back = n;
        }
    }
    for (unsigned fl = 0; fl < fl_count; ++fl)
        if (((fl_bitmap_ >> fl & 1u) != 0) != (sl_bitmap_[fl] != 0))
            return corrupt("a first-level bit disagrees with its second level");
    if (listed != free_blocks) return corrupt("a free block is on no list");
    // The spare chain.
    std::uint32_t spares = 0;
    for (std::uint32_t n = spare_; n != list_end; n = nodes_[n].next_free) {
        if (!in_range(n)) return corrupt("a spare link out of range");
        if (++spares > spare_count_) return corrupt("the spare chain is longer than counted (or loops)");
        if (nodes_[n].size != 0) return corrupt("a block on the spare chain");
    }
    if (spares != spare_count_) return corrupt("the spare count disagrees with the chain");
    if (spares + blocks != max_nodes_) return corrupt("nodes are lost: neither blocks nor spare");
    return true;
}

} // namespace strata
