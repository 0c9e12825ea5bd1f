// Trace player demo: a recorded or synthetic trace replayed through a real heap (trace_player),
// shown as an address-space map at any op, with the heap's series over time. The session holds
// only its choice and cursor; the prepared players are shared (trace_library.hpp).
#include <algorithm>
#include <cmath>
#include <map>

#include "demo.hpp"
#include "trace_library.hpp"

namespace strata::lab::serve {
namespace {

class trace_demo final : public demo {
public:
    static constexpr std::size_t max_blocks = 3000; ///< most blocks one view sends
    static constexpr std::size_t overview_bins = 1024;
    static constexpr std::size_t max_bins = 1024; ///< most bins of the visible range

    json call(std::string_view op, const json& args) override {
        if (op == "open") return open(args);
        if (op == "view") return view(args);
        if (op == "series") return series();
        unknown_op("trace", op);
    }

    json state() const override {
        json traces = json::array();
        for (const trace_source& s : trace_sources())
            traces.push_back({{"name", s.name}, {"description", s.description}});
        json heaps = json::array();
        for (auto h : {player_heap::tlsf, player_heap::buddy, player_heap::first_fit, player_heap::engine})
            heaps.push_back(heap_name(h));
        json j{{"traces", traces}, {"heaps", heaps}, {"op", op_}};
        if (!source_) {
            j["status"] = "closed";
            return j;
        }
        j["trace"] = source_->name;
        j["heap"] = heap_name(heap_);
        const player_cache::status s = player_cache::shared().get(*source_, heap_);
        if (s.player) {
            const trace_player& p = *s.player;
            j["status"] = "ready";
            j["player"] = {{"ops", p.ops()},
                           {"cut", p.cut()},
                           {"max_ops", trace_player::max_ops},
                           {"heap_bytes", p.heap_bytes()},
                           {"keyframe_every", p.keyframe_every()},
                           {"sample_every", p.sample_every()},
                           {"placements", p.blocks().size()},
                           {"refusals", p.refusals()},
                           {"check", p.heap_checked()},
                           {"prepare_ms", std::round(p.prepare_ms())},
                           {"bytes", p.bytes()},
                           {"layout", p.layout_note()},
                           {"cache_players", player_cache::shared().players()},
                           {"cache_max", player_cache::max_players}};
        } else if (!s.error.empty()) {
            j["status"] = "failed";
            j["error"] = s.error;
        } else {
            j["status"] = "preparing";
            j["phase"] = s.phase;
            j["progress"] = std::round(s.progress * 1000) / 1000;
        }
        return j;
    }

    // The session keeps its choice and cursor only: the player it plays is shared by every session
    // (player_cache, bounded on its own), so it is not counted here.
    std::size_t bytes() const noexcept override { return sizeof(*this) + 256; }

    explicit trace_demo(const limits&) {}

private:
    json open(const json& args) {
        const std::string trace = string_arg(args, "trace");
        const std::string heap = string_arg(args, "heap");
        const auto h = parse_heap(heap);
        if (!h) throw api_error(400, "heap must be one of tlsf, buddy, first_fit, engine");
        for (const trace_source& s : trace_sources()) {
            if (s.name != trace) continue;
            if (!source_ || source_->name != s.name || heap_ != *h) op_ = 0;
            source_ = s;
            heap_ = *h;
            const player_cache::status st = player_cache::shared().get(s, *h);
            if (!st.error.empty()) return {{"ok", false}, {"reason", "could not prepare: " + st.error}};
            return {{"ok", true}, {"ready", st.player != nullptr}};
        }
        throw api_error(400, "no trace named '" + trace + "'");
    }

    // The player, or the answer to give while there is none (preparing, or failed).
    std::shared_ptr<const trace_player> player(json& pending) const {
        if (!source_) throw api_error(400, "open a trace first");
        const player_cache::status s = player_cache::shared().get(*source_, heap_);
        if (!s.player) {
            pending = s.error.empty() ? json{{"ok", true}, {"pending", true}, {"progress", s.progress}}
                                      : json{{"ok", false}, {"reason", "could not prepare: " + s.error}};
        }
        return s.player;
    }

