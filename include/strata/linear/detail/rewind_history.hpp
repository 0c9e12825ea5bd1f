#pragma once
// rewind_history: tells a header-free bump allocator whether a marker went stale.
//
// A marker at position P is stale once the top has been lowered below P after the marker was
// taken (by a rewind, a reset or a free of the top block): everything it marks is no longer all
// allocated. Position and count alone cannot see it once later allocations lift the top above P
// again, and rewinding then would free the tail of a live block.
//
// Every lowering bumps an epoch and is recorded as (epoch, target). A marker carries the epoch it
// was taken in; it is stale when the lowest target recorded after that epoch is below P. Only the
// suffix minima matter, so the records form a stack whose targets increase from bottom to top: a
// new record first pops every record whose target is not below its own. The first record newer
// than the marker is then the lowest since. The stack grows with each lowering above all earlier
// ones (nested scopes, or scopes one after another at rising positions). When it is full the
// second-oldest record is dropped: the oldest holds the lowest target (a reset's 0), which no
// later record can stand for. A dropped record can make a stale marker go unnoticed, never a
// valid one refused.
#include <cstddef>
#include <cstdint>

namespace strata::detail {

class rewind_history {
public:
    static constexpr std::size_t depth = 8;

    /// Returns: the epoch a marker taken now must carry.
    [[nodiscard]] std::uint64_t epoch() const noexcept { return epoch_; }

    /// Effects: records that the top went down to `target` (bytes from the stack's base).
    void lowered(std::size_t target) noexcept {
        ++epoch_;
        while (size_ != 0 && records_[size_ - 1].target >= target)
            --size_;
        if (size_ == depth) { // drop the second-oldest: a possible miss, never a false report
            for (std::size_t i = 2; i < depth; ++i)
                records_[i - 1] = records_[i];
            --size_;
        }
        records_[size_++] = {epoch_, target};
    }

    /// Returns: true when the top went below `position` after a marker of epoch `epoch` was taken.
    [[nodiscard]] bool stale(std::uint64_t epoch, std::size_t position) const noexcept {
        for (std::size_t i = 0; i < size_; ++i)
            if (records_[i].epoch > epoch) return records_[i].target < position;
        return false;
    }

private:
    struct record {
        std::uint64_t epoch;
        std::size_t target;
    };
    record records_[depth] = {};
    std::uint32_t size_ = 0;
    std::uint64_t epoch_ = 0;
};

} // namespace strata::detail
