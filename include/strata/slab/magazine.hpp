#pragma once
// The magazine layer after Bonwick & Adams (2001): each thread keeps two small stacks of free
// objects (a loaded and a previous magazine) in front of a shared, locked depot of full and empty
// magazines, which sits in front of a single-threaded backend (a slab_cache). A magazine hit takes
// no lock and no atomic read-modify-write: one thread-local load, one compare, one array access.
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <type_traits>
#include <utility>

#include "strata/core/check.hpp"
#include "strata/core/config.hpp"
#include "strata/core/stats.hpp"
#include "strata/slab/slab_cache.hpp"

namespace strata {

/// Settings of the magazine layer.
struct magazine_options {
    std::size_t rounds = 32;             ///< objects per magazine, in [1, 65536]
    std::size_t max_full_magazines = 16; ///< full magazines the depot keeps; more go to the backend
};

/// The untyped magazine layer over a backend that serves single objects in batches.
///
/// Threads: allocate() and deallocate() may be called from any number of threads at once. An object
/// freed by another thread than the one that allocated it goes into the freeing thread's magazine;
/// it reaches the backend (and its slab) only through the depot. A thread's magazines go back to the
/// depot's backend when the thread exits.
///
/// Destruction rule: the depot may be destroyed while other threads still hold magazines for it, as
/// long as no thread is inside allocate()/deallocate()/flush() of it at that time (the usual rule for
/// any object; the destroying thread must have synchronized with them, e.g. by a join or a barrier).
/// Every thread's magazines are registered with the depot (a registry of per-thread caches keyed by
/// depot instance); the destructor empties them all into the backend and marks them dead, and each
/// thread frees its dead records later (on its next attach or at exit). Depot ids are never reused,
/// so a new depot at the same address never sees a dead record.
///
/// Checks: the depot does not check the pointers it is given (a hit touches only the thread's own
/// magazine): a bad pointer that deallocate() puts in a magazine is handed out again by a later
/// allocate(), unless the magazine reaches the backend first. magazine_cache<T> checks each free
/// before it reaches the depot (at checks >= 1; see there); a depot over another backend relies on
/// its own callers. in_thread_magazines() serves such checks.
class magazine_depot {
public:
    /// The layer underneath, always called with the depot lock held.
    struct backend {
        void* context = nullptr;
        /// Fills out[0..n) with objects; returns how many it got (0 on exhaustion).
        std::size_t (*allocate_batch)(void* context, void** out, std::size_t n) noexcept = nullptr;
        /// Takes back in[0..n).
        void (*deallocate_batch)(void* context, void* const* in, std::size_t n) noexcept = nullptr;
    };

    struct magazine {
        magazine* next;
        std::uint32_t count;
        std::uint32_t capacity;
        [[nodiscard]] void** rounds() noexcept { return reinterpret_cast<void**>(this + 1); }
    };

    /// One thread's magazines for one depot.
    struct thread_record {
        magazine* loaded;
        magazine* previous;
        magazine_depot* owner; // nullptr once the depot is gone (guarded by the registry mutex)
        std::uint64_t id;      // the depot's id, immutable
        thread_record* prev;   // the depot's list of attached threads (registry mutex)
        thread_record* next;
    };

    /// The per-thread hint: the depot this thread used last, its loaded magazine (a copy of
    /// record->loaded, kept equal by the slow paths, so a hit needs no load through the record) and
    /// its record. Constant-initialized and trivially destructible, so reading it is a plain TLS load
    /// with no initialization guard; 24 bytes, one cache line.
    ///
    /// `loaded` is held as an integer on purpose: a hit stores a void* (the round) and a uint32_t
    /// (the count), neither of which may alias an integer under strict aliasing, so after a
    /// deallocate hit the compiler keeps the hint in registers for the next allocate.
    struct hint {
        std::uint64_t id;
        std::uintptr_t loaded; // magazine*
        thread_record* record;
    };

