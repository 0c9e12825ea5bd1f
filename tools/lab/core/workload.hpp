#pragma once
// strata-lab workload model: a seeded, pre-generated sequence of allocation requests grouped into
// frames (a simulated game loop). Generated once, up front, so generation never sits in a timed
// loop, and replayed identically through every contestant.
//
// Header-only so tests/lab/lab_test.cpp can use it without linking the lab's .cpp files.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

namespace strata::lab {

/// splitmix64 (Steele, Lea, Flood 2014): tiny, fast, and fully specified, so a seed gives the same
/// workload with every compiler and standard library (std::uniform_int_distribution does not).
class splitmix64 {
public:
    explicit constexpr splitmix64(std::uint64_t seed) noexcept : state_(seed) {}

    constexpr std::uint64_t next() noexcept {
        std::uint64_t z = (state_ += 0x9E3779B97F4A7C15ull);
        z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
        z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
        return z ^ (z >> 31);
    }

    /// Returns: a value in [lo, hi] (inclusive). Requires: lo <= hi. The modulo bias is below
    /// 2^-40 for the ranges the lab uses.
    constexpr std::uint64_t between(std::uint64_t lo, std::uint64_t hi) noexcept {
        return lo + next() % (hi - lo + 1);
    }

    /// Returns: a value in [0, 100), for percentage draws.
    constexpr unsigned percent() noexcept { return static_cast<unsigned>(next() % 100); }

private:
    std::uint64_t state_;
};

/// One allocation request.
struct alloc_op {
    std::uint32_t size;  ///< bytes, in [workload_bounds::min_size, workload_bounds::max_size]
    std::uint32_t align; ///< 8, 16 or 64; `size` is a multiple of it
    friend constexpr bool operator==(const alloc_op&, const alloc_op&) noexcept = default;
};

/// The documented bounds of the default size/alignment mix (tests check them).
struct workload_bounds {
    static constexpr std::uint32_t min_size = 16;
    static constexpr std::uint32_t max_size = 4096;
    static constexpr std::uint32_t max_align = 64;
};

/// One size class of the mix: `percent` of requests draw a size uniformly from [lo, hi].
struct size_bucket {
    unsigned percent;
    std::uint32_t lo;
    std::uint32_t hi;
};
/// One alignment of the mix.
struct align_bucket {
    unsigned percent;
    std::uint32_t align;
};

/// The default mix: mostly small scratch (16-256 B), some medium, a few page-sized buffers;
/// mostly 8/16-byte alignment, a few cache-line (64-byte) aligned SIMD/job blocks. The size is then
/// rounded up to a multiple of the alignment (as sizeof(T) is a multiple of alignof(T)).
inline constexpr size_bucket default_sizes[] = {
    {50, 16, 64},
    {30, 65, 256},
    {15, 257, 1024},
    {5, 1025, 4096},
};
inline constexpr align_bucket default_aligns[] = {
    {60, 8},
    {35, 16},
    {5, 64},
};

/// What to generate.
struct workload_config {
    std::uint64_t seed = 42;
    std::size_t frames = 600;            ///< frames in the loop, warm-up included
    std::size_t allocs_per_frame = 2000; ///< mean allocations per frame
    std::size_t warmup_frames = 2;       ///< leading frames run but excluded from every statistic
    unsigned jitter_percent = 25;        ///< each frame's count is uniform in mean +- this percent
};

/// A generated game loop: `frames` frames, frame f holding ops[frame_begin[f] .. frame_begin[f+1]).
struct workload {
    workload_config config;
    std::vector<alloc_op> ops;
    std::vector<std::size_t> frame_begin; ///< frames + 1 offsets into ops

    // Summary figures, computed by summarize_frames() (generate_workload() calls it). The sizing
    // figures cover every frame, warm-up included (an allocator must serve them all); the
    // statistics cover only the frames after warm-up, as every measured figure does.
    std::size_t max_frame_allocs = 0;     ///< sizing: most allocations in one frame
    std::size_t min_frame_allocs = 0;     ///< fewest allocations in one frame (all frames)
    std::size_t max_frame_worst_case = 0; ///< sizing: max over frames of sum(size + align - 1): a
                                          ///< bump allocator never needs more for one frame
    std::size_t max_frame_bytes = 0;      ///< statistic: most requested bytes live in one frame after
                                          ///< warm-up (the requested peak)
    std::size_t timed_allocs = 0;         ///< statistic: allocations in the frames after warm-up

