#pragma once
// Shared parts of the heap fuzz targets: a byte reader over the fuzz input, and a model of the live
// blocks (each filled with its own byte; verified on free and move). Any violation report or
// failed check() aborts, so libFuzzer records the input as a crash.
#include <array>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "strata/core/check.hpp"

namespace strata_fuzz {

/// Reads the fuzz input as a stream of small integers; past the end everything reads as 0.
class reader {
public:
    reader(const std::uint8_t* data, std::size_t size) noexcept : data_(data), size_(size) {}
    [[nodiscard]] bool done() const noexcept { return pos_ >= size_; }
    std::uint8_t byte() noexcept { return pos_ < size_ ? data_[pos_++] : 0; }
    std::uint16_t u16() noexcept {
        const auto lo = byte();
        return static_cast<std::uint16_t>(lo | (byte() << 8));
    }

private:
    const std::uint8_t* data_;
    std::size_t size_;
    std::size_t pos_ = 0;
};

[[noreturn]] inline void fail(const char* what) {
    std::fprintf(stderr, "strata fuzz: %s\n", what);
    std::abort();
}

inline void require(bool ok, const char* what) {
    if (!ok) fail(what);
}

/// A live block of the model.
struct live_block {
    unsigned char* p;
    std::size_t size;
    std::size_t align;
    unsigned char fill;
};

/// Calls f(i) for the offsets of a `size`-byte block that a sampled model writes and checks: all of
/// a block up to 4 KiB; of a bigger one its first and last 2 KiB and one byte per page.
template <class F>
void for_sampled(std::size_t size, F f) {
    if (size <= 4096) {
        for (std::size_t i = 0; i < size; ++i)
            f(i);
        return;
    }
    for (std::size_t i = 0; i < 2048; ++i)
        f(i);
    for (std::size_t i = 2048; i < size - 2048; i += 4096)
        f(i);
    for (std::size_t i = size - 2048; i < size; ++i)
        f(i);
}

/// The live blocks; checks no overlap and alignment on add, contents on remove: every byte, or
/// (`sampled`, for heaps whose blocks reach megabytes) the bytes for_sampled picks.
class model {
public:
    explicit model(bool sampled = false) noexcept : sampled_(sampled) {}
    void add(void* ptr, std::size_t size, std::size_t align, unsigned char fill) {
        auto* p = static_cast<unsigned char*>(ptr);
        require(reinterpret_cast<std::uintptr_t>(p) % align == 0, "misaligned block");
        for (const live_block& b : live_)
            require(p + size <= b.p || b.p + b.size <= p, "overlapping blocks");
        if (sampled_) {
            for_sampled(size, [&](std::size_t i) { p[i] = fill; });
        } else {
            std::memset(p, fill, size);
        }
        live_.push_back({p, size, align, fill});
    }
    void verify(const live_block& b) const {
        if (sampled_) {
            for_sampled(b.size, [&](std::size_t i) { require(b.p[i] == b.fill, "block contents changed"); });
            return;
        }
        for (std::size_t i = 0; i < b.size; ++i)
            require(b.p[i] == b.fill, "block contents changed");
    }
    /// Removes (after verifying) the block at index i % size(); returns it.
    live_block take(std::size_t i) {
        const std::size_t k = i % live_.size();
        const live_block b = live_[k];
        verify(b);
        live_[k] = live_.back();
        live_.pop_back();
        return b;
    }
    [[nodiscard]] bool empty() const noexcept { return live_.empty(); }
    [[nodiscard]] std::size_t size() const noexcept { return live_.size(); }
    [[nodiscard]] std::vector<live_block>& blocks() noexcept { return live_; }
    [[nodiscard]] const std::vector<live_block>& blocks() const noexcept { return live_; }

private:
    std::vector<live_block> live_;
    bool sampled_;
};

/// Installs a handler that aborts on any violation (valid operations must never report one).
inline void abort_on_violation() {
    strata::set_violation_handler([](const strata::violation& v) {
        std::fprintf(stderr, "strata fuzz: violation %s from %s: %s\n", strata::to_string(v.kind),
                     v.allocator, v.message);
        std::abort();
    });
}

/// Pointers freed earlier, for the bad-free op (a few: most are reused soon).
class freed_ring {
public:
    void add(void* p) noexcept { ring_[next_++ % ring_.size()] = static_cast<unsigned char*>(p); }
    [[nodiscard]] unsigned char* pick(std::size_t i) const noexcept { return ring_[i % ring_.size()]; }

private:
    std::array<unsigned char*, 8> ring_{};
    std::size_t next_ = 0;
};

namespace detail {
inline thread_local strata::violation_kind last_kind{};
inline thread_local unsigned reports = 0;
} // namespace detail

/// A free the heap must refuse: a pointer freed earlier that no live block starts at (a double free,
/// also of a block merged away since), or a pointer into a live block's middle. Requires one
/// double_free or foreign_pointer report and no change to the live count. `live` is the heap's O(1)
/// live count (it must not complete a free in flight, so that refusals meet one).
template <class Heap, class Live>
void bad_free(Heap& h, const model& m, const freed_ring& freed, reader& in, Live live) {
    unsigned char* p = nullptr;
    const std::uint8_t kind = in.byte();
    if (kind % 2 == 0) {
        p = freed.pick(in.byte());
        for (const live_block& b : m.blocks())
            if (b.p == p) p = nullptr; // reused since: a valid free, not this op's business
    } else if (!m.empty()) {
        const live_block& b = m.blocks()[in.u16() % m.size()];
        const std::size_t steps = b.size / 16;
        if (steps > 0) p = b.p + 16 * (1 + in.byte() % steps);
        if (p >= b.p + b.size) p = nullptr;
    }
    if (p == nullptr) return;
    const std::size_t before = live();
    detail::reports = 0;
    {
        strata::scoped_violation_handler catcher([](const strata::violation& v) {
            detail::last_kind = v.kind;
            ++detail::reports;
        });
        h.deallocate(p);
    }
    require(detail::reports == 1, "a bad free was not reported exactly once");
    require(detail::last_kind == strata::violation_kind::double_free ||
                detail::last_kind == strata::violation_kind::foreign_pointer,
            "a bad free reported as something else");
    require(live() == before, "a bad free changed the live count");
}

/// A size drawn from two bytes: mostly small, sometimes up to 64 KiB, sometimes 0 or enormous.
inline std::size_t draw_size(reader& in) {
    const std::uint8_t kind = in.byte();
    const std::uint16_t v = in.u16();
    switch (kind % 16) {
    case 0: return 0;
    case 1: return SIZE_MAX - v;
    case 2: return std::size_t{v} << 4;
    case 3:
    case 4: return v;
    default: return 1 + (v & 511);
    }
}

/// An alignment: usually a power of two up to 4096, sometimes 0 or a non-power of two.
inline std::size_t draw_align(reader& in) {
    const std::uint8_t a = in.byte();
    if (a % 32 == 31) return a % 3 == 0 ? 0 : 24;
    return std::size_t{1} << (a % 13);
}

[[nodiscard]] constexpr bool is_pow2(std::size_t x) noexcept { return x != 0 && (x & (x - 1)) == 0; }

} // namespace strata_fuzz
