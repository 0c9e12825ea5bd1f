// strata-lab layout: AoS vs SoA, as cache lines loaded against bytes used, computed and measured.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iostream>
#include <memory>
#include <new>
#include <string>
#include <vector>

#include "commands.hpp"
#include "progress.hpp"
#include "timer.hpp"

namespace strata::lab {

namespace {

/// A typical game entity: 64 bytes, one cache line.
struct entity {
    float position[3];
    float velocity[3];
    float orientation[4];
    std::uint32_t health;
    std::uint32_t flags;
    std::uint32_t mesh;
    std::uint32_t material;
    std::uint32_t padding[2]; // rounds the entity to a cache line, as engines often do
};
static_assert(sizeof(entity) == 64);

template <class T>
struct aligned_array {
    explicit aligned_array(std::size_t n)
        : data(static_cast<T*>(::operator new (n * sizeof(T), std::align_val_t{64}))), size(n) {}
    ~aligned_array() { ::operator delete (data, std::align_val_t{64}); }
    aligned_array(const aligned_array&) = delete;
    aligned_array& operator=(const aligned_array&) = delete;
    T* data;
    std::size_t size;
};

template <class F>
double best_ns_per_entity(std::size_t n, int runs, F&& loop) {
    double best = 1e300;
    for (int r = 0; r < runs; ++r) {
        const auto t0 = std::chrono::steady_clock::now();
        loop();
        const double ns =
            std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - t0).count();
        best = std::min(best, ns / static_cast<double>(n));
    }
    return best;
}

/// Returns: `x` as "16" when whole, else "1.88".
std::string ratio_text(double x) {
    char buf[32];
    std::snprintf(buf, sizeof buf, x == static_cast<double>(static_cast<long long>(x)) ? "%.0f" : "%.2f", x);
    return buf;
}

/// Returns: the touch-one-field verdict, computed from the numbers: "SoA loads 16x fewer bytes than
/// AoS and runs 7.36x faster", "SoA loads as many bytes as AoS and runs as fast (1.00x)".
std::string one_field_verdict(double aos_loaded, double soa_loaded, double aos_ns, double soa_ns) {
    std::string s = "SoA loads ";
    if (soa_loaded == aos_loaded) {
        s += "as many bytes as AoS";
    } else if (soa_loaded < aos_loaded) {
        s += ratio_text(aos_loaded / soa_loaded) + "x fewer bytes than AoS";
    } else {
        s += ratio_text(soa_loaded / aos_loaded) + "x more bytes than AoS";
    }
    char speed[64];
    const double faster = soa_ns > 0 && aos_ns > 0 ? aos_ns / soa_ns : 1.0;
    if (std::llround(faster * 100) == 100) {
        std::snprintf(speed, sizeof speed, " and runs as fast (%.2fx)", faster);
    } else if (faster > 1) {
        std::snprintf(speed, sizeof speed, " and runs %.2fx faster", faster);
    } else {
        std::snprintf(speed, sizeof speed, " and runs %.2fx SLOWER", 1 / faster);
    }
    return s + speed;
}

} // namespace

