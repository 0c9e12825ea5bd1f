#include "strata/adapt/guarded.hpp"

#include <deque>
#include <unordered_map>
#include <vector>

namespace strata {

namespace {
constexpr const char* who = "strata::guard_page_allocator";
} // namespace

struct guard_page_allocator::state {
    struct slot {
        std::size_t offset;     // first page of the slot (a guard page in underrun mode)
        std::size_t span;       // pages of the slot, guard pages included
        std::size_t data;       // offset of the first data page
        std::size_t data_bytes; // committed bytes
        std::size_t size;       // requested size
    };
    struct range {
        std::size_t offset;
        std::size_t span;
    };
    std::unordered_map<const void*, slot> live;
    std::deque<range> quarantine;                                   // oldest first
    std::unordered_map<std::size_t, std::vector<std::size_t>> free; // span -> reusable offsets
};

guard_page_allocator::guard_page_allocator(const guard_options& o)
    : opts_(o), vm_(virtual_memory::reserve(o.reserve_bytes)), state_(std::make_unique<state>()),
      page_(virtual_memory::page_size()) {}

guard_page_allocator::~guard_page_allocator() = default;

void* guard_page_allocator::allocate(std::size_t size, std::size_t align) noexcept {
    if (!is_valid_request(size, align) || align > page_ || size > vm_.size()) return nullptr;
    const std::size_t data_pages = (size + page_ - 1) / page_;
    const std::size_t span = data_pages + (opts_.underrun ? 2 : 1);
    std::size_t offset = 0;
    try {
        auto it = state_->free.find(span);
        if (it != state_->free.end() && !it->second.empty()) {
            offset = it->second.back();
            it->second.pop_back();
        } else if (vm_.size() - top_ >= span * page_) {
            offset = top_;
            top_ += span * page_;
        } else {
            return nullptr;
        }
        const std::size_t data = offset + (opts_.underrun ? page_ : 0);
        const std::size_t data_bytes = data_pages * page_;
        if (!vm_.commit(data, data_bytes)) {
            state_->free[span].push_back(offset);
            return nullptr;
        }
        // Overrun mode: the block's end as close to the guard page as the alignment allows.
        const std::size_t user = opts_.underrun ? data : align_down(data + data_bytes - size, align);
        std::byte* p = vm_.data() + user;
        state_->live.emplace(p, state::slot{offset, span, data, data_bytes, size});
        committed_ += data_bytes;
        in_use_ += size;
        if (in_use_ > peak_) peak_ = in_use_;
        ++live_;
        ++total_;
        return p;
    } catch (...) { // the slot record could not be stored
        vm_.decommit(offset, span * page_);
        return nullptr;
    }
}

void guard_page_allocator::deallocate(void* p) noexcept {
    if (p == nullptr) return;
    const auto it = state_->live.find(p);
    if (it == state_->live.end()) {
        if (vm_.contains(p)) {
            (void)STRATA_VERIFY(
                1, false, double_free, who, p,
                "free of a pointer that is not a live block (double free or interior pointer)");
        } else {
            (void)STRATA_VERIFY(1, false, foreign_pointer, who, p,
                                "free of a pointer outside this allocator's reservation");
        }
        return;
    }
    const state::slot s = it->second;
    state_->live.erase(it);
    vm_.decommit(s.data, s.data_bytes); // from now on the pages fault
    committed_ -= s.data_bytes;
    in_use_ -= s.size;
    --live_;
    try {
        state_->quarantine.push_back({s.offset, s.span});
        quarantined_ += s.span * page_;
        while (quarantined_ > opts_.quarantine_bytes && !state_->quarantine.empty()) {
            const state::range r = state_->quarantine.front();
            state_->quarantine.pop_front();
            quarantined_ -= r.span * page_;
            state_->free[r.span].push_back(r.offset);
        }
    } catch (...) {
        // Out of memory for the bookkeeping: the range is simply never reused.
    }
}

strata::stats guard_page_allocator::stats() const noexcept {
    strata::stats s;
    s.in_use = in_use_;
    s.peak = peak_;
    s.capacity = committed_;
    s.live_allocations = live_;
    s.total_allocations = total_;
    return s;
}

} // namespace strata
