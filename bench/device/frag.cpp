// strata-device-bench frag: fragmentation of offset_heap, tlsf and buddy over one long mixed
// workload, every contender serving the identical request sequence.
//
// The sequence (seeded splitmix64, made before any heap exists): `ops` allocations of sizes
// log-uniform in [256 B, 4 MiB] (rounded up to 256 B), alignment 256, each with a lifetime drawn
// from a mix (50% short: exponential, mean 50 ops; 35% medium: mean 500; 15% long: mean 1,500),
// in a 256 MiB range: about 70% of it is live on average, with swings that reach exhaustion. Step
// t frees every allocation whose lifetime ends at t (a failed one has nothing to free), then makes
// allocation t. Every `sample` steps each heap reports largest free block / free bytes;
// fragmentation = 1 - that. Reported: mean and worst fragmentation, failed allocations (and how
// many of them failed although the free bytes would have held the request), mean occupancy.
//
//   strata-device-bench frag [--ops N] [--range BYTES] [--sample K] [--seed S]
#include <chrono>
#include <cmath>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "device_bench.hpp"

namespace strata::device_bench {

namespace {

struct request {
    std::uint32_t size;
    std::uint32_t end; // step whose frees include it (>= ops: never freed)
};

std::vector<request> make_sequence(std::size_t ops, std::uint64_t seed) {
    lab::splitmix64 rng(seed);
    std::vector<request> seq(ops);
    auto uniform = [&] { return static_cast<double>(rng.next() >> 11) * 0x1.0p-53; };
    for (std::size_t t = 0; t < ops; ++t) {
        const double s = 256.0 * std::exp2(14.0 * uniform());
        const auto size =
            static_cast<std::uint32_t>((static_cast<std::uint64_t>(s) + 255) & ~std::uint64_t{255});
        const unsigned roll = rng.percent();
        const double mean = roll < 50 ? 50.0 : roll < 85 ? 500.0 : 1500.0;
        const double life = 1.0 + -mean * std::log(1.0 - uniform());
        const double end = static_cast<double>(t) + life;
        seq[t] = {std::min<std::uint32_t>(size, 4u << 20), end >= static_cast<double>(ops)
                                                               ? static_cast<std::uint32_t>(ops)
                                                               : static_cast<std::uint32_t>(end)};
    }
    return seq;
}

/// The frees of each step: indices of the requests whose lifetime ends there.
struct schedule {
    std::vector<std::uint32_t> start; // frees of step t: index[start[t], start[t + 1])
    std::vector<std::uint32_t> index;
};

schedule make_schedule(const std::vector<request>& seq) {
    const std::size_t ops = seq.size();
    schedule s;
    s.start.assign(ops + 2, 0);
    for (const request& r : seq)
        if (r.end < ops) ++s.start[r.end + 1];
    for (std::size_t t = 1; t < s.start.size(); ++t)
        s.start[t] += s.start[t - 1];
    s.index.resize(s.start[ops]);
    std::vector<std::uint32_t> fill(s.start.begin(), s.start.end() - 1);
    for (std::uint32_t i = 0; i < ops; ++i)
        if (seq[i].end < ops) s.index[fill[seq[i].end]++] = i;
    return s;
}

// The contenders: handle, allocate, free, and the (largest free, free bytes) pair.
struct offset_frag {
    using handle = offset_allocation;
    offset_frag(std::size_t range, allocation_strategy strategy)
        : heap(range, offset_heap_options{1u << 16, 256, 1}), strategy(strategy) {}
    handle allocate(std::uint32_t size) noexcept {
        return heap.allocate(size, 256, resource_kind::linear, strategy);
    }
    static bool ok(handle h) noexcept { return static_cast<bool>(h); }
    void deallocate(handle h, std::uint32_t) noexcept { (void)heap.deallocate(h); }
    [[nodiscard]] std::uint64_t largest() const noexcept { return heap.metrics().largest_free_block; }
    [[nodiscard]] std::uint64_t free_bytes() const noexcept { return heap.free_bytes(); }
    [[nodiscard]] std::uint64_t capacity() const noexcept { return heap.size(); }
    bool check() const noexcept { return heap.check(); }
    offset_heap heap;
    allocation_strategy strategy;
};

struct tlsf_frag {
    using handle = void*;
    explicit tlsf_frag(std::size_t range) : memory(range), heap(memory.span()) {}
    handle allocate(std::uint32_t size) noexcept { return heap.allocate(size, 256); }
    static bool ok(handle h) noexcept { return h != nullptr; }
    void deallocate(handle h, std::uint32_t) noexcept { heap.deallocate(h); }
    // metrics() walks every block: the largest free payload, not only what a probe reaches.
    [[nodiscard]] std::uint64_t largest() const noexcept { return heap.metrics().largest_free_block; }
    [[nodiscard]] std::uint64_t free_bytes() const noexcept { return heap.metrics().free_bytes; }
    [[nodiscard]] std::uint64_t capacity() const noexcept { return memory.span().size(); }
    bool check() const noexcept { return heap.check(); }
    region memory;
    tlsf heap;
};

struct buddy_frag {
    using handle = std::size_t;
    explicit buddy_frag(std::size_t range) : heap(range, 256) {}
    handle allocate(std::uint32_t size) noexcept { return heap.allocate_offset(size, 256); }
    static bool ok(handle h) noexcept { return h != buddy::npos; }
    void deallocate(handle h, std::uint32_t size) noexcept { heap.deallocate_offset(h, size, 256); }
    [[nodiscard]] std::uint64_t largest() const noexcept { return heap.largest_free_block(); }
    [[nodiscard]] std::uint64_t free_bytes() const noexcept {
        return heap.region_size() - heap.granted_bytes();
    }
    [[nodiscard]] std::uint64_t capacity() const noexcept { return heap.region_size(); }
    bool check() const noexcept { return heap.check(); }
    buddy heap;
};

struct frag_result {
    double mean = 0, worst = 0, p95 = 0;
    std::size_t failures = 0, failures_with_room = 0;
    double occupancy = 0; // mean requested live bytes / capacity over the samples
    double ns_per_op = 0;
    bool checked = true;
};

template <class H>
frag_result run_one(H& h, const std::vector<request>& seq, const schedule& s, std::size_t sample) {
    frag_result r;
    std::vector<typename H::handle> handles(seq.size());
    std::vector<bool> live(seq.size(), false);
    std::vector<double> frags;
    std::uint64_t live_bytes = 0;
    double occ_sum = 0;
    double seconds = 0;
    auto t0 = std::chrono::steady_clock::now();
    for (std::size_t t = 0; t < seq.size(); ++t) {
        for (std::uint32_t k = s.start[t]; k < s.start[t + 1]; ++k) {
            const std::uint32_t i = s.index[k];
            if (!live[i]) continue;
            h.deallocate(handles[i], seq[i].size);
            live[i] = false;
            live_bytes -= seq[i].size;
        }
        handles[t] = h.allocate(seq[t].size);
        if (H::ok(handles[t])) {
            live[t] = true;
            live_bytes += seq[t].size;
        } else {
            ++r.failures;
            if (h.free_bytes() >= seq[t].size) ++r.failures_with_room;
        }
        if ((t + 1) % sample == 0) {
            seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
            const std::uint64_t f = h.free_bytes();
            frags.push_back(f == 0 ? 0.0 : 1.0 - static_cast<double>(h.largest()) / static_cast<double>(f));
            occ_sum += static_cast<double>(live_bytes) / static_cast<double>(h.capacity());
            t0 = std::chrono::steady_clock::now();
        }
    }
    seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    r.checked = h.check();
    for (std::size_t i = 0; i < seq.size(); ++i)
        if (live[i]) h.deallocate(handles[i], seq[i].size);
    double sum = 0;
    for (double f : frags) {
        sum += f;
        r.worst = std::max(r.worst, f);
    }
    r.mean = frags.empty() ? 0 : sum / static_cast<double>(frags.size());
    std::sort(frags.begin(), frags.end());
    r.p95 = frags.empty() ? 0 : frags[static_cast<std::size_t>(0.95 * static_cast<double>(frags.size() - 1))];
    r.occupancy = frags.empty() ? 0 : occ_sum / static_cast<double>(frags.size());
    r.ns_per_op = seconds * 1e9 / static_cast<double>(seq.size());
    return r;
}

void print(const char* name, const frag_result& r, std::size_t ops) {
    std::printf("| %s | %.3f | %.3f | %.3f | %zu (%.3f%%) | %zu | %.1f%% | %.0f |%s\n", name, r.mean, r.p95,
                r.worst, r.failures, 100.0 * static_cast<double>(r.failures) / static_cast<double>(ops),
                r.failures_with_room, 100.0 * r.occupancy, r.ns_per_op, r.checked ? "" : " CHECK FAILED");
}

} // namespace

int run_frag(int argc, char** argv) {
    std::size_t ops = 1'000'000, range = std::size_t{256} << 20, sample = 1000;
    std::uint64_t seed = churn::default_seed;
    for (int i = 0; i + 1 < argc; i += 2) {
        const std::string a = argv[i];
        if (a == "--ops")
            ops = std::stoull(argv[i + 1]);
        else if (a == "--range")
            range = std::stoull(argv[i + 1]);
        else if (a == "--sample")
            sample = std::stoull(argv[i + 1]);
        else if (a == "--seed")
            seed = std::stoull(argv[i + 1], nullptr, 0);
        else {
            std::fprintf(stderr, "strata-device-bench frag: unknown option %s\n", a.c_str());
            return 2;
        }
    }
    if (ops == 0 || sample == 0) return 2;
    const std::vector<request> seq = make_sequence(ops, seed);
    const schedule s = make_schedule(seq);
    std::printf(
        "## frag: %zu allocations, 256 B-4 MiB log-uniform, align 256, mixed lifetimes, %zu MiB range, "
        "sampled every %zu\n\n",
        ops, range >> 20, sample);
    std::printf("| heap | mean frag | p95 frag | worst frag | failed allocations | failed with free bytes >= "
                "request | "
                "mean occupancy (requested) | ns/op (info) |\n|---|---:|---:|---:|---:|---:|---:|---:|\n");
    int status = 0;
    {
        offset_frag h(range, allocation_strategy::min_time);
        const frag_result r = run_one(h, seq, s, sample);
        print("offset_heap (min_time)", r, ops);
        status |= r.checked ? 0 : 1;
    }
    {
        offset_frag h(range, allocation_strategy::min_memory);
        const frag_result r = run_one(h, seq, s, sample);
        print("offset_heap (min_memory)", r, ops);
        status |= r.checked ? 0 : 1;
    }
    {
        tlsf_frag h(range);
        const frag_result r = run_one(h, seq, s, sample);
        print("tlsf", r, ops);
        status |= r.checked ? 0 : 1;
    }
    {
        buddy_frag h(range);
        const frag_result r = run_one(h, seq, s, sample);
        print("buddy (offsets, min_block 256)", r, ops);
        status |= r.checked ? 0 : 1;
    }
    std::fflush(stdout);
    return status;
}

} // namespace strata::device_bench
