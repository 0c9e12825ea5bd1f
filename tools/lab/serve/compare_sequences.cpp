// The compare demo's built-in sequences, written out as request scripts.
#include "compare_sequences.hpp"

#include <algorithm>
#include <array>
#include <cstdint>
#include <mutex>
#include <stdexcept>
#include <unordered_map>
#include <vector>

#include "embedded.hpp"
#include "trace_workload.hpp"

namespace strata::lab::serve {

namespace {

constexpr std::array<sequence_info, 4> table = {{
    {"fragmenting", "Fragmenting: many small, free every other, one big"},
    {"lifo", "LIFO-friendly frame: nested scopes freed newest first"},
    {"same-size", "Same size, freed in any order"},
    {"openttd", "OpenTTD: the first 200 small requests of the recorded trace"},
}};

// The embedded trace's first ops, converted once per process (decoding takes tens of ms).
constexpr std::uint64_t trace_ops = 1500;
constexpr std::size_t trace_statements = 200;

const std::vector<op>& trace_head() {
    static std::once_flag once;
    static std::vector<op> ops;
    std::call_once(once, [] {
        const auto bytes = embedded_trace();
        if (bytes.empty()) return;
        ops = load_trace(bytes.data(), bytes.size(), embedded_trace_name, trace_ops).ops;
    });
    return ops;
}

std::string fragmenting(std::size_t buffer) {
    // Small blocks fill about three quarters of the buffer, every other one goes, then one block of
    // half the buffer asks for more than any hole.
    const std::size_t small = std::max<std::size_t>(16, buffer / 96);
    const std::size_t count = std::min<std::size_t>(96, buffer * 3 / 4 / (small + 16));
    std::string s = "# many small\n";
    for (std::size_t i = 1; i <= count; ++i)
        s += "a " + std::to_string(small) + (i % 8 == 0 || i == count ? "\n" : "; ");
    s += "# free every other\n";
    for (std::size_t i = 1; i <= count; i += 2)
        s += "f " + std::to_string(i) + ((i + 1) % 16 == 0 || i + 2 > count ? "\n" : "; ");
    s += "# one big\nbig = a " + std::to_string(buffer / 2) + "\n";
    return s;
}

std::string lifo(std::size_t buffer) {
    // Three frames; in each, a scope inside a scope, every block freed newest first, then a reset.
    const std::size_t u = buffer / 64;
    std::string s;
    std::uint32_t n = 0;
    for (int frame = 1; frame <= 3; ++frame) {
        s += "# frame " + std::to_string(frame) + "\n";
        const std::uint32_t first = n + 1;
        s += "a " + std::to_string(3 * u) + "; a " + std::to_string(u) + " align 64; a " +
             std::to_string(2 * u + 8 * frame) + "\n";
        s += "f " + std::to_string(first + 2) + "; f " + std::to_string(first + 1) + "\n";
        s += "a " + std::to_string(5 * u) + "; a " + std::to_string(u / 2 + 4) + "\n";
        s += "f " + std::to_string(first + 4) + "; f " + std::to_string(first + 3) + "; f " +
             std::to_string(first) + "\n";
        n += 5;
    }
    s += "a " + std::to_string(8 * u) + "\nr\n";
    return s;
}

std::string same_size(std::size_t buffer) {
    const std::size_t size = std::max<std::size_t>(24, buffer / 48);
    const std::size_t count = std::min<std::size_t>(40, buffer / 2 / (size + 16));
    std::string s = "# one size\n";
    for (std::size_t i = 1; i <= count; ++i)
        s += "a " + std::to_string(size) + (i % 8 == 0 || i == count ? "\n" : "; ");
    s += "# freed in a scattered order\n";
    // A permutation: stride 3 over the blocks, starting at the middle (3 is coprime to count when
    // count is not a multiple of 3; otherwise a plain reverse order).
    for (std::size_t k = 0; k < count; ++k) {
        const std::size_t i = count % 3 != 0 ? (count / 2 + 3 * k) % count + 1 : count - k;
        s += "f " + std::to_string(i) + ((k + 1) % 10 == 0 || k + 1 == count ? "\n" : "; ");
    }
    s += "# again, into the holes\n";
    for (std::size_t i = 1; i <= count / 2; ++i)
        s += "a " + std::to_string(size - 8) + (i % 8 == 0 || i == count / 2 ? "\n" : "; ");
    return s;
}

std::string openttd(std::size_t buffer) {
    const auto& ops = trace_head();
    if (ops.empty()) throw std::runtime_error("this build has no embedded trace");
    // Requests up to 1/16 of the buffer (and their frees) are kept, in the recorded order; larger
    // ones and frames are left out, and a reallocation frees its block (the script has no resize).
    // A slot maps to the script's block number.
    const std::size_t small = buffer / 16;
    std::unordered_map<std::uint32_t, std::uint32_t> block_of;
    std::uint32_t blocks = 0;
    std::size_t statements = 0;
    std::string s = "# the embedded OpenTTD trace: requests up to " + std::to_string(small) + " B\n";
    std::string line;
    const auto emit = [&](std::string st) {
        line += (line.empty() ? "" : "; ") + st;
        ++statements;
        if (statements % 8 == 0) {
            s += line + "\n";
            line.clear();
        }
    };
    for (const op& o : ops) {
        if (statements >= trace_statements) break;
        if (o.kind == op_kind::allocate && o.size >= 1 && o.size <= small) {
            const std::size_t align = std::min<std::size_t>(std::size_t{1} << o.log2_align, 4096);
            block_of[o.slot] = ++blocks;
            emit("a " + std::to_string(o.size) + (align != 16 ? " align " + std::to_string(align) : ""));
        } else if (o.kind == op_kind::free || o.kind == op_kind::reallocate) {
            const auto it = block_of.find(o.slot);
            if (it == block_of.end()) continue;
            emit("f " + std::to_string(it->second));
            block_of.erase(it);
        }
    }
    if (!line.empty()) s += line + "\n";
    return s;
}

} // namespace

std::span<const sequence_info> compare_sequences() noexcept { return table; }

std::string sequence_script(std::string_view name, std::size_t buffer) {
    if (name == "fragmenting") return fragmenting(buffer);
    if (name == "lifo") return lifo(buffer);
    if (name == "same-size") return same_size(buffer);
    if (name == "openttd") return openttd(buffer);
    throw std::invalid_argument("no sequence named '" + std::string(name) + "'");
}

} // namespace strata::lab::serve
