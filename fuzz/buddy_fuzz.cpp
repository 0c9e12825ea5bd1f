// libFuzzer target: strata::buddy over a 256 KiB region with min_block 16 << (first byte % 4). Ops
// decoded from the input: allocate (invalid requests included), unsized and sized free, offset
// allocations; check() after every op; contents verified on free.
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "strata/heap/buddy.hpp"

#include "fuzz_common.hpp"

namespace {

using namespace strata_fuzz;

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    abort_on_violation();
    reader in(data, size);
    constexpr std::size_t region = 256 << 10;
    alignas(4096) static std::byte memory[region];
    strata::buddy b(std::span<std::byte>(memory, region), std::size_t{16} << (in.byte() % 4));
    model m;
    std::vector<std::size_t> offsets; // offset-API blocks (never touched)
    unsigned char fill = 1;
    while (!in.done()) {
        switch (in.byte() % 7) {
        case 0:
        case 1:
        case 2: {
            const std::size_t n = draw_size(in);
            const std::size_t align = draw_align(in);
            void* p = b.allocate(n, align);
            if (n == 0 || !is_pow2(align) || n > region) require(p == nullptr, "invalid request served");
            if (p != nullptr) {
                require(b.usable_size(p) >= n && is_pow2(b.usable_size(p)), "block size wrong");
                m.add(p, n, align, fill++);
            }
            break;
        }
        case 3:
            if (!m.empty()) {
                const live_block blk = m.take(in.u16());
                if (in.byte() & 1) {
                    b.deallocate(blk.p, blk.size, blk.align);
                } else {
                    b.deallocate(blk.p);
                }
            }
            break;
        case 4: {
            const std::size_t off =
                b.allocate_offset(1 + (in.u16() & 4095), std::size_t{1} << (in.byte() % 10));
            if (off != strata::buddy::npos) offsets.push_back(off);
            break;
        }
        case 5:
            if (!offsets.empty()) {
                const std::size_t k = in.u16() % offsets.size();
                b.deallocate_offset(offsets[k]);
                offsets[k] = offsets.back();
                offsets.pop_back();
            }
            break;
        default: {
            const std::size_t largest = b.largest_free_block();
            if (largest != 0) {
                const std::size_t off = b.allocate_offset(largest);
                require(off != strata::buddy::npos, "largest_free_block() not servable");
                offsets.push_back(off);
            }
            break;
        }
        }
        require(b.check(), "check() failed");
    }
    for (live_block& blk : m.blocks()) {
        m.verify(blk);
        b.deallocate(blk.p);
    }
    for (std::size_t off : offsets)
        b.deallocate_offset(off);
    require(b.check(), "check() failed after freeing everything");
    require(b.largest_free_block() == region, "blocks left unmerged");
    return 0;
}
