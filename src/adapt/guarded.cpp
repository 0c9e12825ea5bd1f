#include "strata/adapt/guarded.hpp"

#include <deque>
#include <iterator>
#include <map>
#include <set>
#include <unordered_map>
#include <utility>

namespace strata {

namespace {
constexpr const char* who = "strata::guard_page_allocator";
} // namespace

// Address space comes from three places: ranges out of quarantine (`free`), then the never-used
// tail above top_. Freed ranges are kept address-ordered and merged with their neighbours (and
// with the tail, which then moves down), and a request takes the smallest range that fits and
// leaves the rest free: a range is reused for any size it can hold, not only the size it had, so a
// buffer growing a page at a time does not need a fresh range for every size.
// Every byte of a free range is decommitted and PROT_NONE, so a slot carved out of merged ranges
// commits only its own data pages and its guard pages stay inaccessible.
struct guard_page_allocator::state {
    struct slot {
        std::size_t offset;     // first byte of the slot (a guard page in underrun mode)
        std::size_t bytes;      // the slot, guard pages included
        std::size_t data;       // offset of the first data page
        std::size_t data_bytes; // committed bytes
        std::size_t size;       // requested size
    };
    struct range {
        std::size_t offset;
        std::size_t bytes;
    };
    std::unordered_map<const void*, slot> live;
    std::deque<range> quarantine;                               // oldest first
    std::map<std::size_t, std::size_t> free;                    // offset -> bytes, address-ordered
    std::set<std::pair<std::size_t, std::size_t>> free_by_size; // (bytes, offset): best fit

    // Effects: erases the free range at `it` from both indexes.
    void erase_free(std::map<std::size_t, std::size_t>::iterator it) {
        free_by_size.erase({it->second, it->first});
        free.erase(it);
    }

    // Effects: makes [offset, offset + bytes) reusable, merged with the free ranges on either
    // side; a range that then reaches `top` lowers top instead. O(log free ranges).
    // Throws: std::bad_alloc (the range is then lost: never reused, still PROT_NONE).
    void add_free(std::size_t offset, std::size_t bytes, std::size_t& top) {
        auto next = free.lower_bound(offset);
        if (next != free.begin()) {
            const auto prev = std::prev(next);
            if (prev->first + prev->second == offset) {
                offset = prev->first;
                bytes += prev->second;
                erase_free(prev);
            }
        }
        if (next != free.end() && offset + bytes == next->first) {
            bytes += next->second;
            erase_free(next);
        }
        if (offset + bytes == top) {
            top = offset;
            return;
        }
        free_by_size.emplace(bytes, offset); // may throw: then `free` must not hold it either
        try {
            free.emplace(offset, bytes);
        } catch (...) {
            free_by_size.erase({bytes, offset});
            throw;
        }
    }

    // Returns: the offset of `bytes` taken from the smallest free range that holds them (the rest
    // stays free), or nothing. O(log free ranges).
    // Throws: std::bad_alloc when the rest cannot be recorded (nothing is taken then).
    [[nodiscard]] bool take_free(std::size_t bytes, std::size_t& offset) {
        const auto fit = free_by_size.lower_bound({bytes, 0});
        if (fit == free_by_size.end()) return false;
        const auto [have, at] = *fit;
        if (have > bytes) {
            // Record the rest first, so a throw leaves the range whole.
            free_by_size.emplace(have - bytes, at + bytes);
            try {
                free.emplace(at + bytes, have - bytes);
            } catch (...) {
                free_by_size.erase({have - bytes, at + bytes});
                throw;
            }
        }
        free_by_size.erase(fit);
        free.erase(at);
        offset = at;
        return true;
    }
};

guard_page_allocator::guard_page_allocator(const guard_options& o)
    : opts_(o), vm_(virtual_memory::reserve(o.reserve_bytes)), state_(std::make_unique<state>()),
      page_(virtual_memory::page_size()) {}

guard_page_allocator::~guard_page_allocator() = default;

void* guard_page_allocator::allocate(std::size_t size, std::size_t align) noexcept {
    if (!is_valid_request(size, align) || align > page_ || size > vm_.size()) return nullptr;
    const std::size_t data_pages = (size + page_ - 1) / page_;
    const std::size_t bytes = (data_pages + (opts_.underrun ? 2 : 1)) * page_;
    std::size_t offset = 0;
    bool taken = false;
    try {
        if (!state_->take_free(bytes, offset)) {
            if (vm_.size() - top_ < bytes) return nullptr;
            offset = top_;
            top_ += bytes;
        }
        taken = true;
        const std::size_t data = offset + (opts_.underrun ? page_ : 0);
        const std::size_t data_bytes = data_pages * page_;
        if (!vm_.commit(data, data_bytes)) {
            vm_.decommit(data, data_bytes); // a partial commit must not leave pages open
            state_->add_free(offset, bytes, top_);
            return nullptr;
        }
        // Overrun mode: the block's end as close to the guard page as the alignment allows.
        const std::size_t user = opts_.underrun ? data : align_down(data + data_bytes - size, align);
        std::byte* p = vm_.data() + user;
        state_->live.emplace(p, state::slot{offset, bytes, data, data_bytes, size});
        committed_ += data_bytes;
        in_use_ += size;
        if (in_use_ > peak_) peak_ = in_use_;
        ++live_;
        ++total_;
        return p;
    } catch (...) {
        // A record could not be stored. The range is lost (never reused), PROT_NONE again.
        if (taken) vm_.decommit(offset, bytes);
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
        state_->quarantine.push_back({s.offset, s.bytes});
        quarantined_ += s.bytes;
        while (quarantined_ > opts_.quarantine_bytes && !state_->quarantine.empty()) {
            const state::range r = state_->quarantine.front();
            state_->quarantine.pop_front();
            quarantined_ -= r.bytes;
            state_->add_free(r.offset, r.bytes, top_);
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
