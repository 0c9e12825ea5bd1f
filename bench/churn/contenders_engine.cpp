// strata-churn contender of the engine family: strata::engine_heap called directly (its inline
// thread-cached fast path), a fresh heap per workload with a 4 GiB reservation. The same heap as
// the process's malloc is raced by running peers.sh's malloc contender under
// LD_PRELOAD=libstrata_malloc.so (see docs/engine.md).
#include <cstddef>

#include "strata/engine/engine_heap.hpp"

#include "churn.hpp"

namespace {

using strata::churn::workload;

strata::engine_options churn_options() {
    strata::engine_options o;
    o.reserve_bytes = std::size_t{4} << 30;
    return o;
}

struct engine_adapter {
    static bool accepts(const workload&) { return true; }
    explicit engine_adapter(const workload&) : heap_(churn_options()) {}
    [[gnu::always_inline]] void* allocate(std::size_t size) noexcept {
        return heap_.allocate(size, workload::alignment);
    }
    [[gnu::always_inline]] void deallocate(void* p, std::size_t) noexcept { heap_.deallocate(p); }
    bool check() noexcept { return heap_.check(); }
    strata::engine_heap heap_;
};

} // namespace

STRATA_CHURN_CONTENDER(engine_adapter, "engine_heap",
                       "strata::engine_heap: thread-cached size classes to 64 KiB, TLSF, spans");
