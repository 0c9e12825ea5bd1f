// libFuzzer target: strata::free_list with the policy chosen by the first byte (first, best, next
// fit). Ops decoded from the input: allocate (invalid requests included), free, a bad free (double
// or into a block's middle: one report, nothing changed), add_pool; check()
// after every op; contents verified on free.
#include <cstddef>
#include <cstdint>
#include <span>

#include "strata/heap/free_list.hpp"

#include "fuzz_common.hpp"

namespace {

using namespace strata_fuzz;

template <class Heap>
void run(reader& in) {
    constexpr std::size_t pool_bytes = 128 << 10;
    alignas(4096) static std::byte pools[3][pool_bytes];
    Heap h(std::span<std::byte>(pools[0], pool_bytes / 2));
    std::size_t pools_added = 1;
    model m;
    freed_ring freed;
    unsigned char fill = 1;
    while (!in.done()) {
        switch (in.byte() % 7) {
        case 0:
        case 1:
        case 2: {
            const std::size_t size = draw_size(in);
            const std::size_t align = draw_align(in);
            void* p = h.allocate(size, align);
            if (size == 0 || !is_pow2(align) || size > Heap::max_request)
                require(p == nullptr, "invalid request served");
            if (p != nullptr) m.add(p, size, align, fill++);
            break;
        }
        case 3:
        case 4:
            if (!m.empty()) {
                void* p = m.take(in.u16()).p;
                h.deallocate(p);
                freed.add(p);
            }
            break;
        case 5: // a double free or a pointer into a block's middle: refused, nothing changes
            bad_free(h, m, freed, in, [&] { return h.stats().live_allocations; });
            break;
        default:
            if (pools_added < 3) {
                const std::size_t off = in.byte() % 64;
                (void)h.add_pool(std::span<std::byte>(pools[pools_added] + off, pool_bytes - off));
                ++pools_added;
            }
            break;
        }
        require(h.check(), "check() failed");
    }
    for (live_block& b : m.blocks()) {
        m.verify(b);
        h.deallocate(b.p);
    }
    require(h.check(), "check() failed after freeing everything");
    require(h.metrics().free_blocks == pools_added || h.stats().capacity == 0, "free blocks left unmerged");
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    abort_on_violation();
    reader in(data, size);
    switch (in.byte() % 3) {
    case 0: run<strata::free_list_first_fit>(in); break;
    case 1: run<strata::free_list_best_fit>(in); break;
    default: run<strata::free_list_next_fit>(in); break;
    }
    return 0;
}
