#include "strata/adapt/pmr_resource.hpp"

#include <algorithm>
#include <array>
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <memory_resource>
#include <new>
#include <span>
#include <string>
#include <type_traits>
#include <unordered_map>
#include <vector>

#include <gtest/gtest.h>

#include "strata/core/align.hpp"
#include "strata/core/allocator.hpp"
#include "strata/linear/arena.hpp"
#include "strata/source/heap_source.hpp"

namespace {

using strata::arena;
using strata::pmr_resource;

// Forwards to an arena and remembers the arguments of the last calls, so the tests can see exactly
// what the adapter asked for (the arena alone cannot tell size 1 from size 0 mapped to 1).
struct recording_allocator {
    explicit recording_allocator(arena& a) noexcept : inner(&a) {}

    arena* inner;
    std::size_t last_alloc_size = 0;
    std::size_t last_alloc_align = 0;
    std::size_t last_free_size = 0;
    std::size_t last_free_align = 0;
    void* last_free_ptr = nullptr;
    int allocs = 0;
    int frees = 0;

    void* allocate(std::size_t size, std::size_t align) noexcept {
        last_alloc_size = size;
        last_alloc_align = align;
        ++allocs;
        return inner->allocate(size, align);
    }
    void deallocate(void* p, std::size_t size, std::size_t align) noexcept {
        last_free_ptr = p;
        last_free_size = size;
        last_free_align = align;
        ++frees;
        inner->deallocate(p, size, align);
    }
    [[nodiscard]] strata::stats stats() const noexcept { return inner->stats(); }
};
static_assert(strata::allocator<recording_allocator>);

// A fixed buffer arena's storage: aligned generously so alignment tests do not depend on luck.
template <std::size_t N>
struct buffer {
    alignas(64) std::array<std::byte, N> bytes{};
    [[nodiscard]] std::span<std::byte> span() noexcept { return bytes; }
};

// A long value, so std::string cannot keep it in its small-string buffer.
std::pmr::string long_text(int i, std::pmr::memory_resource* r) {
    std::pmr::string s(r);
    s.assign(48, static_cast<char>('a' + i % 26));
    s += std::to_string(i);
    return s;
}

} // namespace

TEST(PmrResource, StaticProperties) {
    static_assert(std::is_base_of_v<std::pmr::memory_resource, pmr_resource<arena>>);
    static_assert(std::is_same_v<pmr_resource<arena>::upstream_type, arena>);
    static_assert(std::is_nothrow_copy_constructible_v<pmr_resource<arena>>);
    static_assert(!std::is_copy_assignable_v<pmr_resource<arena>>); // containers point at it
    static_assert(!std::is_default_constructible_v<pmr_resource<arena>>);
    // An allocator reference is not a resource by accident: the constructor is explicit.
    static_assert(!std::is_convertible_v<arena&, pmr_resource<arena>>);

    buffer<256> buf;
    arena a(buf.span());
    pmr_resource r(a); // deduction guide
    static_assert(std::is_same_v<decltype(r), pmr_resource<arena>>);
    EXPECT_EQ(&r.upstream(), &a);
    static_assert(std::is_same_v<decltype(r.upstream()), arena&>);
}

TEST(PmrResource, VectorInArena) {
    buffer<16384> buf;
    arena a(buf.span());
    pmr_resource r(a);
    ASSERT_EQ(a.stats().in_use, 0u);

    std::pmr::vector<int> v(&r);
    for (int i = 0; i < 1000; ++i)
        v.push_back(i * 3);

    EXPECT_EQ(v.get_allocator().resource(), &r);
    for (int i = 0; i < 1000; ++i)
        ASSERT_EQ(v[static_cast<std::size_t>(i)], i * 3);
    EXPECT_TRUE(a.owns(v.data()));
    EXPECT_TRUE(a.owns(&v.back()));
    // Growth abandons the old buffers in the arena, so at least the final capacity is in use.
    EXPECT_GE(a.stats().in_use, v.capacity() * sizeof(int));
    EXPECT_LE(a.stats().in_use, buf.bytes.size());
    EXPECT_GE(a.stats().total_allocations, 2u);
}

