#pragma once
// strata-lab operation model: every workload, synthetic or recorded, is a sequence of ops
// (allocate, free, reallocate, frame boundary), each tagged with a thread. Blocks are named by
// *slot*: a small integer the workload assigns when a block is allocated and recycles when it is
// freed, so a replay keeps its live pointers in a flat array instead of a hash map.
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "rng.hpp"

namespace strata::lab {

enum class op_kind : std::uint8_t {
    allocate,   ///< slot = a new block of `size` bytes aligned to 1 << log2_align
    free,       ///< slot's block is freed
    reallocate, ///< slot's block is resized to `size` (contents kept up to the smaller size)
    frame,      ///< frame boundary: per-frame allocators may drop everything allocated this frame
};

/// One operation. 16 bytes.
struct op {
    std::uint64_t size; ///< allocate / reallocate: bytes requested
    std::uint32_t slot; ///< allocate / free / reallocate: the block
    op_kind kind;
    std::uint8_t log2_align; ///< allocate: the alignment requested, as a power of two
    std::uint16_t thread;    ///< 0-based thread of the op (recorded traces; 0 for synthetic ones)
};
static_assert(sizeof(op) == 16);

/// A workload: the ops plus what every consumer needs to know about them up front.
struct op_workload {
    std::string name;
    std::string description;
    std::vector<op> ops;
    std::vector<std::uint64_t> times_ns; ///< recorded traces: when each op happened (ns since the
                                         ///< trace started), parallel to ops; empty for synthetic ones
    std::uint32_t slots = 0;             ///< slot numbers are < slots
    std::uint64_t allocations = 0;       ///< allocate ops
    std::uint64_t frees = 0;             ///< free ops
    std::uint64_t reallocations = 0;     ///< reallocate ops
    std::uint64_t frames = 0;            ///< frame ops
    std::uint64_t peak_live_bytes = 0;   ///< most requested bytes live at once
    std::uint64_t peak_live_blocks = 0;  ///< most blocks live at once
    std::uint64_t max_size = 0;          ///< largest request
    std::uint64_t min_size = UINT64_MAX; ///< smallest request
    std::uint32_t max_align = 1;         ///< largest alignment requested
    std::uint32_t threads = 1;           ///< distinct thread numbers
    std::uint64_t end_live_blocks = 0;   ///< blocks never freed (the replay frees them, untimed)
    bool frame_scoped = true; ///< every block is freed before the next frame op: linear allocators apply

    /// Returns: true when every request has the same size (pools apply).
    [[nodiscard]] bool fixed_size() const noexcept { return allocations > 0 && min_size == max_size; }
    /// Returns: allocate + free + reallocate ops (frame markers are not operations on memory).
    [[nodiscard]] std::uint64_t memory_ops() const noexcept { return allocations + frees + reallocations; }
};

/// Builds an op_workload while tracking the live set: slots are recycled LIFO, statistics kept.
class op_builder {
public:
    explicit op_builder(std::string name, std::string description) {
        w_.name = std::move(name);
        w_.description = std::move(description);
    }

    /// Returns: the slot of a new block of `size` bytes, alignment `align` (a power of two).
    std::uint32_t allocate(std::uint64_t size, std::uint32_t align = 16, std::uint16_t thread = 0) {
        std::uint32_t slot;
        if (free_slots_.empty()) {
            slot = w_.slots++;
            sizes_.push_back(0);
            frame_of_.push_back(0);
        } else {
            slot = free_slots_.back();
            free_slots_.pop_back();
        }
        sizes_[slot] = size;
        frame_of_[slot] = w_.frames;
        live_bytes_ += size;
        ++live_blocks_;
        w_.peak_live_bytes = std::max(w_.peak_live_bytes, live_bytes_);
        w_.peak_live_blocks = std::max(w_.peak_live_blocks, live_blocks_);
        w_.max_size = std::max(w_.max_size, size);
        w_.min_size = std::min(w_.min_size, size);
        w_.max_align = std::max(w_.max_align, align);
        w_.threads = std::max<std::uint32_t>(w_.threads, thread + 1u);
        ++w_.allocations;
        w_.ops.push_back({size, slot, op_kind::allocate, static_cast<std::uint8_t>(log2_of(align)), thread});
        return slot;
    }

