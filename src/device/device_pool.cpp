// device_pool: blocks of device memory made through the application's callbacks, each an
// offset_heap; allocation routing (shared block, new block, dedicated), retention, stats, the
// checker and incremental defragmentation (pass planning and commit).
#include "strata/device/device_pool.hpp"

#include <algorithm>
#include <cstdio>
#include <stdexcept>

#include "strata/core/check.hpp"

namespace strata {

namespace {
constexpr const char* pool_name = "strata::device_pool";

bool pow2(std::uint64_t v) noexcept { return v != 0 && (v & (v - 1)) == 0; }

// A pass placed a block at `at`, inside one of `holes` (a block's free blocks at the start of the
// pass, in address order). Placed past the hole's start, it split a free gap off the hole's front,
// and the hole's node now describes the placed block above that gap: a walk from it would miss the
// gap. Walks that would start at that hole start at the one before it (or at the first block).
void restart_hole(std::vector<offset_block_info>& holes, std::uint64_t at) {
    const auto after =
        std::upper_bound(holes.begin(), holes.end(), at,
                         [](std::uint64_t v, const offset_block_info& h) { return v < h.offset; });
    if (after == holes.begin()) return;
    const auto k = static_cast<std::size_t>(after - holes.begin()) - 1;
    if (holes[k].offset == at) return; // placed at the start: the node still begins the hole
    holes[k].node = k > 0 ? holes[k - 1].node : offset_allocation::no_node;
}

// a + b > limit, without overflow.
bool exceeds(std::uint64_t a, std::uint64_t b, std::uint64_t limit) noexcept {
    return b > limit || a > limit - b;
}

bool corrupt(const char* what) {
    (void)STRATA_VERIFY(0, false, corruption, pool_name, nullptr, what);
    return false;
}
} // namespace

const char* to_string(device_error e) noexcept {
    switch (e) {
    case device_error::none: return "none";
    case device_error::invalid_argument: return "invalid_argument";
    case device_error::budget_exceeded: return "budget_exceeded";
    case device_error::out_of_device_memory: return "out_of_device_memory";
    }
    return "unknown";
}

// ---------------------------------------------------------------------------------------------------
// Construction
// ---------------------------------------------------------------------------------------------------

device_pool::device_pool(device_memory_callbacks callbacks, const device_pool_options& options)
    : callbacks_(std::move(callbacks)), options_(options) {
    if (!callbacks_.allocate || !callbacks_.free)
        throw std::invalid_argument("strata::device_pool: both memory callbacks are required");
    if (options_.block_size == 0)
        throw std::invalid_argument("strata::device_pool: block_size must not be 0");
    if (!pow2(options_.min_alignment) || !pow2(options_.granularity))
        throw std::invalid_argument(
            "strata::device_pool: min_alignment and granularity must be powers of two");
    if (options_.block_size / options_.min_alignment >= (std::uint64_t{1} << 32))
        throw std::invalid_argument("strata::device_pool: block_size above 2^32 - 1 min_alignment units");
    if (options_.nodes_per_block < 2 || options_.nodes_per_block > (std::uint32_t{1} << 31))
        throw std::invalid_argument("strata::device_pool: nodes_per_block must be in [2, 2^31]");
    if (options_.dedicated_threshold == 0)
        options_.dedicated_threshold = std::max<std::uint64_t>(options_.block_size / 2, 1);
}

device_pool::~device_pool() {
    if (table_.size() != 0)
        (void)STRATA_VERIFY(1, false, leak, pool_name, nullptr,
                            "device_pool destroyed with live allocations");
    for (block_slot& b : blocks_)
        if (b.size != 0) callbacks_.free(b.memory, b.size);
}

// ---------------------------------------------------------------------------------------------------
// Blocks
// ---------------------------------------------------------------------------------------------------

std::uint32_t device_pool::new_slot() {
    if (!free_slots_.empty()) {
        const std::uint32_t i = free_slots_.back();
        free_slots_.pop_back();
        return i;
    }
    free_slots_.reserve(blocks_.size() + 1); // so that free_slot never allocates
    blocks_.emplace_back();
    return static_cast<std::uint32_t>(blocks_.size() - 1);
}

void device_pool::free_slot(std::uint32_t index) {
    block_slot& b = blocks_[index];
    callbacks_.free(b.memory, b.size);
    device_bytes_ -= b.size;
    b = block_slot{};
    free_slots_.push_back(index); // never allocates: new_slot reserved room for every slot
}

// Makes a shared block of block_size bytes, or half that down to `at_least` when the budget or the
// device refuses the larger one. Sets last_error_ when none can be had.
bool device_pool::make_block(std::uint64_t size, std::uint64_t at_least, std::uint32_t& index) {
    bool device_refused = false;
    for (std::uint64_t sz = size; sz >= at_least && sz >= options_.min_alignment; sz /= 2) {
        if (exceeds(device_bytes_, sz, options_.budget)) continue;
        std::uint64_t memory = 0;
        if (!callbacks_.allocate(sz, &memory)) {
            device_refused = true;
            continue;
        }
        try {
            auto heap = std::make_unique<offset_heap>(
                sz,
                offset_heap_options{options_.nodes_per_block, options_.min_alignment, options_.granularity});
            std::vector<device_allocation> owner(heap->node_id_limit());
            index = new_slot();
            block_slot& b = blocks_[index];
            b.memory = memory;
            b.size = sz;
            b.heap = std::move(heap);
            b.owner = std::move(owner);
        } catch (...) {
            callbacks_.free(memory, sz);
            throw;
        }
        device_bytes_ += sz;
        return true;
    }
    last_error_ = device_refused ? device_error::out_of_device_memory : device_error::budget_exceeded;
    return false;
}

std::uint32_t device_pool::empty_blocks() const noexcept {
    std::uint32_t n = 0;
    for (const block_slot& b : blocks_)
        if (b.heap != nullptr && b.heap->allocation_count() == 0) ++n;
    return n;
}

std::uint64_t device_pool::release_if_unneeded(std::uint32_t index) {
    const block_slot& b = blocks_[index];
    if (b.heap == nullptr || b.heap->allocation_count() != 0 || empty_blocks() <= options_.keep_empty_blocks)
        return 0;
    const std::uint64_t bytes = b.size;
    free_slot(index);
    return bytes;
}

std::uint32_t device_pool::trim() {
    std::uint32_t freed = 0;
    for (std::uint32_t i = 0; i < blocks_.size(); ++i) {
        if (blocks_[i].heap != nullptr && blocks_[i].heap->allocation_count() == 0) {
            free_slot(i);
            ++freed;
        }
    }
    return freed;
}

// ---------------------------------------------------------------------------------------------------
// Allocation
// ---------------------------------------------------------------------------------------------------

device_allocation device_pool::allocate(std::uint64_t size, std::uint64_t align, resource_kind kind) {
    last_error_ = device_error::none;
    if (size == 0 || !pow2(align) || size > ~std::uint64_t{0} - options_.min_alignment) {
        last_error_ = device_error::invalid_argument;
        return {};
    }
    const std::uint64_t pad = align > options_.min_alignment ? align - options_.min_alignment : 0;
    // What a block's heap grants: the size rounded up to min_alignment. A block holds it when it
    // holds `rounded + pad` (a multiple of min_alignment, so the heap's rounding down changes nothing).
    const std::uint64_t rounded = (size + (options_.min_alignment - 1)) & ~(options_.min_alignment - 1);
    if (size >= options_.dedicated_threshold || exceeds(rounded, pad, options_.block_size)) {
        // Dedicated: memory of its own (allocations from the device are aligned for any resource).
        if (exceeds(device_bytes_, size, options_.budget)) {
            last_error_ = device_error::budget_exceeded;
            return {};
        }
        const std::uint32_t index = new_slot();
        std::uint64_t memory = 0;
        bool made = false;
        try {
            made = callbacks_.allocate(size, &memory);
        } catch (...) {
            free_slots_.push_back(index); // never allocates: new_slot reserved room for every slot
            throw;
        }
        if (!made) {
            free_slots_.push_back(index);
            last_error_ = device_error::out_of_device_memory;
            return {};
        }
        blocks_[index].memory = memory;
        blocks_[index].size = size;
        device_bytes_ += size;
        device_allocation h;
        try {
            h = table_.emplace(
                entry{device_allocation_info{memory, index, 0, size, kind, true}, {}, align, size, no_move});
        } catch (...) {
            free_slot(index);
            throw;
        }
        dedicated_bytes_ += size;
        ++dedicated_count_;
        ++total_;
        return h;
    }
    // The block that served last first (requests come in runs), then the others in order; a block
    // with fewer free bytes than the request is not asked.
    std::uint32_t index = hint_;
    offset_allocation a;
    if (index < blocks_.size() && blocks_[index].heap != nullptr &&
        blocks_[index].heap->free_bytes() >= rounded)
        a = blocks_[index].heap->allocate(size, align, kind, options_.strategy);
    for (std::uint32_t i = 0; i < blocks_.size() && !a; ++i) {
        if (i == hint_ || blocks_[i].heap == nullptr || blocks_[i].heap->free_bytes() < rounded) continue;
        a = blocks_[i].heap->allocate(size, align, kind, options_.strategy);
        index = i;
    }
    bool made = false;
    if (!a) {
        if (!make_block(options_.block_size, rounded + pad, index)) return {};
        made = true;
        a = blocks_[index].heap->allocate(size, align, kind, options_.strategy);
        if (!a) { // a halved block too small for this alignment and granularity
            free_slot(index);
            last_error_ = device_error::out_of_device_memory;
            return {};
        }
    }
    block_slot& b = blocks_[index];
    device_allocation h;
    try {
        h = table_.emplace(
            entry{device_allocation_info{b.memory, index, a.offset, b.heap->size_of(a), kind, false}, a,
                  align, rounded, no_move});
    } catch (...) {
        b.heap->deallocate(a);
        if (made) free_slot(index); // the pool is as it was
        throw;
    }
    hint_ = index;
    b.owner[a.node] = h;
    ++total_;
    return h;
}

bool device_pool::deallocate(device_allocation h) {
    entry* e = table_.get(h);
    if (e == nullptr) {
        (void)STRATA_VERIFY(1, false, stale_handle, pool_name, nullptr,
                            "deallocate with a null, freed or foreign allocation handle");
        return false;
    }
    if (e->move != no_move) { // its move is dropped: both ranges are freed
        defrag_move& m = moves_[e->move];
        m.op = defrag_op::ignore;
        blocks_[m.dst_block].heap->deallocate(move_dst_[e->move]);
        move_dst_[e->move] = {};
        release_if_unneeded(m.dst_block);
    }
    const std::uint32_t index = e->info.block;
    if (e->info.dedicated) {
        dedicated_bytes_ -= e->info.size;
        --dedicated_count_;
        (void)table_.erase(h);
        free_slot(index);
        return true;
    }
    block_slot& b = blocks_[index];
    b.owner[e->where.node] = {};
    (void)b.heap->deallocate(e->where);
    (void)table_.erase(h);
    release_if_unneeded(index);
    return true;
}

const device_allocation_info* device_pool::info(device_allocation h) const noexcept {
    const entry* e = table_.get(h);
    return e == nullptr ? nullptr : &e->info;
}

// ---------------------------------------------------------------------------------------------------
// Queries and the checker
// ---------------------------------------------------------------------------------------------------

device_pool_stats device_pool::stats() const noexcept {
    device_pool_stats s;
    s.dedicated = dedicated_count_;
    s.device_bytes = device_bytes_;
    s.used_bytes = dedicated_bytes_;
    s.allocations = static_cast<std::uint32_t>(table_.size());
    s.total_allocations = total_;
    for (const block_slot& b : blocks_) {
        if (b.heap == nullptr) continue;
        ++s.blocks;
        s.used_bytes += b.heap->used_bytes();
        s.free_bytes += b.heap->free_bytes();
        s.largest_free_block = std::max(s.largest_free_block, b.heap->largest_free_block());
    }
    for (std::size_t i = 0; i < move_dst_.size(); ++i) // reserved destinations are not allocations
        if (move_dst_[i]) s.used_bytes -= blocks_[moves_[i].dst_block].heap->size_of(move_dst_[i]);
    return s;
}

std::string device_pool::to_json(bool blocks) const {
    const device_pool_stats s = stats();
    char buf[512];
    std::snprintf(
        buf, sizeof buf,
        "{\"blocks\":%u,\"dedicated\":%u,\"device_bytes\":%llu,\"used_bytes\":%llu,\"free_bytes\":%llu,"
        "\"largest_free_block\":%llu,\"fragmentation\":%.6f,\"allocations\":%u,\"total_allocations\":%llu,"
        "\"block_list\":[",
        s.blocks, s.dedicated, static_cast<unsigned long long>(s.device_bytes),
        static_cast<unsigned long long>(s.used_bytes), static_cast<unsigned long long>(s.free_bytes),
        static_cast<unsigned long long>(s.largest_free_block), s.fragmentation(), s.allocations,
        static_cast<unsigned long long>(s.total_allocations));
    std::string out = buf;
    bool first = true;
    for (std::uint32_t i = 0; i < blocks_.size(); ++i) {
        const block_slot& b = blocks_[i];
        if (b.size == 0) continue;
        std::snprintf(buf, sizeof buf, "%s{\"index\":%u,\"size\":%llu,\"dedicated\":%s", first ? "" : ",", i,
                      static_cast<unsigned long long>(b.size), b.heap == nullptr ? "true" : "false");
        out += buf;
        if (b.heap != nullptr) {
            out += ",\"heap\":";
            out += b.heap->to_json(blocks);
        }
        out += '}';
        first = false;
    }
    out += "]}";
    return out;
}

bool device_pool::check() const {
    std::uint64_t device_bytes = 0;
    std::size_t used_nodes = 0;
    for (const block_slot& b : blocks_) {
        device_bytes += b.size;
        if (b.heap == nullptr) continue;
        if (!b.heap->check()) return false;
        used_nodes += b.heap->allocation_count();
        if (b.heap->size() > b.size) return corrupt("a block's heap is larger than its memory");
    }
    if (device_bytes != device_bytes_) return corrupt("device_bytes disagrees with the blocks");
    std::size_t shared = 0, dedicated = 0;
    std::uint64_t dedicated_bytes = 0;
    for (std::size_t i = 0; i < table_.size(); ++i) {
        const device_allocation h = table_.handle_at(i);
        const entry* e = table_.get(h);
        if (e == nullptr) return corrupt("a live table slot names no entry");
        if (e->info.block >= blocks_.size()) return corrupt("an allocation names a block out of range");
        const block_slot& b = blocks_[e->info.block];
        if (b.size == 0 || b.memory != e->info.memory)
            return corrupt("an allocation names a block it is not in");
        if (e->info.dedicated) {
            ++dedicated;
            dedicated_bytes += e->info.size;
            if (b.heap != nullptr || b.size != e->info.size)
                return corrupt("a dedicated allocation shares its block");
            continue;
        }
        ++shared;
        if (b.heap == nullptr || !b.heap->is_live(e->where))
            return corrupt("an allocation's node is not live");
        if (b.owner[e->where.node] != h) return corrupt("a heap node names another allocation");
        if (e->where.offset != e->info.offset || b.heap->size_of(e->where) != e->info.size ||
            e->asked > e->info.size || b.heap->kind_of(e->where) != e->info.kind)
            return corrupt("an allocation's info disagrees with its node");
        if ((e->info.offset & (e->align - 1)) != 0) return corrupt("an allocation lost its alignment");
        if (e->move != no_move &&
            (!pass_active_ || e->move >= moves_.size() || moves_[e->move].allocation != h))
            return corrupt("an allocation names a move that is not its own");
    }
    std::size_t reserved = 0;
    for (std::size_t i = 0; i < move_dst_.size(); ++i) {
        if (!move_dst_[i]) continue;
        ++reserved;
        const block_slot& b = blocks_[moves_[i].dst_block];
        if (b.heap == nullptr || !b.heap->is_live(move_dst_[i]))
            return corrupt("a move's destination is not reserved");
        if (b.owner[move_dst_[i].node] != device_allocation{})
            return corrupt("a move's destination has an owner");
    }
    if (used_nodes != shared + reserved) return corrupt("the heaps hold blocks no allocation or move names");
    if (dedicated != dedicated_count_ || dedicated_bytes != dedicated_bytes_)
        return corrupt("the dedicated counters disagree with the table");
    return true;
}

// ---------------------------------------------------------------------------------------------------
// Defragmentation
// ---------------------------------------------------------------------------------------------------

bool device_pool::begin_defragmentation(const defrag_options& options) {
    if (defrag_active_) {
        (void)STRATA_VERIFY(1, false, invalid_argument, pool_name, nullptr,
                            "begin_defragmentation while a defragmentation runs");
        return false;
    }
    defrag_active_ = true;
    pass_active_ = false;
    defrag_options_ = options;
    defrag_stats_ = {};
    return true;
}

std::span<defrag_move> device_pool::begin_pass() {
    if (!defrag_active_ || pass_active_) {
        (void)STRATA_VERIFY(1, false, invalid_argument, pool_name, nullptr,
                            "begin_pass with no defragmentation running or with a pass in flight");
        return {};
    }
    moves_.clear();
    move_dst_.clear();
    // Blocks by used bytes, fullest first: allocations move towards the front of this order.
    std::vector<std::uint32_t> order;
    for (std::uint32_t i = 0; i < blocks_.size(); ++i)
        if (blocks_[i].heap != nullptr && blocks_[i].heap->allocation_count() != 0) order.push_back(i);
    std::stable_sort(order.begin(), order.end(), [&](std::uint32_t x, std::uint32_t y) {
        return blocks_[x].heap->used_bytes() > blocks_[y].heap->used_bytes();
    });
    std::uint64_t bytes_left =
        defrag_options_.max_bytes_per_pass == 0 ? ~std::uint64_t{0} : defrag_options_.max_bytes_per_pass;
    std::uint32_t moves_left =
        defrag_options_.max_moves_per_pass == 0 ? ~std::uint32_t{0} : defrag_options_.max_moves_per_pass;
    std::vector<offset_block_info> used;
    std::vector<offset_block_info> holes; // the free blocks, in address order
    std::vector<std::uint64_t> holes_max; // the largest of holes[0..i]
    for (std::size_t pos = order.size(); pos-- > 0 && moves_left != 0;) {
        const std::uint32_t src = order[pos];
        offset_heap& heap = *blocks_[src].heap;
        used.clear();
        holes.clear();
        holes_max.clear();
        heap.for_each_block([&](const offset_block_info& i) {
            if (i.used) {
                used.push_back(i);
            } else {
                holes.push_back(i);
                holes_max.push_back(std::max(holes_max.empty() ? 0 : holes_max.back(), i.size));
            }
        });
        for (std::size_t k = used.size(); k-- > 0 && moves_left != 0;) {
            const offset_block_info& u = used[k];
            const device_allocation h = blocks_[src].owner[u.node];
            entry* e = table_.get(h);
            if (e == nullptr || e->move != no_move || e->asked > bytes_left)
                continue; // a reserved destination
            std::uint32_t dst = src;
            offset_allocation to;
            for (std::size_t q = 0; q < pos && !to; ++q) {
                dst = order[q];
                to = blocks_[dst].heap->allocate(e->asked, e->align, u.kind, options_.strategy);
            }
            if (!to) {
                // Free blocks only shrink during a pass (sources stay allocated), so a hole below u
                // that fits its request must be one that was at least that size at the walk: start
                // the placement walk at the first such hole, and skip it when there is none below u.
                const auto first = static_cast<std::size_t>(
                    std::lower_bound(holes_max.begin(), holes_max.end(), e->asked) - holes_max.begin());
                if (first < holes.size() && holes[first].offset < u.offset) {
                    dst = src;
                    to = heap.allocate_lowest(e->asked, e->align, u.kind, u.offset, holes[first].node);
                    if (to) restart_hole(holes, to.offset);
                }
            }
            if (!to) continue;
            const block_slot& d = blocks_[dst];
            e->move = static_cast<std::uint32_t>(moves_.size());
            moves_.push_back(defrag_move{h, blocks_[src].memory, src, u.offset, d.memory, dst, to.offset,
                                         e->asked, defrag_op::copy});
            move_dst_.push_back(to);
            bytes_left -= e->asked;
            --moves_left;
            if (bytes_left == 0) moves_left = 0;
        }
    }
    pass_active_ = !moves_.empty();
    if (pass_active_) ++defrag_stats_.passes;
    return {moves_.data(), moves_.size()};
}

void device_pool::finish_pass(bool commit) {
    for (std::size_t i = 0; i < moves_.size(); ++i) {
        const offset_allocation to = move_dst_[i];
        if (!to) continue; // dropped: the allocation was freed during the pass
        defrag_move& m = moves_[i];
        entry* e = table_.get(m.allocation);
        e->move = no_move;
        if (commit && m.op == defrag_op::copy) {
            block_slot& s = blocks_[m.src_block];
            s.owner[e->where.node] = {};
            (void)s.heap->deallocate(e->where);
            block_slot& d = blocks_[m.dst_block];
            d.owner[to.node] = m.allocation;
            e->where = to;
            e->info.memory = d.memory;
            e->info.block = m.dst_block;
            e->info.offset = to.offset;
            e->info.size = d.heap->size_of(to); // the destination may keep a sliver of slack
            defrag_stats_.bytes_moved += m.size;
            ++defrag_stats_.allocations_moved;
        } else {
            (void)blocks_[m.dst_block].heap->deallocate(to);
        }
    }
    // The blocks the pass emptied (past the retention): what the defragmentation freed.
    for (const defrag_move& m : moves_) {
        for (const std::uint32_t block : {m.src_block, m.dst_block}) {
            if (blocks_[block].heap == nullptr) continue;
            if (const std::uint64_t bytes = release_if_unneeded(block)) {
                ++defrag_stats_.blocks_freed;
                defrag_stats_.bytes_freed += bytes;
            }
        }
    }
    moves_.clear();
    move_dst_.clear();
    pass_active_ = false;
}

bool device_pool::end_pass() {
    if (!pass_active_) {
        (void)STRATA_VERIFY(1, false, invalid_argument, pool_name, nullptr,
                            "end_pass with no pass in flight");
        return false;
    }
    finish_pass(true);
    return true;
}

defrag_stats device_pool::end_defragmentation() {
    if (pass_active_) finish_pass(false);
    defrag_active_ = false;
    return defrag_stats_;
}

} // namespace strata
