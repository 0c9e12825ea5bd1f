// Handles demo: a slot_map of small values addressed by generational handles. Values stay dense
// (erase moves the last one into the hole); a handle names a slot index and a generation, and a
// handle kept after its value was erased no longer validates: the generation moved on.
#include <map>

#include "strata/handle/handle.hpp"
#include "strata/handle/slot_map.hpp"

#include "demo.hpp"

namespace strata::lab::serve {
namespace {

struct unit_tag {};
using unit_handle = handle<unit_tag>;

class handles_demo final : public demo {
public:
    static constexpr std::size_t max_values = 24;

    json call(std::string_view op, const json& args) override {
        if (op == "spawn") {
            if (map_.size() >= max_values)
                return {{"ok", false}, {"reason", "the demo holds at most 24 values"}};
            const int value = static_cast<int>(next_value_++);
            const unit_handle h = map_.emplace(value);
            issued_[h.index()] = h;
            return {{"ok", true}, {"handle", to_json(h)}, {"value", value}};
        }
        const unit_handle h = handle_arg(args);
        if (op == "free") {
            // erase() of a stale handle is a reported violation (it stops a checked build), while
            // asking is legitimate: ask first, so a stale free is refused here.
            const bool erased = map_.contains(h) && map_.erase(h);
            if (!erased)
                return {{"ok", false}, {"reason", "stale handle: nothing erased"}, {"handle", to_json(h)}};
            return {{"ok", true}, {"handle", to_json(h)}};
        }
        if (op != "get") unknown_op("handles", op);
        const int* v = map_.get(h);
        if (v == nullptr) {
            const auto it = issued_.find(h.index());
            json r{{"ok", false}, {"handle", to_json(h)}, {"reason", "stale handle: rejected"}};
            if (it != issued_.end()) r["slot_generation"] = it->second.generation();
            return r;
        }
        return {{"ok", true}, {"handle", to_json(h)}, {"value", *v}, {"dense_index", map_.index_of(h)}};
    }

    json state() const override {
        json dense = json::array();
        for (std::size_t i = 0; i < map_.size(); ++i)
            dense.push_back({{"index", i}, {"value", map_[i]}, {"handle", to_json(map_.key_of(i))}});
        // The sparse side: per slot index, the newest handle issued for it and whether the map
        // still accepts it (its generation is current) and where its value sits in the dense array.
        json sparse = json::array();
        for (const auto& [index, h] : issued_) {
            const bool live = map_.contains(h);
            sparse.push_back({{"index", index},
                              {"generation", h.generation()},
                              {"live", live},
                              {"dense", live ? json(map_.index_of(h)) : json(nullptr)}});
        }
        return {{"size", map_.size()},
                {"slot_count", map_.slot_count()},
                {"dense", dense},
                {"sparse", sparse},
                {"check", map_.check()}};
    }

    std::size_t bytes() const noexcept override {
        return sizeof(*this) + map_.capacity() * (sizeof(int) + 8) + map_.slot_count() * 16 +
               issued_.size() * 64;
    }

private:
    static json to_json(unit_handle h) {
        return {{"index", h.index()}, {"generation", h.generation()}, {"raw", h.raw()}};
    }
    static unit_handle handle_arg(const json& args) {
        const auto it = args.find("handle");
        if (it == args.end() || !it->is_object()) throw api_error(400, "missing handle {index, generation}");
        const auto index = static_cast<unit_handle::storage_type>(
            int_arg(*it, "index", 0, unit_handle::max_index, UINT64_MAX));
        const auto gen = static_cast<unit_handle::storage_type>(
            int_arg(*it, "generation", 0, unit_handle::max_generation, UINT64_MAX));
        return unit_handle::from_parts(index, gen);
    }

    slot_map<int, unit_handle> map_;
    std::map<std::uint32_t, unit_handle> issued_;
    std::uint64_t next_value_ = 100;
};

} // namespace

std::unique_ptr<demo> make_handles_demo(const limits&) { return std::make_unique<handles_demo>(); }

} // namespace strata::lab::serve
