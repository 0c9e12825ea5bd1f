#include "strata/linear/arena.hpp"

#include <algorithm>
#include <utility>

#include "strata/core/check.hpp"

namespace strata {

namespace {
constexpr const char* who = "strata::arena";
constexpr std::size_t min_block_size = 256; // a smaller block would be mostly header

std::size_t first_block_size(const arena_options& o) noexcept {
    return std::max(o.block_size, min_block_size);
}
} // namespace

arena::arena(std::span<std::byte> buffer, source_ref source, arena_options options) noexcept
    : cur_(buffer.data()), end_(buffer.data() + buffer.size()), buffer_begin_(buffer.data()),
      buffer_end_(buffer.data() + buffer.size()), buffer_top_(buffer.data()), source_(source),
      options_(options) {
    if (buffer.empty()) cur_ = end_ = buffer_begin_ = buffer_end_ = buffer_top_ = nullptr;
    next_block_size_ = first_block_size(options_);
    poison(buffer_begin_, static_cast<std::size_t>(buffer_end_ - buffer_begin_));
}

arena::arena(arena&& other) noexcept
    : cur_(std::exchange(other.cur_, nullptr)), end_(std::exchange(other.end_, nullptr)),
      count_(std::exchange(other.count_, 0)), head_(std::exchange(other.head_, nullptr)),
      used_before_(std::exchange(other.used_before_, 0)),
      buffer_begin_(std::exchange(other.buffer_begin_, nullptr)),
      buffer_end_(std::exchange(other.buffer_end_, nullptr)),
      buffer_top_(std::exchange(other.buffer_top_, nullptr)), spare_(std::exchange(other.spare_, nullptr)),
      chain_blocks_(std::exchange(other.chain_blocks_, 0)),
      spare_blocks_(std::exchange(other.spare_blocks_, 0)),
      chain_bytes_(std::exchange(other.chain_bytes_, 0)), peak_(std::exchange(other.peak_, 0)),
      total_(std::exchange(other.total_, 0)),
      next_block_size_(std::exchange(other.next_block_size_, first_block_size(other.options_))),
      source_(other.source_), options_(other.options_), history_(other.history_) {
    // `other` keeps its source and may get the same blocks back from it: a marker it handed out
    // would then pass every position check and free what it serves then, a marker at 0 (which no
    // lowering can show stale) included.
    other.history_.forget_markers();
}

arena& arena::operator=(arena&& other) noexcept {
    if (this != &other) {
        const std::uint64_t replaced = history_.epoch();
        this->~arena();
        new (this) arena(std::move(other));
        // Markers taken from this object before name the replaced memory, which the new state may
        // even share (the same buffer, or a block the source hands out again). The history came
        // from `other`, and its epochs may run below the replaced state's: refuse everything
        // dated up to either.
        history_.forget_markers(replaced);
    }
    return *this;
}

arena::~arena() {
    while (head_) {
        block_header* h = head_;
        head_ = h->prev;
        release_block(h);
    }
    while (spare_) {
        block_header* h = spare_;
        spare_ = h->prev;
        release_block(h);
    }
    // The caller's buffer goes back to the caller usable.
    unpoison(buffer_begin_, static_cast<std::size_t>(buffer_end_ - buffer_begin_));
}

void arena::release_block(block_header* h) noexcept {
    const memory_block b = h->block;
    unpoison(b.data, b.size);
    source_.deallocate_block(b);
}

void* arena::allocate_slow(std::size_t size, std::size_t align) noexcept {
    if (!is_valid_request(size, align)) return nullptr;
    // What a fresh block must hold: header, worst-case padding, the request.
    const std::size_t slack = align > alignof(block_header) ? align - alignof(block_header) : 0;
    const auto needed = checked_add(sizeof(block_header) + slack, size);
    if (!needed || !source_) return nullptr;

    // A kept block that fits avoids the source entirely (the steady state after warm-up).
    block_header* found = nullptr;
    for (block_header** link = &spare_; *link != nullptr; link = &(*link)->prev) {
        if ((*link)->block.size >= *needed) {
            found = *link;
            *link = found->prev;
            --spare_blocks_;
            break;
        }
    }
    if (found == nullptr) {
        std::size_t want = std::max(next_block_size_, *needed);
        const std::size_t room =
            options_.max_capacity > chain_bytes_ ? options_.max_capacity - chain_bytes_ : 0;
        if (want > room) want = *needed; // the cap allows only what this request needs
        if (want > room) return nullptr;
        memory_block b = source_.allocate_block(want, alignof(block_header));
        bool full_size = !b.empty();
        if (full_size && b.size > room && want > *needed) {
            // The source rounded the geometric size up past the cap (a page-granular source):
            // handed back, and treated as a refusal.
            source_.deallocate_block(b);
            b = {};
            full_size = false;
        }
        if (!full_size && want > *needed) {
            // The source refused the geometric size, not necessarily this request: ask for what
            // the request needs.
            b = source_.allocate_block(*needed, alignof(block_header));
        }
        // Nothing changes until a block is kept: a failed allocate leaves the arena as it was.
        if (b.empty()) return nullptr;
        if (b.size > room) { // the source rounded the block up past the cap
            source_.deallocate_block(b);
            return nullptr;
        }
        found = ::new (b.data) block_header{nullptr, b, 0, nullptr};
        poison(found + 1, b.size - sizeof(block_header));
        chain_bytes_ += b.size;
        if (full_size) {
            const std::size_t cap = std::max(options_.max_block_size, options_.block_size);
            next_block_size_ = next_block_size_ > cap / 2 ? cap : next_block_size_ * 2;
        } else {
            // Only the fallback was granted: back off by one step, not to the request size. A
            // passing refusal costs one doubling; a source that stays short is asked for halving
            // sizes until one fits, rather than restarting from the request after each refusal.
            next_block_size_ = std::max(next_block_size_ / 2, min_block_size);
        }
    }

    // Leave the current block: remember where it stopped so walks and rewinds can see it.
    const std::size_t before = in_use();
    if (head_) {
        head_->top = cur_;
    } else {
        buffer_top_ = cur_;
    }
    found->prev = head_;
    found->used_before = before;
    found->top = nullptr;
    head_ = found;
    ++chain_blocks_;
    used_before_ = before;
    cur_ = reinterpret_cast<std::byte*>(found + 1);
    end_ = found->block.end();
    return allocate(size, align);
}

void arena::pop_to(block_header* target) noexcept {
    while (head_ != target) {
        block_header* h = head_;
        head_ = h->prev;
        auto* begin = reinterpret_cast<std::byte*>(h + 1);
        release_bytes(begin, static_cast<std::size_t>(h->block.end() - begin));
        h->prev = spare_;
        spare_ = h;
        --chain_blocks_;
        ++spare_blocks_;
    }
}

// The head block holds nothing: back to the previous block's top (or the initial buffer's), the
// head to the spare list, as a rewind to that top would.
void arena::leave_empty_block() noexcept {
    block_header* const prev = head_->prev;
    pop_to(prev);
    cur_ = prev != nullptr ? prev->top : buffer_top_;
    end_ = prev != nullptr ? prev->block.end() : buffer_end_;
    used_before_ = prev != nullptr ? prev->used_before : 0;
}

void arena::rewind(const marker& m) noexcept {
    if (!STRATA_VERIFY(1, m.owner == this, invalid_marker, who, m.cur, "marker belongs to another arena"))
        return;
    if (m.owner != this) return;
    // The marked block must still be in the chain, and the marked top not above the current one.
    bool in_chain = m.block == nullptr;
    for (block_header* h = head_; h != nullptr && !in_chain; h = h->prev)
        in_chain = h == m.block;
    // Where the marked block's used part ends now: the live top, or where the arena left it. The
    // marker must not be above it, in whichever block it is (not only the current one).
    std::byte* const top = !in_chain          ? nullptr
                           : m.block == head_ ? cur_
                                              : (m.block ? m.block->top : buffer_top_);
    const bool below_top = in_chain && m.position <= in_use() && (m.cur == nullptr || m.cur <= top);
    if (!STRATA_VERIFY(1, in_chain && below_top, invalid_marker, who, m.cur,
                       "marker is newer than the arena's top (already rewound past it)")) {
        return;
    }
    if (!in_chain || !below_top) return;
    // Below the top again is not enough: the top must not have gone below it in between. Nor may
    // the marker predate a move or a new frame: it names memory the arena managed then (which
    // may be where it is now, e.g. a block the source handed out again).
    const bool fresh = !history_.stale(m.epoch, m.position);
    if (!STRATA_VERIFY(1, fresh, invalid_marker, who, m.cur,
                       "stale marker: the arena went below it, or was moved or began a new frame, "
                       "since it was taken")) {
        return;
    }
    if (!fresh) return;

    note_peak();
    pop_to(m.block);
    std::byte* end = m.block ? m.block->block.end() : buffer_end_;
    std::byte* cur = m.cur;
    if (cur == nullptr) cur = m.block ? reinterpret_cast<std::byte*>(m.block + 1) : buffer_begin_;
    if (top > cur) release_bytes(cur, static_cast<std::size_t>(top - cur));
    cur_ = cur;
    end_ = end;
    used_before_ = m.block ? m.block->used_before : 0;
    total_ += count_ - std::min(count_, m.count);
    count_ = std::min(count_, m.count);
    history_.lowered(m.position);
}

void arena::reset() noexcept {
    note_peak();
    std::byte* buffer_used_end = head_ ? buffer_top_ : cur_; // cur_ may be in a source block
    pop_to(nullptr);
    total_ += count_;
    count_ = 0;
    used_before_ = 0;
    if (buffer_begin_)
        release_bytes(buffer_begin_, static_cast<std::size_t>(buffer_used_end - buffer_begin_));
    cur_ = buffer_begin_;
    end_ = buffer_end_;
    buffer_top_ = buffer_begin_;
    history_.lowered(0);
    if (options_.on_reset == arena_reset::release_extra) {
        // Keep the oldest source block only when there is no initial buffer to start in.
        block_header* keep = nullptr;
        while (spare_) {
            block_header* h = spare_;
            spare_ = h->prev;
            --spare_blocks_;
            if (!buffer_begin_ && (keep == nullptr || h->block.size > keep->block.size)) {
                if (keep) {
                    chain_bytes_ -= keep->block.size;
                    release_block(keep);
                }
                keep = h;
            } else {
                chain_bytes_ -= h->block.size;
                release_block(h);
            }
        }
        if (keep) {
            keep->prev = nullptr;
            spare_ = keep;
            ++spare_blocks_;
        }
    }
}

bool arena::owns(const void* p) const noexcept {
    bool found = false;
    walk_chain(head_, [&](std::byte* begin, std::byte*, std::byte* end, std::size_t) {
        found = found || memory_block{begin, static_cast<std::size_t>(end - begin), 0}.contains(p);
    });
    return found;
}

std::size_t arena::capacity() const noexcept {
    return static_cast<std::size_t>(buffer_end_ - buffer_begin_) + chain_bytes_;
}

strata::stats arena::stats() const noexcept {
    strata::stats s;
    s.in_use = in_use();
    s.peak = std::max(peak_, s.in_use);
    s.capacity = capacity();
    s.live_allocations = count_;
    s.total_allocations = total_ + count_;
    s.largest_free_block = remaining();
    return s;
}

} // namespace strata
