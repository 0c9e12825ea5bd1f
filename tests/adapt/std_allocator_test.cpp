#include "strata/adapt/std_allocator.hpp"

#include <array>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <limits>
#include <list>
#include <map>
#include <memory>
#include <new>
#include <numeric>
#include <scoped_allocator>
#include <span>
#include <string>
#include <type_traits>
#include <unordered_map>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "strata/core/align.hpp"
#include "strata/core/allocator.hpp"
#include "strata/linear/arena.hpp"
#include "strata/source/heap_source.hpp"

namespace {

using strata::arena;
using strata::std_allocator;

template <class T>
using arena_alloc = std_allocator<T, arena>;
template <class T>
using arena_vector = std::vector<T, arena_alloc<T>>;
using arena_string = std::basic_string<char, std::char_traits<char>, arena_alloc<char>>;

// Forwards to an arena and remembers the arguments of the last calls, so the tests can see exactly
// what the adapter asked for.
struct recording_allocator {
    explicit recording_allocator(arena& a) noexcept : inner(&a) {}

    arena* inner;
    std::size_t last_alloc_size = 0;
    std::size_t last_alloc_align = 0;
    std::size_t last_free_size = 0;
    std::size_t last_free_align = 0;
    void* last_free_ptr = nullptr;

    void* allocate(std::size_t size, std::size_t align) noexcept {
        last_alloc_size = size;
        last_alloc_align = align;
        return inner->allocate(size, align);
    }
    void deallocate(void* p, std::size_t size, std::size_t align) noexcept {
        last_free_ptr = p;
        last_free_size = size;
        last_free_align = align;
        inner->deallocate(p, size, align);
    }
    [[nodiscard]] strata::stats stats() const noexcept { return inner->stats(); }
};
static_assert(strata::allocator<recording_allocator>);

// A fixed buffer arena's storage: aligned generously so offsets in the tests are exact.
template <std::size_t N>
struct buffer {
    alignas(64) std::array<std::byte, N> bytes{};
    [[nodiscard]] std::span<std::byte> span() noexcept { return bytes; }
};

} // namespace

TEST(StdAllocator, StaticProperties) {
    using alloc = arena_alloc<int>;
    using traits = std::allocator_traits<alloc>;
    static_assert(std::is_same_v<traits::value_type, int>);
    static_assert(std::is_same_v<traits::pointer, int*>);
    static_assert(std::is_same_v<traits::size_type, std::size_t>);
    static_assert(std::is_same_v<alloc::upstream_type, arena>);
    // The allocator follows the container's storage, like a pointer to an arena.
    static_assert(std::is_same_v<traits::propagate_on_container_copy_assignment, std::false_type>);
    static_assert(std::is_same_v<traits::propagate_on_container_move_assignment, std::true_type>);
    static_assert(std::is_same_v<traits::propagate_on_container_swap, std::true_type>);
    static_assert(std::is_same_v<traits::is_always_equal, std::false_type>);
    // Never null: no default constructor; an arena converts implicitly so containers take one.
    static_assert(!std::is_default_constructible_v<alloc>);
    static_assert(std::is_convertible_v<arena&, alloc>);
    static_assert(std::is_nothrow_constructible_v<alloc, arena&>);
    static_assert(std::is_trivially_copyable_v<alloc>);
    static_assert(sizeof(alloc) == sizeof(arena*));
    // Rebinding, as containers do for their nodes.
    static_assert(std::is_same_v<traits::rebind_alloc<double>, arena_alloc<double>>);
    static_assert(std::is_nothrow_convertible_v<arena_alloc<double>, alloc>);
    // Allocators over different strata allocator types do not convert into each other.
    static_assert(!std::is_constructible_v<alloc, std_allocator<int, recording_allocator>>);
}

TEST(StdAllocator, VectorInArena) {
    buffer<16384> buf;
    arena a(buf.span());
    ASSERT_EQ(a.stats().in_use, 0u);
    arena_vector<int> v(a);
    for (int i = 0; i < 1000; ++i)
        v.push_back(i * 7);

    EXPECT_EQ(&v.get_allocator().upstream(), &a);
    for (int i = 0; i < 1000; ++i)
        ASSERT_EQ(v[static_cast<std::size_t>(i)], i * 7);
    EXPECT_TRUE(a.owns(v.data()));
    EXPECT_TRUE(a.owns(&v.back()));
    EXPECT_GE(a.stats().in_use, v.capacity() * sizeof(int));
    EXPECT_GE(a.stats().total_allocations, 2u);
}

