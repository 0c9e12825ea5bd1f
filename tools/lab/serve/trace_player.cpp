// The trace player's replay (one pass through the real heap, recording placements, keyframes and
// samples) and its seeks (a keyframe plus the ops after it). Exports: trace_player, heap_name,
// parse_heap (trace_player.hpp).
#include "trace_player.hpp"

#include <malloc.h>

#include <algorithm>
#include <bit>
#include <chrono>
#include <new>
#include <span>
#include <stdexcept>

#include "strata/engine/engine_heap.hpp"
#include "strata/heap/buddy.hpp"
#include "strata/heap/free_list.hpp"
#include "strata/heap/tlsf.hpp"

namespace strata::lab::serve {

std::string_view heap_name(player_heap h) noexcept {
    switch (h) {
    case player_heap::tlsf: return "tlsf";
    case player_heap::buddy: return "buddy";
    case player_heap::first_fit: return "first_fit";
    case player_heap::engine: return "engine";
    }
    return "?";
}

std::optional<player_heap> parse_heap(std::string_view name) noexcept {
    for (auto h : {player_heap::tlsf, player_heap::buddy, player_heap::first_fit, player_heap::engine})
        if (heap_name(h) == name) return h;
    return std::nullopt;
}

namespace {

// Engine bins: a small block's bin is its size class; a medium block's is 0x8000 | its TLSF class
// index; a large block's is large_bin.
constexpr std::uint16_t medium_bin = 0x8000;
constexpr std::uint16_t large_bin = 0xFFFE;

/// Heap bytes for a general heap: twice the peak live bytes plus 64 B per block, at least 64 KiB
/// (the lab race's rule, op_contenders.hpp heap_bytes: room to fragment, not so much that
/// fragmentation never shows).
std::uint64_t general_bytes(const op_workload& w) {
    const std::uint64_t peak = std::min<std::uint64_t>(w.peak_live_bytes, trace_player::max_heap_bytes);
    const std::uint64_t blocks =
        std::min<std::uint64_t>(w.peak_live_blocks, trace_player::max_heap_bytes / 64);
    return std::max<std::uint64_t>(std::uint64_t{64} << 10, 2 * peak + 64 * blocks);
}

/// Memory for the pointer heaps: allocated uninitialised (untouched pages cost nothing) and given
/// back when the replay ends.
class region {
public:
    explicit region(std::size_t bytes)
        : data_(static_cast<std::byte*>(::operator new (bytes, std::align_val_t{64}))), size_(bytes) {}
    ~region() { ::operator delete (data_, std::align_val_t{64}); }
    region(const region&) = delete;
    region& operator=(const region&) = delete;
    [[nodiscard]] std::span<std::byte> bytes() const noexcept { return {data_, size_}; }
    [[nodiscard]] std::uint64_t offset(const void* p) const noexcept {
        return static_cast<std::uint64_t>(static_cast<const std::byte*>(p) - data_);
    }

private:
    std::byte* data_;
    std::size_t size_;
};

/// Folds a heap walk (for_each_block) into a sample.
struct walk {
    heap_sample& s;
    void operator()(const block_info& b) const noexcept {
        if (b.used) {
            s.used_bytes += b.size;
            s.footprint = std::max<std::uint64_t>(s.footprint, b.offset + b.size);
        } else {
            s.free_bytes += b.size;
            s.largest_free = std::max<std::uint64_t>(s.largest_free, b.size);
        }
    }
};

// --- the heaps, behind one small interface: allocate / deallocate / reallocate on handles (a
// pointer, or buddy's offset + 1; 0 = refused), place (the block's layout), sample, check. -------

template <class H>
class boundary_tag_heap { // tlsf and free_list: 16-byte header in front of the payload
public:
    explicit boundary_tag_heap(const op_workload& w) : region_(general_bytes(w)), heap_(region_.bytes()) {}
    std::uint64_t bytes() const noexcept { return region_.bytes().size(); }
    std::uintptr_t allocate(std::size_t size, std::size_t align) noexcept {
        return reinterpret_cast<std::uintptr_t>(heap_.allocate(size, align));
    }
    void deallocate(std::uintptr_t h) noexcept { heap_.deallocate(reinterpret_cast<void*>(h)); }
    std::uintptr_t reallocate(std::uintptr_t h, std::size_t size, std::size_t align) noexcept {
        void* p = reinterpret_cast<void*>(h);
        if constexpr (requires { heap_.reallocate(p, size, align); }) {
            return reinterpret_cast<std::uintptr_t>(heap_.reallocate(p, size, align));
        } else { // no reallocate of its own: a new block, then the old one freed (the replay never
                 // reads the contents, so nothing is copied)
            void* q = heap_.allocate(size, align);
            if (q == nullptr) return 0;
            heap_.deallocate(p);
            return reinterpret_cast<std::uintptr_t>(q);
        }
    }
    placed_block place(std::uintptr_t h, std::uint64_t requested, std::size_t, std::uint32_t op,
                       const placed_block*) const noexcept {
        const void* p = reinterpret_cast<const void*>(h);
        const std::size_t usable = heap_.usable_size(p);
        std::uint16_t bin = placed_block::no_bin;
        if constexpr (std::is_same_v<H, tlsf>) bin = static_cast<std::uint16_t>(tlsf::class_index(usable));
        return {
            region_.offset(p) - H::header_size,         static_cast<std::uint32_t>(usable + H::header_size),
            static_cast<std::uint32_t>(requested),      op,
            static_cast<std::uint16_t>(H::header_size), bin};
    }
    void sample(heap_sample& s) const noexcept { heap_.for_each_block(walk{s}); }
    bool check() const noexcept { return heap_.check(); }
    std::uint64_t map_bytes() const noexcept { return bytes(); }

private:
    region region_;
    H heap_;
};

class buddy_heap { // the offset API: buddy never touches the region, so there is none
public:
    static constexpr std::size_t min_block = 32;
    explicit buddy_heap(const op_workload& w)
        : heap_(std::bit_ceil(std::max<std::size_t>(
                    std::size_t{64} << 10,
                    std::min<std::uint64_t>(4 * w.peak_live_bytes, trace_player::max_heap_bytes))),
                min_block) {}
    std::uintptr_t allocate(std::size_t size, std::size_t align) noexcept {
        const std::size_t off = heap_.allocate_offset(size, align);
        return off == buddy::npos ? 0 : off + 1;
    }
    void deallocate(std::uintptr_t h) noexcept { heap_.deallocate_offset(h - 1); }
    std::uintptr_t reallocate(std::uintptr_t h, std::size_t size, std::size_t align) noexcept {
        const std::uintptr_t q = allocate(size, align); // a new block, then the old one freed
        if (q != 0) deallocate(h);
        return q;
    }
    placed_block place(std::uintptr_t h, std::uint64_t requested, std::size_t, std::uint32_t op,
                       const placed_block*) const noexcept {
        const std::size_t size = heap_.block_size(h - 1);
        return {h - 1,
                static_cast<std::uint32_t>(size),
                static_cast<std::uint32_t>(requested),
                op,
                0,
                static_cast<std::uint16_t>(std::countr_zero(size / min_block))};
    }
    void sample(heap_sample& s) const noexcept { heap_.for_each_block(walk{s}); }
    bool check() const noexcept { return heap_.check(); }
    std::uint64_t map_bytes() const noexcept { return heap_.region_size(); }

private:
    buddy heap_;
};

class engine_player_heap { // the engine heap; offsets from the lowest address it owns
public:
    explicit engine_player_heap(const op_workload&) : heap_(options()) {}
    ~engine_player_heap() { heap_.flush_thread_cache(); }
    engine_player_heap(const engine_player_heap&) = delete;
    engine_player_heap& operator=(const engine_player_heap&) = delete;

