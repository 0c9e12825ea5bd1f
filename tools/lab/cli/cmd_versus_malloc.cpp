// strata-lab versus-malloc: malloc against linear, stack, free-list and pool allocators on the
// published "Performance Comparison" tests, ours beside its times.
#include <initializer_list>
#include <iostream>
#include <string>
#include <utility>
#include <vector>

#include "commands.hpp"
#include "op_contenders.hpp"
#include "progress.hpp"
#include "text.hpp"

namespace strata::lab {

namespace {

/// Returns: the published comparison's test `name`: for each (count, size) of `blocks`, `count`
/// allocations of `size` bytes; then all freed newest first, then a frame boundary (a linear
/// allocator's single clear()).
op_workload versus_test(const char* name, const char* description,
                        std::initializer_list<std::pair<int, std::uint32_t>> blocks) {
    op_builder b(name, description);
    std::vector<std::uint32_t> slots;
    for (const auto& [count, size] : blocks)
        for (int i = 0; i < count; ++i)
            slots.push_back(b.allocate(size));
    for (auto it = slots.rbegin(); it != slots.rend(); ++it)
        b.free(*it);
    b.frame();
    return b.finish();
}

const op_contender* contender_named(const std::string& name) {
    for (const op_contender& c : op_registry())
        if (c.name == name) return &c;
    return nullptr;
}

} // namespace

int versus_malloc_command(const versus_malloc_options& o) {
    struct table {
        const char* title;
        const char* ours;      // our contender
        const char* seed_name; // the published comparison's name for it
        double seed_malloc, seed_allocator;
        bool pool_workload;
    };
    // The published "Performance Comparison": release build, averages of 3 runs, seconds.
    static constexpr table tables[] = {
        {"Malloc vs Linear Allocator", "arena", "Linear", 0.639655, 0.000072, false},
        {"Malloc vs Stack Allocator", "stack", "Stack", 0.650435, 0.000289, false},
        {"Malloc vs FreeList Allocator", "first_fit", "FreeList", 0.673865, 0.000414, false},
        {"Malloc vs Pool Allocator", "pool", "Pool", 1.454934, 0.000193, true},
    };
    // The published comparison's mixed and pool tests.
    const op_workload mixed =
        versus_test("vm_mixed", "10k x 16 B + 1k x 256 B + 50 x 2 MiB allocations, then deallocations",
                    {{10'000, 16}, {1'000, 256}, {50, 2u << 20}});
    const op_workload pooled =
        versus_test("vm_pool", "20k x 16 B allocations, then deallocations", {{20'000, 16}});
    const replay_options ro{.warmup = 1, .repeats = o.repeats, .latency_passes = 0, .series_points = 1};
    const progress_line progress(o.json_path != "-");
    auto seconds = [&](const std::string& name, const op_workload& w) {
        progress("versus-malloc: " + name + " on " + w.name + "...");
        const op_contender* c = contender_named(name);
        if (c == nullptr || !c->applies(w)) return -1.0;
        const replay_result r = c->run(w, ro);
        if (r.failed != 0) return -1.0;
        return r.ns_per_op() * static_cast<double>(r.memory_ops) * 1e-9;
    };
    const double malloc_mixed = seconds("malloc", mixed), malloc_pool = seconds("malloc", pooled);
    const bool table_out = o.json_path != "-";
    std::string json = "{\"title\":\"strata-lab versus-malloc (the published comparison's "
                       "tables)\",\"workloads\":[],\"bars\":[";
    char line[1024];
    if (table_out)
        std::cout << "the published comparison's tests (whole run, seconds; published: release build, mean "
                     "of 3 runs; ours: "
                     "median of "
                  << o.repeats << ").\nSpeed-up = malloc time / allocator time.\n";
    for (std::size_t i = 0; i < std::size(tables); ++i) {
        const table& t = tables[i];
        const double m = t.pool_workload ? malloc_pool : malloc_mixed;
        const double a = seconds(t.ours, t.pool_workload ? pooled : mixed);
        progress.clear();
        const double ours_x = a > 0 ? m / a : 0, seed_x = t.seed_malloc / t.seed_allocator;
        if (table_out) {
            std::snprintf(line, sizeof line,
                          "\n### %s (%s)\n%-16s %12s %12s\n%-16s %12.6f %12.6f\n%-16s %12.6f %12.6f\n%-16s "
                          "%11.0fx %11.0fx\n",
                          t.title, t.pool_workload ? pooled.description.c_str() : mixed.description.c_str(),
                          "Allocator", "ours (s)", "seed (s)", "Malloc", m, t.seed_malloc, t.seed_name, a,
                          t.seed_allocator, "speed-up", ours_x, seed_x);
            std::cout << line;
        }
        std::snprintf(line, sizeof line,
                      "%s{\"title\":\"%s\",\"caption\":\"%s; whole-run seconds, ours vs the published "
                      "figures\",\"unit\":\"s\",\"lower_is_better\":true,\"log_scale\":true,\"groups\":[",
                      i ? "," : "", t.title,
                      t.pool_workload ? pooled.description.c_str() : mixed.description.c_str());
        json += line;
        std::snprintf(line, sizeof line,
                      "{\"label\":\"ours\",\"values\":{\"Malloc\":%.9f,\"%s\":%.9f}},"
                      "{\"label\":\"published\",\"values\":{\"Malloc\":%.9f,\"%s\":%.9f}}]}",
                      m, t.seed_name, a, t.seed_malloc, t.seed_name, t.seed_allocator);
        json += line;
    }
    json += "]}\n";
    return o.json_path.empty() ? 0 : write_document(o.json_path, json);
}

namespace {

[[maybe_unused]] const bool registered = register_command(
    {30, "versus-malloc", std::vector<std::string_view>{"--repeats", "--quick", "--json"},
     [](CLI::App& app, const shared_options& shared, const std::string& uses_note) -> std::function<int()> {
         app.add_subcommand(
             "versus-malloc",
             "malloc against linear, stack, free-list and pool allocators, beside published times" +
                 uses_note);
         return [&shared] {
             versus_malloc_options v;
             v.repeats = shared.knobs.repeats.value_or(shared.quick ? 1 : 3); // as report's versus-malloc
             v.json_path = shared.json_path;
             return versus_malloc_command(v);
         };
     }});

} // namespace

} // namespace strata::lab