int layout_command(const layout_options& o) {
    const std::size_t n = o.entities;
    if (n == 0) return 2;
    constexpr std::size_t line = 64;
    constexpr std::size_t words = sizeof(entity) / sizeof(std::uint32_t); // 16 four-byte fields
    constexpr std::size_t health_word = offsetof(entity, health) / sizeof(std::uint32_t);
    // AoS: the entity array. SoA: one 64-byte aligned column per 4-byte field.
    const progress_line progress(o.json_path != "-");
    progress("layout: filling " + std::to_string(n) + " entities...");
    aligned_array<entity> aos(n);
    std::vector<std::unique_ptr<aligned_array<std::uint32_t>>> soa;
    for (std::size_t k = 0; k < words; ++k)
        soa.push_back(std::make_unique<aligned_array<std::uint32_t>>(n));
    for (std::size_t i = 0; i < n; ++i) {
        std::uint32_t w[words];
        for (std::size_t k = 0; k < words; ++k)
            w[k] = static_cast<std::uint32_t>(i * 31 + k);
        std::memcpy(&aos.data[i], w, sizeof w);
        for (std::size_t k = 0; k < words; ++k)
            soa[k]->data[i] = w[k];
    }
    std::uint64_t sink = 0;
    // touch-one-field: sum every entity's health.
    progress("layout: touch-one-field, AoS and SoA...");
    const double aos_one = best_ns_per_entity(n, o.runs, [&] {
        std::uint64_t s = 0;
        for (std::size_t i = 0; i < n; ++i)
            s += aos.data[i].health;
        sink += s;
        do_not_optimize(&sink);
    });
    const double soa_one = best_ns_per_entity(n, o.runs, [&] {
        std::uint64_t s = 0;
        const std::uint32_t* h = soa[health_word]->data;
        for (std::size_t i = 0; i < n; ++i)
            s += h[i];
        sink += s;
        do_not_optimize(&sink);
    });
    // touch-all: sum every field of every entity (AoS: entity by entity; SoA: column by column).
    progress("layout: touch-all, AoS and SoA...");
    const double aos_all = best_ns_per_entity(n, o.runs, [&] {
        std::uint64_t s = 0;
        for (std::size_t i = 0; i < n; ++i) {
            std::uint32_t w[words];
            std::memcpy(w, &aos.data[i], sizeof w);
            for (std::size_t k = 0; k < words; ++k)
                s += w[k];
        }
        sink += s;
        do_not_optimize(&sink);
    });
    const double soa_all = best_ns_per_entity(n, o.runs, [&] {
        std::uint64_t s = 0;
        for (std::size_t k = 0; k < words; ++k) {
            const std::uint32_t* c = soa[k]->data;
            for (std::size_t i = 0; i < n; ++i)
                s += c[i];
        }
        sink += s;
        do_not_optimize(&sink);
    });
    // Bytes loaded from memory are whole cache lines: AoS loads every entity's line for either
    // loop; SoA touch-one-field loads only the health column (16 entities per line).
    const double aos_loaded = static_cast<double>((n * sizeof(entity) + line - 1) / line * line);
    const double soa_one_loaded = static_cast<double>((n * sizeof(std::uint32_t) + line - 1) / line * line);
    const double soa_all_loaded = soa_one_loaded * words;
    const double used_one = static_cast<double>(n * sizeof(std::uint32_t));
    const double used_all = static_cast<double>(n * sizeof(entity));
    progress.clear();
    const bool table = o.json_path != "-";
    if (table) {
        char buf[1400];
        auto row = [](double loaded, double used, double ns, const char* name, char* out, std::size_t cap) {
            return std::snprintf(out, cap, "%-22s %14.0f %14.0f %7.1f%% %10.2f\n", name, loaded, used,
                                 100.0 * used / loaded, ns);
        };
        int k = std::snprintf(
            buf, sizeof buf,
            "AoS vs SoA: %zu entities of %zu bytes (16 four-byte fields, one cache line each).\n"
            "touch-one-field sums the health field; touch-all sums all 16 fields; ns/entity is the best "
            "of %d run%s.\n"
            "%-22s %14s %14s %8s %10s\n",
            n, sizeof(entity), o.runs, o.runs == 1 ? "" : "s", "loop", "bytes loaded", "bytes used", "useful",
            "ns/entity");
        k += row(aos_loaded, used_one, aos_one, "AoS touch-one-field", buf + k,
                 sizeof buf - static_cast<std::size_t>(k));
        k += row(soa_one_loaded, used_one, soa_one, "SoA touch-one-field", buf + k,
                 sizeof buf - static_cast<std::size_t>(k));
        k += row(aos_loaded, used_all, aos_all, "AoS touch-all", buf + k,
                 sizeof buf - static_cast<std::size_t>(k));
        k += row(soa_all_loaded, used_all, soa_all, "SoA touch-all", buf + k,
                 sizeof buf - static_cast<std::size_t>(k));
        std::cout << buf
                  << "touch-one-field: " << one_field_verdict(aos_loaded, soa_one_loaded, aos_one, soa_one)
                  << ".\n";
    }
    if (o.json_path.empty()) return 0;
    // The report draws the first 16 entities (docs/lab-report.md, "layout"); the caption carries
    // the measured numbers.
    char caption[600];
    std::snprintf(
        caption, sizeof caption,
        "Measured on %zu entities: touch-one-field AoS %.2f ns/entity vs SoA %.2f (%.1fx); touch-all AoS "
        "%.2f vs SoA %.2f. Loaded bytes per used byte, touch-one-field: AoS %s, SoA %s.",
        n, aos_one, soa_one, soa_one > 0 ? aos_one / soa_one : 0.0, aos_all, soa_all,
        ratio_text(aos_loaded / used_one).c_str(), ratio_text(soa_one_loaded / used_one).c_str());
    char json[2000];
    std::snprintf(
        json, sizeof json,
        "{\"title\":\"strata-lab layout\",\"workloads\":[],\"layout\":{\"caption\":\"%s\","
        "\"cache_line\":%zu,\"entity_bytes\":%zu,\"field_bytes\":4,\"field_offset\":%zu,\"entities\":16,"
        "\"measured_entities\":%zu,\"touch_one\":{\"aos\":{\"bytes_loaded\":%.0f,\"bytes_used\":%.0f,"
        "\"ns_per_entity\":%.3f},\"soa\":{\"bytes_loaded\":%.0f,\"bytes_used\":%.0f,\"ns_per_entity\":%.3f}},"
        "\"touch_all\":{\"aos\":{\"bytes_loaded\":%.0f,\"bytes_used\":%.0f,\"ns_per_entity\":%.3f},"
        "\"soa\":{\"bytes_loaded\":%.0f,\"bytes_used\":%.0f,\"ns_per_entity\":%.3f}}}}\n",
        caption, line, sizeof(entity), offsetof(entity, health), n, aos_loaded, used_one, aos_one,
        soa_one_loaded, used_one, soa_one, aos_loaded, used_all, aos_all, soa_all_loaded, used_all, soa_all);
    if (o.json_path == "-") {
        std::cout << json;
        return 0;
    }
    std::ofstream f(o.json_path);
    f << json;
    f.close(); // flushes: a write error shows only then
    if (!f) {
        std::cerr << "strata-lab: cannot write " << o.json_path << "\n";
        return 1;
    }
    return 0;
}

namespace {

[[maybe_unused]] const bool registered = register_command(
    {40, "layout", std::vector<std::string_view>{"--repeats", "--quick", "--json"},
     [](CLI::App& app, const shared_options& shared, const std::string& uses_note) -> std::function<int()> {
         auto o = std::make_shared<layout_options>();
         auto* cmd = app.add_subcommand(
             "layout",
             "AoS vs SoA: cache lines loaded vs bytes used, measured; best of --repeats runs" + uses_note);
         auto* entities =
             cmd->add_option("--entities", o->entities, "entities (default 10,000,000; --quick: 1,000,000)")
                 ->type_name("N")
                 ->check(CLI::Range(std::size_t{1}, std::size_t{1} << 28));
         return [o, entities, &shared] {
             if (shared.quick && entities->count() == 0) o->entities = 1'000'000;
             o->runs = shared.knobs.repeats.value_or(shared.quick ? 2 : 5); // best of
             o->json_path = shared.json_path;
             return layout_command(*o);
         };
     }});

} // namespace

} // namespace strata::lab
