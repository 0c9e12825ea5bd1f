// Compare demo: one request script applied to six allocators side by side (arena, stack, pool,
// TLSF, buddy, first-fit), each over its own buffer of the same size. `run` parses the script and
// applies it once, answering every step's outcome per allocator; `step` shows the maps after step i.
#include <bit>

#include "compare_lanes.hpp"
#include "compare_sequences.hpp"
#include "demo.hpp"
#include "embedded.hpp"
#include "request_script.hpp"

namespace strata::lab::serve {
namespace {

class compare_demo final : public demo {
public:
    static constexpr std::size_t max_script = 4096;
    static constexpr std::size_t max_statements = 512;

    explicit compare_demo(const limits&) {}

    json call(std::string_view op, const json& args) override {
        if (op == "run") return run(args);
        if (op == "step") {
            const std::size_t n = script_.statements.size();
            const auto step = static_cast<std::size_t>(int_arg(args, "step", 0, n, n + 1));
            replay_to(step);
            return {{"ok", true}, {"step", step}};
        }
        unknown_op("compare", op);
    }

    json state() const override {
        json statements = json::array();
        for (const auto& s : script_.statements)
            statements.push_back({{"text", s.text}, {"line", s.line}, {"column", s.column}});
        json sequences = json::array();
        for (const auto& q : compare_sequences())
            if (q.name != "openttd" || !embedded_trace().empty()) // a build without trace support has none
                sequences.push_back({{"name", q.name}, {"title", q.title}});
        json lanes = json::array();
        for (std::size_t i = 0; i < compare_lanes::lane_count; ++i) {
            json segments = json::array();
            for (const lane_segment& g : lanes_.segments(i))
                segments.push_back({g.offset, g.size, std::string(1, g.kind), g.block});
            json blocks = json::array();
            for (const lane_block& blk : lanes_.blocks(i))
                blocks.push_back({blk.block, blk.offset, blk.size, blk.align});
            const strata::stats st = lanes_.stats(i);
            json lane{{"name", compare_lanes::names[i]},
                      {"segments", std::move(segments)},
                      {"blocks", std::move(blocks)},
                      {"in_use", st.in_use},
                      {"peak", st.peak},
                      {"capacity", st.capacity},
                      {"live", st.live_allocations},
                      {"largest_free", lanes_.largest_free(i)},
                      {"requested", lanes_.requested(i)},
                      {"waste", lanes_.waste(i)},
                      {"footprint", lanes_.footprint(i)},
                      {"check", lanes_.check(i)}};
            if (step_ > 0) lane["outcome"] = outcome_json(outcomes_[i]);
            lanes.push_back(std::move(lane));
        }
        return {{"buffer", lanes_.buffer_bytes()},
                {"pool_slot", lanes_.pool_slot()},
                {"pool_align", lanes_.pool_align()},
                {"script", text_},
                {"names", script_.names},
                {"statements", std::move(statements)},
                {"step", step_},
                {"steps", script_.statements.size()},
                {"version", version_},
                {"sequences", std::move(sequences)},
                {"lanes", std::move(lanes)},
                {"intact", lanes_.intact()}};
    }

    std::size_t bytes() const noexcept override {
        std::size_t n = sizeof(*this) + lanes_.bytes() + text_.capacity();
        for (const auto& s : script_.statements)
            n += sizeof(s) + s.text.capacity();
        for (const auto& name : script_.names)
            n += sizeof(name) + name.capacity();
        return n;
    }

private:
    static json outcome_json(const lane_outcome& o) {
        json j{{"ok", o.ok}};
        if (!o.ok) j["reason"] = o.reason;
        return j;
    }

    json run(const json& args) {
        const auto buffer = static_cast<std::size_t>(
            int_arg(args, "buffer", compare_lanes::min_buffer, compare_lanes::max_buffer, 4096));
        if (!std::has_single_bit(buffer))
            throw api_error(400, "buffer must be a power of two in [1024, 65536]");
        std::string text;
        if (const auto seq = args.find("sequence"); seq != args.end() && !seq->is_null()) {
            if (!seq->is_string()) throw api_error(400, "sequence must be a string");
            try {
                text = sequence_script(seq->get<std::string>(), buffer);
            } catch (const std::invalid_argument& e) {
                throw api_error(400, e.what());
            } catch (const std::runtime_error& e) {
                throw api_error(404, e.what());
            }
        } else {
            const auto s = args.find("script");
            if (s == args.end() || !s->is_string()) throw api_error(400, "missing \"script\" (a string)");
            text = s->get<std::string>();
            if (text.size() > max_script)
                throw api_error(400, "the script is longer than " + std::to_string(max_script) + " bytes");
        }
        request_script parsed;
        try {
            parsed = parse_script(text, {max_script, max_statements, buffer, 4096});
        } catch (const script_error& e) {
            throw api_error(400, e.what());
        }
        const auto slot = static_cast<std::size_t>(int_arg(args, "slot", 0, buffer, 0));

        text_ = std::move(text);
        script_ = std::move(parsed);
        buffer_ = buffer;
        slot_ = slot != 0 ? slot : std::max<std::size_t>(script_.largest_size, 16);
        align_ = std::max<std::size_t>(script_.largest_align, 16);
        ++version_;

        // Every step once, recording what each lane did; the lanes end at the last step.
        lanes_.start(buffer_, slot_, align_);
        json summary = json::array();
        json refusals = json::array();
        for (std::size_t i = 0; i < script_.statements.size(); ++i) {
            outcomes_ = lanes_.apply(script_.statements[i]);
            json row = json::array();
            for (std::size_t l = 0; l < compare_lanes::lane_count; ++l) {
                row.push_back({outcomes_[l].ok ? 1 : 0, lanes_.waste(l), lanes_.footprint(l)});
                if (!outcomes_[l].ok)
                    refusals.push_back({{"step", i + 1}, {"lane", l}, {"reason", outcomes_[l].reason}});
            }
            summary.push_back(std::move(row));
        }
        step_ = script_.statements.size();
        return {{"ok", true},
                {"steps", step_},
                {"version", version_},
                {"summary", std::move(summary)},
                {"refusals", std::move(refusals)}};
    }

    // The lanes as they are after the first `step` statements: the script applied again from the
    // start to fresh allocators (the same statements give the same layout).
    void replay_to(std::size_t step) {
        lanes_.start(buffer_, slot_, align_);
        outcomes_ = {};
        for (std::size_t i = 0; i < step; ++i)
            outcomes_ = lanes_.apply(script_.statements[i]);
        step_ = step;
    }

    compare_lanes lanes_;
    std::string text_;
    request_script script_;
    std::size_t buffer_ = 4096;
    std::size_t slot_ = 16;
    std::size_t align_ = 16;
    std::size_t step_ = 0;
    std::uint64_t version_ = 0;
    std::array<lane_outcome, compare_lanes::lane_count> outcomes_{};
};

} // namespace

std::unique_ptr<demo> make_compare_demo(const limits& l) { return std::make_unique<compare_demo>(l); }

} // namespace strata::lab::serve
