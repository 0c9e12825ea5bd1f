#pragma once
// Helpers shared by the linear-family tests (tests/linear/*_test.cpp): the caller buffer
// (aligned_buffer.hpp) and reference model (reference_model.hpp) they use, a stats comparison that
// prints field names, a for_each_block collector, byte-pattern checks and a memory source that
// counts (and can refuse) block requests.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <new>
#include <span>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "strata/core/config.hpp"
#include "strata/core/stats.hpp"
#include "strata/source/heap_source.hpp"
#include "strata/source/memory_source.hpp"

#include "support/aligned_buffer.hpp"
#include "support/byte_patterns.hpp"
#include "support/reference_model.hpp"

namespace strata::test {

inline std::string describe(const stats& s) {
    std::ostringstream os;
    os << "{in_use " << s.in_use << ", peak " << s.peak << ", capacity " << s.capacity << ", live "
       << s.live_allocations << ", total " << s.total_allocations << ", largest_free " << s.largest_free_block
       << "}";
    return os.str();
}

/// Succeeds when both snapshots are equal; otherwise names both in full.
inline ::testing::AssertionResult same_stats(const stats& actual, const stats& expected) {
    if (actual == expected) return ::testing::AssertionSuccess();
    return ::testing::AssertionFailure()
           << "stats differ:\n  actual   " << describe(actual) << "\n  expected " << describe(expected);
}

#define STRATA_EXPECT_SAME_STATS(actual, expected)                                                           \
    EXPECT_TRUE(::strata::test::same_stats((actual), (expected)))
#define STRATA_ASSERT_SAME_STATS(actual, expected)                                                           \
    ASSERT_TRUE(::strata::test::same_stats((actual), (expected)))

/// One extent reported by for_each_block, copied out of whatever type the allocator passes.
struct extent {
    std::size_t offset;
    std::size_t size;
    bool used;
    friend bool operator==(const extent&, const extent&) = default;
    friend std::ostream& operator<<(std::ostream& os, const extent& e) {
        return os << "{" << e.offset << ", " << e.size << ", " << (e.used ? "used" : "free") << "}";
    }
};

template <class A>
std::vector<extent> extents_of(const A& a) {
    std::vector<extent> out;
    a.for_each_block([&](const auto& b) { out.push_back(extent{b.offset, b.size, b.used}); });
    return out;
}

inline std::size_t total_size(const std::vector<extent>& v) {
    std::size_t n = 0;
    for (const extent& e : v)
        n += e.size;
    return n;
}

inline std::size_t used_size(const std::vector<extent>& v) {
    std::size_t n = 0;
    for (const extent& e : v)
        n += e.used ? e.size : 0;
    return n;
}

/// Returns `v` through a volatile, so the optimizer cannot propagate an absurd constant size into
/// an inlined allocate() (GCC then warns -Wstringop-overflow about the 0xCD memset at checks 2 on
/// a path that cannot run).
inline std::size_t opaque(std::size_t v) noexcept {
    volatile std::size_t x = v;
    return x;
}

inline std::uintptr_t addr(const void* p) noexcept { return reinterpret_cast<std::uintptr_t>(p); }

/// True when `p` is a multiple of `align`.
inline bool aligned_to(const void* p, std::size_t align) noexcept { return addr(p) % align == 0; }

/// A memory source over heap_source that records every request and refuses requests above a limit,
/// or the calls numbered (from 1) in refuse_calls (returning an empty block without calling the
/// heap), so tests can observe and provoke growth.
class counting_source {
public:
    explicit counting_source(std::size_t refuse_above = std::numeric_limits<std::size_t>::max(),
                             std::vector<std::size_t> refuse_calls = {})
        : refuse_above_(refuse_above), refuse_calls_(std::move(refuse_calls)) {
        requests_.reserve(1024);
    }

    [[nodiscard]] memory_block allocate_block(std::size_t size, std::size_t align) noexcept {
        if (requests_.size() < requests_.capacity()) requests_.push_back(size);
        ++calls_;
        if (size > refuse_above_ ||
            std::find(refuse_calls_.begin(), refuse_calls_.end(), calls_) != refuse_calls_.end()) {
            ++refused_;
            return {};
        }
        return heap_.allocate_block(size, align);
    }
    void deallocate_block(memory_block b) noexcept { heap_.deallocate_block(b); }

    [[nodiscard]] const std::vector<std::size_t>& requests() const noexcept { return requests_; }
    [[nodiscard]] std::size_t calls() const noexcept { return calls_; }
    [[nodiscard]] std::size_t refused() const noexcept { return refused_; }
    [[nodiscard]] std::size_t outstanding_blocks() const noexcept { return heap_.outstanding_blocks(); }
    [[nodiscard]] std::size_t outstanding_bytes() const noexcept { return heap_.outstanding_bytes(); }

private:
    heap_source heap_;
    std::size_t refuse_above_;
    std::vector<std::size_t> refuse_calls_;
    std::vector<std::size_t> requests_;
    std::size_t calls_ = 0;
    std::size_t refused_ = 0;
};

/// True when a huge operator new may be asked for and answer nullptr. Under AddressSanitizer that
/// needs ASAN_OPTIONS=allocator_may_return_null=1 (the asan test preset sets it); otherwise ASan
/// reports "requested allocation size exceeds maximum supported size" and aborts.
inline bool huge_new_returns_null() noexcept {
#if STRATA_ASAN
    const char* options = std::getenv("ASAN_OPTIONS");
    return options != nullptr && std::strstr(options, "allocator_may_return_null=1") != nullptr;
#else
    return true;
#endif
}

} // namespace strata::test
