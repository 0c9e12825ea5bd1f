// The compare demo's six lanes: one class per allocator, each turning a statement into calls on its
// allocator and reading the allocator's own walk (for_each_block / for_each_slot) back as a map.
#include "compare_lanes.hpp"

#include <algorithm>
#include <bit>
#include <new>
#include <optional>
#include <stdexcept>

#include "strata/heap/buddy.hpp"
#include "strata/heap/free_list.hpp"
#include "strata/heap/tlsf.hpp"
#include "strata/linear/arena.hpp"
#include "strata/linear/stack_allocator.hpp"
#include "strata/pool/pool.hpp"

namespace strata::lab::serve {

namespace {

std::string b(std::size_t n) { return std::to_string(n) + " B"; }

std::string request_text(std::size_t size, std::size_t align) {
    return b(size) + (align > 16 ? " aligned to " + std::to_string(align) : "");
}

} // namespace

/// One allocator over one buffer, and the blocks it holds for the script.
class lane {
public:
    lane(std::byte* base, std::size_t size) : base_(base), size_(size) {}
    virtual ~lane() = default;
    lane(const lane&) = delete;
    lane& operator=(const lane&) = delete;

    /// Returns: the block, or nullptr with `why` set.
    virtual std::byte* allocate(std::size_t size, std::size_t align, std::string& why) = 0;
    /// Effects: frees blocks_[i] when the allocator can. Returns: false with `why` set when not.
    virtual bool release(std::size_t i, std::string& why) = 0;
    /// Effects: the allocator gives back every block (blocks_ is cleared by the caller).
    virtual void reset() = 0;
    /// Returns: where blocks_[i]'s bytes end in the allocator (its rounding or slot included).
    [[nodiscard]] virtual std::size_t extent_end(const lane_block& blk) const = 0;
    /// Effects: appends the map, in address order.
    virtual void map(std::vector<lane_segment>& out) const = 0;
    [[nodiscard]] virtual strata::stats stats() const = 0;
    [[nodiscard]] virtual std::size_t waste() const = 0;
    [[nodiscard]] virtual std::size_t largest_free() const { return stats().largest_free_block; }
    [[nodiscard]] virtual bool check() const { return true; }
    [[nodiscard]] virtual std::size_t bookkeeping() const noexcept = 0;

    std::vector<lane_block> blocks_; // allocation order
    std::size_t requested_ = 0;
    std::size_t footprint_ = 0;

protected:
    [[nodiscard]] std::size_t offset_of(const void* p) const noexcept {
        return static_cast<std::size_t>(static_cast<const std::byte*>(p) - base_);
    }
    // The held block that starts inside [begin, end), or nullptr.
    [[nodiscard]] const lane_block* held_in(std::size_t begin, std::size_t end) const noexcept {
        for (const lane_block& blk : blocks_)
            if (blk.offset >= begin && blk.offset < end) return &blk;
        return nullptr;
    }
    // A used extent [begin, end) holding `blk` (may be null): padding before, the block, slack after.
    static void used_extent(std::vector<lane_segment>& out, std::size_t begin, std::size_t end,
                            const lane_block* blk) {
        if (blk == nullptr) {
            out.push_back({begin, end - begin, 'p', 0});
            return;
        }
        const std::size_t stop = std::min(end, blk->offset + blk->size);
        if (blk->offset > begin) out.push_back({begin, blk->offset - begin, 'p', blk->block});
        out.push_back({blk->offset, stop - blk->offset, 'b', blk->block});
        if (end > stop) out.push_back({stop, end - stop, 'p', blk->block});
    }
    void free_all_held() {
        for (std::size_t i = blocks_.size(); i-- > 0;) {
            std::string why;
            (void)release(i, why);
        }
    }

    std::byte* base_;
    std::size_t size_;
};

namespace {

class arena_lane final : public lane {
public:
    arena_lane(std::byte* base, std::size_t size) : lane(base, size), a_(std::span<std::byte>(base, size)) {}

