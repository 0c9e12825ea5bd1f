#pragma once
// Saving and loading handle-linked data: handles are not stable across runs (slot indices and
// generations depend on the history of inserts and erases), so a save file must never contain raw
// handles. save_remap assigns each saved object a stable id (0, 1, 2, ... in save order) and turns
// every handle reference into that id; load_remap records which new handle each id got when the
// objects were re-inserted and turns saved ids back into handles.
//
// The pattern (docs/handles.md has the full example):
//   save:  save_remap<H> ids;  for each object: ids.assign(h);          // ids first, in save order
//          write ids.id_of(h) and, for each reference r, ids.id_of(r)  // stale/null -> null_id
//   load:  load_remap<H> map;  for each record: map.bind(id, table.insert(value));
//          then for each reference: r = map.resolve(saved_id)          // null_id/unknown -> null
// References to objects that were not saved (stale handles, other tables) become null handles on
// load rather than silently pointing at whatever reuses the slot.
#include <cstdint>
#include <limits>
#include <stdexcept>
#include <unordered_map>
#include <vector>

#include "strata/handle/fwd.hpp"
#include "strata/handle/handle.hpp"

namespace strata {

/// A stable object id in a save file.
using stable_id = std::uint32_t;
/// The id written for a null, stale or unsaved reference.
inline constexpr stable_id null_id = std::numeric_limits<stable_id>::max();

/// Save side: handle -> stable id.
template <class Handle>
class save_remap {
    static_assert(is_handle_v<Handle>, "Handle must be a strata::handle");

public:
    /// Effects: gives `h` the next id unless it has one. Returns: its id; null_id for a null handle.
    /// Throws: std::length_error when every id below null_id is taken.
    stable_id assign(Handle h) {
        if (h.is_null()) return null_id;
        if (ids_.size() >= null_id && !ids_.contains(h))
            throw std::length_error("strata::save_remap: more objects than stable ids");
        const auto [it, inserted] = ids_.try_emplace(h, static_cast<stable_id>(ids_.size()));
        return it->second;
    }
    /// Returns: the id assigned to `h`, or null_id when `h` is null or was never assigned (e.g. a
    /// stale reference whose object was not saved).
    [[nodiscard]] stable_id id_of(Handle h) const noexcept {
        const auto it = ids_.find(h);
        return it == ids_.end() ? null_id : it->second;
    }
    /// Returns: how many ids were assigned.
    [[nodiscard]] std::size_t size() const noexcept { return ids_.size(); }

private:
    std::unordered_map<Handle, stable_id> ids_;
};

/// Load side: stable id -> the handle the object got in this run.
template <class Handle>
class load_remap {
    static_assert(is_handle_v<Handle>, "Handle must be a strata::handle");

public:
    /// Effects: a remap that takes any id below null_id (the table grows to the largest id bound).
    load_remap() = default;
    /// Effects: a remap for a save of `id_count` objects (ids 0 .. id_count - 1, as save_remap
    /// assigns them): a larger id is refused, so a corrupt record cannot make the table huge. The
    /// count itself is trusted (the table is reserved for it): take it from the save's own size.
    /// Throws: as vector::reserve (std::length_error, std::bad_alloc) for a count memory cannot hold.
    explicit load_remap(std::size_t id_count) : limit_(id_count) { handles_.reserve(id_count); }

    /// Effects: records that the object saved as `id` now has handle `h`. Returns: false (and
    /// records nothing) when id is null_id, not below the id count given, already bound, or `h`
    /// is null: a corrupt or duplicated save record.
    bool bind(stable_id id, Handle h) {
        if (id == null_id || id >= limit_ || h.is_null()) return false;
        if (id >= handles_.size()) handles_.resize(static_cast<std::size_t>(id) + 1);
        if (!handles_[id].is_null()) return false;
        handles_[id] = h;
        return true;
    }
    /// Returns: the handle bound to `id`; the null handle for null_id or an id never bound.
    [[nodiscard]] Handle resolve(stable_id id) const noexcept {
        return id < handles_.size() ? handles_[id] : Handle{};
    }

private:
    std::vector<Handle> handles_; // indexed by id; save ids are dense
    std::size_t limit_ = null_id;
};

} // namespace strata
