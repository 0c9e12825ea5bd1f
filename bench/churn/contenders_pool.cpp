// strata-churn contenders from the pool and slab families: pool, object_pool, size_class_pool,
// slab_cache and slab_cache behind per-thread magazines. Each is sized from the workload the way a
// game sizes it from a budget: the fixed-size ones take the workload's one size.
#include <cstddef>
#include <memory>

#include "strata/pool/object_pool.hpp"
#include "strata/pool/pool.hpp"
#include "strata/pool/size_class_pool.hpp"
#include "strata/slab/magazine.hpp"
#include "strata/slab/slab_cache.hpp"
#include "strata/source/heap_source.hpp"

#include "churn.hpp"

namespace {

using strata::churn::workload;

/// strata::pool with the workload's one size, growing by 64 KiB chunks from a heap_source.
struct pool_adapter {
    static bool accepts(const workload& w) { return w.fixed_size(); }
    explicit pool_adapter(const workload& w) : pool_(w.max_size, workload::alignment, source_) {}
    void* allocate(std::size_t) noexcept { return pool_.allocate(); }
    void deallocate(void* p, std::size_t) noexcept { pool_.deallocate(p); }
    bool check() noexcept { return pool_.check() && pool_.live() == 0; }
    strata::heap_source source_;
    strata::pool pool_;
};
STRATA_CHURN_CONTENDER(pool_adapter, "pool", "strata::pool, one slot size, 64 KiB chunks from heap_source");

/// strata::object_pool of a 96-byte particle (W3's size): create()/destroy() of a trivial type.
/// A 96-byte particle whose constructor initialises nothing (as an engine's particle would be
/// filled by its emitter), so create() measures the allocator rather than a 96-byte memset.
struct alignas(16) particle96 {
    particle96() noexcept {} // NOLINT(modernize-use-equals-default): = default would zero-fill on T()
    std::byte bytes[96];
};
struct object_pool_adapter {
    static bool accepts(const workload& w) { return w.fixed_size() && w.max_size == sizeof(particle96); }
    explicit object_pool_adapter(const workload&) : pool_(source_) {}
    void* allocate(std::size_t) noexcept { return pool_.create(); }
    void deallocate(void* p, std::size_t) noexcept { pool_.destroy(static_cast<particle96*>(p)); }
    bool check() noexcept { return pool_.check() && pool_.live() == 0; }
    strata::heap_source source_;
    strata::object_pool<particle96> pool_;
};
STRATA_CHURN_CONTENDER(object_pool_adapter, "object_pool", "strata::object_pool<particle96>, create/destroy");

/// strata::size_class_pool with the default spacing (4 classes per doubling) up to 4 KiB; runs
/// every workload whose largest size fits (W1, W3; W2 reaches 64 KiB and is skipped).
struct size_class_adapter {
    static bool accepts(const workload& w) { return w.max_size <= 4096; }
    explicit size_class_adapter(const workload&) : pool_(source_) {}
    void* allocate(std::size_t size) noexcept { return pool_.allocate(size, workload::alignment); }
    void deallocate(void* p, std::size_t size) noexcept { pool_.deallocate(p, size, workload::alignment); }
    bool check() noexcept { return pool_.check() && pool_.stats().live_allocations == 0; }
    strata::heap_source source_;
    strata::size_class_pool pool_;
};
STRATA_CHURN_CONTENDER(size_class_adapter, "size_class_pool",
                       "strata::size_class_pool, 16 B quantum, 4 classes per doubling, up to 4 KiB");

/// strata::slab_cache<particle96> alone (single-threaded, 16 KiB slabs).
struct slab_adapter {
    static bool accepts(const workload& w) { return w.fixed_size() && w.max_size == sizeof(particle96); }
    explicit slab_adapter(const workload&) : cache_(source_) {}
    void* allocate(std::size_t) noexcept { return cache_.allocate(); }
    void deallocate(void* p, std::size_t) noexcept { cache_.deallocate(static_cast<particle96*>(p)); }
    bool check() noexcept { return cache_.check() && cache_.live() == 0; }
    strata::heap_source source_;
    strata::slab_cache<particle96> cache_;
};
STRATA_CHURN_CONTENDER(slab_adapter, "slab_cache",
                       "strata::slab_cache<particle96>, 16 KiB slabs, no magazines");

/// strata::magazine_cache<particle96>: the thread-safe slab cache, used from one thread.
struct magazine_adapter {
    static bool accepts(const workload& w) { return w.fixed_size() && w.max_size == sizeof(particle96); }
    explicit magazine_adapter(const workload&) : cache_(source_) {}
    void* allocate(std::size_t) noexcept { return cache_.allocate(); }
    void deallocate(void* p, std::size_t) noexcept { cache_.deallocate(static_cast<particle96*>(p)); }
    bool check() noexcept {
        cache_.flush();
        return cache_.check() && cache_.slab_live() == 0;
    }
    strata::heap_source source_;
    strata::magazine_cache<particle96> cache_;
};
STRATA_CHURN_CONTENDER(
    magazine_adapter, "slab_magazines",
    "strata::magazine_cache<particle96>: per-thread magazines (32 rounds) over a slab_cache");

} // namespace