TEST(StdAllocator, VectorInSourceBackedArena) {
    strata::heap_source source;
    {
        arena a(source, strata::arena_options{.block_size = 4096});
        arena_vector<std::uint64_t> v(a);
        for (std::uint64_t i = 0; i < 20000; ++i)
            v.push_back(i ^ 0x5555);

        for (std::uint64_t i = 0; i < 20000; ++i)
            ASSERT_EQ(v[i], i ^ 0x5555);
        EXPECT_TRUE(a.owns(v.data()));
        EXPECT_TRUE(a.owns(&v.back()));
        EXPECT_GT(a.block_count(), 1u);
        EXPECT_EQ(source.outstanding_blocks(), a.block_count());
        EXPECT_GE(a.stats().in_use, v.capacity() * sizeof(std::uint64_t));
    }
    EXPECT_EQ(source.outstanding_blocks(), 0u);
}

TEST(StdAllocator, ListInArena) {
    buffer<16384> buf;
    arena a(buf.span());
    std::list<int, arena_alloc<int>> l(a);
    for (int i = 0; i < 100; ++i)
        l.push_back(i);

    EXPECT_EQ(std::accumulate(l.begin(), l.end(), 0), 4950);
    for (const int& x : l)
        EXPECT_TRUE(a.owns(&x));
    const strata::stats full = a.stats();
    EXPECT_EQ(full.live_allocations, 100u); // one node each, nothing else
    EXPECT_GE(full.in_use, 100 * (sizeof(int) + 2 * sizeof(void*)));

    // The last node is the arena's most recent allocation: the sized free gives it back.
    l.pop_back();
    EXPECT_EQ(a.stats().live_allocations, 99u);
    EXPECT_LT(a.stats().in_use, full.in_use);
    // A node from the middle is not: the arena frees in bulk and keeps its bytes.
    const std::size_t in_use = a.stats().in_use;
    l.pop_front();
    EXPECT_EQ(a.stats().in_use, in_use);
}

TEST(StdAllocator, MapInArena) {
    buffer<32768> buf;
    arena a(buf.span());
    using map_t = std::map<int, int, std::less<>, arena_alloc<std::pair<const int, int>>>;
    map_t m(a);
    for (int i = 500; i > 0; --i)
        m.emplace(i, -i);

    ASSERT_EQ(m.size(), 500u);
    int expected = 1;
    for (const auto& kv : m) {
        EXPECT_EQ(kv.first, expected);
        EXPECT_EQ(kv.second, -expected);
        EXPECT_TRUE(a.owns(&kv));
        ++expected;
    }
    EXPECT_EQ(a.stats().live_allocations, 500u);
    EXPECT_GE(a.stats().in_use, 500 * (sizeof(std::pair<const int, int>) + 3 * sizeof(void*)));
    EXPECT_EQ(m.erase(250), 1u);
    EXPECT_EQ(m.count(250), 0u);
}

TEST(StdAllocator, UnorderedMapInSourceBackedArena) {
    strata::heap_source source;
    arena a(source, strata::arena_options{.block_size = 8192});
    using map_t = std::unordered_map<std::uint64_t, std::uint64_t, std::hash<std::uint64_t>, std::equal_to<>,
                                     arena_alloc<std::pair<const std::uint64_t, std::uint64_t>>>;
    {
        map_t m(16, std::hash<std::uint64_t>{}, std::equal_to<>{}, a);
        for (std::uint64_t i = 0; i < 5000; ++i)
            m.emplace(i * 2654435761u, i);
        ASSERT_EQ(m.size(), 5000u);
        for (std::uint64_t i = 0; i < 5000; ++i) {
            const auto it = m.find(i * 2654435761u);
            ASSERT_NE(it, m.end());
            EXPECT_EQ(it->second, i);
            EXPECT_TRUE(a.owns(&*it));
        }
        EXPECT_GT(a.block_count(), 1u);
        EXPECT_GE(a.stats().live_allocations, 5000u);
    }
}

