// Arena demo: a bump allocator over a 2 KiB buffer. Allocate (size, alignment): the head moves,
// alignment padding shows as a gap; reset releases everything; a request past the end fails.
#include <array>
#include <vector>

#include "strata/linear/arena.hpp"

#include "demo.hpp"

namespace strata::lab::serve {
namespace {

class arena_demo final : public demo {
public:
    static constexpr std::size_t capacity = 2048;

    json call(std::string_view op, const json& args) override {
        if (op == "reset") {
            arena_.reset();
            allocations_.clear();
            return {{"ok", true}};
        }
        if (op != "alloc") unknown_op("arena", op);
        const std::size_t size = int_arg(args, "size", 1, max_size_, max_size_ + 1);
        const std::size_t align = align_arg(args, "align", 256, 16);
        if (allocations_.size() >= max_allocations)
            return refused("the demo keeps at most " + std::to_string(max_allocations) +
                           " allocations; reset first");
        const std::size_t head_before = head();
        void* p = arena_.allocate(size, align);
        if (p == nullptr) return refused("out of memory: the request does not fit");
        const auto offset = static_cast<std::size_t>(static_cast<std::byte*>(p) - buffer_.data());
        allocations_.push_back({next_id_++, offset, size, align, offset - head_before});
        return {{"ok", true},
                {"id", allocations_.back().id},
                {"offset", offset},
                {"padding", offset - head_before}};
    }

    json state() const override {
        json blocks = json::array();
        arena_.for_each_block([&](const block_info& b) {
            blocks.push_back({{"offset", b.offset}, {"size", b.size}, {"used", b.used}});
        });
        json allocs = json::array();
        for (const auto& a : allocations_)
            allocs.push_back({{"id", a.id},
                              {"offset", a.offset},
                              {"size", a.size},
                              {"align", a.align},
                              {"padding", a.padding}});
        const stats st = arena_.stats();
        return {{"capacity", arena_.capacity()},
                {"in_use", arena_.in_use()},
                {"remaining", arena_.remaining()},
                {"head", head()},
                {"peak", st.peak},
                {"live_allocations", st.live_allocations},
                {"blocks", blocks},
                {"allocations", allocs}};
    }

    std::size_t bytes() const noexcept override {
        return sizeof(*this) + allocations_.capacity() * sizeof(allocation);
    }

    explicit arena_demo(const limits& l) : max_size_(std::min<std::size_t>(l.max_request_size, 1u << 20)) {}

private:
    static constexpr std::size_t max_allocations = 256;
    struct allocation {
        std::uint64_t id;
        std::size_t offset, size, align, padding;
    };
    // The arena never grows (no source), so the head is the offset of its next free byte.
    std::size_t head() const noexcept { return capacity - arena_.remaining(); }

    alignas(256) std::array<std::byte, capacity> buffer_{};
    arena arena_{buffer_};
    std::vector<allocation> allocations_;
    std::uint64_t next_id_ = 1;
    std::size_t max_size_;
};

} // namespace

std::unique_ptr<demo> make_arena_demo(const limits& l) { return std::make_unique<arena_demo>(l); }

} // namespace strata::lab::serve