TEST(PmrResource, VectorInSourceBackedArena) {
    strata::heap_source source;
    {
        arena a(source, strata::arena_options{.block_size = 4096});
        pmr_resource r(a);
        std::pmr::vector<std::uint64_t> v(&r);
        for (std::uint64_t i = 0; i < 20000; ++i)
            v.push_back(i * i);

        for (std::uint64_t i = 0; i < 20000; ++i)
            ASSERT_EQ(v[i], i * i);
        EXPECT_TRUE(a.owns(v.data()));
        EXPECT_TRUE(a.owns(&v.back()));
        EXPECT_GT(a.block_count(), 1u); // it had to grow from the source
        EXPECT_EQ(source.outstanding_blocks(), a.block_count());
        EXPECT_GE(a.stats().in_use, v.capacity() * sizeof(std::uint64_t));
        EXPECT_GE(a.stats().capacity, a.stats().in_use);
    }
    // The arena gave every block back; the vector was destroyed first (declared later).
    EXPECT_EQ(source.outstanding_blocks(), 0u);
    EXPECT_EQ(source.outstanding_bytes(), 0u);
}

TEST(PmrResource, StringInArena) {
    buffer<8192> buf;
    arena a(buf.span());
    pmr_resource r(a);

    std::pmr::string s(&r);
    for (int i = 0; i < 100; ++i)
        s += "strata-";
    const std::size_t in_use = a.stats().in_use;

    EXPECT_EQ(s.size(), 700u);
    EXPECT_EQ(s.substr(0, 14), "strata-strata-");
    EXPECT_EQ(s.get_allocator().resource(), &r);
    EXPECT_TRUE(a.owns(s.data()));
    EXPECT_TRUE(a.owns(s.data() + s.size() - 1));
    EXPECT_GE(in_use, s.capacity() + 1); // characters and the terminator live in the arena
}

TEST(PmrResource, UnorderedMapInArena) {
    strata::heap_source source;
    arena a(source, strata::arena_options{.block_size = 8192});
    pmr_resource r(a);
    {
        std::pmr::unordered_map<int, std::pmr::string> m(&r);
        for (int i = 0; i < 500; ++i)
            m.emplace(i, long_text(i, &r));
        const strata::stats after = a.stats();

        ASSERT_EQ(m.size(), 500u);
        for (int i = 0; i < 500; ++i) {
            const auto it = m.find(i);
            ASSERT_NE(it, m.end());
            EXPECT_EQ(it->second, long_text(i, std::pmr::new_delete_resource()));
            // Nodes and the mapped strings (uses-allocator construction) both live in the arena.
            EXPECT_TRUE(a.owns(&*it));
            EXPECT_TRUE(a.owns(it->second.data()));
            EXPECT_EQ(it->second.get_allocator().resource(), &r);
        }
        // At least 500 nodes and 500 out-of-line strings of 50+ characters.
        EXPECT_GE(after.in_use, 500u * (sizeof(std::pair<const int, std::pmr::string>) + 51));
        EXPECT_GE(after.live_allocations, 1000u);
    }
}

TEST(PmrResource, BadAllocOnExhaustionLeavesArenaUsable) {
    buffer<256> buf;
    arena a(buf.span());
    pmr_resource r(a);
    void* first = r.allocate(64, 8);
    const strata::stats before = a.stats();

    EXPECT_THROW((void)r.allocate(1024, 8), std::bad_alloc);
    EXPECT_EQ(a.stats(), before);

    std::pmr::vector<int> v(&r);
    EXPECT_THROW(v.reserve(1000), std::bad_alloc);
    EXPECT_EQ(a.stats(), before);
    EXPECT_TRUE(v.empty());

    // The arena keeps serving what fits, right after the first allocation.
    v.reserve(16);
    EXPECT_TRUE(a.owns(v.data()));
    EXPECT_EQ(reinterpret_cast<std::byte*>(v.data()), static_cast<std::byte*>(first) + 64);
    EXPECT_EQ(a.stats().in_use, before.in_use + 16 * sizeof(int));
}

TEST(PmrResource, BadAllocWhenSourceBackedArenaHitsItsCap) {
    strata::heap_source source;
    arena a(source, strata::arena_options{.block_size = 4096, .max_capacity = 4096});
    pmr_resource r(a);
    void* p = r.allocate(1000);
    ASSERT_TRUE(a.owns(p));
    const strata::stats before = a.stats();
    const std::size_t blocks = source.outstanding_blocks();

    EXPECT_THROW((void)r.allocate(8192), std::bad_alloc);
    EXPECT_EQ(a.stats(), before);
    EXPECT_EQ(source.outstanding_blocks(), blocks);

    void* q = r.allocate(100);
    EXPECT_TRUE(a.owns(q));
    EXPECT_GT(a.stats().in_use, before.in_use);
}

TEST(PmrResource, InvalidAlignmentThrowsBadAlloc) {
    // pmr makes a power-of-two alignment a precondition; strata answers it with bad_alloc instead
    // of undefined behaviour, because the arena rejects the request without touching its state.
    buffer<256> buf;
    arena a(buf.span());
    pmr_resource r(a);
    const strata::stats before = a.stats();
    // Not constants: compilers rightly warn about a literal non-power-of-two alignment.
    std::size_t three = 3;
    std::size_t zero = 0;
    EXPECT_THROW((void)r.allocate(16, three), std::bad_alloc);
    EXPECT_THROW((void)r.allocate(16, zero), std::bad_alloc);
    EXPECT_EQ(a.stats(), before);
}

