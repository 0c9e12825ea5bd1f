// Pool demo: 32-byte slots carved from a 1 KiB buffer. Allocate takes the head of the free list,
// free pushes the slot back on the front: the free-list order shows the LIFO reuse.
#include <array>
#include <cstring>
#include <unordered_map>

#include "strata/core/poison.hpp"
#include "strata/pool/pool.hpp"

#include "demo.hpp"

namespace strata::lab::serve {
namespace {

class pool_demo final : public demo {
public:
    static constexpr std::size_t slot_size = 32;

    pool_demo() {
        pool_.for_each_slot([&](void* p, bool) { slots_.push_back(p); });
        live_.assign(slots_.size(), false);
    }

    json call(std::string_view op, const json& args) override {
        if (op == "alloc") {
            void* p = pool_.allocate();
            if (p == nullptr) return refused("out of memory: every slot is live");
            const std::size_t i = index_of(p);
            live_[i] = true;
            return {{"ok", true}, {"slot", i}};
        }
        if (op != "free") unknown_op("pool", op);
        const auto i = static_cast<std::size_t>(int_arg(args, "slot", 0, slots_.size() - 1, slots_.size()));
        // Checked here, so the pool never sees a double free (a violation that would stop the server).
        if (!live_[i])
            throw api_error(400, "slot " + std::to_string(i) + " is not live (stale or never allocated)");
        pool_.deallocate(slots_[i]);
        live_[i] = false;
        return {{"ok", true}, {"slot", i}};
    }

    json state() const override {
        json slots = json::array();
        std::size_t k = 0;
        pool_.for_each_slot([&](void* p, bool live) {
            slots.push_back(
                {{"index", k++},
                 {"offset", static_cast<std::size_t>(static_cast<std::byte*>(p) - buffer_.data())},
                 {"live", live}});
        });
        const auto order = free_list();
        return {{"slot_size", pool_.slot_size()}, {"capacity", pool_.capacity()},
                {"live", pool_.live()},           {"slots", slots},
                {"free_list", order.first},       {"free_list_consistent", order.second},
                {"check", pool_.check()}};
    }

    std::size_t bytes() const noexcept override {
        return sizeof(*this) + slots_.capacity() * sizeof(void*) + live_.capacity() / 8;
    }

private:
    std::size_t index_of(const void* p) const {
        for (std::size_t i = 0; i < slots_.size(); ++i)
            if (slots_[i] == p) return i;
        throw api_error(500, "the pool returned a pointer outside its slots");
    }

    // The free list, read from the slots themselves: a free slot's first word links to the next
    // (pool.hpp). The head is the one free slot no other free slot links to.
    std::pair<json, bool> free_list() const {
        std::unordered_map<const void*, const void*> next;
        pool_.for_each_slot([&](void* p, bool live) {
            if (live) return;
            void* link = nullptr;
            unpoison(p, sizeof link); // free slots are poisoned under ASan
            std::memcpy(&link, p, sizeof link);
            poison(p, sizeof link);
            next.emplace(p, link);
        });
        std::unordered_map<const void*, int> targeted;
        for (const auto& [p, n] : next)
            if (n) ++targeted[n];
        const void* head = nullptr;
        std::size_t heads = 0;
        for (const auto& [p, n] : next)
            if (!targeted.count(p)) head = p, ++heads;
        json order = json::array();
        for (const void* p = head; p != nullptr && order.size() <= next.size(); p = next.at(p)) {
            order.push_back(index_of(p));
            if (!next.count(p)) return {order, false};
        }
        return {order, heads <= 1 && order.size() == next.size()};
    }

    alignas(64) std::array<std::byte, 1024> buffer_{};
    pool pool_{slot_size, 16, buffer_};
    std::vector<void*> slots_;
    std::vector<bool> live_;
};

} // namespace

std::unique_ptr<demo> make_pool_demo(const limits&) { return std::make_unique<pool_demo>(); }

} // namespace strata::lab::serve
