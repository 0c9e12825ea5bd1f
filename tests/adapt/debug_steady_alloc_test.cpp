// docs/adapters.md promises debug<A> "no heap allocation in a steady state": the freed history and
// the quarantine are rings sized at construction. This file replaces the global (unaligned) operator new
// and delete of the test binary with malloc/free plus a per-thread counter, so a test can count
// the allocations a loop makes; the replacement forwards every form, so nothing else changes.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <new>

#include <gtest/gtest.h>

#include "strata/adapt/debug.hpp"
#include "strata/core/stats.hpp"

#include "support/recording_handler.hpp"

namespace {
constinit thread_local std::uint64_t t_news = 0;

void* counted_new(std::size_t n) {
    ++t_news;
    // Refused before malloc: ASan's malloc aborts on absurd sizes instead of failing.
    if (n > (static_cast<std::size_t>(-1) >> 2)) return nullptr;
    return std::malloc(n != 0 ? n : 1);
}

// Out of line: inlined into a delete-expression, std::free makes GCC warn of a new/free mismatch
// (-Wmismatched-new-delete) it cannot see is this replacement's own pairing.
[[gnu::noinline]] void counted_delete(void* p) noexcept { std::free(p); }
} // namespace

// The replaceable forms without an alignment (the aligned ones keep the library's pair).
void* operator new(std::size_t n) {
    if (void* p = counted_new(n)) return p;
    throw std::bad_alloc();
}
void* operator new[](std::size_t n) {
    if (void* p = counted_new(n)) return p;
    throw std::bad_alloc();
}
void* operator new(std::size_t n, const std::nothrow_t&) noexcept { return counted_new(n); }
void* operator new[](std::size_t n, const std::nothrow_t&) noexcept { return counted_new(n); }
void operator delete(void* p) noexcept { counted_delete(p); }
void operator delete[](void* p) noexcept { counted_delete(p); }
void operator delete(void* p, std::size_t) noexcept { counted_delete(p); }
void operator delete[](void* p, std::size_t) noexcept { counted_delete(p); }
void operator delete(void* p, const std::nothrow_t&) noexcept { counted_delete(p); }
void operator delete[](void* p, const std::nothrow_t&) noexcept { counted_delete(p); }

namespace {

// One 4 KiB block, always at the same address: the steady state of a heap that hands a freed block
// straight back.
class one_block {
public:
    [[nodiscard]] void* allocate(std::size_t size, std::size_t align) noexcept {
        if (used_ || size > sizeof buf_ || align > 64) return nullptr;
        used_ = true;
        return buf_;
    }
    void deallocate(void*, std::size_t, std::size_t) noexcept { used_ = false; }
    [[nodiscard]] strata::stats stats() const noexcept { return {}; }

private:
    alignas(64) std::byte buf_[4096];
    bool used_ = false;
};

std::uint64_t news_during_pairs(strata::debug<one_block>& d, int pairs) {
    const std::uint64_t before = t_news;
    for (int i = 0; i < pairs; ++i)
        d.deallocate(d.allocate(64, 16), 64, 16);
    return t_news - before;
}

TEST(DebugSteadyState, TheCounterSeesAllocations) {
    const std::uint64_t before = t_news;
    void* p = ::operator new(8); // a call, not a new-expression: the compiler may not elide it
    ::operator delete(p);
    EXPECT_EQ(t_news - before, 1u);
}

// Warm-up, then 100000 pairs (six times the freed history): with the deque, about 3000 chunk
// allocations; now none. With the quarantine on (one_block has no mark(), so it is) every
// allocation finds A empty-handed, takes the held block back and retries: no allocation either.
TEST(DebugSteadyState, AllocateFreePairsDoNotAllocate) {
    strata::test::recording_handler rec;
    strata::debug<one_block> d;
    ASSERT_NE(d.options().quarantine_bytes, 0u);
    (void)news_during_pairs(d, 1000); // the address's record is created once
    EXPECT_EQ(news_during_pairs(d, 100000), 0u);
    EXPECT_TRUE(rec.empty());
}

TEST(DebugSteadyState, WithoutAQuarantineToo) {
    strata::test::recording_handler rec;
    strata::debug_options o;
    o.quarantine_bytes = 0;
    o.freed_history = 64; // wraps often
    strata::debug<one_block> d(o);
    (void)news_during_pairs(d, 10); // the address's record is created once
    EXPECT_EQ(news_during_pairs(d, 100000), 0u);
    EXPECT_TRUE(rec.empty());
}

} // namespace
