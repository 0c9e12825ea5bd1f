// strata-churn contenders of the heap family: tlsf (SLI 5 and 4), buddy, and the free list with its
// three fit policies. Each heap gets one pre-faulted buffer sized from the workload's peak live
// bytes with headroom (TLSF and the free lists: 2x + 32 B per live block for headers and
// fragmentation; buddy: the next power of two above 2x, as its rounding alone can cost up to 2x).
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <new>
#include <span>

#include "strata/core/bit.hpp"
#include "strata/heap/buddy.hpp"
#include "strata/heap/free_list.hpp"
#include "strata/heap/tlsf.hpp"
#include "strata/source/virtual_memory.hpp"

#include "churn.hpp"

namespace {

using strata::churn::workload;

/// Memory for one heap: reserved with strata::virtual_memory on a 2 MiB boundary, committed, given
/// the transparent-huge-page hint (an engine reserves its heaps this way; STRATA_CHURN_NO_HUGE=1 in
/// the environment leaves the hint out) and pre-faulted: every page written once before the race.
class prefaulted {
public:
    explicit prefaulted(std::size_t bytes) {
        constexpr std::size_t huge = std::size_t{2} << 20;
        bytes_ = (bytes + huge - 1) & ~(huge - 1);
        vm_ = strata::virtual_memory::reserve(bytes_ + huge);
        const auto base = reinterpret_cast<std::uintptr_t>(vm_.data());
        offset_ = static_cast<std::size_t>(((base + huge - 1) & ~std::uintptr_t{huge - 1}) - base);
        if (!vm_.commit(offset_, bytes_)) throw std::bad_alloc();
        const char* no_huge = std::getenv("STRATA_CHURN_NO_HUGE");
        if (no_huge == nullptr || *no_huge == '0') (void)vm_.hint_huge_pages(offset_, bytes_);
        std::memset(vm_.data() + offset_, 0, bytes_);
    }
    [[nodiscard]] std::span<std::byte> span() const noexcept { return {vm_.data() + offset_, bytes_}; }

private:
    strata::virtual_memory vm_;
    std::size_t bytes_ = 0;
    std::size_t offset_ = 0;
};

[[nodiscard]] std::size_t heap_bytes(const workload& w) {
    return 2 * w.peak_live_bytes + 32 * w.live() + (std::size_t{1} << 20);
}

/// tlsf or free_list over one pre-faulted pool; unsized free (the heap knows its blocks), or with
/// `Sized` the sized call std::pmr and std::allocator make (tlsf takes the size as a prefetch hint).
template <class Heap, bool Sized = false>
struct pool_heap_adapter {
    static bool accepts(const workload&) { return true; }
    explicit pool_heap_adapter(const workload& w) : memory_(heap_bytes(w)), heap_(memory_.span()) {}
    [[gnu::always_inline]] void* allocate(std::size_t size) noexcept {
        return heap_.allocate(size, workload::alignment);
    }
    [[gnu::always_inline]] void deallocate(void* p, std::size_t size) noexcept {
        if constexpr (Sized) {
            heap_.deallocate(p, size, workload::alignment);
        } else {
            heap_.deallocate(p);
        }
    }
    bool check() noexcept { return heap_.check(); }
    prefaulted memory_;
    Heap heap_;
};

using tlsf_adapter = pool_heap_adapter<strata::tlsf>;
using tlsf_sized_adapter = pool_heap_adapter<strata::tlsf, true>;
using tlsf4_adapter = pool_heap_adapter<strata::basic_tlsf<4>>;

/// The free lists walk O(free blocks) per call, microseconds per pair once W1/W2 fragment them: at
/// the default 1,000,000 pairs x 11 passes one workload would take minutes, so they take part only
/// in runs of at most 200,000 pairs (`--pairs 100000 --only free_list_first_fit,...` shows their decay).
template <class Heap>
struct free_list_adapter : pool_heap_adapter<Heap> {
    static bool accepts(const workload& w) { return w.pairs.size() <= 200'000; }
    using pool_heap_adapter<Heap>::pool_heap_adapter;
};
using first_fit_adapter = free_list_adapter<strata::free_list_first_fit>;
using best_fit_adapter = free_list_adapter<strata::free_list_best_fit>;
using next_fit_adapter = free_list_adapter<strata::free_list_next_fit>;

/// buddy over a pre-faulted power-of-two region, min_block 16; sized free.
struct buddy_adapter {
    static bool accepts(const workload&) { return true; }
    explicit buddy_adapter(const workload& w)
        : memory_(strata::next_pow2(2 * w.peak_live_bytes + 16 * w.live())), heap_(memory_.span(), 16) {}
    [[gnu::always_inline]] void* allocate(std::size_t size) noexcept {
        return heap_.allocate(size, workload::alignment);
    }
    void deallocate(void* p, std::size_t size) noexcept { heap_.deallocate(p, size, workload::alignment); }
    bool check() noexcept { return heap_.check(); }
    prefaulted memory_;
    strata::buddy heap_;
};

} // namespace

STRATA_CHURN_CONTENDER(tlsf_adapter, "tlsf", "strata::tlsf (SLI 5), one pre-faulted pool");
STRATA_CHURN_CONTENDER(tlsf_sized_adapter, "tlsf_sized",
                       "strata::tlsf (SLI 5), freed with the size as a hint");
STRATA_CHURN_CONTENDER(tlsf4_adapter, "tlsf_sli4", "strata::basic_tlsf<4>, one pre-faulted pool");
STRATA_CHURN_CONTENDER(buddy_adapter, "buddy",
                       "strata::buddy, min_block 16, pre-faulted power-of-two region");
STRATA_CHURN_CONTENDER(first_fit_adapter, "free_list_first_fit", "strata::free_list<first_fit> (baseline)");
STRATA_CHURN_CONTENDER(best_fit_adapter, "free_list_best_fit", "strata::free_list<best_fit> (baseline)");
STRATA_CHURN_CONTENDER(next_fit_adapter, "free_list_next_fit", "strata::free_list<next_fit> (baseline)");
