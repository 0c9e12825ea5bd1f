#pragma once
// A 96-byte, 16-aligned object for the slab-family tests that carries a stamp (owner, serial and a
// check word derived from both), so a test can tell an object handed out twice or overwritten.
#include <cstddef>
#include <cstdint>

namespace strata::test {

struct alignas(16) item {
    std::uint64_t owner;
    std::uint64_t serial;
    std::uint64_t check;
    std::byte pad[72];
};
static_assert(sizeof(item) == 96);

inline void stamp(item* p, std::uint64_t owner, std::uint64_t serial) noexcept {
    p->owner = owner;
    p->serial = serial;
    p->check = owner * 0x9E3779B97F4A7C15ull ^ serial;
}

/// True when the stamp is whole.
inline bool intact(const item* p) noexcept {
    return p->check == (p->owner * 0x9E3779B97F4A7C15ull ^ p->serial);
}

} // namespace strata::test
