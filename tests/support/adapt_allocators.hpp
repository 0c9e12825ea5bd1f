#pragma once
// Small default-constructible allocators for the adapter tests (tests/adapt): each adapter is
// tested over several of them, so adding an allocator to a typed test is one line in its type list.
#include <cstddef>
#include <cstdlib>
#include <map>
#include <new>
#include <type_traits>
#include <vector>

#include "strata/core/align.hpp"
#include "strata/core/allocator.hpp"
#include "strata/core/stats.hpp"
#include "strata/heap/tlsf.hpp"
#include "strata/linear/arena.hpp"
#include "strata/linear/stack_allocator.hpp"
#include "strata/pool/pool.hpp"
#include "strata/source/heap_source.hpp"

namespace strata::test {

/// A general-purpose allocator over aligned operator new that knows every live block: frees in any
/// order, owns() exact, unsized free, and counts frees it was given for blocks it does not know
/// (bad_frees) instead of crashing, so tests can see an adapter let a bad free through.
class test_heap {
public:
    test_heap() = default;
    test_heap(const test_heap&) = delete;
    test_heap& operator=(const test_heap&) = delete;
    ~test_heap() {
        for (auto& [p, b] : live_)
            ::operator delete (p, std::align_val_t{b.align});
    }

    [[nodiscard]] void* allocate(std::size_t size, std::size_t align = default_alignment) noexcept {
        // libstdc++'s aligned operator new rounds SIZE_MAX up to 0 and succeeds: refuse first.
        if (!is_valid_request(size, align) || size > limit_ || size > (static_cast<std::size_t>(-1) >> 1))
            return nullptr;
        void* p = ::operator new (size, std::align_val_t{align}, std::nothrow);
        if (p == nullptr) return nullptr;
        live_[p] = {size, align};
        in_use_ += size;
        if (in_use_ > peak_) peak_ = in_use_;
        ++total_;
        return p;
    }
    void deallocate(void* p, std::size_t size, std::size_t /*align*/ = default_alignment) noexcept {
        const auto it = live_.find(p);
        if (it == live_.end() || it->second.size != size) {
            ++bad_frees_;
            return;
        }
        drop(it);
    }
    void deallocate(void* p) noexcept {
        const auto it = live_.find(p);
        if (it == live_.end()) {
            ++bad_frees_;
            return;
        }
        drop(it);
    }
    [[nodiscard]] bool owns(const void* p) const noexcept {
        // Any byte of a live block.
        auto it = live_.upper_bound(const_cast<void*>(p));
        if (it == live_.begin()) return false;
        --it;
        return static_cast<const std::byte*>(p) < static_cast<const std::byte*>(it->first) + it->second.size;
    }
    [[nodiscard]] strata::stats stats() const noexcept {
        strata::stats s;
        s.in_use = in_use_;
        s.peak = peak_;
        s.capacity = in_use_;
        s.live_allocations = live_.size();
        s.total_allocations = total_;
        return s;
    }

    /// Requests larger than `n` fail (to drive fallbacks).
    void set_limit(std::size_t n) noexcept { limit_ = n; }
    [[nodiscard]] std::size_t bad_frees() const noexcept { return bad_frees_; }
    [[nodiscard]] std::size_t live() const noexcept { return live_.size(); }

private:
    struct block {
        std::size_t size;
        std::size_t align;
    };
    void drop(std::map<void*, block>::iterator it) noexcept {
        in_use_ -= it->second.size;
        ::operator delete (it->first, std::align_val_t{it->second.align});
        live_.erase(it);
    }

    std::map<void*, block> live_;
    std::size_t in_use_ = 0;
    std::size_t peak_ = 0;
    std::size_t total_ = 0;
    std::size_t bad_frees_ = 0;
    std::size_t limit_ = static_cast<std::size_t>(-1);
};

/// An arena growing from its own heap_source in 4 KiB blocks (frees only its top; reset()).
class test_arena {
public:
    test_arena() : arena_(source_, arena_options{4096, 1 << 20}) {}
    test_arena(const test_arena&) = delete;
    test_arena& operator=(const test_arena&) = delete;