    std::byte* allocate(std::size_t size, std::size_t align, std::string& why) override {
        auto* p = static_cast<std::byte*>(a_.allocate(size, align));
        if (p == nullptr)
            why = "out of memory: " + request_text(size, align) + " does not fit in the " +
                  b(a_.remaining()) + " left above the top";
        return p;
    }
    bool release(std::size_t i, std::string& why) override {
        const lane_block& blk = blocks_[i];
        const std::size_t before = a_.in_use();
        a_.deallocate(blk.p, blk.size, blk.align);
        if (a_.in_use() != before) return true;
        why = "an arena frees in bulk (r): it gives back only its newest block, and block " +
              std::to_string(blk.block) + " is not; it stays until the reset";
        return false;
    }
    void reset() override { a_.reset(); }
    std::size_t extent_end(const lane_block& blk) const override { return blk.offset + blk.size; }
    void map(std::vector<lane_segment>& out) const override {
        std::vector<const lane_block*> order;
        for (const lane_block& blk : blocks_)
            order.push_back(&blk);
        std::sort(order.begin(), order.end(), [](auto* x, auto* y) { return x->offset < y->offset; });
        a_.for_each_block([&](const block_info& info) {
            if (!info.used) {
                out.push_back({info.offset, info.size, 'f', 0});
                return;
            }
            std::size_t at = info.offset;
            const std::size_t end = info.offset + info.size;
            for (const lane_block* blk : order) {
                if (blk->offset < at || blk->offset >= end) continue;
                used_extent(out, at, blk->offset + blk->size, blk);
                at = blk->offset + blk->size;
            }
            if (at < end) out.push_back({at, end - at, 'p', 0}); // padding before a freed top block
        });
    }
    strata::stats stats() const override { return a_.stats(); }
    std::size_t waste() const override { return a_.in_use() - requested_; }
    std::size_t largest_free() const override { return a_.remaining(); }
    std::size_t bookkeeping() const noexcept override { return sizeof(*this); }

private:
    strata::arena a_;
};

class stack_lane final : public lane {
public:
    stack_lane(std::byte* base, std::size_t size) : lane(base, size), s_(std::span<std::byte>(base, size)) {}

    std::byte* allocate(std::size_t size, std::size_t align, std::string& why) override {
        auto* p = static_cast<std::byte*>(s_.allocate(size, align));
        if (p == nullptr)
            why = "out of memory: " + request_text(size, align) + " with its " +
                  b(stack_allocator::header_size) + " header does not fit in the " +
                  b(s_.capacity() - s_.in_use()) + " left";
        return p;
    }
    bool release(std::size_t i, std::string& why) override {
        // Only the newest block may go: anything else would be an out_of_order_free violation, so
        // it is refused here and never reaches the allocator.
        if (i + 1 != blocks_.size()) {
            why = "out of order: a stack frees only its newest block (block " +
                  std::to_string(blocks_.back().block) + "), not block " + std::to_string(blocks_[i].block);
            return false;
        }
        s_.deallocate(blocks_[i].p);
        return true;
    }
    void reset() override { s_.reset(); }
    std::size_t extent_end(const lane_block& blk) const override { return blk.offset + blk.size; }
    void map(std::vector<lane_segment>& out) const override {
        std::vector<block_info> extents;
        s_.for_each_block([&](const block_info& info) { extents.push_back(info); });
        std::sort(extents.begin(), extents.end(), [](auto& x, auto& y) { return x.offset < y.offset; });
        for (const block_info& e : extents) {
            if (!e.used) {
                out.push_back({e.offset, e.size, 'f', 0});
                continue;
            }
            const lane_block* blk = held_in(e.offset, e.offset + e.size);
            const std::size_t h = stack_allocator::header_size;
            if (blk == nullptr || blk->offset < e.offset + h) {
                used_extent(out, e.offset, e.offset + e.size, blk);
                continue;
            }
            if (blk->offset - h > e.offset)
                out.push_back({e.offset, blk->offset - h - e.offset, 'p', blk->block});
            out.push_back({blk->offset - h, h, 'h', blk->block});
            used_extent(out, blk->offset, e.offset + e.size, blk);
        }
    }
    strata::stats stats() const override { return s_.stats(); }
    std::size_t waste() const override { return s_.in_use() - requested_; }
    std::size_t bookkeeping() const noexcept override { return sizeof(*this); }

private:
    stack_allocator s_;
};

class pool_lane final : public lane {
public:
    pool_lane(std::byte* base, std::size_t size, std::size_t slot, std::size_t align)
        : lane(base, size), p_(slot, align, std::span<std::byte>(base, size)) {}