    std::uintptr_t allocate(std::size_t size, std::size_t align) noexcept {
        const auto p = reinterpret_cast<std::uintptr_t>(heap_.allocate(size, align));
        if (p != 0 && base_ == 0) base_ = find_base(p);
        return p;
    }
    void deallocate(std::uintptr_t h) noexcept { heap_.deallocate(reinterpret_cast<void*>(h)); }
    std::uintptr_t reallocate(std::uintptr_t h, std::size_t size, std::size_t align) noexcept {
        return reinterpret_cast<std::uintptr_t>(heap_.reallocate(reinterpret_cast<void*>(h), size, align));
    }
    // The tier follows allocate's rule (small: up to small_max at alignments up to a granule; medium:
    // up to medium_max at alignments up to 4 KiB; else large, which is also where a medium request
    // goes when every arena is full: a granule-aligned span). A block resized in place keeps its tier.
    placed_block place(std::uintptr_t h, std::uint64_t requested, std::size_t align, std::uint32_t op,
                       const placed_block* in_place_of) noexcept {
        const std::size_t usable = heap_.usable_size(reinterpret_cast<const void*>(h));
        const std::uint64_t off = h - base_;
        top_ = std::max<std::uint64_t>(top_, off + usable);
        placed_block b{off, static_cast<std::uint32_t>(usable), static_cast<std::uint32_t>(requested), op, 0,
                       0};
        const bool small = in_place_of != nullptr
                               ? in_place_of->bin < medium_bin
                               : requested <= engine_heap::small_max && align <= engine_heap::granule;
        const bool large = !small && h % engine_heap::granule == 0 && usable % engine_heap::granule == 0 &&
                           (in_place_of != nullptr ? in_place_of->bin == large_bin
                                                   : requested > engine_heap::medium_max || align > 4096 ||
                                                         usable > engine_heap::medium_max);
        if (small) {
            b.bin = static_cast<std::uint16_t>(engine_heap::class_of(usable));
        } else if (large) {
            b.bin = large_bin;
        } else { // a TLSF arena's block: its 16-byte header lies in front of the payload
            b.start = off - tlsf::header_size;
            b.size = static_cast<std::uint32_t>(usable + tlsf::header_size);
            b.header = tlsf::header_size;
            b.bin = static_cast<std::uint16_t>(medium_bin | tlsf::class_index(usable));
        }
        return b;
    }
    void sample(heap_sample& s) const noexcept {
        const strata::stats st = heap_.stats();
        s.used_bytes = st.in_use;
        s.footprint = heap_.committed_bytes();
    }
    bool check() const noexcept { return heap_.check(); }
    std::uint64_t map_bytes() const noexcept {
        const std::uint64_t top = std::max<std::uint64_t>(top_, 1); // one granule at least
        return (top + engine_heap::granule - 1) / engine_heap::granule * engine_heap::granule;
    }

private:
    static engine_options options() {
        engine_options o;
        o.reserve_bytes = trace_player::max_heap_bytes;
        o.populate_after_bytes = SIZE_MAX; // fault pages in as blocks touch them, not whole runs
        return o;
    }
    // The lowest address the heap owns: owns(q) holds from the base up, and (unsigned) wraps
    // below it, so a binary search below the first block finds it.
    std::uintptr_t find_base(std::uintptr_t p) const noexcept {
        std::uintptr_t lo = p > trace_player::max_heap_bytes ? p - trace_player::max_heap_bytes : 0, hi = p;
        while (lo < hi) {
            const std::uintptr_t mid = lo + (hi - lo) / 2;
            if (heap_.owns(reinterpret_cast<const void*>(mid)))
                hi = mid;
            else
                lo = mid + 1;
        }
        return lo;
    }