TEST(StdAllocator, BasicStringInArena) {
    buffer<8192> buf;
    arena a(buf.span());
    arena_string s(a);
    for (int i = 0; i < 100; ++i)
        s += "strata-";

    EXPECT_EQ(s.size(), 700u);
    EXPECT_EQ(s.compare(0, 14, "strata-strata-"), 0);
    EXPECT_TRUE(a.owns(s.data()));
    EXPECT_TRUE(a.owns(s.data() + s.size()));
    EXPECT_GE(a.stats().in_use, s.capacity() + 1);

    // substr() needs a default-constructed allocator in C++20, which std_allocator refuses to be;
    // the sub-string constructor takes the arena explicitly instead.
    const arena_string tail(s, 7, 200, s.get_allocator());
    EXPECT_EQ(tail.get_allocator(), s.get_allocator());
    EXPECT_TRUE(a.owns(tail.data()));
    EXPECT_EQ(tail.size(), 200u);
    const arena_string both = s + tail;
    EXPECT_EQ(both.size(), 900u);
    EXPECT_TRUE(a.owns(both.data()));
}

TEST(StdAllocator, ScopedAdaptorPutsNestedStringsInTheArena) {
    buffer<16384> buf;
    arena a(buf.span());
    using outer = std::scoped_allocator_adaptor<arena_alloc<arena_string>>;
    const outer alloc(a);
    std::vector<arena_string, outer> names(alloc);
    for (int i = 0; i < 50; ++i)
        names.emplace_back(std::string(40, static_cast<char>('a' + i % 26)).c_str());

    ASSERT_EQ(names.size(), 50u);
    for (const arena_string& n : names) {
        EXPECT_EQ(n.size(), 40u);
        EXPECT_TRUE(a.owns(n.data())); // the adaptor handed the arena to each element
        EXPECT_EQ(&n.get_allocator().upstream(), &a);
    }
}

TEST(StdAllocator, RebindKeepsTheUpstream) {
    buffer<1024> buf1;
    buffer<1024> buf2;
    arena a1(buf1.span());
    arena a2(buf2.span());
    const arena_alloc<char> ac(a1);
    const arena_alloc<double> ad(ac);
    const arena_alloc<char> back(ad);

    EXPECT_EQ(&ad.upstream(), &a1);
    EXPECT_TRUE(ad == ac);
    EXPECT_TRUE(ac == ad);
    EXPECT_TRUE(back == ac);
    EXPECT_FALSE(ad == arena_alloc<char>(a2));
    EXPECT_TRUE(ad != arena_alloc<char>(a2));

    // Each rebound type allocates with its own alignment.
    arena_alloc<char> c(a1);
    char* pc = c.allocate(1);
    arena_alloc<double> d(c);
    double* pd = d.allocate(3);
    EXPECT_TRUE(strata::is_aligned(pd, alignof(double)));
    EXPECT_EQ(reinterpret_cast<std::byte*>(pd), reinterpret_cast<std::byte*>(pc) + alignof(double));
    EXPECT_EQ(a1.stats().in_use, alignof(double) + 3 * sizeof(double));
}

TEST(StdAllocator, AllocateSharedFreesItsControlBlockSized) {
    buffer<1024> buf;
    arena a(buf.span());
    {
        const std::shared_ptr<int> sp = std::allocate_shared<int>(arena_alloc<int>(a), 42);
        EXPECT_EQ(*sp, 42);
        EXPECT_TRUE(a.owns(sp.get()));
        EXPECT_EQ(a.stats().live_allocations, 1u); // control block and int, in one rebound allocation
        EXPECT_GT(a.stats().in_use, sizeof(int));
    }
    // Freed through the rebound allocator with the size it was allocated with: the arena, seeing its
    // most recent block come back, takes it back entirely.
    EXPECT_EQ(a.stats().in_use, 0u);
    EXPECT_EQ(a.stats().live_allocations, 0u);
}

TEST(StdAllocator, MoveAssignmentMovesTheAllocatorWithTheStorage) {
    buffer<4096> buf1;
    buffer<4096> buf2;
    arena a1(buf1.span());
    arena a2(buf2.span());
    arena_vector<int> v1(a1);
    v1.assign({1, 2, 3, 4, 5});
    arena_vector<int> v2(a2);
    v2.assign({9, 9});
    const int* storage = v1.data();
    const std::size_t a1_allocs = a1.stats().total_allocations;

    v2 = std::move(v1);

    EXPECT_EQ(&v2.get_allocator().upstream(), &a1);
    EXPECT_EQ(v2.data(), storage); // stolen, not copied
    EXPECT_EQ(std::vector<int>(v2.begin(), v2.end()), (std::vector<int>{1, 2, 3, 4, 5}));
    EXPECT_EQ(a1.stats().total_allocations, a1_allocs);
    // v2's old storage went back to a2 (it was a2's most recent block), and a2 is no longer used.
    EXPECT_EQ(a2.stats().in_use, 0u);
    const strata::stats a2_after = a2.stats();
    for (int i = 0; i < 100; ++i)
        v2.push_back(i);
    EXPECT_TRUE(a1.owns(v2.data()));
    EXPECT_EQ(a2.stats(), a2_after);

    // The moved-from vector still holds a valid allocator (a copy of the pointer, never null).
    EXPECT_EQ(&v1.get_allocator().upstream(), &a1); // NOLINT(bugprone-use-after-move): on purpose
    v1.push_back(7);
    EXPECT_TRUE(a1.owns(v1.data()));
}

