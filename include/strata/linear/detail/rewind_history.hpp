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
//
// Some events end every marker taken before them whatever its position, a marker at 0 included
// (no lowering goes below 0, so no record can show that one stale): the allocator's memory was
// replaced (a move-assignment), given away (being moved from) or handed to another frame
// (frame_allocator reusing an arena). forget_markers() moves the epoch past them and keeps it as
// the oldest valid one: one compare per stale() call, nothing added to a marker.
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

    /// Effects: every marker taken so far is stale from now on, whatever its position; markers
    /// taken from now on are judged by later lowerings only. The epoch moves past `at_least` too:
    /// a move-assignment passes the replaced state's epoch, whose markers the moved-in history,
    /// copied from another allocator, would otherwise date after it.
    void forget_markers(std::uint64_t at_least = 0) noexcept {
        epoch_ = (epoch_ > at_least ? epoch_ : at_least) + 1;
        oldest_valid_ = epoch_;
        size_ = 0; // the records only judged markers that are all stale now
    }

    /// Returns: true when the top went below `position` after a marker of epoch `epoch` was taken,
    /// or when the marker is older than the last forget_markers().
    [[nodiscard]] bool stale(std::uint64_t epoch, std::size_t position) const noexcept {
        if (epoch < oldest_valid_) return true;
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
    std::uint64_t oldest_valid_ = 0; // markers of a lower epoch predate a forget_markers()
};

} // namespace strata::detail