    json view(const json& args) {
        json pending;
        const auto pl = player(pending);
        if (!pl) return pending;
        const trace_player& p = *pl;
        const auto k = static_cast<std::uint32_t>(int_arg(args, "op", 0, p.ops(), op_ <= p.ops() ? op_ : 0));
        const std::uint64_t total = p.heap_bytes();
        const std::uint64_t lo = int_arg(args, "lo", 0, total - 1, 0);
        const std::uint64_t hi = int_arg(args, "hi", 1, total, total);
        if (lo >= hi) throw api_error(400, "lo must be below hi");
        const auto nbins = static_cast<std::size_t>(int_arg(args, "bins", 16, max_bins, 512));
        op_ = k;

        thread_local std::vector<std::uint32_t> live;
        p.live_at(k, live);
        const auto& blocks = p.blocks();
        // Used fraction per bin (in thousandths), over [from, to).
        const auto occupancy = [&](std::uint64_t from, std::uint64_t to, std::size_t n) {
            std::vector<double> used(n, 0.0);
            const double width = static_cast<double>(to - from) / static_cast<double>(n);
            for (const std::uint32_t id : live) {
                const placed_block& b = blocks[id];
                const std::uint64_t s = std::max(b.start, from), e = std::min(b.end(), to);
                if (s >= e) continue;
                const double x0 = static_cast<double>(s - from) / width,
                             x1 = static_cast<double>(e - from) / width;
                for (auto i = static_cast<std::size_t>(x0); i < n && static_cast<double>(i) < x1; ++i)
                    used[i] +=
                        std::min(x1, static_cast<double>(i + 1)) - std::max(x0, static_cast<double>(i));
            }
            json out = json::array();
            for (const double u : used)
                out.push_back(static_cast<int>(std::lround(std::min(1.0, u) * 1000)));
            return out;
        };
        // The live blocks overlapping [lo, hi): sorted by start and disjoint, so one binary search.
        auto first = std::lower_bound(live.begin(), live.end(), lo, [&](std::uint32_t id, std::uint64_t at) {
            return blocks[id].start < at;
        });
        if (first != live.begin() && blocks[*(first - 1)].end() > lo) --first;
        auto last = std::lower_bound(
            first, live.end(), hi, [&](std::uint32_t id, std::uint64_t at) { return blocks[id].start < at; });
        const auto in_range = static_cast<std::size_t>(last - first);
        json list = json::array();
        std::map<std::uint16_t, std::string> labels;
        std::uint64_t used = 0, requested = 0, top = 0;
        for (const std::uint32_t id : live) {
            used += blocks[id].size;
            requested += blocks[id].requested;
            top = std::max(top, blocks[id].end());
        }
        if (in_range <= max_blocks) {
            for (auto it = first; it != last; ++it) {
                const placed_block& b = blocks[*it];
                list.push_back({b.start, b.size, b.header, b.requested, b.op, b.bin});
                if (!labels.contains(b.bin)) labels.emplace(b.bin, p.bin_label(b));
            }
        }
        json bin_labels = json::object();
        for (const auto& [code, label] : labels)
            bin_labels[std::to_string(code)] = label;
        // The sample at or before k (samples are taken after every sample_every ops).
        const auto& samples = p.samples();
        const auto at = std::upper_bound(samples.begin(), samples.end(), k,
                                         [](std::uint32_t v, const heap_sample& s) { return v < s.op; });
        json sample = nullptr;
        if (at != samples.begin()) sample = sample_json(*(at - 1));
        return {{"ok", true},
                {"op", k},
                {"lo", lo},
                {"hi", hi},
                {"in_range", in_range},
                {"blocks", list},
                {"omitted", in_range <= max_blocks ? 0 : in_range},
                {"bin_labels", bin_labels},
                {"bins", occupancy(lo, hi, nbins)},
                {"overview", occupancy(0, total, overview_bins)},
                {"live_blocks", live.size()},
                {"used_bytes", used},
                {"requested", requested},
                {"top", top},
                {"refusals", p.refusals_before(k)},
                {"sample", sample}};
    }

    json series() const {
        json pending;
        const auto pl = player(pending);
        if (!pl) return pending;
        json op = json::array(), footprint = json::array(), used = json::array(), free = json::array(),
             largest = json::array(), refusals = json::array(), requested = json::array();
        for (const heap_sample& s : pl->samples()) {
            op.push_back(s.op);
            footprint.push_back(s.footprint);
            used.push_back(s.used_bytes);
            free.push_back(s.free_bytes);
            largest.push_back(s.largest_free);
            refusals.push_back(s.refusals);
            requested.push_back(s.requested);
        }
        return {{"ok", true},
                {"every", pl->sample_every()},
                {"walked", pl->heap() != player_heap::engine},
                {"op", op},
                {"footprint", footprint},
                {"used_bytes", used},
                {"free_bytes", free},
                {"largest_free", largest},
                {"refusals", refusals},
                {"requested", requested}};
    }

    static json sample_json(const heap_sample& s) {
        return {{"op", s.op},
                {"footprint", s.footprint},
                {"used_bytes", s.used_bytes},
                {"free_bytes", s.free_bytes},
                {"largest_free", s.largest_free},
                {"refusals", s.refusals}};
    }

    static std::string string_arg(const json& args, const char* key) {
        const auto it = args.find(key);
        if (it == args.end() || !it->is_string() || it->get_ref<const std::string&>().size() > 256)
            throw api_error(400, std::string(key) + " must be a string (at most 256 characters)");
        return it->get<std::string>();
    }

    std::optional<trace_source> source_;
    player_heap heap_ = player_heap::tlsf;
    std::uint32_t op_ = 0;
};

} // namespace

std::unique_ptr<demo> make_trace_demo(const limits& l) { return std::make_unique<trace_demo>(l); }

} // namespace strata::lab::serve