TEST(PmrResource, ZeroByteAllocateReturnsDistinctUsablePointers) {
    buffer<256> buf;
    arena a(buf.span());
    pmr_resource r(a);

    void* p = r.allocate(0, 8);
    ASSERT_NE(p, nullptr);
    EXPECT_TRUE(strata::is_aligned(p, 8));
    EXPECT_TRUE(a.owns(p));
    EXPECT_EQ(a.stats().in_use, 1u); // served as one byte
    // Freed with the same mapping, the arena recognises its most recent block and takes it back.
    r.deallocate(p, 0, 8);
    EXPECT_EQ(a.stats().in_use, 0u);

    // Distinct pointers; with byte alignment there is no padding, so LIFO frees return to zero.
    void* x = r.allocate(0, 1);
    void* y = r.allocate(0, 1);
    ASSERT_NE(y, nullptr);
    EXPECT_NE(x, y);
    EXPECT_EQ(a.stats().live_allocations, 2u);
    r.deallocate(y, 0, 1);
    EXPECT_EQ(a.stats().live_allocations, 1u);
    r.deallocate(x, 0, 1);
    EXPECT_EQ(a.stats().in_use, 0u);
    EXPECT_EQ(a.stats().live_allocations, 0u);
}

TEST(PmrResource, ZeroBytesMapToOneByteBothWays) {
    buffer<256> buf;
    arena inner(buf.span());
    recording_allocator rec(inner);
    pmr_resource r(rec);

    void* p = r.allocate(0, 4);
    EXPECT_EQ(rec.last_alloc_size, 1u);
    EXPECT_EQ(rec.last_alloc_align, 4u);
    r.deallocate(p, 0, 4);
    EXPECT_EQ(rec.last_free_ptr, p);
    EXPECT_EQ(rec.last_free_size, 1u);
    EXPECT_EQ(rec.last_free_align, 4u);
}

TEST(PmrResource, ForwardsSizeAndAlignmentUnchanged) {
    buffer<4096> buf;
    arena inner(buf.span());
    recording_allocator rec(inner);
    pmr_resource r(rec);

    void* p = r.allocate(100, 32);
    EXPECT_EQ(rec.last_alloc_size, 100u);
    EXPECT_EQ(rec.last_alloc_align, 32u);
    EXPECT_EQ(rec.allocs, 1);
    const std::size_t in_use = inner.stats().in_use;
    r.deallocate(p, 100, 32);
    EXPECT_EQ(rec.frees, 1);
    EXPECT_EQ(rec.last_free_ptr, p);
    EXPECT_EQ(rec.last_free_size, 100u);
    EXPECT_EQ(rec.last_free_align, 32u);
    // The exact size let the arena give back its most recent block.
    EXPECT_EQ(inner.stats().in_use, in_use - 100);

    // A default-alignment request from the pmr interface arrives as alignof(max_align_t).
    (void)r.allocate(8);
    EXPECT_EQ(rec.last_alloc_align, alignof(std::max_align_t));
}

TEST(PmrResource, AlignmentHonouredFrom1To4096) {
    strata::heap_source source;
    arena a(source, strata::arena_options{.block_size = 4096});
    pmr_resource r(a);
    for (std::size_t align = 1; align <= 4096; align *= 2) {
        for (const std::size_t n : {std::size_t{1}, std::size_t{3}, std::size_t{64}, std::size_t{100}}) {
            // A one-byte allocation first leaves the top misaligned for the next request.
            (void)r.allocate(1, 1);
            void* p = r.allocate(n, align);
            ASSERT_TRUE(strata::is_aligned(p, align)) << "align " << align << " size " << n;
            ASSERT_TRUE(a.owns(p));
            ASSERT_TRUE(a.owns(static_cast<std::byte*>(p) + n - 1));
            std::fill_n(static_cast<unsigned char*>(p), n,
                        static_cast<unsigned char>(align)); // ASan: writable
            const std::size_t in_use = a.stats().in_use;
            r.deallocate(p, n, align);
            EXPECT_EQ(a.stats().in_use, in_use - n);
        }
    }
    // Also through a polymorphic_allocator, for an over-aligned type.
    struct alignas(256) wide {
        unsigned char bytes[256];
    };
    std::pmr::vector<wide> v(&r);
    v.resize(5);
    EXPECT_TRUE(strata::is_aligned(v.data(), 256));
    EXPECT_TRUE(a.owns(v.data()));
}

