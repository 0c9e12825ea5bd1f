// Device-memory demo: a device_pool of at most four 1 MiB blocks (a 4 MiB budget) with a 4 KiB
// bufferImageGranularity. The "device" is a counter: the pool never touches the memory it manages,
// so a block needs no host bytes at all, only its offset_heap's nodes. Buffers are linear resources
// and images optimal ones; used blocks of different kinds never share a 4 KiB page. Defragmentation
// runs one pass per click: begin_pass() plans moves (each destination reserved), the next click
// commits them with end_pass(); a pass with no moves ends the defragmentation.
#include <algorithm>
#include <cmath>
#include <map>
#include <random>
#include <span>
#include <utility>
#include <vector>

#include "strata/device/device_pool.hpp"

#include "demo.hpp"

namespace strata::lab::serve {
namespace {

class device_demo final : public demo {
public:
    static constexpr std::uint64_t block_size = std::uint64_t{1} << 20;
    static constexpr std::uint64_t granularity = 4096;
    static constexpr std::uint64_t min_alignment = 256;
    static constexpr std::uint32_t max_blocks = 4;
    static constexpr std::size_t max_live = 96;
    static constexpr std::uint64_t max_align = std::uint64_t{1} << 16;
    static constexpr std::uint32_t moves_per_pass = 6;
    static constexpr std::uint32_t nodes_per_block = 256;

    explicit device_demo(const limits& l)
        : max_size_(std::min<std::uint64_t>(l.max_request_size, block_size)),
          pool_(device_memory_callbacks{[this](std::uint64_t, std::uint64_t* memory) {
                                            *memory = next_memory_++;
                                            return true;
                                        },
                                        [](std::uint64_t, std::uint64_t) {}},
                options()) {}

    ~device_demo() override {
        if (pool_.defragmenting()) (void)pool_.end_defragmentation();
        for (const auto& [id, h] : live_)
            (void)pool_.deallocate(h);
    }

    json call(std::string_view op, const json& args) override {
        // What the last commit moved is highlighted until the next click that changes something.
        json last = std::exchange(committed_, json::array());
        try {
            json r = run(op, args);
            if (!r.value("ok", true)) committed_ = std::move(last); // refused: nothing changed
            return r;
        } catch (...) {
            committed_ = std::move(last);
            throw;
        }
    }

    json state() const override {
        std::map<device_allocation, std::uint64_t> ids;
        for (const auto& [id, h] : live_)
            ids.emplace(h, id);
        // Where each live allocation is, to name the used blocks of each heap.
        std::map<std::pair<std::uint32_t, std::uint64_t>, std::uint64_t> at; // (block, offset) -> id
        json allocations = json::array();
        pool_.for_each_allocation([&](device_allocation h, const device_allocation_info& i) {
            const auto it = ids.find(h);
            const json id = it == ids.end() ? json(nullptr) : json(it->second);
            if (it != ids.end()) at.emplace(std::pair{i.block, i.offset}, it->second);
            allocations.push_back(describe(id, i));
        });
        // The reserved destinations of the pass in flight: used nodes no allocation names.
        json moves = json::array();
        for (const defrag_move& m : pass_) {
            const auto it = ids.find(m.allocation);
            json j = describe(m);
            j["id"] = it == ids.end() ? json(nullptr) : json(it->second);
            j["op"] = m.op == defrag_op::copy ? "copy" : "ignore";
            moves.push_back(std::move(j));
        }
        json blocks = json::array();
        for (std::uint32_t b = 0; b < pool_.block_slots(); ++b) {
            const offset_heap* heap = pool_.block(b);
            if (heap == nullptr) continue;
            json list = json::array();
            heap->for_each_block([&](const offset_block_info& i) {
                json j{{"offset", i.offset}, {"size", i.size}, {"used", i.used}};
                if (i.used) {
                    j["kind"] = to_string(i.kind);
                    const auto it = at.find({b, i.offset});
                    if (it != at.end()) {
                        j["id"] = it->second;
                    } else {
                        j["id"] = nullptr;
                        j["reserved"] = true; // a move's destination
                    }
                }
                list.push_back(std::move(j));
            });
            blocks.push_back({{"index", b},
                              {"size", heap->size()},
                              {"used_bytes", heap->used_bytes()},
                              {"free_bytes", heap->free_bytes()},
                              {"largest_free_block", heap->largest_free_block()},
                              {"blocks", std::move(list)}});
        }
        json dedicated = json::array();
        for (const json& a : allocations)
            if (a["dedicated"].get<bool>()) dedicated.push_back(a);
        const device_pool_stats s = pool_.stats();
        return {{"block_size", block_size},
                {"granularity", granularity},
                {"min_alignment", min_alignment},
                {"max_blocks", max_blocks},
                {"budget", pool_.options().budget},
                {"dedicated_threshold", pool_.options().dedicated_threshold},
                {"used_bytes", s.used_bytes},
                {"free_bytes", s.free_bytes},
                {"largest_free_block", s.largest_free_block},
                {"fragmentation", s.fragmentation()},
                {"blocks_held", s.blocks},
                {"dedicated_count", s.dedicated},
                {"device_bytes", s.device_bytes},
                {"live_allocations", s.allocations},
                {"defragmenting", pool_.defragmenting()},
                {"pass_in_flight", !pass_.empty()},
                {"bytes_moved", moved_bytes_},
                {"allocations_moved", moved_count_},
                {"passes", passes_},
                {"moves", std::move(moves)},
                {"committed", committed_},
                {"blocks", std::move(blocks)},
                {"dedicated", std::move(dedicated)},
                {"allocations", std::move(allocations)},
                {"check", pool_.check()}};
    }