    engine_heap heap_;
    std::uintptr_t base_ = 0;
    std::uint64_t top_ = 0;
};

} // namespace

// A player's arrays are tens of MB; glibc keeps freed memory of that size in its heap once its
// mmap threshold has grown, so the last holder to let go of a player also gives it back to the OS.
namespace {
void release_player(const trace_player* p) noexcept {
    delete p;
    ::malloc_trim(0);
}
} // namespace

// --- the replay ----------------------------------------------------------------------------------

template <class Heap>
struct replayer {
    static std::shared_ptr<const trace_player> run(const op_workload& w, player_heap kind,
                                                   const std::function<void(double)>& progress,
                                                   const std::atomic<bool>* cancel) {
        const auto t0 = std::chrono::steady_clock::now();
        std::shared_ptr<trace_player> pl(new trace_player, release_player);
        trace_player& p = *pl;
        p.heap_ = kind;
        const std::size_t n = std::min(w.ops.size(), trace_player::max_ops);
        p.cut_ = n < w.ops.size();
        // Keyframes every K ops, K chosen so that every keyframe at the peak live count fits the budget.
        const std::uint64_t per_frame =
            std::max<std::uint64_t>(1, w.peak_live_blocks) * sizeof(std::uint32_t);
        const std::uint64_t frames = std::max<std::uint64_t>(1, trace_player::keyframe_budget / per_frame);
        p.keyframe_every_ = static_cast<std::uint32_t>(
            std::max<std::uint64_t>(trace_player::min_keyframe_every, (n + frames - 1) / frames));
        p.sample_every_ = static_cast<std::uint32_t>(
            std::max<std::size_t>(1, (n + trace_player::max_samples - 1) / trace_player::max_samples));
        p.steps_.resize(n, {trace_player::none, trace_player::none});
        p.blocks_.reserve(std::min<std::uint64_t>(n, w.allocations + w.reallocations));

        Heap heap(w);
        std::vector<std::uint32_t> block_of(w.slots, trace_player::none);
        std::vector<std::uintptr_t> handle_of(w.slots, 0);
        std::uint64_t requested = 0;
        std::uint32_t live = 0;
        const auto keyframe = [&] {
            p.keyframe_at_.push_back(static_cast<std::uint32_t>(p.keyframe_ids_.size()));
            const std::size_t from = p.keyframe_ids_.size();
            for (const std::uint32_t id : block_of)
                if (id != trace_player::none) p.keyframe_ids_.push_back(id);
            std::sort(
                p.keyframe_ids_.begin() + static_cast<std::ptrdiff_t>(from), p.keyframe_ids_.end(),
                [&](std::uint32_t a, std::uint32_t b) { return p.blocks_[a].start < p.blocks_[b].start; });
        };
        const auto born = [&](std::size_t i, std::uint32_t slot, std::uintptr_t h, std::uint64_t size,
                              std::size_t align, const placed_block* in_place_of) {
            const auto id = static_cast<std::uint32_t>(p.blocks_.size());
            p.blocks_.push_back(heap.place(h, size, align, static_cast<std::uint32_t>(i), in_place_of));
            p.steps_[i].born = id;
            block_of[slot] = id;
            handle_of[slot] = h;
            requested += size;
            ++live;
        };
        const auto died = [&](std::size_t i, std::uint32_t slot) {
            const std::uint32_t id = block_of[slot];
            p.steps_[i].died = id;
            requested -= p.blocks_[id].requested;
            block_of[slot] = trace_player::none;
            handle_of[slot] = 0;
            --live;
        };
        const auto refuse = [&](std::size_t i) { p.refused_.push_back(static_cast<std::uint32_t>(i)); };
        // A new block for `slot` (an allocation, or a realloc of a block the heap refused before).
        const auto fresh = [&](std::size_t i, std::uint32_t slot, std::uint64_t size, std::size_t align) {
            const std::uintptr_t h = size <= trace_player::max_heap_bytes ? heap.allocate(size, align) : 0;
            if (h != 0)
                born(i, slot, h, size, align, nullptr);
            else
                refuse(i);
        };
        // Requests of 0 bytes are played as 1 (malloc(0) hands out a unique block); requests past the
        // heap's size are refused without asking it (a placed block's size fits 32 bits).
        const auto request = [](std::uint64_t size) { return std::max<std::uint64_t>(1, size); };

        for (std::size_t i = 0; i < n; ++i) {
            if (i % p.keyframe_every_ == 0) keyframe();
            const op& o = w.ops[i];
            const std::uint64_t size = request(o.size);
            const std::size_t align = std::size_t{1} << std::min<unsigned>(o.log2_align, 30);
            switch (o.kind) {
            case op_kind::allocate: fresh(i, o.slot, size, align); break;
            case op_kind::free:
                if (block_of[o.slot] != trace_player::none) {
                    heap.deallocate(handle_of[o.slot]);
                    died(i, o.slot);
                }
                break;
            case op_kind::reallocate: {
                if (block_of[o.slot] == trace_player::none) { // its allocation was refused: realloc(NULL)
                    fresh(i, o.slot, size, align);
                    break;
                }
                const std::uintptr_t h = size <= trace_player::max_heap_bytes
                                             ? heap.reallocate(handle_of[o.slot], size, align)
                                             : 0;
                if (h == 0) { // refused: the old block stays
                    refuse(i);
                    break;
                }
                const placed_block old = p.blocks_[block_of[o.slot]];
                const bool in_place = h == handle_of[o.slot];
                died(i, o.slot);
                born(i, o.slot, h, size, align, in_place ? &old : nullptr);
                break;
            }
            case op_kind::frame: break;
            }
            if ((i + 1) % p.sample_every_ == 0 || i + 1 == n) {
                heap_sample s;
                s.op = static_cast<std::uint32_t>(i + 1);
                s.refusals = static_cast<std::uint32_t>(p.refused_.size());
                s.live_blocks = live;
                s.requested = requested;
                heap.sample(s);
                p.samples_.push_back(s);
            }
            if ((i & 0x3FFF) == 0x3FFF) {
                if (cancel != nullptr && cancel->load(std::memory_order_relaxed)) return nullptr;
                if (progress) progress(static_cast<double>(i + 1) / static_cast<double>(n));
            }
        }
        if (n % p.keyframe_every_ == 0) keyframe(); // position n has a keyframe slot of its own
        p.keyframe_at_.push_back(static_cast<std::uint32_t>(p.keyframe_ids_.size()));
        p.checked_ = heap.check();
        p.heap_bytes_ = heap.map_bytes();
        p.blocks_.shrink_to_fit();
        p.prepare_ms_ =
            std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
        return pl;
    }
};

std::shared_ptr<const trace_player> trace_player::prepare(const op_workload& w, player_heap h,
                                                          const std::function<void(double)>& progress,
                                                          const std::atomic<bool>* cancel) {
    if (w.slots == 0 && !w.ops.empty()) throw std::invalid_argument("the workload has ops but no slots");
    switch (h) {
    case player_heap::tlsf: return replayer<boundary_tag_heap<tlsf>>::run(w, h, progress, cancel);
    case player_heap::first_fit:
        return replayer<boundary_tag_heap<free_list<first_fit>>>::run(w, h, progress, cancel);
    case player_heap::buddy: return replayer<buddy_heap>::run(w, h, progress, cancel);
    case player_heap::engine: return replayer<engine_player_heap>::run(w, h, progress, cancel);
    }
    throw std::invalid_argument("unknown heap");
}

// --- queries -------------------------------------------------------------------------------------

std::uint32_t trace_player::refusals_before(std::uint32_t k) const noexcept {
    return static_cast<std::uint32_t>(std::lower_bound(refused_.begin(), refused_.end(), k) -
                                      refused_.begin());
}

std::size_t trace_player::bytes() const noexcept {
    return sizeof(*this) + blocks_.capacity() * sizeof(placed_block) + steps_.capacity() * sizeof(step) +
           (keyframe_at_.capacity() + keyframe_ids_.capacity() + refused_.capacity()) *
               sizeof(std::uint32_t) +
           samples_.capacity() * sizeof(heap_sample);
}

void trace_player::live_at(std::uint32_t k, std::vector<std::uint32_t>& out) const {
    out.clear();
    k = std::min(k, ops());
    const std::uint32_t j = k / keyframe_every_;
    const std::uint32_t from = j * keyframe_every_;
    // Who died after the keyframe: marked in a bitmap over block ids (a thread's scratch, cleared again).
    thread_local std::vector<std::uint64_t> dead;
    if (dead.size() < (blocks_.size() + 63) / 64) dead.assign((blocks_.size() + 63) / 64, 0);
    thread_local std::vector<std::uint32_t> fresh;
    fresh.clear();
    for (std::uint32_t i = from; i < k; ++i) {
        const step s = steps_[i];
        if (s.died != none) dead[s.died >> 6] |= std::uint64_t{1} << (s.died & 63);
        if (s.born != none) fresh.push_back(s.born);
    }
    const auto is_dead = [&](std::uint32_t id) { return (dead[id >> 6] >> (id & 63)) & 1; };
    std::erase_if(fresh, is_dead);
    const auto by_start = [&](std::uint32_t a, std::uint32_t b) {
        return blocks_[a].start < blocks_[b].start;
    };
    std::sort(fresh.begin(), fresh.end(), by_start);
    const std::uint32_t* base = keyframe_ids_.data() + keyframe_at_[j];
    const std::uint32_t* base_end = keyframe_ids_.data() + keyframe_at_[j + 1];
    out.reserve(static_cast<std::size_t>(base_end - base) + fresh.size());
    auto f = fresh.begin();
    for (const std::uint32_t* b = base; b != base_end; ++b) {
        if (is_dead(*b)) continue;
        while (f != fresh.end() && by_start(*f, *b))
            out.push_back(*f++);
        out.push_back(*b);
    }
    out.insert(out.end(), f, fresh.end());
    for (std::uint32_t i = from; i < k; ++i) // clear the marks again
        if (steps_[i].died != none) dead[steps_[i].died >> 6] = 0;
}

void trace_player::live_by_replay(std::uint32_t k, std::vector<std::uint32_t>& out) const {
    std::vector<bool> alive(blocks_.size(), false);
    k = std::min(k, ops());
    for (std::uint32_t i = 0; i < k; ++i) {
        if (steps_[i].died != none) alive[steps_[i].died] = false;
        if (steps_[i].born != none) alive[steps_[i].born] = true;
    }
    out.clear();
    for (std::uint32_t id = 0; id < blocks_.size(); ++id)
        if (alive[id]) out.push_back(id);
    std::sort(out.begin(), out.end(),
              [&](std::uint32_t a, std::uint32_t b) { return blocks_[a].start < blocks_[b].start; });
}

std::string trace_player::bin_label(const placed_block& b) const {
    const auto tlsf_class = [](unsigned index) {
        return "fl " + std::to_string(index >> 5) + " sl " + std::to_string(index & 31);
    };
    switch (heap_) {
    case player_heap::tlsf: return b.bin == placed_block::no_bin ? "" : tlsf_class(b.bin);
    case player_heap::first_fit: return "";
    case player_heap::buddy: return "order " + std::to_string(b.bin);
    case player_heap::engine:
        if (b.bin == large_bin) return "large (a span of its own)";
        if ((b.bin & medium_bin) != 0) return "medium: TLSF arena, " + tlsf_class(b.bin & ~medium_bin);
        return "small: class " + std::to_string(b.bin) + " (" +
               std::to_string(engine_heap::class_size(b.bin)) + " B)";
    }
    return "";
}

std::string_view trace_player::layout_note() const noexcept {
    switch (heap_) {
    case player_heap::tlsf:
        return "one TLSF pool over the whole region; offset 0 is the pool's start (its 32-byte record), "
               "each block starts at its 16-byte header";
    case player_heap::first_fit:
        return "one free-list pool over the whole region; offset 0 is the pool's start, each block starts "
               "at its 16-byte header";
    case player_heap::buddy:
        return "the buddy's region (offset API: its bookkeeping lies outside the region); blocks are "
               "powers of two at multiples of their size";
    case player_heap::engine:
        return "the engine heap's data reservation from its lowest address, up to the highest block the "
               "replay reached; small blocks in size-class runs, medium ones in TLSF arenas (16-byte "
               "header), large ones in spans of 64 KiB granules";
    }
    return "";
}

} // namespace strata::lab::serve