TEST(StdAllocator, CopyAssignmentKeepsTheDestinationAllocator) {
    buffer<4096> buf1;
    buffer<4096> buf2;
    arena a1(buf1.span());
    arena a2(buf2.span());
    arena_vector<int> v1(a1);
    v1.assign({1, 2, 3});
    arena_vector<int> v2(a2);
    v2.reserve(8);
    const std::size_t a1_before = a1.stats().in_use;

    v2 = v1;

    EXPECT_EQ(&v2.get_allocator().upstream(), &a2) << "a copy must not move v2 into v1's arena";
    EXPECT_TRUE(a2.owns(v2.data()));
    EXPECT_EQ(v2, v1);
    EXPECT_EQ(a1.stats().in_use, a1_before) << "nothing was allocated from the source's arena";
}

TEST(StdAllocator, SwapExchangesAllocatorsAndStorage) {
    buffer<4096> buf1;
    buffer<4096> buf2;
    arena a1(buf1.span());
    arena a2(buf2.span());
    arena_vector<int> v1(a1);
    v1.assign({1, 2, 3});
    arena_vector<int> v2(a2);
    v2.assign({4, 5});
    const int* p1 = v1.data();
    const int* p2 = v2.data();
    const strata::stats s1 = a1.stats();
    const strata::stats s2 = a2.stats();

    swap(v1, v2);

    EXPECT_EQ(&v1.get_allocator().upstream(), &a2);
    EXPECT_EQ(&v2.get_allocator().upstream(), &a1);
    EXPECT_EQ(v1.data(), p2);
    EXPECT_EQ(v2.data(), p1);
    EXPECT_EQ(a1.stats(), s1); // nothing allocated or freed
    EXPECT_EQ(a2.stats(), s2);
    v1.push_back(6);
    EXPECT_TRUE(a2.owns(v1.data()));
}

TEST(StdAllocator, CopyConstructionStaysInTheSameArena) {
    buffer<4096> buf;
    arena a(buf.span());
    arena_vector<int> v(a);
    v.assign({1, 2, 3});
    const arena_vector<int> copy(v);
    EXPECT_EQ(copy.get_allocator(), v.get_allocator());
    EXPECT_NE(copy.data(), v.data());
    EXPECT_TRUE(a.owns(copy.data()));
}

TEST(StdAllocator, OverflowThrowsBadArrayNewLength) {
    buffer<256> buf;
    arena a(buf.span());
    arena_alloc<std::uint64_t> alloc(a);
    const strata::stats before = a.stats();
    constexpr std::size_t max = std::numeric_limits<std::size_t>::max();

    EXPECT_THROW((void)alloc.allocate(max / 4), std::bad_array_new_length);
    EXPECT_THROW((void)alloc.allocate(max / 8 + 1), std::bad_array_new_length); // first n that overflows
    EXPECT_THROW((void)alloc.allocate(max), std::bad_array_new_length);
    // bad_array_new_length is a bad_alloc, so code that only knows bad_alloc still catches it.
    EXPECT_THROW((void)alloc.allocate(max / 4), std::bad_alloc);
    EXPECT_EQ(a.stats(), before);

    // The largest n that does not overflow is merely too big: plain bad_alloc.
    bool plain_bad_alloc = false;
    try {
        (void)alloc.allocate(max / 8);
    } catch (const std::bad_array_new_length&) {
    } catch (const std::bad_alloc&) {
        plain_bad_alloc = true;
    }
    EXPECT_TRUE(plain_bad_alloc);
    EXPECT_EQ(a.stats(), before);
}

