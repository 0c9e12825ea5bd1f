#pragma once
// Policies of the generational containers (handle_table, slot_map, soa_slot_map), as tag types.
//
// Generation wrap: a slot's generation counts its reuses; a handle is valid only while its
// generation equals the slot's. A counter of G bits runs out after 2^G - 1 generations:
//   policy::retire (default)  the slot is never reused again, so no handle ever issued for it can
//                             validate again. Costs one slot of index space per 2^G - 1 reuses.
//   policy::wrap              the generation restarts at 1. An old handle held across exactly
//                             k * (2^G - 1) reuses of its slot would validate again (ABA); choose
//                             enough generation bits that this cannot happen in practice.
//
// Free-slot reuse: which free slot the next insert takes.
//   policy::lifo (default)    the most recently freed slot: its memory is likely still in cache.
//   policy::fifo              the least recently freed slot: reuse is spread over all free slots,
//                             so each slot's generation advances more slowly (fewer retirements or
//                             wraps) and a stale handle stays detectably stale for longer.
//   policy::compact           the lowest free index (a hierarchical bitmap of free slots, one bit
//                             scan per level): live slots stay packed at the front of the slot
//                             array, so after many random erases the slots still in use share few
//                             cache lines and lookups stay in L1. Reuse concentrates on low indices
//                             as with lifo (generations there advance as fast).
#include <type_traits>

#include "strata/handle/fwd.hpp"

namespace strata::policy {

/// Generation wrap policy: a slot whose generation would wrap is retired (never reused).
struct retire {};
/// Generation wrap policy: a slot whose generation would wrap restarts at generation 1.
struct wrap {};
/// Free-slot reuse policy: last freed, first reused (cache-warm).
struct lifo {};
/// Free-slot reuse policy: first freed, first reused (spreads reuse, slows generation growth).
struct fifo {};

/// Free-slot reuse policy: the lowest free index (keeps the live slots dense).
struct compact {};

/// True for the two wrap policies.
template <class P>
inline constexpr bool is_wrap_policy = std::is_same_v<P, retire> || std::is_same_v<P, wrap>;
/// True for the three reuse policies.
template <class P>
inline constexpr bool is_reuse_policy =
    std::is_same_v<P, lifo> || std::is_same_v<P, fifo> || std::is_same_v<P, compact>;

} // namespace strata::policy
