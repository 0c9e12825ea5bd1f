// Stack demo: a LIFO allocator over 1 KiB. Each allocation carries a 16-byte header (the previous
// top); pop frees the newest; a marker saves the top and rewind frees everything above it at once.
#include <algorithm>
#include <array>
#include <vector>

#include "strata/linear/stack_allocator.hpp"

#include "demo.hpp"

namespace strata::lab::serve {
namespace {

class stack_demo final : public demo {
public:
    static constexpr std::size_t capacity = 1024;

    json call(std::string_view op, const json& args) override {
        if (op == "alloc") {
            const std::size_t size = int_arg(args, "size", 1, max_size_, max_size_ + 1);
            const std::size_t align = align_arg(args, "align", 256, 16);
            if (live_.size() >= max_live)
                return refused("the demo keeps at most " + std::to_string(max_live) + " live blocks");
            void* p = stack_.allocate(size, align);
            if (p == nullptr) return refused("out of memory: the request does not fit");
            live_.push_back({next_id_++, p, size});
            return {{"ok", true}, {"id", live_.back().id}, {"offset", offset_of(p)}};
        }
        if (op == "pop") return pop(args);
        if (op == "mark") {
            if (markers_.size() >= max_markers)
                return refused("the demo keeps at most " + std::to_string(max_markers) + " markers");
            markers_.push_back({++markers_issued_, stack_.mark(), stack_.in_use(), live_.size()});
            return {{"ok", true}, {"marker", markers_.back().id}};
        }
        if (op == "rewind") {
            // Marker ids count 1, 2, ... apart from block ids: one never issued is a bad request.
            const std::uint64_t id = int_arg(args, "marker", 1, UINT64_MAX >> 1, UINT64_MAX);
            if (id > markers_issued_)
                throw api_error(400, "marker " + std::to_string(id) + " was never saved");
            const auto it =
                std::find_if(markers_.begin(), markers_.end(), [&](const saved& m) { return m.id == id; });
            // A marker above the top would be a violation (invalid_marker): refuse it here. The page
            // can send one: a rewind clicked before the pop that dropped its marker was answered.
            if (it == markers_.end())
                return refused("marker " + std::to_string(id) +
                               " is gone: the top fell below it, and a rewind there would move the top up");
            stack_.rewind(it->m);
            live_.resize(it->live);
            drop_stale_markers();
            return {{"ok", true}};
        }
        if (op == "reset") {
            stack_.reset();
            live_.clear();
            markers_.clear();
            return {{"ok", true}};
        }
        unknown_op("stack", op);
    }

    json state() const override {
        json blocks = json::array();
        stack_.for_each_block([&](const block_info& b) {
            blocks.push_back({{"offset", b.offset}, {"size", b.size}, {"used", b.used}});
        });
        json live = json::array();
        for (const auto& l : live_)
            live.push_back({{"id", l.id}, {"offset", offset_of(l.p)}, {"size", l.size}});
        json markers = json::array();
        for (const auto& m : markers_)
            markers.push_back({{"id", m.id}, {"position", m.position}});
        const stats st = stack_.stats();
        return {{"capacity", stack_.capacity()},
                {"in_use", stack_.in_use()},
                {"top", stack_.in_use()},
                {"header_size", stack_allocator::header_size},
                {"live_allocations", st.live_allocations},
                {"blocks", blocks},
                {"allocations", live},
                {"markers", markers}};
    }

    std::size_t bytes() const noexcept override {
        return sizeof(*this) + live_.capacity() * sizeof(entry) + markers_.capacity() * sizeof(saved);
    }

    explicit stack_demo(const limits& l) : max_size_(std::min<std::size_t>(l.max_request_size, 1u << 20)) {}

private:
    static constexpr std::size_t max_live = 128;

    // pop: frees the newest block; pop {id} frees block `id`, which a stack allows only when it is
    // the newest (LIFO): an older one is refused before the allocator sees it (an out-of-order
    // deallocate is a violation that would stop the server).
    json pop(const json& args) {
        if (args.contains("id") && !args["id"].is_null()) {
            const std::uint64_t id = int_arg(args, "id", 1, UINT64_MAX >> 1, UINT64_MAX);
            const auto it =
                std::find_if(live_.begin(), live_.end(), [&](const entry& e) { return e.id == id; });
            if (it == live_.end())
                throw api_error(400, "block " + std::to_string(id) + " is not live (stale or unknown id)");
            if (std::next(it) != live_.end())
                return refused("out of order: block #" + std::to_string(id) + " is not the newest (#" +
                               std::to_string(live_.back().id) + "); a stack frees last in, first out");
        } else if (live_.empty()) {
            return refused("the stack is empty: nothing to pop");
        }
        const std::uint64_t id = live_.back().id;
        stack_.deallocate(live_.back().p); // the newest: never out of order
        live_.pop_back();
        drop_stale_markers();
        return {{"ok", true}, {"id", id}};
    }
    static constexpr std::size_t max_markers = 16;
    struct entry {
        std::uint64_t id;
        void* p;
        std::size_t size;
    };
    struct saved {
        std::uint64_t id;
        stack_allocator::marker m;
        std::size_t position; // in_use() when marked
        std::size_t live;     // live allocations when marked
    };

    // A marker is usable while everything below it is still allocated; once the top drops below
    // it (pop or rewind), it is gone for good, even if the top later climbs back.
    void drop_stale_markers() {
        std::erase_if(markers_, [&](const saved& m) { return m.live > live_.size(); });
    }
    std::size_t offset_of(const void* p) const noexcept {
        return static_cast<std::size_t>(static_cast<const std::byte*>(p) - buffer_.data());
    }

    alignas(256) std::array<std::byte, capacity> buffer_{};
    stack_allocator stack_{buffer_};
    std::vector<entry> live_;
    std::vector<saved> markers_;
    std::uint64_t next_id_ = 1;        // block ids
    std::uint64_t markers_issued_ = 0; // marker ids: 1 .. markers_issued_
    std::size_t max_size_;
};

} // namespace

std::unique_ptr<demo> make_stack_demo(const limits& l) { return std::make_unique<stack_demo>(l); }

} // namespace strata::lab::serve