    std::byte* allocate(std::size_t size, std::size_t align, std::string& why) override {
        if (size > p_.slot_size()) {
            why = b(size) + " is above the pool's slot size (" + b(p_.slot_size()) + ")";
            return nullptr;
        }
        if (align > p_.slot_align()) {
            why = "alignment " + std::to_string(align) + " is above the pool's slot alignment (" +
                  std::to_string(p_.slot_align()) + ")";
            return nullptr;
        }
        auto* p = static_cast<std::byte*>(p_.allocate(size, align));
        if (p == nullptr && p_.capacity() == 0)
            why = "out of memory: the buffer holds no slot of " + b(p_.slot_size()) + " aligned to " +
                  std::to_string(p_.slot_align());
        else if (p == nullptr)
            why =
                "out of memory: no free slot (the pool has " + std::to_string(p_.capacity()) + ", all live)";
        return p;
    }
    bool release(std::size_t i, std::string&) override {
        p_.deallocate(blocks_[i].p);
        return true;
    }
    void reset() override { p_.reset(); }
    std::size_t extent_end(const lane_block& blk) const override { return blk.offset + p_.slot_size(); }
    void map(std::vector<lane_segment>& out) const override {
        std::size_t at = 0;
        const std::size_t stride = p_.slot_size();
        p_.for_each_slot([&](void* slot, bool live) {
            const std::size_t off = offset_of(slot);
            if (off > at) out.push_back({at, off - at, 'o', 0});
            if (live) {
                used_extent(out, off, off + stride, held_in(off, off + stride));
            } else if (!out.empty() && out.back().kind == 'f' && out.back().offset + out.back().size == off) {
                out.back().size += stride; // a run of free slots is one segment
            } else {
                out.push_back({off, stride, 'f', 0});
            }
            at = off + stride;
        });
        if (at < size_) out.push_back({at, size_ - at, 'o', 0}); // the chunk's redzone and the tail
    }
    strata::stats stats() const override { return p_.stats(); }
    std::size_t waste() const override { return p_.stats().in_use - requested_; }
    bool check() const override { return p_.check(); }
    std::size_t bookkeeping() const noexcept override { return sizeof(*this) + 64 * p_.chunk_count(); }
    [[nodiscard]] std::size_t slot() const noexcept { return p_.slot_size(); }

private:
    strata::pool p_;
};

// TLSF and first-fit: the same layout (a 32-byte pool record, 16-byte headers, an end sentinel).
template <class Heap>
class heap_lane final : public lane {
public:
    heap_lane(std::byte* base, std::size_t size) : lane(base, size), h_(std::span<std::byte>(base, size)) {}

