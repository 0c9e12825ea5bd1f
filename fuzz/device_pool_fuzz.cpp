// libFuzzer target: strata::device_pool over fake device memory (a host buffer per memory handle)
// with its options drawn from the first bytes (block size, granularity, retention, budget, nodes per
// block). Ops decoded from the input: allocate (invalid requests included), free, a stale-handle
// free, device refusal on and off, trim, and defragmentation: begin, passes whose moves the target
// performs with memcpy (or ignores), frees of allocations whose move is in flight, commit or cancel.
// Every allocation is filled with its own byte and verified on free and after every pass; moves are
// checked for overlap and alignment; a shared allocation's size is its heap block's (slack included,
// the destination's after a move) and used_bytes their sum; check() after every op.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <iterator>
#include <map>
#include <span>
#include <utility>
#include <vector>

#include "strata/device/device_pool.hpp"

#include "fuzz_common.hpp"

namespace {

using namespace strata_fuzz;
using strata::defrag_move;
using strata::defrag_op;
using strata::device_allocation;
using strata::device_error;
using strata::device_pool;
using strata::resource_kind;

struct fake_device {
    std::map<std::uint64_t, std::vector<unsigned char>> memory;
    std::uint64_t next = 1;
    bool refuse = false;

    strata::device_memory_callbacks callbacks() {
        return {[this](std::uint64_t size, std::uint64_t* out) {
                    if (refuse || size > (std::uint64_t{64} << 20)) return false; // a device's limit
                    memory.emplace(next, std::vector<unsigned char>(static_cast<std::size_t>(size)));
                    *out = next++;
                    return true;
                },
                [this](std::uint64_t m, std::uint64_t size) {
                    auto it = memory.find(m);
                    require(it != memory.end(), "free of unknown device memory");
                    require(it->second.size() == size, "free with another size");
                    memory.erase(it);
                }};
    }
    unsigned char* at(std::uint64_t m, std::uint64_t offset) {
        auto it = memory.find(m);
        require(it != memory.end(), "an allocation in unknown device memory");
        return it->second.data() + offset;
    }
};

struct expected {
    std::uint64_t size;
    std::uint64_t align;
    resource_kind kind;
    unsigned char fill;
};

struct harness {
    fake_device dev;
    device_pool pool;
    std::map<device_allocation, expected> live;
    std::vector<device_allocation> freed;
    unsigned char fill = 1;

    explicit harness(const strata::device_pool_options& o) : pool(dev.callbacks(), o) {}

