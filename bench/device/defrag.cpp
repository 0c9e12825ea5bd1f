// strata-device-bench defrag: device_pool's incremental defragmentation over fake device memory
// (callbacks that hand out numbered handles; no byte is copied: a move is committed as if the
// application had copied it). Three seeded workloads:
//
//   one_block   one 64 MiB block filled to 95% with sizes log-uniform 256 B-2 MiB, then half of
//               the allocations freed at random
//   churned_8m  8 MiB blocks, 256 MiB live of 4 KiB-1 MiB, 100,000 free+allocate pairs of churn,
//               then half of the allocations freed at random
//   textures    64 MiB blocks, granularity 4 KiB, 512 MiB live of 4 KiB-4 MiB: half buffers
//               (linear, align 256), half images (optimal, align 64 KiB); 50,000 pairs of churn,
//               then 40% freed at random
//   many_small  64 MiB blocks, 512 MiB live of 256 B-64 KiB (about 45,000 allocations), 100,000
//               pairs of churn, then half freed at random: what a pass costs in a large pool
//
// Each is defragmented to the end (passes until one has no moves) with max_bytes_per_pass 8 MiB
// and with no limit. Reported: pool fragmentation (1 - largest free block / free bytes over all
// blocks) and the mean of the blocks' own fragmentation before and after, device bytes per live
// byte, bytes moved against live bytes, passes, blocks freed, and the time of a pass (begin_pass
// + end_pass). After every pass the pool's check() runs (untimed) and the moves of the pass are
// checked for overlap.
//
//   strata-device-bench defrag [--seed S] [--pass-bytes BYTES]
#include <chrono>
#include <cmath>
#include <cstdio>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "strata/device/device_pool.hpp"

#include "device_bench.hpp"