TEST(StdAllocator, ExhaustionThrowsBadAllocAndLeavesArenaUsable) {
    buffer<256> buf;
    arena a(buf.span());
    arena_alloc<int> alloc(a);
    int* first = alloc.allocate(16);
    const strata::stats before = a.stats();

    EXPECT_THROW((void)alloc.allocate(1000), std::bad_alloc);
    EXPECT_EQ(a.stats(), before);

    arena_vector<int> v(a);
    EXPECT_THROW(v.resize(1000), std::bad_alloc);
    EXPECT_TRUE(v.empty());
    EXPECT_EQ(a.stats(), before);

    int* next = alloc.allocate(4);
    EXPECT_EQ(next, first + 16);
    EXPECT_EQ(a.stats().in_use, before.in_use + 4 * sizeof(int));
}

TEST(StdAllocator, ExhaustionOfACappedSourceBackedArena) {
    strata::heap_source source;
    arena a(source, strata::arena_options{.block_size = 4096, .max_capacity = 4096});
    arena_vector<std::uint32_t> v(a);
    v.reserve(256);
    const strata::stats before = a.stats();
    EXPECT_THROW(v.reserve(4096), std::bad_alloc);
    EXPECT_EQ(a.stats(), before);
    EXPECT_EQ(v.capacity(), 256u); // strong guarantee: the vector kept its storage
    EXPECT_EQ(source.outstanding_blocks(), 1u);
}

TEST(StdAllocator, ZeroSizeAllocateReturnsAUsablePointer) {
    buffer<256> buf;
    arena a(buf.span());
    arena_alloc<std::uint32_t> words(a);
    std::uint32_t* w = words.allocate(0);
    ASSERT_NE(w, nullptr);
    EXPECT_TRUE(a.owns(w));
    EXPECT_TRUE(strata::is_aligned(w, alignof(std::uint32_t)));
    EXPECT_EQ(a.stats().in_use, 1u); // served as one byte
    words.deallocate(w, 0);          // freed as one byte too, so the arena takes it back
    EXPECT_EQ(a.stats().in_use, 0u);

    // Distinct pointers; with byte alignment there is no padding, so LIFO frees return to zero.
    arena_alloc<char> chars(a);
    char* p = chars.allocate(0);
    char* q = chars.allocate(0);
    EXPECT_NE(p, q);
    EXPECT_EQ(q, p + 1);
    chars.deallocate(q, 0);
    chars.deallocate(p, 0);
    EXPECT_EQ(a.stats().in_use, 0u);
    EXPECT_EQ(a.stats().live_allocations, 0u);
}

TEST(StdAllocator, ForwardsByteSizeAndAlignment) {
    buffer<1024> buf;
    arena inner(buf.span());
    recording_allocator rec(inner);
    std_allocator<std::uint32_t, recording_allocator> alloc(rec);

    std::uint32_t* p = alloc.allocate(10);
    EXPECT_EQ(rec.last_alloc_size, 40u);
    EXPECT_EQ(rec.last_alloc_align, alignof(std::uint32_t));
    alloc.deallocate(p, 10);
    EXPECT_EQ(rec.last_free_ptr, p);
    EXPECT_EQ(rec.last_free_size, 40u);
    EXPECT_EQ(rec.last_free_align, alignof(std::uint32_t));
    EXPECT_EQ(inner.stats().in_use, 0u);

    (void)alloc.allocate(0);
    EXPECT_EQ(rec.last_alloc_size, 1u);
}

TEST(StdAllocator, OverAlignedElements) {
    strata::heap_source source;
    arena a(source, strata::arena_options{.block_size = 4096});
    struct alignas(256) wide {
        std::byte bytes[256];
    };
    (void)a.allocate(1, 1); // misalign the top first
    std::vector<wide, arena_alloc<wide>> v(a);
    v.resize(7);
    EXPECT_TRUE(strata::is_aligned(v.data(), 256));
    EXPECT_TRUE(a.owns(v.data()));
    EXPECT_TRUE(a.owns(&v.back().bytes[255]));
}

TEST(StdAllocator, EqualityComparesTheArena) {
    buffer<256> buf1;
    buffer<256> buf2;
    arena a1(buf1.span());
    arena a2(buf2.span());
    arena_alloc<int> x(a1);
    arena_alloc<int> y(a1);
    const arena_alloc<int> z(a2);
    const arena_alloc<int> x_copy = x;
    EXPECT_TRUE(x == y);
    EXPECT_TRUE(x == x_copy);
    EXPECT_FALSE(x == z);
    EXPECT_TRUE(x != z);

    // Equal allocators free each other's memory.
    int* p = x.allocate(4);
    y.deallocate(p, 4);
    EXPECT_EQ(a1.stats().in_use, 0u);
}