    [[nodiscard]] void* allocate(std::size_t size, std::size_t align = default_alignment) noexcept {
        return arena_.allocate(size, align);
    }
    void deallocate(void* p, std::size_t size, std::size_t align = default_alignment) noexcept {
        arena_.deallocate(p, size, align);
    }
    [[nodiscard]] bool owns(const void* p) const noexcept { return arena_.owns(p); }
    void reset() noexcept { arena_.reset(); }
    [[nodiscard]] auto mark() const noexcept { return arena_.mark(); }
    void rewind(const arena::marker& m) noexcept { arena_.rewind(m); }
    [[nodiscard]] strata::stats stats() const noexcept { return arena_.stats(); }
    [[nodiscard]] arena& get() noexcept { return arena_; }

private:
    heap_source source_; // declared first: outlives the arena
    arena arena_;
};

/// A stack_allocator over its own buffer (LIFO frees; out-of-order frees reported and ignored).
template <std::size_t Bytes = (std::size_t{1} << 20)>
class basic_test_stack {
public:
    basic_test_stack() : buffer_(Bytes), stack_(std::span<std::byte>(buffer_.data(), buffer_.size())) {}
    basic_test_stack(const basic_test_stack&) = delete;
    basic_test_stack& operator=(const basic_test_stack&) = delete;

    [[nodiscard]] void* allocate(std::size_t size, std::size_t align = default_alignment) noexcept {
        return stack_.allocate(size, align);
    }
    void deallocate(void* p, std::size_t size, std::size_t align = default_alignment) noexcept {
        stack_.deallocate(p, size, align);
    }
    void deallocate(void* p) noexcept { stack_.deallocate(p); }
    [[nodiscard]] bool owns(const void* p) const noexcept { return stack_.owns(p); }
    void reset() noexcept { stack_.reset(); }
    [[nodiscard]] strata::stats stats() const noexcept { return stack_.stats(); }

private:
    std::vector<std::byte> buffer_; // declared first: outlives the stack
    stack_allocator stack_;
};
using test_stack = basic_test_stack<>;

/// A strata::pool of 1 KiB slots aligned to 256, growing from its own heap_source (fixed-size:
/// requests above 1 KiB fail).
class test_pool {
public:
    static constexpr std::size_t slot = 1024;
    test_pool() : pool_(slot, 256, source_) {}
    test_pool(const test_pool&) = delete;
    test_pool& operator=(const test_pool&) = delete;

    [[nodiscard]] void* allocate(std::size_t size, std::size_t align = default_alignment) noexcept {
        return pool_.allocate(size, align);
    }
    void deallocate(void* p, std::size_t size, std::size_t align = default_alignment) noexcept {
        pool_.deallocate(p, size, align);
    }
    void deallocate(void* p) noexcept { pool_.deallocate(p); }
    [[nodiscard]] bool owns(const void* p) const noexcept { return pool_.owns(p); }
    void reset() noexcept { pool_.reset(); }
    [[nodiscard]] strata::stats stats() const noexcept { return pool_.stats(); }

private:
    heap_source source_; // declared first: outlives the pool
    pool pool_;
};

/// A strata::tlsf over its own 4 MiB buffer.
class test_tlsf {
public:
    test_tlsf()
        : buffer_(std::size_t{4} << 20), tlsf_(std::span<std::byte>(buffer_.data(), buffer_.size())) {}
    test_tlsf(const test_tlsf&) = delete;
    test_tlsf& operator=(const test_tlsf&) = delete;

    [[nodiscard]] void* allocate(std::size_t size, std::size_t align = default_alignment) noexcept {
        return tlsf_.allocate(size, align);
    }
    void deallocate(void* p, std::size_t size, std::size_t align = default_alignment) noexcept {
        tlsf_.deallocate(p, size, align);
    }
    [[nodiscard]] bool owns(const void* p) const noexcept { return tlsf_.owns(p); }
    [[nodiscard]] strata::stats stats() const noexcept { return tlsf_.stats(); }
    [[nodiscard]] bool check() const noexcept { return tlsf_.check(); }

private:
    std::vector<std::byte> buffer_; // declared first: outlives the heap
    tlsf tlsf_;
};

/// True when A gives back every block freed in LIFO order: test_arena takes back only its most
/// recent allocation in the current block, so its live count need not reach 0 after a LIFO free
/// sequence that crossed blocks.
template <class A>
inline constexpr bool frees_exactly = !std::is_same_v<A, test_arena>;

static_assert(owning_allocator<test_heap> && unsized_deallocator<test_heap>);
static_assert(owning_allocator<test_pool> && owning_allocator<test_tlsf>);
static_assert(owning_allocator<test_arena> && resettable_allocator<test_arena>);
static_assert(owning_allocator<test_stack> && unsized_deallocator<test_stack>);

} // namespace strata::test