    /// Effects: a depot in front of `b`. Requires: b's functions are set and b outlives the depot.
    explicit magazine_depot(backend b, magazine_options options = {}) noexcept;
    magazine_depot(const magazine_depot&) = delete;
    magazine_depot& operator=(const magazine_depot&) = delete;
    /// Effects: every thread's magazines and the depot's are emptied into the backend (see the
    /// destruction rule in the class comment).
    ~magazine_depot();

    /// Returns: an object, or nullptr when the backend is exhausted. Complexity: O(1); a magazine miss
    /// takes the depot lock once (exchange a magazine, or refill one from the backend).
    [[nodiscard]] STRATA_ALWAYS_INLINE void* allocate() noexcept {
        if (STRATA_LIKELY(tls_hint.id == id_)) {
            auto* m = reinterpret_cast<magazine*>(tls_hint.loaded);
            const std::uint32_t n = m->count;
            if (STRATA_LIKELY(n != 0)) {
                m->count = n - 1;
                return m->rounds()[n - 1];
            }
        }
        return allocate_slow();
    }

    /// Effects: takes back `p` (from any thread); nullptr is a no-op. Complexity: O(1); a full
    /// magazine takes the depot lock once.
    STRATA_ALWAYS_INLINE void deallocate(void* p) noexcept {
        if (STRATA_LIKELY(tls_hint.id == id_ && p != nullptr)) {
            auto* m = reinterpret_cast<magazine*>(tls_hint.loaded);
            const std::uint32_t n = m->count;
            if (STRATA_LIKELY(n != m->capacity)) {
#if defined(__GNUC__) || defined(__clang__)
                // count < capacity <= 65536: lets an allocate right after see count != 0 statically.
                if (n >= 65536) __builtin_unreachable();
#endif
                m->rounds()[n] = p;
                m->count = n + 1;
                return;
            }
        }
        deallocate_slow(p);
    }

    /// Effects: returns the calling thread's magazines and every full magazine in the depot to the
    /// backend. Other threads' magazines are untouched (they are theirs; they return at thread exit).
    void flush() noexcept;

    /// Returns: true when `p` sits in the calling thread's loaded or previous magazine of this
    /// depot (another thread's magazines and the depot's full ones are not searched: they are not
    /// this thread's to read without the lock). For double-free checks. Complexity: O(2 * rounds),
    /// no lock.
    [[nodiscard]] bool in_thread_magazines(const void* p) noexcept;
    /// Returns: objects now sitting in the depot's full magazines (under the lock).
    [[nodiscard]] std::size_t depot_rounds() const noexcept;
    /// Returns: threads attached to this depot now (under the registry lock).
    [[nodiscard]] std::size_t attached_threads() const noexcept;
    /// Returns: the lock that guards the backend; hold it to inspect the backend from outside.
    [[nodiscard]] std::mutex& backend_mutex() const noexcept { return mutex_; }

    /// This thread's hint (see `hint`). Defined in src/slab/magazine.cpp.
    static constinit thread_local hint tls_hint;

private:
    STRATA_NOINLINE void* allocate_slow() noexcept;
    STRATA_NOINLINE void deallocate_slow(void* p) noexcept;
    thread_record* attach() noexcept;
    thread_record* find_record() noexcept; // this thread's record for the depot, or nullptr; never creates
    magazine* new_magazine() noexcept;
    void flush_magazine_locked(magazine* m) noexcept;
    void give_back_empty_locked(magazine* m) noexcept;
    void detach_locked(thread_record* r) noexcept; // registry lock and depot lock held
    friend struct magazine_thread_table;

