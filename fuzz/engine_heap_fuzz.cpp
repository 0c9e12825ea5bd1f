// libFuzzer target: strata::engine_heap with small caps and a fake clock, so that every tier, the
// stash, the decay and the purges run within a short input. Ops decoded from the input: allocate
// (any size up to 17 MiB, any alignment, invalid requests included), allocate_zeroed, free,
// reallocate, up to eight frees from a new thread (remote frees; it may make a cache and leave it),
// clock steps, end_frame, trim, flush_thread_cache, and check() as an op of its own. Contents of
// every live block are verified on free and on move; usable_size and the live count after each op.
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <thread>
#include <vector>

#include "strata/engine/engine_heap.hpp"

#include "fuzz_common.hpp"

namespace {

using namespace strata_fuzz;

std::uint64_t fake_now = 0;
std::uint64_t fake_clock() noexcept { return fake_now; }

/// Sizes for the engine heap: the shared draw (small, up to 1 MiB, 0, enormous), and now and then a
/// span-tier block of 1-17 MiB.
std::size_t engine_size(reader& in) {
    if (in.byte() % 16 == 0) return (std::size_t{1} << 20) + (std::size_t{in.u16()} << 8);
    return draw_size(in);
}

/// Alignments up to 1 MiB, sometimes 0 or a non-power of two (refused).
std::size_t engine_align(reader& in) {
    const std::uint8_t a = in.byte();
    if (a % 32 == 31) return a % 3 == 0 ? 0 : 24;
    return std::size_t{1} << (a % 21);
}

/// Bytes of all live blocks: allocations stop adding past this, so no input exhausts memory.
constexpr std::size_t live_cap = std::size_t{96} << 20;

void run(reader& in) {
    fake_now = 0;
    strata::engine_options o;
    o.reserve_bytes = std::size_t{256} << 20;
    o.decay_ms = 1 + in.byte() % 64;
    o.retain_bytes = static_cast<std::size_t>(in.byte() % 8) << 20;
    o.purge_medium_bytes = std::size_t{64} << 10;
    o.medium_retain_bytes = static_cast<std::size_t>(in.byte() % 4) << 20;
    o.stash_bytes = in.byte() % 2 == 0 ? 0 : std::size_t{4} << 10;
    o.thread_cache_runs = in.byte() % 4;
    o.medium_arena_bytes = std::size_t{1} << 20;
    o.populate_after_bytes = static_cast<std::size_t>(in.byte() % 4) << 20;
    o.clock_ms = fake_clock;
    strata::engine_heap h(o);
    model m(true); // contents sampled: blocks reach 17 MiB
    unsigned char fill = 1;
    std::size_t live = 0;
    while (!in.done()) {
        switch (in.byte() % 13) {
        case 0:
        case 1:
        case 2:
        case 3: { // allocate, or allocate_zeroed
            const bool zeroed = in.byte() % 4 == 0;
            const std::size_t size = engine_size(in);
            const std::size_t align = engine_align(in);
            if (is_pow2(align) && size < SIZE_MAX / 2 && live + size > live_cap) break;
            void* p = zeroed ? h.allocate_zeroed(size, align) : h.allocate(size, align);
            if (!is_pow2(align) || size >= o.reserve_bytes) {
                require(p == nullptr, "invalid or impossible request served");
                break;
            }
            require(p != nullptr, "a request that fits was refused");
            require(h.owns(p), "a block outside the reservation");
            require(h.usable_size(p) >= size, "usable_size below the request");
            if (zeroed) {
                const auto* c = static_cast<const unsigned char*>(p);
                for_sampled(size, [&](std::size_t i) {
                    require(c[i] == 0, "allocate_zeroed gave a byte that is not 0");
                });
            }
            m.add(p, size, align, fill++);
            live += size;
            break;
        }
        case 4:
        case 5:
        case 6: // free
            if (!m.empty()) {
                const live_block b = m.take(in.u16());
                live -= b.size;
                h.deallocate(b.p);
            }
            break;
        case 7: { // reallocate to any size up to 4 MiB, default alignment
            if (m.empty()) break;
            const live_block b = m.take(in.u16());
            live -= b.size;
            const std::size_t size =
                in.byte() % 8 == 0 ? (std::size_t{in.u16()} << 6) + 1 : 1 + in.u16() % 2048;
            void* q = h.reallocate(b.p, size);
            require(q != nullptr, "reallocate refused a size that fits");
            require(h.usable_size(q) >= size, "usable_size below the reallocated size");
            const auto* c = static_cast<const unsigned char*>(q);
            const std::size_t kept = size < b.size ? size : b.size;
            for_sampled(b.size, [&](std::size_t i) {
                if (i < kept) require(c[i] == b.fill, "reallocate lost contents");
            });
            m.add(q, size, strata::engine_heap::default_alignment, fill++);
            live += size;
            break;
        }
        case 8: { // up to 8 frees from another thread: remote frees, a thread cache made and left
            const std::size_t n = m.empty() ? 0 : 1 + in.byte() % 8;
            std::vector<live_block> gone;
            for (std::size_t i = 0; i < n && !m.empty(); ++i) {
                gone.push_back(m.take(in.u16()));
                live -= gone.back().size;
            }
            const bool allocates = in.byte() % 2 == 0;
            std::thread([&] {
                if (allocates) h.deallocate(h.allocate(64)); // this thread's own cache too
                for (const live_block& b : gone)
                    h.deallocate(b.p);
            }).join();
            break;
        }
        case 9: // time passes
            fake_now += in.byte();
            break;
        case 10: // a frame ends, or the heap is trimmed
            if (in.byte() % 4 == 0) {
                h.trim();
            } else {
                (void)h.end_frame(std::chrono::microseconds{1 + in.byte()});
            }
            break;
        case 11: // this thread's cache handed back (the next allocation makes a new one)
            h.flush_thread_cache();
            break;
        default: require(h.check(), "check() failed"); break;
        }
        require(h.stats().live_allocations == m.size(), "live count drifted");
    }
    require(h.check(), "check() failed at the end");
    for (live_block& b : m.blocks()) {
        m.verify(b);
        h.deallocate(b.p);
    }
    require(h.check(), "check() failed after freeing everything");
    require(h.stats().live_allocations == 0, "blocks still live after freeing everything");
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    abort_on_violation();
    reader in(data, size);
    run(in);
    return 0;
}
