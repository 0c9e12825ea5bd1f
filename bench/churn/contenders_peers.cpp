// strata-churn peers that live in this process: malloc (glibc, or whatever LD_PRELOAD puts in front
// of it: bench/churn/peers.sh runs this binary once per Debian malloc), std::pmr's pool, Boost.Pool,
// and the intrusive free list that is the physical limit for fixed sizes.
#include <cstdlib>
#include <memory_resource>
#include <new>

#include <boost/pool/pool.hpp>

#include "churn.hpp"

namespace {

using strata::churn::workload;

/// malloc/free through the PLT, so an LD_PRELOADed malloc replaces it.
struct malloc_adapter {
    static bool accepts(const workload&) { return true; }
    explicit malloc_adapter(const workload&) {}
    void* allocate(std::size_t size) noexcept { return std::malloc(size); }
    void deallocate(void* p, std::size_t) noexcept { std::free(p); }
    bool check() noexcept { return true; }
};
STRATA_CHURN_CONTENDER(malloc_adapter, "malloc",
                       "the process's malloc/free (glibc unless LD_PRELOAD says otherwise)");

/// std::pmr::unsynchronized_pool_resource over new/delete, pools up to 64 KiB.
struct pmr_pool_adapter {
    static bool accepts(const workload&) { return true; }
    explicit pmr_pool_adapter(const workload&) : pool_(std::pmr::pool_options{0, 65536}) {}
    void* allocate(std::size_t size) noexcept {
        try {
            return pool_.allocate(size, workload::alignment);
        } catch (...) {
            return nullptr;
        }
    }
    void deallocate(void* p, std::size_t size) noexcept { pool_.deallocate(p, size, workload::alignment); }
    bool check() noexcept { return true; }
    std::pmr::unsynchronized_pool_resource pool_;
};
STRATA_CHURN_CONTENDER(pmr_pool_adapter, "pmr_pool",
                       "std::pmr::unsynchronized_pool_resource, largest_required_pool_block = 65536");

/// boost::pool<> with the workload's one size (fixed-size workloads only).
struct boost_pool_adapter {
    static bool accepts(const workload& w) { return w.fixed_size(); }
    explicit boost_pool_adapter(const workload& w) : pool_(w.max_size) {}
    void* allocate(std::size_t) noexcept { return pool_.malloc(); }
    void deallocate(void* p, std::size_t) noexcept { pool_.free(p); }
    bool check() noexcept { return true; }
    boost::pool<boost::default_user_allocator_malloc_free> pool_;
};
STRATA_CHURN_CONTENDER(boost_pool_adapter, "boost_pool", "boost::pool<> (Boost.Pool), one chunk size");

/// The physical limit for a fixed size: a preallocated array of slots and a singly linked free list
/// through them, no checks at all (fixed-size workloads only).
struct intrusive_list_adapter {
    static bool accepts(const workload& w) { return w.fixed_size(); }
    explicit intrusive_list_adapter(const workload& w) {
        const std::size_t slot = (w.max_size + 15) & ~std::size_t{15};
        const std::size_t n = w.live() + 1;
        memory_.reset(static_cast<std::byte*>(::operator new (slot* n, std::align_val_t{64})));
        for (std::size_t i = n; i-- > 0;) {
            auto* node = reinterpret_cast<void**>(memory_.get() + i * slot);
            *node = head_;
            head_ = node;
        }
    }
    void* allocate(std::size_t) noexcept {
        void** p = static_cast<void**>(head_);
        if (p == nullptr) return nullptr;
        head_ = *p;
        return p;
    }
    void deallocate(void* p, std::size_t) noexcept {
        *static_cast<void**>(p) = head_;
        head_ = p;
    }
    bool check() noexcept { return true; }
    struct aligned_delete {
        void operator()(std::byte* p) const noexcept { ::operator delete (p, std::align_val_t{64}); }
    };
    std::unique_ptr<std::byte, aligned_delete> memory_;
    void* head_ = nullptr;
};
STRATA_CHURN_CONTENDER(intrusive_list_adapter, "intrusive_list",
                       "the physical limit: preallocated slots, one singly linked free list, no checks");

} // namespace
