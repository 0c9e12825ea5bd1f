// TLSF demo: a two-level segregated-fit heap over 8 KiB. A request size is mapped to a class
// (first level = power of two, second level = one of 32 slices); the search masks the second-level
// bitmap of that level, and when nothing is left there the first-level bitmap, so two bit scans find
// a fitting free list. Blocks split on allocation and merge with free neighbours on free.
#include <array>
#include <bit>
#include <map>
#include <vector>

#include "strata/heap/tlsf.hpp"

#include "demo.hpp"

namespace strata::lab::serve {
namespace {

class tlsf_demo final : public demo {
public:
    static constexpr std::size_t capacity = 8192;

    json call(std::string_view op, const json& args) override {
        if (op == "free") {
            const auto it = live_block(live_, args);
            const std::uint64_t id = it->first;
            heap_.deallocate(it->second);
            live_.erase(it);
            return {{"ok", true}, {"id", id}};
        }
        if (op != "alloc" && op != "probe") unknown_op("tlsf", op);
        const std::size_t size = int_arg(args, "size", 1, max_size_, max_size_ + 1);
        json search = scan(size);
        if (op == "probe") return {{"ok", true}, {"search", search}};
        if (live_.size() >= max_live) {
            json r = refused("the demo keeps at most " + std::to_string(max_live) + " live blocks");
            r["search"] = std::move(search);
            return r;
        }
        const auto before = free_classes();
        void* p = heap_.allocate(size);
        if (p == nullptr)
            return {{"ok", false},
                    {"reason", "out of memory: no free block fits"},
                    {"search", std::move(search)}};
        // Which list the block really came from: the class of the free block that held it before.
        const std::size_t at = offset_of(p);
        for (const auto& [index, offs] : before)
            for (const std::size_t o : offs)
                if (o == at) search["taken"] = {{"fl", index >> 5}, {"sl", index & 31}};
        if (search.contains("chosen") && search.contains("taken"))
            search["matched"] = search["chosen"] == search["taken"];
        const std::uint64_t id = next_id_++;
        live_.emplace(id, p);
        return {{"ok", true},
                {"id", id},
                {"offset", offset_of(p)},
                {"usable", heap_.usable_size(p)},
                {"search", search}};
    }

    json state() const override {
        std::map<std::size_t, std::uint64_t> ids; // payload offset -> id
        for (const auto& [id, p] : live_)
            ids.emplace(offset_of(p), id);
        json blocks = json::array();
        std::map<unsigned, json> classes; // linear class index -> free blocks listed there
        heap_.for_each_block([&](const block_info& b) {
            unsigned fl = 0, sl = 0;
            tlsf::mapping(b.size, fl, sl);
            json j{{"offset", b.offset}, {"size", b.size}, {"used", b.used}};
            if (b.used) {
                const auto it = ids.find(b.offset);
                j["id"] = it == ids.end() ? json(nullptr) : json(it->second);
            } else {
                j["fl"] = fl;
                j["sl"] = sl;
                classes[tlsf::class_index(b.size)].push_back(b.offset);
            }
            blocks.push_back(std::move(j));
        });
        json sl = json::array();
        for (unsigned f = 0; f < levels(); ++f)
            sl.push_back(heap_.sl_bitmap(f));
        json lists = json::array();
        for (auto& [index, offs] : classes)
            lists.push_back({{"fl", index >> 5},
                             {"sl", index & 31},
                             {"floor", tlsf::class_floor(index >> 5, index & 31)},
                             {"blocks", offs}});
        const stats st = heap_.stats();
        return {{"capacity", st.capacity},
                {"in_use", st.in_use},
                {"largest_free_block", st.largest_free_block},
                {"live_allocations", st.live_allocations},
                {"header_size", tlsf::header_size},
                {"sl_count", tlsf::sl_count},
                {"levels", levels()},
                {"fl_bitmap", heap_.fl_bitmap()},
                {"sl_bitmaps", sl},
                {"lists", lists},
                {"blocks", blocks},
                {"check", heap_.check()}};
    }