    void verify(device_allocation h, const expected& e) {
        const strata::device_allocation_info* i = pool.info(h);
        require(i != nullptr, "a live allocation has no info");
        require(i->offset % e.align == 0 || i->dedicated, "an allocation lost its alignment");
        require(i->kind == e.kind && i->size >= e.size, "an allocation's info changed");
        // Every byte is e.fill: the first is, and each equals the next (one memcmp, not a loop the
        // fuzzer instruments byte by byte).
        const unsigned char* p = dev.at(i->memory, i->offset);
        require(p[0] == e.fill && std::memcmp(p, p + 1, e.size - 1) == 0, "an allocation's contents changed");
    }
    // Every allocation's bytes, and each shared one's size against its heap block (a moved one
    // takes its destination's size, slack included).
    void verify_all() {
        std::map<std::pair<std::uint32_t, std::uint64_t>, std::uint64_t> used_blocks;
        for (std::uint32_t b = 0; b < pool.block_slots(); ++b)
            if (const strata::offset_heap* heap = pool.block(b))
                heap->for_each_block([&](const strata::offset_block_info& u) {
                    if (u.used) used_blocks[{b, u.offset}] = u.size;
                });
        for (const auto& [h, e] : live) {
            verify(h, e);
            const strata::device_allocation_info* i = pool.info(h);
            if (i->dedicated) continue;
            auto u = used_blocks.find({i->block, i->offset});
            require(u != used_blocks.end() && u->second == i->size,
                    "a shared allocation's size is not its block's");
        }
    }
    void free(device_allocation h) {
        auto it = live.find(h);
        verify(h, it->second);
        require(pool.deallocate(h), "a live allocation was refused");
        live.erase(it);
        if (freed.size() < 8) freed.push_back(h);
    }
};

bool overlap(std::uint64_t m1, std::uint64_t o1, std::uint64_t m2, std::uint64_t o2, std::uint64_t s) {
    return m1 == m2 && o1 < o2 + s && o2 < o1 + s;
}

bool overlap(std::uint64_t m1, std::uint64_t o1, std::uint64_t s1, std::uint64_t m2, std::uint64_t o2,
             std::uint64_t s2) {
    return m1 == m2 && o1 < o2 + s2 && o2 < o1 + s1;
}

// One pass: checks the moves, performs (or ignores) each, may free some mid-pass, then commits or
// cancels. Returns false when the pass had no moves.
bool pass(harness& t, reader& in) {
    std::span<defrag_move> moves = t.pool.begin_pass();
    if (moves.empty()) return false;
    for (std::size_t i = 0; i < moves.size(); ++i) {
        const defrag_move& m = moves[i];
        const strata::device_allocation_info* info = t.pool.info(m.allocation);
        require(info != nullptr && !info->dedicated, "a move of no shared allocation");
        const std::uint64_t unit = t.pool.options().min_alignment;
        const std::uint64_t asked = (t.live.at(m.allocation).size + unit - 1) / unit * unit;
        require(m.src_memory == info->memory && m.src_offset == info->offset && m.size == asked &&
                    m.size <= info->size,
                "a move's source is not where its allocation is, or it copies other than the request");
        require(m.dst_offset % t.live.at(m.allocation).align == 0, "a destination breaks the alignment");
        require(!overlap(m.src_memory, m.src_offset, m.dst_memory, m.dst_offset, m.size),
                "a move's source and destination overlap");
        for (std::size_t j = 0; j < i; ++j) {
            const defrag_move& n = moves[j];
            require(!overlap(m.dst_memory, m.dst_offset, m.size, n.dst_memory, n.dst_offset, n.size) &&
                        !overlap(m.dst_memory, m.dst_offset, m.size, n.src_memory, n.src_offset, n.size) &&
                        !overlap(m.src_memory, m.src_offset, m.size, n.dst_memory, n.dst_offset, n.size),
                    "two moves of a pass share bytes");
        }
    }
    require(t.pool.check(), "check() failed with a pass in flight");
    const std::uint8_t how = in.byte();
    for (defrag_move& m : moves) {
        const std::uint8_t b = in.byte();
        if (b % 5 == 0) m.op = defrag_op::ignore;
        if (m.op == defrag_op::copy) {
            std::memcpy(t.dev.at(m.dst_memory, m.dst_offset), t.dev.at(m.src_memory, m.src_offset), m.size);
        } else {
            std::memset(t.dev.at(m.dst_memory, m.dst_offset), 0xab, m.size);
        }
    }
    // Free a few allocations whose move is in flight: their moves are dropped.
    for (std::size_t k = 0, n = in.byte() % 3; k < n; ++k) {
        const defrag_move& m = moves[in.u16() % moves.size()];
        if (t.live.count(m.allocation) != 0) {
            t.free(m.allocation);
            require(m.op == defrag_op::ignore, "a freed allocation's move was not dropped");
        }
    }
    // An allocation made mid-pass lands anywhere free, never on a reserved destination.
    if (how % 4 == 1) {
        const std::uint64_t size = 1 + in.u16() % 4096;
        const device_allocation h = t.pool.allocate(size);
        if (h) {
            const strata::device_allocation_info* i = t.pool.info(h);
            for (const defrag_move& m : moves)
                if (m.op == defrag_op::copy)
                    require(!overlap(i->memory, i->offset, i->size, m.dst_memory, m.dst_offset, m.size),
                            "a mid-pass allocation overlaps a reserved destination");
            std::memset(t.dev.at(i->memory, i->offset), t.fill, size);
            t.live.emplace(h, expected{size, 1, resource_kind::linear, t.fill++});
            if (t.fill == 0) t.fill = 1;
        }
    }
    if (how % 8 == 7) {
        (void)t.pool.end_defragmentation(); // cancel: everything stays at its source
        require(t.pool.check(), "check() failed after a cancel");
        t.verify_all();
        return false;
    }
    for (const defrag_move& m : moves) // the sources are freed by the commit
        if (m.op == defrag_op::copy && t.live.count(m.allocation) != 0)
            std::memset(t.dev.at(m.src_memory, m.src_offset), 0xcd, m.size);
    require(t.pool.end_pass(), "end_pass refused a pass in flight");
    require(t.pool.check(), "check() failed after a pass");
    t.verify_all();
    return true;
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    abort_on_violation();
    reader in(data, size);
    strata::device_pool_options o;
    const std::uint8_t c = in.byte();
    o.block_size = std::uint64_t{64} << (10 + c % 3); // 64, 128 or 256 KiB
    o.granularity = (c / 3) % 2 ? 1024 : 1;
    o.keep_empty_blocks = (c / 6) % 3;
    o.budget = (c / 18) % 2 ? o.block_size * 4 : ~std::uint64_t{0};
    o.nodes_per_block = (c / 36) % 2 ? 32 : 512;
    o.min_alignment = (c / 72) % 2 ? 64 : 16;
    o.strategy =
        (c / 144) % 2 ? strata::allocation_strategy::min_memory : strata::allocation_strategy::min_time;
    {
        harness t(o);
        while (!in.done()) {
            switch (in.byte() % 9) {
            case 0:
            case 1:
            case 2:
            case 3: { // allocate
                const std::uint8_t k = in.byte();
                const std::uint16_t v = in.u16();
                const std::uint64_t n = k % 16 == 0   ? 0
                                        : k % 16 == 1 ? std::uint64_t{v} << 4
                                        : k % 16 == 2 ? ~std::uint64_t{0} - v
                                                      : 1 + (v & 4095);
                const std::uint8_t a = in.byte();
                const std::uint64_t align = a % 32 == 31   ? 24
                                            : a % 32 == 30 ? 0
                                                           : std::uint64_t{1} << (a % 14);
                const auto kind = a & 0x80 ? resource_kind::optimal : resource_kind::linear;
                const device_allocation h = t.pool.allocate(n, align, kind);
                if (!h) {
                    require(t.pool.last_error() != device_error::none, "a failure with no reason");
                    if (n == 0 || !is_pow2(align))
                        require(t.pool.last_error() == device_error::invalid_argument, "invalid request");
                    break;
                }
                require(n != 0 && is_pow2(align), "invalid request served");
                require(t.pool.last_error() == device_error::none, "a success with a reason");
                const strata::device_allocation_info* i = t.pool.info(h);
                require(i != nullptr && i->size >= n, "no info, or too small");
                require(i->dedicated || i->offset % align == 0, "misaligned");
                if (!i->dedicated) { // rounded to min_alignment, plus slack only without granularity
                    const std::uint64_t unit = o.min_alignment;
                    const std::uint64_t rounded = (n + unit - 1) / unit * unit;
                    const std::uint64_t slack =
                        o.granularity > unit ? 0
                                             : ((rounded / unit >> 4) + (unit >= 32 ? 1 : 32 / unit)) * unit;
                    require(i->size >= rounded && i->size <= rounded + slack && i->size % unit == 0,
                            "a shared size off its rounding and slack");
                }
                std::memset(t.dev.at(i->memory, i->offset), t.fill, n);
                t.live.emplace(h, expected{n, align, kind, t.fill++});
                if (t.fill == 0) t.fill = 1;
                break;
            }
            case 4:
            case 5: // free
                if (!t.live.empty()) {
                    auto it = t.live.begin();
                    std::advance(it, static_cast<long>(in.u16() % t.live.size()));
                    t.free(it->first);
                }
                break;
            case 6: { // a stale handle: refused, reported
                if (t.freed.empty()) break;
                const device_allocation h = t.freed[in.byte() % t.freed.size()];
                require(t.pool.info(h) == nullptr, "a freed handle still has info");
                static unsigned reports;
                reports = 0;
                bool answer = true;
                {
                    strata::scoped_violation_handler catcher([](const strata::violation& v) {
                        if (v.kind == strata::violation_kind::stale_handle) ++reports;
                    });
                    answer = t.pool.deallocate(h);
                }
                require(!answer && reports == 1, "a stale handle was not refused and reported");
                break;
            }
            case 7: { // device refusal, trim
                const std::uint8_t k = in.byte();
                if (k % 3 == 0) t.dev.refuse = !t.dev.refuse;
                if (k % 3 == 1) (void)t.pool.trim();
                break;
            }
            default: { // defragmentation
                const std::uint8_t k = in.byte();
                strata::defrag_options d;
                d.max_moves_per_pass = k % 4 == 0 ? 0 : 1 + in.byte() % 8;
                d.max_bytes_per_pass = k % 8 < 4 ? 0 : (std::uint64_t{in.byte()} + 1) * 256;
                require(t.pool.begin_defragmentation(d), "begin_defragmentation refused");
                for (unsigned p = 0; p < 1u + k % 16 && pass(t, in);) {
                    ++p;
                }
                (void)t.pool.end_defragmentation();
                require(!t.pool.defragmenting(), "still defragmenting");
                break;
            }
            }
            require(t.pool.check(), "check() failed");
            const strata::device_pool_stats s = t.pool.stats();
            require(s.allocations == t.live.size(), "allocation count drifted");
            std::uint64_t used = 0;
            for (const auto& [h, e] : t.live)
                used += t.pool.info(h)->size;
            require(s.used_bytes == used, "used_bytes is not the sum of the granted sizes");
            std::uint64_t device_bytes = 0;
            for (const auto& [m, v] : t.dev.memory)
                device_bytes += v.size();
            require(s.device_bytes == device_bytes, "device_bytes drifted");
            require(s.device_bytes <= o.budget, "the budget was passed");
        }
        t.verify_all();
        while (!t.live.empty())
            t.free(t.live.begin()->first);
        require(t.pool.stats().blocks <= o.keep_empty_blocks, "empty blocks kept beyond the option");
        (void)t.pool.trim();
        require(t.dev.memory.empty(), "device memory left after freeing everything and trimming");
    }
    return 0;
}