namespace strata::device_bench {

namespace {

struct spec {
    const char* name;
    std::uint64_t block_size;
    std::uint64_t granularity;
    double min_size, octaves; // sizes log-uniform in [min_size, min_size * 2^octaves]
    bool textures;            // half optimal with 64 KiB alignment, half linear with 256
    std::uint64_t fill_bytes; // requested bytes live after the fill (0: fill one block to 95%)
    std::size_t churn_pairs;  // free+allocate pairs after the fill
    unsigned free_percent;    // allocations freed at random before the defragmentation
};

const spec specs[] = {
    {"one_block", std::uint64_t{64} << 20, 1, 256.0, 13.0, false, 0, 0, 50},
    {"churned_8m", std::uint64_t{8} << 20, 1, 4096.0, 8.0, false, std::uint64_t{256} << 20, 100'000, 50},
    {"textures", std::uint64_t{64} << 20, 4096, 4096.0, 10.0, true, std::uint64_t{512} << 20, 50'000, 40},
    {"many_small", std::uint64_t{64} << 20, 1, 256.0, 8.0, false, std::uint64_t{512} << 20, 100'000, 50},
};

struct request {
    std::uint64_t size;
    std::uint64_t align;
    resource_kind kind;
};

request draw(lab::splitmix64& rng, const spec& s) {
    const double u = static_cast<double>(rng.next() >> 11) * 0x1.0p-53;
    const auto size = static_cast<std::uint64_t>(s.min_size * std::exp2(s.octaves * u));
    if (s.textures && (rng.next() & 1) != 0) return {size, std::uint64_t{64} << 10, resource_kind::optimal};
    return {size, 256, resource_kind::linear};
}

struct pool_figures {
    std::uint32_t blocks = 0;
    std::uint64_t device_bytes = 0, used_bytes = 0;
    std::uint32_t allocations = 0;
    double pool_frag = 0, block_frag = 0;
};

pool_figures figures(const device_pool& p) {
    pool_figures f;
    const device_pool_stats s = p.stats();
    f.blocks = s.blocks;
    f.device_bytes = s.device_bytes;
    f.used_bytes = s.used_bytes;
    f.allocations = s.allocations;
    f.pool_frag = s.fragmentation();
    double sum = 0;
    unsigned n = 0;
    for (std::uint32_t i = 0; i < p.block_slots(); ++i)
        if (const offset_heap* h = p.block(i)) {
            sum += h->fragmentation();
            ++n;
        }
    f.block_frag = n == 0 ? 0 : sum / n;
    return f;
}

/// Returns: false when two moves of the pass share bytes of a block, or a move's source and
/// destination overlap.
bool moves_disjoint(std::span<const defrag_move> moves) {
    struct range {
        std::uint64_t memory, begin, end;
    };
    std::vector<range> r;
    for (const defrag_move& m : moves) {
        r.push_back({m.src_memory, m.src_offset, m.src_offset + m.size});
        r.push_back({m.dst_memory, m.dst_offset, m.dst_offset + m.size});
    }
    std::sort(r.begin(), r.end(), [](const range& a, const range& b) {
        return a.memory != b.memory ? a.memory < b.memory : a.begin < b.begin;
    });
    for (std::size_t i = 1; i < r.size(); ++i)
        if (r[i].memory == r[i - 1].memory && r[i].begin < r[i - 1].end) return false;
    return true;
}

struct defrag_row {
    pool_figures before, after;
    defrag_stats stats;
    double pass_us_mean = 0, pass_us_max = 0;
    bool ok = true;
};

defrag_row run_one(const spec& s, std::uint64_t seed, std::uint64_t pass_bytes) {
    std::uint64_t next_memory = 1;
    device_memory_callbacks cb;
    cb.allocate = [&](std::uint64_t, std::uint64_t* memory) {
        *memory = next_memory++;
        return true;
    };
    cb.free = [](std::uint64_t, std::uint64_t) {};
    device_pool_options o;
    o.block_size = s.block_size;
    o.dedicated_threshold = s.block_size + 1; // everything shares blocks
    o.granularity = s.granularity;
    o.min_alignment = 256;
    device_pool pool(cb, o);
    lab::splitmix64 rng(seed);
    std::vector<device_allocation> live;
    std::uint64_t requested = 0;
    // Fill.
    if (s.fill_bytes == 0) {
        for (;;) {
            const request r = draw(rng, s);
            if (pool.stats().used_bytes + r.size > s.block_size * 95 / 100) break;
            const device_allocation h = pool.allocate(r.size, r.align, r.kind);
            if (pool.stats().blocks > 1) {
                (void)pool.deallocate(h);
                (void)pool.trim();
                break;
            }
            live.push_back(h);
        }
    } else {
        while (requested < s.fill_bytes) {
            const request r = draw(rng, s);
            live.push_back(pool.allocate(r.size, r.align, r.kind));
            requested += r.size;
        }
    }
    // Churn.
    for (std::size_t i = 0; i < s.churn_pairs; ++i) {
        const std::size_t v = rng.next() % live.size();
        (void)pool.deallocate(live[v]);
        const request r = draw(rng, s);
        live[v] = pool.allocate(r.size, r.align, r.kind);
    }
    // Free a share at random.
    std::vector<device_allocation> kept;
    for (const device_allocation h : live)
        if (rng.percent() < s.free_percent)
            (void)pool.deallocate(h);
        else
            kept.push_back(h);
    defrag_row row;
    row.before = figures(pool);
    std::vector<double> pass_us;
    (void)pool.begin_defragmentation(defrag_options{pass_bytes, 0});
    for (int pass = 0; pass < 100'000; ++pass) {
        const auto t0 = std::chrono::steady_clock::now();
        const std::span<defrag_move> moves = pool.begin_pass();
        const auto t1 = std::chrono::steady_clock::now();
        if (moves.empty()) break;
        row.ok = row.ok && moves_disjoint(moves);
        const auto t2 = std::chrono::steady_clock::now();
        (void)pool.end_pass();
        const auto t3 = std::chrono::steady_clock::now();
        pass_us.push_back(std::chrono::duration<double, std::micro>((t1 - t0) + (t3 - t2)).count());
        row.ok = row.ok && pool.check();
    }
    row.stats = pool.end_defragmentation();
    row.after = figures(pool);
    for (const device_allocation h : kept)
        row.ok = row.ok && pool.info(h) != nullptr;
    row.ok = row.ok && row.after.allocations == kept.size() && pool.check();
    double sum = 0;
    for (double u : pass_us) {
        sum += u;
        row.pass_us_max = std::max(row.pass_us_max, u);
    }
    row.pass_us_mean = pass_us.empty() ? 0 : sum / static_cast<double>(pass_us.size());
    for (const device_allocation h : kept)
        (void)pool.deallocate(h);
    return row;
}

} // namespace

int run_defrag(int argc, char** argv) {
    std::uint64_t seed = churn::default_seed;
    std::uint64_t pass_bytes = std::uint64_t{8} << 20;
    for (int i = 0; i + 1 < argc; i += 2) {
        const std::string a = argv[i];
        if (a == "--seed")
            seed = std::stoull(argv[i + 1], nullptr, 0);
        else if (a == "--pass-bytes")
            pass_bytes = std::stoull(argv[i + 1]);
        else {
            std::fprintf(stderr, "strata-device-bench defrag: unknown option %s\n", a.c_str());
            return 2;
        }
    }
    std::printf("## defrag: device_pool over fake device memory, passes until none has moves\n\n");
    std::printf(
        "| workload | pass limit | blocks before -> after (freed) | device/live bytes before -> after | "
        "pool frag before -> after | mean block frag before -> after | live MiB (allocs) | moved MiB "
        "(allocs) | moved / live | passes | us/pass mean (max) | checks |\n");
    std::printf("|---|---|---|---|---|---|---|---|---:|---:|---|---|\n");
    int status = 0;
    for (const spec& s : specs)
        for (const std::uint64_t limit : {pass_bytes, std::uint64_t{0}}) {
            const defrag_row r = run_one(s, seed, limit);
            const double mib = 1.0 / (1 << 20);
            auto ratio = [](const pool_figures& f) {
                return f.used_bytes == 0
                           ? 0.0
                           : static_cast<double>(f.device_bytes) / static_cast<double>(f.used_bytes);
            };
            char lim[32] = "none";
            if (limit != 0)
                std::snprintf(lim, sizeof lim, "%llu MiB", static_cast<unsigned long long>(limit >> 20));
            std::printf("| %s | %s | %u -> %u (%u) | %.3f -> %.3f | %.3f -> %.3f | %.3f -> %.3f | %.1f (%u) "
                        "| %.1f (%u) | "
                        "%.3f | %u | %.0f (%.0f) | %s |\n",
                        s.name, lim, r.before.blocks, r.after.blocks, r.stats.blocks_freed, ratio(r.before),
                        ratio(r.after), r.before.pool_frag, r.after.pool_frag, r.before.block_frag,
                        r.after.block_frag, static_cast<double>(r.before.used_bytes) * mib,
                        r.before.allocations, static_cast<double>(r.stats.bytes_moved) * mib,
                        r.stats.allocations_moved,
                        static_cast<double>(r.stats.bytes_moved) / static_cast<double>(r.before.used_bytes),
                        r.stats.passes, r.pass_us_mean, r.pass_us_max, r.ok ? "ok" : "FAILED");
            std::fflush(stdout);
            status |= r.ok ? 0 : 1;
        }
    return status;
}

} // namespace strata::device_bench