    std::byte* allocate(std::size_t size, std::size_t align, std::string& why) override {
        auto* p = static_cast<std::byte*>(h_.allocate(size, align));
        if (p == nullptr)
            why = "out of memory: no free block fits " + request_text(size, align) +
                  " (largest free: " + b(h_.largest_free_block()) + ")";
        return p;
    }
    bool release(std::size_t i, std::string&) override {
        h_.deallocate(blocks_[i].p);
        return true;
    }
    void reset() override { free_all_held(); }
    std::size_t extent_end(const lane_block& blk) const override {
        return blk.offset + h_.usable_size(blk.p);
    }
    void map(std::vector<lane_segment>& out) const override {
        constexpr std::size_t h = Heap::header_size;
        std::size_t at = 0;
        h_.for_each_block([&](const block_info& info) {
            const std::size_t header = info.offset - h;
            if (header > at) out.push_back({at, header - at, 'o', 0}); // the pool record
            if (!info.used) {
                out.push_back({header, h, 'o', 0});
                out.push_back({info.offset, info.size, 'f', 0});
            } else {
                const lane_block* blk = held_in(info.offset, info.offset + info.size);
                out.push_back({header, h, 'h', blk ? blk->block : 0});
                used_extent(out, info.offset, info.offset + info.size, blk);
            }
            at = info.offset + info.size;
        });
        if (at < size_) out.push_back({at, size_ - at, 'o', 0}); // the end sentinel
    }
    strata::stats stats() const override { return h_.stats(); }
    std::size_t waste() const override {
        const strata::stats st = h_.stats();
        return st.in_use + Heap::header_size * st.live_allocations - requested_;
    }
    std::size_t largest_free() const override { return h_.largest_free_block(); }
    bool check() const override { return h_.check(); }
    std::size_t bookkeeping() const noexcept override { return sizeof(*this); }

private:
    Heap h_;
};

class buddy_lane final : public lane {
public:
    static constexpr std::size_t min_block = 16;
    buddy_lane(std::byte* base, std::size_t size)
        : lane(base, size), b_(std::span<std::byte>(base, size), min_block) {}

