// Buddy demo: 4 KiB split into power-of-two blocks of 64 B and up. Allocation splits a larger block
// in halves down to the request's order; freeing merges a block with its buddy, level by level,
// while the buddy is free too.
#include <array>
#include <bit>
#include <map>

#include "strata/heap/buddy.hpp"

#include "demo.hpp"

namespace strata::lab::serve {
namespace {

class buddy_demo final : public demo {
public:
    static constexpr std::size_t region = 4096;
    static constexpr std::size_t min_block = 64;

    json call(std::string_view op, const json& args) override {
        if (op == "free") {
            const auto it = live_block(live_, args);
            const std::uint64_t id = it->first;
            const std::size_t offset = it->second;
            const std::size_t before = heap_.block_size(offset);
            heap_.deallocate_offset(offset);
            live_.erase(it);
            // The free block that now covers the freed one shows how far it merged.
            std::size_t merged = before;
            heap_.for_each_block([&](const block_info& b) {
                if (!b.used && b.offset <= offset && offset < b.offset + b.size) merged = b.size;
            });
            return {{"ok", true},
                    {"id", id},
                    {"freed_size", before},
                    {"merged_size", merged},
                    {"merges", std::countr_zero(merged) - std::countr_zero(before)}};
        }
        if (op != "alloc") unknown_op("buddy", op);
        const std::size_t size = int_arg(args, "size", 1, max_size_, max_size_ + 1);
        if (live_.size() >= max_live)
            return refused("the demo keeps at most " + std::to_string(max_live) + " live blocks");
        const std::size_t offset = heap_.allocate_offset(size);
        if (offset == buddy::npos) return refused("out of memory: no free block of that order");
        const std::uint64_t id = next_id_++;
        live_.emplace(id, offset);
        return {{"ok", true}, {"id", id}, {"offset", offset}, {"block_size", heap_.block_size(offset)}};
    }

    json state() const override {
        std::map<std::size_t, std::uint64_t> ids;
        for (const auto& [id, off] : live_)
            ids.emplace(off, id);
        json blocks = json::array();
        heap_.for_each_block([&](const block_info& b) {
            json j{{"offset", b.offset},
                   {"size", b.size},
                   {"used", b.used},
                   {"order", std::countr_zero(b.size) - std::countr_zero(min_block)}};
            if (b.used) j["id"] = ids.count(b.offset) ? json(ids.at(b.offset)) : json(nullptr);
            blocks.push_back(std::move(j));
        });
        const stats st = heap_.stats();
        return {{"region", heap_.region_size()},
                {"min_block", heap_.min_block()},
                {"orders", heap_.orders()},
                {"free_orders", heap_.free_orders()},
                {"granted", heap_.granted_bytes()},
                {"requested", heap_.requested_bytes()},
                {"largest_free_block", st.largest_free_block},
                {"live_allocations", st.live_allocations},
                {"blocks", blocks},
                {"check", heap_.check()}};
    }

    std::size_t bytes() const noexcept override {
        return sizeof(*this) + heap_.bookkeeping_bytes() + live_.size() * 64;
    }

    explicit buddy_demo(const limits& l) : max_size_(std::min<std::size_t>(l.max_request_size, 1u << 20)) {}

private:
    static constexpr std::size_t max_live = 64;
    alignas(4096) std::array<std::byte, region> buffer_{};
    buddy heap_{std::span<std::byte>(buffer_), min_block};
    std::map<std::uint64_t, std::size_t> live_; // id -> offset
    std::uint64_t next_id_ = 1;
    std::size_t max_size_;
};

} // namespace

std::unique_ptr<demo> make_buddy_demo(const limits& l) { return std::make_unique<buddy_demo>(l); }

} // namespace strata::lab::serve
