// The bad-input rules of the allocator contract (core/allocator.hpp), each tested once over every
// allocator of the library: size 0, an alignment that is not a power of two (0 included), and a size
// that overflows once padded or aligned are refused with nullptr and change nothing, from a fresh
// allocator and from one holding an odd-sized block. The tables are support/bad_requests.hpp; what
// one allocator refuses beyond them (a slot size, a class limit, max_request) is in its own test.
#include "support/bad_requests.hpp"

#include <cstddef>
#include <cstdint>
#include <limits>
#include <span>

#include <gtest/gtest.h>

#include "strata/adapt/allocator_ref.hpp"
#include "strata/adapt/debug.hpp"
#include "strata/adapt/fallback.hpp"
#include "strata/adapt/guarded.hpp"
#include "strata/adapt/locked.hpp"
#include "strata/adapt/segregator.hpp"
#include "strata/adapt/tracked.hpp"
#include "strata/heap/buddy.hpp"
#include "strata/heap/free_list.hpp"
#include "strata/heap/tlsf.hpp"
#include "strata/linear/arena.hpp"
#include "strata/linear/double_stack.hpp"
#include "strata/linear/frame_allocator.hpp"
#include "strata/linear/stack_allocator.hpp"
#include "strata/pool/pool.hpp"
#include "strata/pool/size_class_pool.hpp"
#include "strata/slab/magazine.hpp"
#include "strata/slab/slab_cache.hpp"
#include "strata/source/heap_source.hpp"
#include "strata/source/virtual_memory.hpp"

#include "support/adapt_allocators.hpp"
#include "support/aligned_buffer.hpp"
#include "support/stamped_item.hpp"

namespace {

using strata::test::aligned_buffer;
using strata::test::item;

constexpr std::size_t kCap = 256 * 1024;

strata::arena_options growing(std::size_t block_size, std::size_t max_capacity) {
    strata::arena_options o;
    o.block_size = block_size;
    o.max_capacity = max_capacity;
    return o;
}

// --- one fixture per allocator: `alloc`, and `first`, the size of the block held in round two ---

struct arena_fixed {
    static constexpr std::size_t first = 7;
    aligned_buffer buf{kCap};
    strata::arena alloc{buf.span()};
};
struct arena_heap {
    static constexpr std::size_t first = 7;
    strata::heap_source src;
    strata::arena alloc{src, growing(16 * 1024, kCap)};
};
struct arena_vm {
    static constexpr std::size_t first = 7;
    strata::virtual_memory_source src{kCap};
    strata::arena alloc{src, growing(16 * 1024, std::numeric_limits<std::size_t>::max())};
};
struct stack {
    static constexpr std::size_t first = 7;
    aligned_buffer buf{kCap};
    strata::stack_allocator alloc{buf.span()};
};
struct double_stack {
    static constexpr std::size_t first = 7;
    aligned_buffer buf{kCap};
    strata::double_stack alloc{buf.span()};
};
struct frame2 {
    static constexpr std::size_t first = 7;
    aligned_buffer buf{2 * kCap};
    strata::frame_allocator<2> alloc{buf.span()};
};
struct tlsf {
    static constexpr std::size_t first = 7;
    aligned_buffer buf{kCap};
    strata::tlsf alloc{buf.span()};
};
template <class H>
struct free_list {
    static constexpr std::size_t first = 7;
    aligned_buffer buf{kCap};
    H alloc{buf.span()};
};
struct buddy {
    static constexpr std::size_t first = 7;
    aligned_buffer buf{kCap};
    strata::buddy alloc{buf.span()};
};
struct pool {
    static constexpr std::size_t first = 7;
    aligned_buffer buf{kCap};
    strata::pool alloc{64, 16, buf.span()};
};
struct size_class_pool {
    static constexpr std::size_t first = 7;
    strata::heap_source src;
    strata::size_class_pool alloc{src};
};
struct slab_cache {
    static constexpr std::size_t first = 7;
    strata::heap_source src;
    strata::slab_cache<item> alloc{src};
};
struct magazine_cache {
    static constexpr std::size_t first = 7;
    strata::heap_source src;
    strata::magazine_cache<item> alloc{src};
};
struct guard_pages {
    static constexpr std::size_t first = 7;
    static strata::guard_options options() {
        strata::guard_options o;
        o.reserve_bytes = std::size_t{16} << 20;
        return o;
    }
    strata::guard_page_allocator alloc{options()};
};
struct debug {
    static constexpr std::size_t first = 7;
    strata::debug<strata::test::test_heap> alloc;
};
struct tracked {
    static constexpr std::size_t first = 7;
    strata::tracker t{"contract"};
    strata::tracked<strata::test::test_heap> alloc{t};
};
struct locked {
    static constexpr std::size_t first = 7;
    strata::locked<strata::test::test_heap> alloc;
};
struct guarded {
    static constexpr std::size_t first = 7;
    static strata::guarded_options options() {
        strata::guarded_options o;
        o.guard = guard_pages::options();
        o.sample_every = 2;
        return o;
    }
    strata::guarded<strata::test::test_heap> alloc{options()};
};
struct fallback {
    static constexpr std::size_t first = 7;
    strata::fallback<strata::test::basic_test_stack<4096>, strata::test::test_heap> alloc;
};
struct segregator {
    static constexpr std::size_t first = 7;
    strata::segregator<64, strata::test::test_stack, strata::test::test_heap> alloc;
};
struct reference {
    static constexpr std::size_t first = 7;
    strata::test::test_tlsf target;
    strata::allocator_ref<strata::test::test_tlsf> alloc{target};
};

template <class F>
class BadRequests : public ::testing::Test {};
using every_allocator =
    ::testing::Types<arena_fixed, arena_heap, arena_vm, stack, double_stack, frame2, tlsf,
                     free_list<strata::free_list_first_fit>, free_list<strata::free_list_best_fit>,
                     free_list<strata::free_list_next_fit>, buddy, pool, size_class_pool, slab_cache,
                     magazine_cache, guard_pages, debug, tracked, locked, guarded, fallback, segregator,
                     reference>;
TYPED_TEST_SUITE(BadRequests, every_allocator);

// Each rule twice: on a fresh allocator, then with one odd-sized block live (so an overflowing size
// is also padded from an odd top).
template <class F>
void expect_refused(std::span<const strata::test::bad_request> table) {
    F fx;
    EXPECT_TRUE(strata::test::refuses(fx.alloc, table)) << "fresh";
    void* p = fx.alloc.allocate(F::first, 1);
    ASSERT_NE(p, nullptr);
    EXPECT_TRUE(strata::test::refuses(fx.alloc, table)) << "with a block live";
    fx.alloc.deallocate(p, F::first, 1);
}

TYPED_TEST(BadRequests, ZeroSizeIsRefused) { expect_refused<TypeParam>(strata::test::zero_size_requests); }

TYPED_TEST(BadRequests, AnAlignmentThatIsNotAPowerOfTwoIsRefused) {
    expect_refused<TypeParam>(strata::test::bad_alignment_requests);
}

TYPED_TEST(BadRequests, ASizeThatOverflowsIsRefused) {
    expect_refused<TypeParam>(strata::test::overflow_requests);
}

} // namespace