    std::uint64_t id_;
    backend backend_;
    magazine_options options_;
    mutable std::mutex mutex_; // guards the full/empty lists and the backend
    magazine* full_ = nullptr;
    std::size_t full_count_ = 0;
    magazine* empty_ = nullptr;
    std::size_t empty_count_ = 0;
    thread_record* threads_ = nullptr; // guarded by the registry mutex
};

/// slab_cache<T> behind per-thread magazines: the thread-safe object cache.
///
/// allocate()/deallocate() are safe from any thread (see magazine_depot for cross-thread frees and
/// the destruction rule). With slab_options::cache_objects the objects are handed out constructed.
/// stats() and check() lock the depot and describe the slab layer: objects held in magazines count
/// as live there. Destruction: the magazines empty into the slabs, then the slab_cache reports a
/// leak at checks >= 1 if objects are still out.
///
/// Checks (deallocate, destroy): at checks 0 nothing is checked; a bad free goes into the magazine
/// and a later allocate() hands it out (undefined). At checks >= 1 every free is checked at the
/// call, before it reaches a magazine, and a bad one is reported and ignored (never handed out):
/// - a pointer not in this cache's slabs, or into the middle of an object: foreign_pointer;
/// - an object already back in the slabs (freed and flushed, not handed out since): double_free;
/// - an object in the calling thread's own magazines (freed by this thread, still cached there):
///   double_free.
/// Not detected: a second free of an object whose first free sits in another thread's magazines or
/// in the depot's full magazines. Both copies then circulate: the object can be handed out twice,
/// and if both copies reach the slabs the second is reported (double_free) and dropped then. The
/// check takes the depot lock (O(log slabs)) and scans the thread's two magazines (O(rounds)), so
/// at checks >= 1 a free is no longer lock-free.
template <class T>
class magazine_cache {
public:
    using value_type = T;

    /// Effects: a cache taking slabs from `source`. Requires: `source` outlives the cache and is only
    /// used by it (the cache calls it under its own lock).
    explicit magazine_cache(source_ref source, slab_options slab = {}, magazine_options mags = {}) noexcept
        : slab_(source, slab),
          depot_(magazine_depot::backend{&slab_, &allocate_batch, &deallocate_batch}, mags) {}

    magazine_cache(const magazine_cache&) = delete;
    magazine_cache& operator=(const magazine_cache&) = delete;
    ~magazine_cache() = default; // depot_ (declared last) empties into slab_ first

    /// Returns: storage for a T (a constructed T when caching objects), or nullptr on exhaustion.
    [[nodiscard]] STRATA_ALWAYS_INLINE T* allocate() noexcept { return static_cast<T*>(depot_.allocate()); }
    /// Effects: takes back `p`, from any thread. nullptr is a no-op. At checks >= 1 a foreign
    /// pointer or a detectable double free is reported and ignored (see Checks in the class
    /// comment). Complexity: O(1) at checks 0, no lock on a magazine hit; at checks >= 1 one lock
    /// and O(log slabs + rounds).
    STRATA_ALWAYS_INLINE void deallocate(T* p) noexcept {
#if STRATA_CHECKS >= 1
        if (!verify_free(p)) return;
#endif
        depot_.deallocate(p);
    }

    /// Returns: a T built from args, or nullptr on exhaustion. Not for caching mode (the objects are
    /// constructed already): nullptr there, reported as invalid_argument at checks >= 1.
    /// Throws: what T's constructor throws.
    template <class... Args>
    [[nodiscard]] T* create(Args&&... args) {
        if (STRATA_UNLIKELY(slab_.caches_objects())) { // as slab_cache::create
            (void)STRATA_VERIFY(1, false, invalid_argument, "strata::magazine_cache", nullptr,
                                "create() on an object-caching magazine_cache; use allocate()");
            return nullptr;
        }
        T* p = allocate();
        if (p == nullptr) return nullptr;
        try {
            return ::new (static_cast<void*>(p)) T(std::forward<Args>(args)...);
        } catch (...) {
            deallocate(p);
            throw;
        }
    }
    /// Effects: ~T() then deallocate(p); nullptr is a no-op. A free that deallocate() would refuse is
    /// refused before ~T() runs. In caching mode the slabs destroy their objects when released, so
    /// there destroy(p) is deallocate(p), reported as invalid_argument at checks >= 1.
    void destroy(T* p) noexcept {
        if (p == nullptr) return;
#if STRATA_CHECKS >= 1
        if (!verify_free(p)) return;
#endif
        if (STRATA_UNLIKELY(slab_.caches_objects())) {
            (void)STRATA_VERIFY(1, false, invalid_argument, "strata::magazine_cache", p,
                                "destroy() on an object-caching magazine_cache; use deallocate()");
        } else {
            p->~T();
        }
        depot_.deallocate(p); // checked above
    }