    std::size_t bytes() const noexcept override { return sizeof(*this) + live_.size() * 64; }

    explicit tlsf_demo(const limits& l)
        : max_size_(std::min<std::size_t>(l.max_request_size, tlsf::max_request)) {}

private:
    static constexpr std::size_t max_live = 256;

    // First levels that can hold a block of this heap (class_index of the whole buffer, plus one).
    static unsigned levels() noexcept { return (tlsf::class_index(capacity) >> 5) + 1; }

    std::size_t offset_of(const void* p) const noexcept {
        return static_cast<std::size_t>(static_cast<const std::byte*>(p) - buffer_.data());
    }

    // Free blocks by linear class index: payload offsets.
    std::map<unsigned, std::vector<std::size_t>> free_classes() const {
        std::map<unsigned, std::vector<std::size_t>> m;
        heap_.for_each_block([&](const block_info& b) {
            if (!b.used) m[tlsf::class_index(b.size)].push_back(b.offset);
        });
        return m;
    }

    // The search allocate() makes for `size`, replayed on the heap's real bitmaps (returned with it)
    // without changing them (tlsf.hpp, take_fit): the payload the request asks for (payload_for: 32k + 16,
    // the block grid), start at the class above the one holding need - 1, mask that level's second-level
    // bitmap, else scan the first-level bitmap above it.
    json scan(std::size_t size) const {
        if (size > tlsf::max_request) return json{{"size", size}, {"need", size}};
        const std::size_t need = tlsf::payload_for(size);
        // The bitmaps the search runs on: an allocation changes them, so the page draws the search
        // on these, as they were before it, and the heap's state after it.
        json sl = json::array();
        for (unsigned f = 0; f < levels(); ++f)
            sl.push_back(heap_.sl_bitmap(f));
        json j{
            {"size", size}, {"need", need}, {"fl_bitmap", heap_.fl_bitmap()}, {"sl_bitmaps", std::move(sl)}};
        const unsigned start = tlsf::class_index(need - 1) + 1;
        unsigned fl = start >> 5;
        const unsigned sl_start = start & 31;
        j["start"] = {{"fl", fl}, {"sl", sl_start}};
        const std::uint32_t sl_bits = fl < tlsf::fl_count ? heap_.sl_bitmap(fl) : 0;
        const std::uint32_t sl_map = sl_bits & (~std::uint32_t{0} << sl_start);
        j["sl_bitmap"] = sl_bits;
        j["sl_masked"] = sl_map;
        if (sl_map != 0) {
            j["path"] = "second-level";
            j["chosen"] = {{"fl", fl}, {"sl", std::countr_zero(sl_map)}};
            return j;
        }
        const std::uint64_t fl_map = fl + 1 < 64 ? heap_.fl_bitmap() & (~std::uint64_t{0} << (fl + 1)) : 0;
        j["fl_masked"] = fl_map;
        if (fl_map == 0) {
            // allocate() still tries the blocks of the start class itself (a last resort that walks
            // one list), so a request may succeed even here.
            j["path"] = "none";
            return j;
        }
        fl = static_cast<unsigned>(std::countr_zero(fl_map));
        j["path"] = "first-level";
        j["chosen"] = {{"fl", fl}, {"sl", std::countr_zero(heap_.sl_bitmap(fl))}};
        return j;
    }

    alignas(64) std::array<std::byte, capacity> buffer_{};
    tlsf heap_{buffer_};
    std::map<std::uint64_t, void*> live_;
    std::uint64_t next_id_ = 1;
    std::size_t max_size_;
};

} // namespace

std::unique_ptr<demo> make_tlsf_demo(const limits& l) { return std::make_unique<tlsf_demo>(l); }

} // namespace strata::lab::serve