    std::byte* allocate(std::size_t size, std::size_t align, std::string& why) override {
        const std::size_t off = b_.allocate_offset(size, align);
        if (off == buddy::npos) {
            const std::size_t order = std::bit_ceil(std::max({size, align, min_block}));
            why = "out of memory: no free block of " + b(order) +
                  " (the request rounded up to a power of two; " +
                  "largest free: " + b(b_.largest_free_block()) + ")";
            return nullptr;
        }
        return base_ + off;
    }
    bool release(std::size_t i, std::string&) override {
        b_.deallocate_offset(blocks_[i].offset);
        return true;
    }
    void reset() override { free_all_held(); }
    std::size_t extent_end(const lane_block& blk) const override {
        return blk.offset + b_.block_size(blk.offset);
    }
    void map(std::vector<lane_segment>& out) const override {
        b_.for_each_block([&](const block_info& info) {
            if (info.used)
                used_extent(out, info.offset, info.offset + info.size,
                            held_in(info.offset, info.offset + info.size));
            else
                out.push_back({info.offset, info.size, 'f', 0});
        });
    }
    strata::stats stats() const override { return b_.stats(); }
    std::size_t waste() const override { return b_.granted_bytes() - requested_; }
    std::size_t largest_free() const override { return b_.largest_free_block(); }
    bool check() const override { return b_.check(); }
    std::size_t bookkeeping() const noexcept override { return sizeof(*this) + b_.bookkeeping_bytes(); }

private:
    buddy b_;
};

} // namespace

compare_lanes::compare_lanes()
    : memory_(new (std::align_val_t{4096}) std::byte[lane_count * max_buffer]), base_(memory_.get()) {
    start(4096, 16, 16);
}

compare_lanes::~compare_lanes() = default;

void compare_lanes::start(std::size_t buffer_bytes, std::size_t pool_slot, std::size_t pool_align) {
    if (buffer_bytes < min_buffer || buffer_bytes > max_buffer || !std::has_single_bit(buffer_bytes))
        throw std::invalid_argument("compare_lanes: the buffer is a power of two in [1 KiB, 64 KiB]");
    if (pool_slot == 0 || pool_slot > buffer_bytes || pool_align < 16 || pool_align > 4096 ||
        !std::has_single_bit(pool_align))
        throw std::invalid_argument("compare_lanes: bad pool slot or alignment");
    for (auto& l : lanes_)
        l.reset();
    buffer_ = buffer_bytes;
    pool_align_ = pool_align;
    auto at = [&](std::size_t i) { return base_ + i * max_buffer; };
    lanes_[0] = std::make_unique<arena_lane>(at(0), buffer_);
    lanes_[1] = std::make_unique<stack_lane>(at(1), buffer_);
    lanes_[2] = std::make_unique<pool_lane>(at(2), buffer_, pool_slot, pool_align);
    lanes_[3] = std::make_unique<heap_lane<tlsf>>(at(3), buffer_);
    lanes_[4] = std::make_unique<buddy_lane>(at(4), buffer_);
    lanes_[5] = std::make_unique<heap_lane<free_list_first_fit>>(at(5), buffer_);
}

std::array<lane_outcome, compare_lanes::lane_count> compare_lanes::apply(const script_statement& s) {
    std::array<lane_outcome, lane_count> out;
    for (std::size_t i = 0; i < lane_count; ++i) {
        lane& l = *lanes_[i];
        lane_outcome& o = out[i];
        switch (s.what) {
        case script_statement::kind::alloc: {
            std::byte* p = l.allocate(s.size, s.align, o.reason);
            if (p == nullptr) {
                o.ok = false;
                break;
            }
            for (std::size_t k = 0; k < s.size; ++k)
                p[k] = pattern(s.block, k);
            lane_block blk{s.block, static_cast<std::size_t>(p - (base_ + i * max_buffer)), s.size, s.align,
                           p};
            l.blocks_.push_back(blk);
            l.requested_ += s.size;
            l.footprint_ = std::max(l.footprint_, l.extent_end(blk));
            break;
        }
        case script_statement::kind::free: {
            const auto it = std::find_if(l.blocks_.begin(), l.blocks_.end(),
                                         [&](const lane_block& blk) { return blk.block == s.block; });
            if (it == l.blocks_.end()) {
                o.ok = false;
                o.reason =
                    "nothing to free: block " + std::to_string(s.block) + "'s allocation was refused here";
                break;
            }
            if (!l.release(static_cast<std::size_t>(it - l.blocks_.begin()), o.reason)) {
                o.ok = false;
                break;
            }
            l.requested_ -= it->size;
            l.blocks_.erase(it);
            break;
        }
        case script_statement::kind::reset:
            l.reset();
            l.blocks_.clear();
            l.requested_ = 0;
            break;
        }
    }
    return out;
}

std::size_t compare_lanes::pool_slot() const noexcept {
    return static_cast<const pool_lane&>(*lanes_[2]).slot();
}

std::vector<lane_segment> compare_lanes::segments(std::size_t i) const {
    std::vector<lane_segment> out;
    lanes_.at(i)->map(out);
    return out;
}

const std::vector<lane_block>& compare_lanes::blocks(std::size_t i) const noexcept {
    return lanes_[i]->blocks_;
}
strata::stats compare_lanes::stats(std::size_t i) const { return lanes_.at(i)->stats(); }
std::size_t compare_lanes::waste(std::size_t i) const { return lanes_.at(i)->waste(); }
std::size_t compare_lanes::requested(std::size_t i) const noexcept { return lanes_[i]->requested_; }
std::size_t compare_lanes::footprint(std::size_t i) const noexcept { return lanes_[i]->footprint_; }
std::size_t compare_lanes::largest_free(std::size_t i) const { return lanes_.at(i)->largest_free(); }
bool compare_lanes::check(std::size_t i) const { return lanes_.at(i)->check(); }

bool compare_lanes::intact() const {
    for (const auto& l : lanes_)
        for (const lane_block& blk : l->blocks_)
            for (std::size_t k = 0; k < blk.size; ++k)
                if (blk.p[k] != pattern(blk.block, k)) return false;
    return true;
}

std::size_t compare_lanes::bytes() const noexcept {
    std::size_t n = sizeof(*this) + lane_count * max_buffer + 4096;
    for (const auto& l : lanes_)
        n += l->bookkeeping() + l->blocks_.capacity() * sizeof(lane_block);
    return n;
}

} // namespace strata::lab::serve