    /// Requires: slot is live. Effects: frees it.
    void free(std::uint32_t slot, std::uint16_t thread = 0) {
        live_bytes_ -= sizes_[slot];
        --live_blocks_;
        free_slots_.push_back(slot);
        ++w_.frees;
        w_.threads = std::max<std::uint32_t>(w_.threads, thread + 1u);
        w_.ops.push_back({0, slot, op_kind::free, 0, thread});
    }

    /// Requires: slot is live. Effects: resizes it to `size`.
    void reallocate(std::uint32_t slot, std::uint64_t size, std::uint16_t thread = 0) {
        live_bytes_ = live_bytes_ - sizes_[slot] + size;
        sizes_[slot] = size;
        w_.peak_live_bytes = std::max(w_.peak_live_bytes, live_bytes_);
        w_.max_size = std::max(w_.max_size, size);
        w_.min_size = std::min(w_.min_size, size);
        w_.frame_scoped = w_.frame_scoped && frame_of_[slot] == w_.frames;
        ++w_.reallocations;
        w_.ops.push_back({size, slot, op_kind::reallocate, 4, thread});
    }

    /// Effects: a frame boundary. A block still live from an earlier frame makes the workload not
    /// frame-scoped.
    void frame() {
        if (live_blocks_ != 0) w_.frame_scoped = false;
        ++w_.frames;
        w_.ops.push_back({0, 0, op_kind::frame, 0, 0});
    }

    /// Effects: stamps the op just added with `ns` (recorded traces keep their timestamps).
    void stamp(std::uint64_t ns) {
        w_.times_ns.resize(w_.ops.size(), 0);
        w_.times_ns.back() = ns;
    }

    /// Effects: moves the ops added since the last call into `out` (its old contents are dropped)
    /// and drops their stamps; the statistics keep counting. Streaming conversion uses it so a
    /// trace is never held whole.
    void take_ops(std::vector<op>& out) {
        out.clear();
        out.swap(w_.ops);
        w_.times_ns.clear();
    }
    /// Returns: the ops added since the last take_ops (all of them if it was never called).
    [[nodiscard]] std::size_t pending_ops() const noexcept { return w_.ops.size(); }

    /// Returns: what finish() would return now, without the ops (the builder keeps going).
    [[nodiscard]] op_workload shape() const {
        op_workload w;
        w.name = w_.name;
        w.description = w_.description;
        w.slots = w_.slots;
        w.allocations = w_.allocations, w.frees = w_.frees, w.reallocations = w_.reallocations;
        w.frames = w_.frames;
        w.peak_live_bytes = w_.peak_live_bytes, w.peak_live_blocks = w_.peak_live_blocks;
        w.max_size = w_.max_size, w.min_size = w_.min_size, w.max_align = w_.max_align;
        w.threads = w_.threads;
        w.frame_scoped = w_.frame_scoped;
        finish_stats(w, live_blocks_);
        return w;
    }

    [[nodiscard]] std::uint64_t live_blocks() const noexcept { return live_blocks_; }
    [[nodiscard]] std::uint64_t size_of(std::uint32_t slot) const noexcept { return sizes_[slot]; }

    /// Returns: the finished workload (the builder is left empty).
    [[nodiscard]] op_workload finish() {
        finish_stats(w_, live_blocks_);
        return std::move(w_);
    }

private:
    static void finish_stats(op_workload& w, std::uint64_t live_blocks) noexcept {
        w.end_live_blocks = live_blocks;
        if (live_blocks != 0 && w.frames != 0) w.frame_scoped = false;
        if (w.frames == 0) w.frame_scoped = false; // no frames: nothing is frame-scoped
        if (w.allocations == 0) w.min_size = 0;
    }