    std::size_t bytes() const noexcept override {
        std::size_t n = sizeof(*this) + live_.size() * 64 + pass_.size() * sizeof(defrag_move);
        for (std::uint32_t b = 0; b < pool_.block_slots(); ++b)
            if (const offset_heap* heap = pool_.block(b))
                n += heap->metadata_bytes() + std::size_t{heap->max_nodes()} * sizeof(device_allocation);
        return n;
    }

private:
    json run(std::string_view op, const json& args) {
        if (op == "alloc") return alloc(args);
        if (op == "free") return free(args);
        if (op == "fragment") return fragment();
        if (op == "defrag") return defrag_step();
        unknown_op("device", op);
    }

    static device_pool_options options() noexcept {
        device_pool_options o;
        o.block_size = block_size;
        o.budget = block_size * max_blocks;
        o.keep_empty_blocks = 1;
        o.nodes_per_block = nodes_per_block;
        o.min_alignment = min_alignment;
        o.granularity = granularity;
        return o;
    }

    // A size drawn log-uniformly from 4 KiB to 192 KiB, and an alignment of 256 B to 64 KiB.
    std::uint64_t random_size() {
        std::uniform_real_distribution<double> d(std::log(4096.0), std::log(192.0 * 1024));
        return static_cast<std::uint64_t>(std::exp(d(rng_)));
    }
    std::uint64_t random_align() { return std::uint64_t{256} << (rng_() % 9); }

    static resource_kind kind_arg(const json& args) {
        const auto it = args.find("kind");
        if (it == args.end() || it->is_null()) return resource_kind::linear;
        if (it->is_string()) {
            const auto& k = it->get_ref<const std::string&>();
            if (k == "linear") return resource_kind::linear;
            if (k == "optimal") return resource_kind::optimal;
        }
        throw api_error(400, "kind must be \"linear\" (a buffer) or \"optimal\" (an image)");
    }

    // The fields of a live allocation (its id: a number, or null for one the demo did not make).
    static json describe(const json& id, const device_allocation_info& i) {
        return {{"id", id},       {"block", i.block},          {"offset", i.offset},
                {"size", i.size}, {"kind", to_string(i.kind)}, {"dedicated", i.dedicated}};
    }
    json describe(std::uint64_t id, device_allocation h) const { return describe(json(id), *pool_.info(h)); }
    // The fields of a defragmentation move.
    static json describe(const defrag_move& m) {
        return {{"src_block", m.src_block},
                {"src_offset", m.src_offset},
                {"dst_block", m.dst_block},
                {"dst_offset", m.dst_offset},
                {"size", m.size}};
    }

    // Returns the new allocation's id, or 0 when the pool refused (reason in pool_.last_error()).
    std::uint64_t place(std::uint64_t size, std::uint64_t align, resource_kind kind) {
        const device_allocation h = pool_.allocate(size, align, kind);
        if (!h) return 0;
        const std::uint64_t id = next_id_++;
        live_.emplace(id, h);
        return id;
    }

    json refusal() const {
        const device_error e = pool_.last_error();
        return {{"ok", false},
                {"reason",
                 std::string(to_string(e)) +
                     (e == device_error::budget_exceeded
                          ? ": no block has room, and a new block (or memory of its own) would pass the "
                            "4 MiB budget"
                          : "")}};
    }