    /// Allocator contract: allocate() when 0 < size <= sizeof(T) and align is a power of two <=
    /// slab_cache<T>::object_align; otherwise nullptr.
    [[nodiscard]] void* allocate(std::size_t size, std::size_t align) noexcept {
        if (size - 1 < sizeof(T) && (align & (align - 1)) == 0 && align - 1 < slab_cache<T>::object_align)
            return allocate();
        return nullptr;
    }
    /// Allocator contract: deallocate(p).
    void deallocate(void* p, std::size_t /*size*/, std::size_t /*align*/) noexcept {
        deallocate(static_cast<T*>(p));
    }

    /// Effects: see magazine_depot::flush().
    void flush() noexcept { depot_.flush(); }
    /// Returns: the slab layer's stats, under the lock: objects in magazines (the threads' and the
    /// depot's) count as live, so in_use = (objects in use + in magazines) * stride and
    /// live_allocations is that object count; total_allocations counts objects the slabs handed
    /// out (to magazines, in batches), not allocate() calls; peak is the slab layer's exact peak;
    /// capacity = slabs * slab_bytes. After flush() on every thread that used the cache, in_use and
    /// live_allocations describe the objects in use.
    [[nodiscard]] strata::stats stats() const noexcept {
        const std::lock_guard<std::mutex> lock(depot_.backend_mutex());
        return slab_.stats();
    }
    /// Returns: the slab layer's check(), under the lock.
    [[nodiscard]] bool check() const noexcept {
        const std::lock_guard<std::mutex> lock(depot_.backend_mutex());
        return slab_.check();
    }
    /// Returns: true when `p` lies in one of the slabs (under the lock).
    [[nodiscard]] bool owns(const void* p) const noexcept {
        const std::lock_guard<std::mutex> lock(depot_.backend_mutex());
        return slab_.owns(p);
    }
    /// Returns: objects out of the slab layer (in use or in magazines), under the lock.
    [[nodiscard]] std::size_t slab_live() const noexcept {
        const std::lock_guard<std::mutex> lock(depot_.backend_mutex());
        return slab_.live();
    }
    /// Returns: the depot (for depot_rounds(), attached_threads()).
    [[nodiscard]] const magazine_depot& depot() const noexcept { return depot_; }

private:
    // The checks of deallocate() at checks >= 1 (see the class comment). The slab layer's live bits
    // and directory change under the depot lock, so they are read under it; the thread's own
    // magazines are only ever changed by this thread, so they are scanned without it.
    STRATA_NOINLINE bool verify_free(const T* p) noexcept {
        if (p == nullptr) return true;
        {
            const std::lock_guard<std::mutex> lock(depot_.backend_mutex());
            if (!slab_.verify_live(p)) return false; // foreign, mid-object, or already in the slabs
        }
        return STRATA_VERIFY(1, !depot_.in_thread_magazines(p), double_free, "strata::magazine_cache", p,
                             "object freed twice (it is still in this thread's magazine)");
    }

    static std::size_t allocate_batch(void* context, void** out, std::size_t n) noexcept {
        auto* slab = static_cast<slab_cache<T>*>(context);
        std::size_t got = 0;
        while (got < n) {
            T* p = slab->allocate();
            if (p == nullptr) break;
            out[got++] = p;
        }
        return got;
    }
    static void deallocate_batch(void* context, void* const* in, std::size_t n) noexcept {
        auto* slab = static_cast<slab_cache<T>*>(context);
        for (std::size_t i = 0; i < n; ++i)
            slab->deallocate(static_cast<T*>(in[i]));
    }

    slab_cache<T> slab_;
    magazine_depot depot_;
};

} // namespace strata