    static unsigned log2_of(std::uint32_t v) noexcept {
        unsigned r = 0;
        while ((v >>= 1) != 0)
            ++r;
        return r;
    }

    op_workload w_;
    std::vector<std::uint32_t> free_slots_;
    std::vector<std::uint64_t> sizes_;
    std::vector<std::uint64_t> frame_of_;
    std::uint64_t live_bytes_ = 0, live_blocks_ = 0;
};

// ---------------------------------------------------------------------------------------------
// Synthetic generators. Every one is a pure function of (seed, scale): same arguments, same ops.
// `scale` multiplies the amount of work (1.0 = the documented size; tests use less).
// ---------------------------------------------------------------------------------------------

namespace gen {

inline constexpr std::uint64_t default_seed = 42;

inline std::size_t scaled(std::size_t n, double scale) {
    return std::max<std::size_t>(1, static_cast<std::size_t>(static_cast<double>(n) * scale));
}

/// 16 * 4096^u for u uniform in [0, 1): log-uniform in [16, 65536).
inline std::uint64_t log_uniform_16_64k(splitmix64& r) {
    const double u = static_cast<double>(r.next() >> 11) * 0x1.0p-53;
    return std::clamp<std::uint64_t>(static_cast<std::uint64_t>(16.0 * std::exp2(12.0 * u)), 16, 65536);
}

/// Returns: `n` with thousands separators ("1,500"), for descriptions that give a scaled count.
inline std::string thousands(std::size_t n) {
    std::string digits = std::to_string(n);
    for (std::size_t i = digits.size(); i > 3; i -= 3)
        digits.insert(i - 3, ",");
    return digits;
}

/// Churn: `live` blocks, then `pairs` times free a random victim and allocate a new block in its
/// place (the shape of W1/W2/W3; the victim sequence is the one bench/churn uses for the same seed).
template <class Draw>
op_workload churn(std::string name, std::string description, std::uint32_t live, std::size_t pairs,
                  std::uint64_t seed, Draw draw) {
    op_builder b(std::move(name), std::move(description));
    splitmix64 rng(seed);
    std::vector<std::uint32_t> slot_of(live);
    for (auto& s : slot_of)
        s = b.allocate(draw(rng));
    for (std::size_t i = 0; i < pairs; ++i) {
        const auto victim = static_cast<std::uint32_t>(rng.next() % live);
        const std::uint64_t size = draw(rng);
        b.free(slot_of[victim]);
        slot_of[victim] = b.allocate(size);
    }
    for (auto s : slot_of)
        b.free(s);
    return b.finish();
}

/// W1 random small: 10,000 live, sizes uniform 16-256 B, 1,000,000 pairs at scale 1.
inline op_workload w1(double scale = 1.0, std::uint64_t seed = default_seed) {
    return churn("w1", "random small: 10,000 live, sizes uniform 16-256 B, free+allocate pairs", 10'000,
                 scaled(1'000'000, scale), seed, [](splitmix64& r) { return r.between(16, 256); });
}

/// W2 mixed: 2,000 live, sizes log-uniform 16 B-64 KiB.
inline op_workload w2(double scale = 1.0, std::uint64_t seed = default_seed) {
    return churn("w2", "mixed: 2,000 live, sizes log-uniform 16 B-64 KiB, free+allocate pairs", 2'000,
                 scaled(1'000'000, scale), seed, log_uniform_16_64k);
}

/// W3 fixed: 10,000 live 96-byte blocks.
inline op_workload w3(double scale = 1.0, std::uint64_t seed = default_seed) {
    return churn("w3", "fixed: 10,000 live 96 B blocks, free+allocate pairs", 10'000,
                 scaled(1'000'000, scale), seed, [](splitmix64&) { return std::uint64_t{96}; });
}

/// Frame scratch: each frame allocates 16-4096 B blocks (alignment 8/16/64) and frees all of them
/// at its end, newest first: what a per-frame arena serves.
inline op_workload frame_scratch(double scale = 1.0, std::uint64_t seed = default_seed) {
    const std::size_t frames = scaled(300, scale);
    op_builder b("frame_scratch", "per-frame scratch: " + thousands(frames) +
                                      " frames x ~2,000 blocks of 16-4096 B, all die at frame end");
    splitmix64 rng(seed);
    std::vector<std::uint32_t> frame_slots;
    for (std::size_t f = 0; f < frames; ++f) {
        const std::size_t n = 1500 + rng.next() % 1001;
        for (std::size_t i = 0; i < n; ++i) {
            const unsigned pct = rng.percent();
            const std::uint64_t size = pct < 70   ? rng.between(16, 128)
                                       : pct < 95 ? rng.between(129, 1024)
                                                  : rng.between(1025, 4096);
            const std::uint32_t align = pct % 5 == 0 ? 64 : pct % 2 == 0 ? 16 : 8;
            frame_slots.push_back(b.allocate((size + align - 1) / align * align, align));
        }
        while (!frame_slots.empty()) {
            b.free(frame_slots.back());
            frame_slots.pop_back();
        }
        b.frame();
    }
    return b.finish();
}

/// Particle churn: 20,000 live 96-byte particles; each frame ~5 % die (random ones) and as many
/// are born.
inline op_workload particle_churn(double scale = 1.0, std::uint64_t seed = default_seed) {
    op_builder b("particles",
                 "particle churn: 20,000 live 96 B particles, ~1,000 die and are born per frame");
    splitmix64 rng(seed);
    std::vector<std::uint32_t> live(20'000);
    for (auto& s : live)
        s = b.allocate(96);
    const std::size_t frames = scaled(500, scale);
    for (std::size_t f = 0; f < frames; ++f) {
        const std::size_t deaths = 900 + rng.next() % 201;
        for (std::size_t i = 0; i < deaths; ++i) {
            const std::size_t k = rng.next() % live.size();
            b.free(live[k]);
            live[k] = b.allocate(96);
        }
        b.frame();
    }
    for (auto s : live)
        b.free(s);
    return b.finish();
}

/// Bimodal lifetimes (a fragmentation race): random sizes 16-1024 B; 90 % of blocks die
/// within a few dozen operations, 10 % live for thousands; ~10,000 operations at scale 1.
inline op_workload bimodal(double scale = 1.0, std::uint64_t seed = default_seed) {
    const std::size_t steps = scaled(5'000, scale); // an allocation and (nearly always) its free each
    op_builder b("bimodal", "bimodal lifetimes: 90% die young, 10% live long; sizes 16-1024 B; ~" +
                                thousands(2 * steps) + " ops");
    splitmix64 rng(seed);
    // death_at[t] lists the slots that die at step t.
    std::vector<std::vector<std::uint32_t>> death_at(steps + 1);
    for (std::size_t t = 0; t < steps; ++t) {
        for (std::uint32_t s : death_at[t])
            b.free(s);
        death_at[t].clear();
        const std::uint64_t size = rng.between(16, 1024);
        const std::size_t life = rng.percent() < 90 ? rng.between(1, 40) : rng.between(1000, 4000);
        const std::uint32_t slot = b.allocate(size);
        death_at[std::min(steps, t + life)].push_back(slot);
    }
    for (std::uint32_t s : death_at[steps])
        b.free(s);
    return b.finish();
}

/// Level load/unload: three levels; each loads ~3,000 assets (log-uniform 64 B-1 MiB), plays 100
/// frames of scratch, then unloads in random order.
inline op_workload level_cycle(double scale = 1.0, std::uint64_t seed = default_seed) {
    const std::size_t assets = scaled(3'000, scale), frames = scaled(100, scale);
    op_builder b("levels", "level load/unload: 3 levels x ~" + thousands(assets) +
                               " assets of 64 B-1 MiB, play " + thousands(frames) +
                               " frames, unload in random order");
    splitmix64 rng(seed);
    std::vector<std::uint32_t> level, scratch;
    for (int l = 0; l < 3; ++l) {
        const std::size_t n = assets + rng.next() % (assets / 4 + 1);
        for (std::size_t i = 0; i < n; ++i) {
            const double u = static_cast<double>(rng.next() >> 11) * 0x1.0p-53;
            level.push_back(b.allocate(static_cast<std::uint64_t>(64.0 * std::exp2(14.0 * u)), 16));
        }
        for (std::size_t f = 0; f < frames; ++f) {
            for (std::size_t i = 0, k = 200 + rng.next() % 200; i < k; ++i)
                scratch.push_back(b.allocate(rng.between(16, 512)));
            for (auto s : scratch)
                b.free(s);
            scratch.clear();
            b.frame();
        }
        for (std::size_t i = level.size(); i > 1; --i) // Fisher-Yates: unload order is random
            std::swap(level[i - 1], level[rng.next() % i]);
        for (auto s : level)
            b.free(s);
        level.clear();
    }
    return b.finish();
}

/// Trickle (the shape of a recorded turn-based strategy game): 24,576 live blocks (~26 MiB) churned by
/// free + allocate pairs; sizes 55% 16-64 B, 44% 65 B-4 KiB (log-uniform), 1% 60.5 KiB; one pair in
/// 2,000 also allocates a 1-8 MiB buffer that dies 1-64 pairs later. 600,000 pairs at scale 1; the
/// live set does not scale. Single-threaded (strata-mt's `trickle` is the same shape on plain malloc).
inline op_workload trickle(double scale = 1.0, std::uint64_t seed = default_seed) {
    constexpr std::uint32_t live = 24'576;
    const std::size_t pairs = scaled(600'000, scale);
    op_builder b("trickle", "trickle: 24,576 live blocks (~26 MiB; 55% <= 64 B, 1% 60.5 KiB), " +
                                thousands(pairs) + " free+allocate pairs, 1 in 2,000 adds a 1-8 MiB buffer");
    splitmix64 rng(seed);
    auto draw = [&rng]() -> std::uint64_t {
        const std::uint64_t pick = rng.next() % 1000;
        if (pick < 550) return rng.between(16, 64);
        if (pick < 990) {
            const double u = static_cast<double>(rng.next() >> 11) * 0x1.0p-53;
            return std::clamp<std::uint64_t>(static_cast<std::uint64_t>(65.0 * std::exp2(5.977 * u)), 65,
                                             4096);
        }
        return 61'952; // 60.5 KiB
    };
    std::vector<std::uint32_t> slot_of(live);
    for (auto& s : slot_of)
        s = b.allocate(draw());
    struct buffer {
        std::uint32_t slot;
        std::size_t dies_at;
    };
    std::vector<buffer> buffers;
    for (std::size_t i = 0; i < pairs; ++i) {
        const auto victim = static_cast<std::uint32_t>(rng.next() % live);
        b.free(slot_of[victim]);
        slot_of[victim] = b.allocate(draw());
        if (rng.next() % 2000 == 0)
            buffers.push_back({b.allocate(rng.between(std::uint64_t{1} << 20, std::uint64_t{8} << 20)),
                               i + rng.between(1, 64)});
        for (std::size_t k = 0; k < buffers.size();) {
            if (buffers[k].dies_at <= i) {
                b.free(buffers[k].slot);
                buffers[k] = buffers.back();
                buffers.pop_back();
            } else {
                ++k;
            }
        }
    }
    for (const buffer& buf : buffers)
        b.free(buf.slot);
    for (auto s : slot_of)
        b.free(s);
    return b.finish();
}

/// 32 KiB + 1 churn (the shape of a recorded voxel game's map generation): 4,096 live blocks
/// churned by free + allocate pairs; 10% of blocks are 32,769 B, the rest 8-128 B (60%) and
/// 129 B-1 KiB; 7.5% of the frees are late, 16-255 pairs after their block was replaced (where the
/// recording has another thread free them: the cross-thread part lives in strata-mt's `xchurn32k`).
/// 400,000 pairs at scale 1; the live set does not scale.
inline op_workload xchurn32k(double scale = 1.0, std::uint64_t seed = default_seed) {
    constexpr std::uint32_t live = 4'096;
    const std::size_t pairs = scaled(400'000, scale);
    op_builder b("xchurn32k", "32 KiB + 1 churn: 4,096 live blocks, 10% of 32,769 B, the rest <= 1 KiB; " +
                                  thousands(pairs) + " free+allocate pairs, 7.5% of frees late");
    splitmix64 rng(seed);
    auto draw = [&rng]() -> std::uint64_t {
        const std::uint64_t pick = rng.next() % 1000;
        if (pick < 100) return 32'769;
        if (pick < 640) return rng.between(8, 128);
        return rng.between(129, 1024);
    };
    std::vector<std::uint32_t> slot_of(live);
    for (auto& s : slot_of)
        s = b.allocate(draw());
    // late[t % 256]: the blocks whose free comes at pair t (the ring's size bounds the lag).
    std::vector<std::vector<std::uint32_t>> late(256);
    for (std::size_t i = 0; i < pairs; ++i) {
        for (std::uint32_t s : late[i % late.size()])
            b.free(s);
        late[i % late.size()].clear();
        const auto victim = static_cast<std::uint32_t>(rng.next() % live);
        const std::uint32_t old = slot_of[victim];
        slot_of[victim] = b.allocate(draw()); // allocated first: a late free keeps its block live meanwhile
        if (rng.next() % 1000 < 75)
            late[(i + rng.between(16, 255)) % late.size()].push_back(old);
        else
            b.free(old);
    }
    for (std::size_t t = pairs; t < pairs + late.size(); ++t)
        for (std::uint32_t s : late[t % late.size()])
            b.free(s);
    for (auto s : slot_of)
        b.free(s);
    return b.finish();
}

/// Names of the synthetic workloads, in report order.
inline const std::vector<std::string_view>& names() {
    static const std::vector<std::string_view> n{"frame_scratch", "particles", "bimodal", "w1", "w2", "w3",
                                                 "levels"};
    return n;
}

/// Names of the synthetic workloads raced only when asked for by name (`race --workload trickle`):
/// not in names(), so not in the default race.
inline const std::vector<std::string_view>& extra_names() {
    static const std::vector<std::string_view> n{"trickle", "xchurn32k"};
    return n;
}

/// Returns: true when `name` is a synthetic workload, in names() or extra_names().
inline bool known(std::string_view name) {
    const auto has = [name](const std::vector<std::string_view>& v) {
        return std::find(v.begin(), v.end(), name) != v.end();
    };
    return has(names()) || has(extra_names());
}

/// Returns: the synthetic workload `name` at `scale`. Throws: std::invalid_argument for an unknown name.
inline op_workload make(std::string_view name, double scale = 1.0, std::uint64_t seed = default_seed) {
    if (name == "frame_scratch") return frame_scratch(scale, seed);
    if (name == "particles") return particle_churn(scale, seed);
    if (name == "bimodal") return bimodal(scale, seed);
    if (name == "w1") return w1(scale, seed);
    if (name == "w2") return w2(scale, seed);
    if (name == "w3") return w3(scale, seed);
    if (name == "levels") return level_cycle(scale, seed);
    if (name == "trickle") return trickle(scale, seed);
    if (name == "xchurn32k") return xchurn32k(scale, seed);
    throw std::invalid_argument("unknown workload '" + std::string(name) + "'");
}

} // namespace gen
} // namespace strata::lab
