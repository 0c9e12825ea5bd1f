// libFuzzer target: strata::tlsf (SLI 5, and SLI 4 when the first byte is odd). Ops decoded from the
// input: allocate (any size/alignment, invalid ones included), free, a bad free (a double free or a
// pointer into a block's middle: one report, nothing changed), reallocate, add_pool, and
// check() as an op of its own; contents of every live block verified on free and on move.
//
// check() is an op rather than a step after every op because it completes the free in flight
// (deallocate leaves one, see tlsf.hpp): checked after every op, no op would ever meet a block in
// flight, and allocate's last resort, reallocate next to a parked successor and add_pool with a
// free pending would go unfuzzed. After every op the non-settling live_allocations() is compared.
#include <cstddef>
#include <cstdint>
#include <new>
#include <span>

#include "strata/heap/tlsf.hpp"

#include "fuzz_common.hpp"

namespace {

using namespace strata_fuzz;

template <class Heap>
void run(reader& in) {
    constexpr std::size_t pool_bytes = 64 << 10;
    alignas(4096) static std::byte pools[4][pool_bytes];
    Heap h(std::span<std::byte>(pools[0], pool_bytes / 2));
    std::size_t pools_added = 1;
    model m;
    freed_ring freed;
    unsigned char fill = 1;
    while (!in.done()) {
        switch (in.byte() % 11) {
        case 0:
        case 1:
        case 2: { // allocate
            const std::size_t size = draw_size(in);
            const std::size_t align = draw_align(in);
            void* p = h.allocate(size, align);
            const bool valid = size != 0 && is_pow2(align) && size <= Heap::max_request;
            if (!valid) require(p == nullptr, "invalid request served");
            if (p != nullptr) {
                require(h.usable_size(p) >= size, "usable_size below the request");
                m.add(p, size, align, fill++);
            }
            break;
        }
        case 3:
        case 4: // free
            if (!m.empty()) {
                void* p = m.take(in.u16()).p;
                h.deallocate(p);
                freed.add(p);
            }
            break;
        case 5: { // reallocate
            if (m.empty()) break;
            live_block b = m.take(in.u16());
            // Sizes to 64 KiB and alignments 1..4096: grow and shrink in place, move, and change
            // alignment (an over-aligned block may stay where it is when it still fits).
            const std::size_t size = 1 + in.u16();
            const std::size_t align = std::size_t{1} << (in.byte() % 13);
            void* q = h.reallocate(b.p, size, align);
            if (q == nullptr) { // failure: the old block must be intact, still live
                m.add(b.p, b.size, b.align, b.fill);
                break;
            }
            auto* c = static_cast<unsigned char*>(q);
            for (std::size_t i = 0; i < (size < b.size ? size : b.size); ++i)
                require(c[i] == b.fill, "reallocate lost contents");
            m.add(q, size, align, fill++); // add() checks the new alignment
            break;
        }
        case 6: // another pool
            if (pools_added < 4) {
                const std::size_t off = in.byte() % 64;
                (void)h.add_pool(std::span<std::byte>(pools[pools_added] + off, pool_bytes - off));
                ++pools_added;
            }
            break;
        case 7:
        case 8: // check() and stats(), which complete the free in flight
            require(h.check(), "check() failed");
            require(h.stats().live_allocations == m.size(), "live count drifted");
            break;
        case 9: // a double free or a pointer into a block's middle: refused, nothing changes
            bad_free(h, m, freed, in, [&] { return h.live_allocations(); });
            break;
        default: { // the largest free block must be servable
            const std::size_t largest = h.largest_free_block();
            if (largest != 0 && in.byte() % 4 == 0) {
                void* p = h.allocate(largest);
                require(p != nullptr, "largest_free_block() not servable");
                m.add(p, largest, 16, fill++);
            }
            break;
        }
        }
        require(h.live_allocations() == m.size(), "live count drifted");
    }
    for (live_block& b : m.blocks()) {
        m.verify(b);
        h.deallocate(b.p);
    }
    require(h.check(), "check() failed after freeing everything");
    require(h.stats().in_use == 0, "bytes still in use after freeing everything");
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    abort_on_violation();
    reader in(data, size);
    if (in.byte() & 1) {
        run<strata::basic_tlsf<4>>(in);
    } else {
        run<strata::tlsf>(in);
    }
    return 0;
}