    [[nodiscard]] std::size_t frames() const noexcept {
        return frame_begin.empty() ? 0 : frame_begin.size() - 1;
    }
    [[nodiscard]] std::size_t warmup() const noexcept { return std::min(config.warmup_frames, frames()); }
    [[nodiscard]] std::span<const alloc_op> frame(std::size_t f) const noexcept {
        return {ops.data() + frame_begin[f], frame_begin[f + 1] - frame_begin[f]};
    }
    [[nodiscard]] std::size_t total_allocs() const noexcept { return ops.size(); }
};

/// The most allocations a game loop may hold, frames x allocs-per-frame: the loop is generated up
/// front (8 B per request, plus 4 B per latency sample), so 2^26 requests (up to 1.25 x that with
/// the jitter) cost about 1 GiB before anything runs. Above it the lab refuses the loop rather
/// than fail on std::bad_alloc.
inline constexpr std::size_t max_loop_allocs = std::size_t{1} << 26;

/// Throws std::invalid_argument when `c` cannot produce a meaningful loop.
inline void validate(const workload_config& c) {
    if (c.frames == 0) throw std::invalid_argument("frames must be at least 1");
    if (c.allocs_per_frame == 0) throw std::invalid_argument("allocs-per-frame must be at least 1");
    if (c.warmup_frames >= c.frames) {
        throw std::invalid_argument("frames (" + std::to_string(c.frames) + ") must exceed warm-up frames (" +
                                    std::to_string(c.warmup_frames) + ")");
    }
    if (c.jitter_percent > 100) throw std::invalid_argument("jitter must be at most 100 percent");
    if (c.allocs_per_frame > (std::size_t{1} << 24))
        throw std::invalid_argument("allocs-per-frame above 16M");
    if (c.frames > (std::size_t{1} << 24)) throw std::invalid_argument("frames above 16M");
    if (c.allocs_per_frame > max_loop_allocs / c.frames) {
        throw std::invalid_argument("frames x allocs-per-frame (" + std::to_string(c.frames) + " x " +
                                    std::to_string(c.allocs_per_frame) + ") is above the cap of " +
                                    std::to_string(max_loop_allocs) +
                                    " allocations (2^26: the loop is generated in memory before it runs)");
    }
}

/// Returns: one request drawn from the default mix.
inline alloc_op draw_op(splitmix64& rng) noexcept {
    unsigned roll = rng.percent();
    std::uint32_t size = default_sizes[0].lo;
    for (const size_bucket& b : default_sizes) {
        if (roll < b.percent) {
            size = static_cast<std::uint32_t>(rng.between(b.lo, b.hi));
            break;
        }
        roll -= b.percent;
    }
    roll = rng.percent();
    std::uint32_t align = default_aligns[0].align;
    for (const align_bucket& b : default_aligns) {
        if (roll < b.percent) {
            align = b.align;
            break;
        }
        roll -= b.percent;
    }
    size = (size + align - 1) & ~(align - 1); // max_size is a multiple of every alignment
    return {size, align};
}

/// Effects: computes the summary figures of `w` from its ops, frame_begin and
/// config.warmup_frames (the sizing ones over every frame, the statistics over the frames after
/// warm-up). Requires: frame_begin holds frames + 1 ascending offsets into ops.
inline void summarize_frames(workload& w) noexcept {
    w.max_frame_allocs = 0;
    w.min_frame_allocs = w.frames() == 0 ? 0 : static_cast<std::size_t>(-1);
    w.max_frame_bytes = 0;
    w.max_frame_worst_case = 0;
    w.timed_allocs = 0;
    const std::size_t warmup = w.warmup();
    for (std::size_t f = 0; f < w.frames(); ++f) {
        std::size_t bytes = 0;
        std::size_t worst = 0;
        for (const alloc_op& op : w.frame(f)) {
            bytes += op.size;
            worst += op.size + op.align - 1;
        }
        const std::size_t count = w.frame(f).size();
        w.max_frame_allocs = std::max(w.max_frame_allocs, count);
        w.min_frame_allocs = std::min(w.min_frame_allocs, count);
        w.max_frame_worst_case = std::max(w.max_frame_worst_case, worst);
        if (f >= warmup) {
            w.max_frame_bytes = std::max(w.max_frame_bytes, bytes);
            w.timed_allocs += count;
        }
    }
}

/// Returns: the workload for `config` (deterministic: same config, same ops).
/// Throws: std::invalid_argument (see validate), std::bad_alloc.
inline workload generate_workload(const workload_config& config) {
    validate(config);
    workload w;
    w.config = config;
    splitmix64 rng(config.seed);
    const std::size_t mean = config.allocs_per_frame;
    const std::size_t spread = mean * config.jitter_percent / 100;
    w.ops.reserve((mean + spread) * config.frames);
    w.frame_begin.reserve(config.frames + 1);
    for (std::size_t f = 0; f < config.frames; ++f) {
        w.frame_begin.push_back(w.ops.size());
        const auto count = static_cast<std::size_t>(rng.between(mean - spread, mean + spread));
        for (std::size_t i = 0; i < count; ++i)
            w.ops.push_back(draw_op(rng));
    }
    w.frame_begin.push_back(w.ops.size());
    summarize_frames(w);
    return w;
}

/// The --quick workload: small enough for tests and CI (well under a second for every contestant).
inline workload_config quick_config(std::uint64_t seed = workload_config{}.seed) {
    workload_config c;
    c.seed = seed;
    c.frames = 40;
    c.allocs_per_frame = 250;
    c.warmup_frames = 2;
    return c;
}

} // namespace strata::lab