    json alloc(const json& args) {
        const resource_kind kind = kind_arg(args);
        const bool random = !args.contains("size") || args["size"].is_null();
        const std::uint64_t size =
            random ? random_size() : int_arg(args, "size", 1, max_size_, max_size_ + 1);
        const std::uint64_t align = args.contains("align") && !args["align"].is_null()
                                        ? align_arg(args, "align", max_align, 256)
                                        : (random ? random_align() : 256);
        if (live_.size() >= max_live)
            return refused("the demo keeps at most " + std::to_string(max_live) + " live allocations");
        const std::uint64_t id = place(size, align, kind);
        if (id == 0) return refusal();
        json r = describe(id, live_.at(id));
        r["ok"] = true;
        r["requested"] = size;
        r["align"] = align;
        return r;
    }

    json free(const json& args) {
        std::map<std::uint64_t, device_allocation>::iterator it;
        if (args.contains("id") && !args["id"].is_null()) {
            it = live_block(live_, args);
        } else {
            if (live_.empty()) return refused("nothing to free: no allocation is live");
            it = std::next(live_.begin(), static_cast<std::ptrdiff_t>(rng_() % live_.size()));
        }
        json r = describe(it->first, it->second);
        (void)pool_.deallocate(it->second);
        live_.erase(it);
        r["ok"] = true;
        return r;
    }

    // Fills the pool with random buffers and images until it refuses three times in a row (or holds
    // max_live), then frees half of what is live, chosen at random.
    json fragment() {
        std::uint64_t made = 0;
        for (int refusals = 0; refusals < 3 && live_.size() < max_live;) {
            const resource_kind kind = rng_() % 2 ? resource_kind::optimal : resource_kind::linear;
            if (place(random_size(), random_align(), kind) == 0) {
                ++refusals;
            } else {
                refusals = 0;
                ++made;
            }
        }
        std::vector<std::uint64_t> ids;
        for (const auto& [id, h] : live_)
            ids.push_back(id);
        std::shuffle(ids.begin(), ids.end(), rng_);
        ids.resize(ids.size() / 2);
        for (const std::uint64_t id : ids) {
            (void)pool_.deallocate(live_.at(id));
            live_.erase(id);
        }
        return {{"ok", true}, {"allocated", made}, {"freed", ids.size()}};
    }

    // One click of "defragment: next pass": commits the pass in flight, or plans the next one; a
    // plan with no moves ends the defragmentation.
    json defrag_step() {
        if (!pass_.empty()) {
            std::uint64_t bytes = 0, count = 0;
            for (const defrag_move& m : pass_) {
                if (m.op != defrag_op::copy) continue; // freed during the pass: dropped
                bytes += m.size;
                ++count;
                committed_.push_back(describe(m));
            }
            (void)pool_.end_pass();
            pass_ = {};
            moved_bytes_ += bytes;
            moved_count_ += count;
            return {{"ok", true}, {"phase", "committed"}, {"moved", count}, {"bytes", bytes}};
        }
        const bool started = !pool_.defragmenting();
        if (started) (void)pool_.begin_defragmentation({0, moves_per_pass});
        pass_ = pool_.begin_pass();
        if (pass_.empty()) {
            pass_ = {};
            const defrag_stats s = pool_.end_defragmentation();
            // Started by this click and nothing moved or given back: nothing to do, nothing changed.
            if (started && s.blocks_freed == 0) {
                json r = refused("nothing to move: no pass can make the pool more compact");
                r["phase"] = "nothing";
                return r;
            }
            return {{"ok", true}, {"phase", "done"}, {"blocks_freed", s.blocks_freed}};
        }
        ++passes_;
        std::uint64_t bytes = 0;
        for (const defrag_move& m : pass_)
            bytes += m.size;
        return {{"ok", true}, {"phase", "planned"}, {"moves", pass_.size()}, {"bytes", bytes}};
    }

    std::uint64_t next_memory_ = 1; // the fake device's memory handles
    std::uint64_t max_size_;
    device_pool pool_;
    std::map<std::uint64_t, device_allocation> live_; // id -> handle
    std::uint64_t next_id_ = 1;
    std::mt19937_64 rng_{42};
    std::span<defrag_move> pass_;    // the moves of the pass in flight (the pool's own, until end_pass)
    json committed_ = json::array(); // the moves the last click committed, for the page to highlight
    std::uint64_t moved_bytes_ = 0;
    std::uint64_t moved_count_ = 0;
    std::uint32_t passes_ = 0;
};

} // namespace

std::unique_ptr<demo> make_device_demo(const limits& l) { return std::make_unique<device_demo>(l); }

} // namespace strata::lab::serve
