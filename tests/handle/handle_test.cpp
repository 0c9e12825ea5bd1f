// strata::handle: encoding, null, comparison, hashing, printing, distinct types per tag.
#include "strata/handle/handle.hpp"

#include <cstdint>
#include <functional>
#include <sstream>
#include <type_traits>
#include <unordered_set>

#include <gtest/gtest.h>

namespace {

struct mesh_tag {};
struct texture_tag {};

using mesh_handle = strata::handle<mesh_tag>;
using texture_handle = strata::handle<texture_tag>;
using wide_handle = strata::handle<mesh_tag, 32, 32>;
using tiny_handle = strata::handle<mesh_tag, 4, 2>;

} // namespace

TEST(Handle, StorageIsChosenFromTheBitCounts) {
    static_assert(sizeof(mesh_handle) == 4);
    static_assert(std::is_same_v<mesh_handle::storage_type, std::uint32_t>);
    static_assert(sizeof(strata::handle<mesh_tag, 16, 16>) == 4);
    static_assert(sizeof(strata::handle<mesh_tag, 20, 13>) == 8);
    static_assert(sizeof(wide_handle) == 8);
    static_assert(mesh_handle::index_bits == 20 && mesh_handle::generation_bits == 12);
    static_assert(mesh_handle::max_index == (1u << 20) - 1);
    static_assert(mesh_handle::max_generation == (1u << 12) - 1);
    static_assert(wide_handle::max_generation == 0xFFFFFFFFu);
    static_assert(std::is_trivially_copyable_v<mesh_handle>);
}

TEST(Handle, DistinctTagsAreDistinctTypes) {
    static_assert(!std::is_same_v<mesh_handle, texture_handle>);
    static_assert(!std::is_convertible_v<mesh_handle, texture_handle>);
    static_assert(!std::is_convertible_v<texture_handle, mesh_handle>);
    static_assert(!std::is_convertible_v<mesh_handle, std::uint32_t>); // only explicit bool
}

TEST(Handle, DefaultIsNull) {
    constexpr mesh_handle h;
    static_assert(h.is_null());
    static_assert(!h);
    static_assert(h.index() == 0 && h.generation() == 0 && h.raw() == 0);
}

TEST(Handle, PartsRoundTrip) {
    constexpr auto h = mesh_handle::from_parts(12345, 678);
    static_assert(h.index() == 12345 && h.generation() == 678);
    static_assert(!h.is_null() && static_cast<bool>(h));
    static_assert(mesh_handle::from_raw(h.raw()) == h);
    const auto w = wide_handle::from_parts(0xFFFFFFFFu, 0xFFFFFFFFu);
    EXPECT_EQ(w.index(), 0xFFFFFFFFu);
    EXPECT_EQ(w.generation(), 0xFFFFFFFFu);
    // Out-of-range parts are masked, never spill into the other field.
    const auto t = tiny_handle::from_parts(0x1F, 0x7);
    EXPECT_EQ(t.index(), 0xFu);
    EXPECT_EQ(t.generation(), 0x3u);
}

TEST(Handle, ComparisonAndOrdering) {
    const auto a = mesh_handle::from_parts(1, 1);
    const auto b = mesh_handle::from_parts(1, 2);
    const auto c = mesh_handle::from_parts(2, 1);
    EXPECT_EQ(a, mesh_handle::from_parts(1, 1));
    EXPECT_NE(a, b);
    EXPECT_NE(a, c);
    EXPECT_LT(a, c);
    EXPECT_LT(c, b); // generation is the high field
}

TEST(Handle, HashesByEncoding) {
    std::unordered_set<mesh_handle> set;
    for (std::uint32_t i = 0; i < 100; ++i)
        set.insert(mesh_handle::from_parts(i, i % 7 + 1));
    EXPECT_EQ(set.size(), 100u);
    EXPECT_TRUE(set.contains(mesh_handle::from_parts(5, 6)));
    EXPECT_FALSE(set.contains(mesh_handle::from_parts(5, 7)));
    EXPECT_EQ(std::hash<mesh_handle>{}(mesh_handle::from_parts(3, 4)),
              std::hash<mesh_handle>{}(mesh_handle::from_parts(3, 4)));
}

TEST(Handle, PrintsIndexAndGenerationSeparately) {
    std::ostringstream os;
    os << mesh_handle::from_parts(42, 7) << " " << mesh_handle{} << " "
       << wide_handle::from_parts(1, 4000000000u);
    EXPECT_EQ(os.str(), "handle(index 42, gen 7) handle(null) handle(index 1, gen 4000000000)");
}

#if defined(__cpp_lib_format)
TEST(Handle, FormatsLikeStream) {
    EXPECT_EQ(std::format("{}", mesh_handle::from_parts(42, 7)), "handle(index 42, gen 7)");
    EXPECT_EQ(std::format("{}", mesh_handle{}), "handle(null)");
}
#endif