TEST(PmrResource, IsEqualIffSameAllocatorObject) {
    buffer<256> buf1;
    buffer<256> buf2;
    arena a1(buf1.span());
    arena a2(buf2.span());
    pmr_resource r1(a1);
    pmr_resource r1_again(a1);
    const pmr_resource r1_copy = r1;
    pmr_resource r2(a2);
    recording_allocator rec(a1); // forwards to a1, but is not a1
    pmr_resource other_type(rec);

    EXPECT_TRUE(r1.is_equal(r1));
    EXPECT_TRUE(r1.is_equal(r1_again));
    EXPECT_TRUE(r1_again.is_equal(r1));
    EXPECT_TRUE(r1.is_equal(r1_copy));
    EXPECT_TRUE(r1 == r1_again); // std::pmr's operator== consults is_equal
    EXPECT_FALSE(r1.is_equal(r2));
    EXPECT_FALSE(r2.is_equal(r1));
    EXPECT_TRUE(r1 != r2);
    EXPECT_FALSE(r1.is_equal(other_type));
    EXPECT_FALSE(other_type.is_equal(r1));
    EXPECT_FALSE(r1.is_equal(*std::pmr::new_delete_resource()));
    EXPECT_FALSE(std::pmr::new_delete_resource()->is_equal(r1));

    EXPECT_EQ(std::pmr::polymorphic_allocator<int>(&r1), std::pmr::polymorphic_allocator<int>(&r1_again));
    EXPECT_NE(std::pmr::polymorphic_allocator<int>(&r1), std::pmr::polymorphic_allocator<int>(&r2));
}

TEST(PmrResource, EqualResourcesLetContainersShareStorage) {
    buffer<4096> buf1;
    buffer<4096> buf2;
    arena a1(buf1.span());
    arena a2(buf2.span());
    pmr_resource r1(a1);
    pmr_resource r1_again(a1);
    pmr_resource r2(a2);

    // Equal resources: move assignment steals the buffer, nothing is allocated.
    std::pmr::vector<int> src(&r1);
    src.assign({1, 2, 3, 4});
    const int* stolen = src.data();
    std::pmr::vector<int> dst_equal(&r1_again);
    const strata::stats before = a1.stats();
    dst_equal = std::move(src);
    EXPECT_EQ(dst_equal.data(), stolen);
    EXPECT_EQ(a1.stats().total_allocations, before.total_allocations);
    EXPECT_EQ(dst_equal.get_allocator().resource(), &r1_again); // pmr never propagates

    // Unequal resources: the elements are moved into storage from the destination's arena.
    std::pmr::vector<int> dst_other(&r2);
    dst_other = std::move(dst_equal);
    EXPECT_NE(dst_other.data(), stolen);
    EXPECT_TRUE(a2.owns(dst_other.data()));
    EXPECT_EQ(std::vector<int>(dst_other.begin(), dst_other.end()), (std::vector<int>{1, 2, 3, 4}));
}

TEST(PmrResource, CopiesReferToTheSameAllocator) {
    buffer<256> buf1;
    buffer<256> buf2;
    arena a1(buf1.span());
    arena a2(buf2.span());
    pmr_resource r(a1);
    pmr_resource copy(r);
    EXPECT_EQ(&copy.upstream(), &a1);
    EXPECT_TRUE(copy.is_equal(r));
    void* p = r.allocate(16);
    EXPECT_EQ(a1.stats().in_use, 16u);
    copy.deallocate(p, 16); // freed through an equal resource
    EXPECT_EQ(a1.stats().in_use, 0u);
    EXPECT_EQ(a2.stats().in_use, 0u);
    EXPECT_FALSE(copy.is_equal(pmr_resource(a2)));
}

TEST(PmrResource, UpstreamOfStandardPoolResource) {
    // A strata arena can feed the standard library's own resources.
    strata::heap_source source;
    arena a(source, strata::arena_options{.block_size = 16384});
    pmr_resource r(a);
    {
        std::pmr::unsynchronized_pool_resource pool(&r);
        EXPECT_EQ(pool.upstream_resource(), &r);
        std::pmr::vector<std::pmr::string> names(&pool);
        for (int i = 0; i < 200; ++i)
            names.push_back(long_text(i, &pool));
        for (int i = 0; i < 200; ++i) {
            EXPECT_EQ(names[static_cast<std::size_t>(i)], long_text(i, std::pmr::new_delete_resource()));
            EXPECT_TRUE(a.owns(names[static_cast<std::size_t>(i)].data()));
        }
        EXPECT_TRUE(a.owns(names.data()));
        EXPECT_GT(a.stats().in_use, 200u * 50u);
    }
}
