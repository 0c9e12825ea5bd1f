#pragma once
// strata-lab peer contenders: the mallocs a user would pick instead of strata (mimalloc, jemalloc,
// tcmalloc), each called through its own entry points beside glibc's malloc, so one race answers
// "strata, or the malloc I would otherwise use?".
//
// Each is compiled in only when tools/lab/peers.cmake found its package (STRATA_LAB_HAS_MIMALLOC,
// _JEMALLOC, _TCMALLOC on the target that links strata_lab_peers); none of them replaces the
// process's malloc (peers.cmake says how). with_peers() puts the ones present into a registry,
// right after its "malloc" row.
//
// A process has one instance of each, so an adapter cannot make a fresh one: it makes the one there
// is give its cached free memory back to the OS (mi_collect, jemalloc's tcache flush and purge,
// MallocExtension_ReleaseFreeMemory), so that each replay starts near empty, as strata's fresh
// instances do. Footprint is what the allocator holds from the OS now less what was in use when the
// adapter was made, read from its statistics every 256 calls: they cost microseconds, and the
// sampling pass asks after every operation.
//
// Header-only, as op_contenders.hpp, so tests/lab replays through the peers too.
#include <algorithm>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#if defined(STRATA_LAB_HAS_MIMALLOC)
#include <dlfcn.h>
#include <mimalloc.h>
#endif
#if defined(STRATA_LAB_HAS_TCMALLOC)
#include <gperftools/malloc_extension_c.h>
#include <gperftools/tcmalloc.h>
#endif

#include "replay.hpp"

#if defined(STRATA_LAB_HAS_JEMALLOC)
// Debian's jemalloc has no symbol prefix: its <jemalloc/jemalloc.h> maps je_mallocx to mallocx and
// also declares malloc and free with attributes that clash with <cstdlib>'s, so the few entry
// points used here are declared by hand. MALLOCX_LG_ALIGN(la) is `la` in the flags' low bits.
extern "C" {
void* mallocx(std::size_t size, int flags);
void* rallocx(void* ptr, std::size_t size, int flags);
void sdallocx(void* ptr, std::size_t size, int flags);
std::size_t sallocx(const void* ptr, int flags);
int mallctl(const char* name, void* oldp, std::size_t* oldlenp, void* newp, std::size_t newlen);
}
#endif

namespace strata::lab {

namespace peer_detail {

/// A costly statistic, read again on every 256th call (and the first) and cached in between.
class cached_stat {
public:
    template <class Read>
    std::size_t operator()(Read read) const noexcept {
        if (calls_++ % 256 == 0) value_ = read();
        return value_;
    }

private:
    mutable unsigned calls_ = 0;
    mutable std::size_t value_ = 0;
};

[[nodiscard]] inline std::size_t held_less(std::size_t held, std::size_t baseline) noexcept {
    return held > baseline ? held - baseline : 0;
}

} // namespace peer_detail

#if defined(STRATA_LAB_HAS_MIMALLOC)
/// mimalloc through mi_malloc / mi_malloc_aligned / mi_realloc(_aligned) / mi_free. Its shared
/// library defines malloc too, so it is dlopened with RTLD_LOCAL (nothing else binds to it) and
/// RTLD_DEEPBIND (its own calls bind to itself) instead of linked; unusable (skipped) when the
/// library does not load. Footprint: mimalloc's committed bytes (mi_process_info; it reports no
/// bytes in use to subtract).
class mimalloc_replay {
public:
    static bool applies(const op_workload&) noexcept { return api() != nullptr; }
    explicit mimalloc_replay(const op_workload&) noexcept {
        if (api() != nullptr) api()->collect(true);
    }
    void* allocate(std::size_t size, std::size_t align) noexcept {
        return align <= alignof(std::max_align_t) ? api()->malloc(size) : api()->malloc_aligned(size, align);
    }
    void deallocate(void* p, std::size_t, std::size_t) noexcept { api()->free(p); }
    void* reallocate(void* p, std::size_t, std::size_t n, std::size_t align) noexcept {
        return align <= alignof(std::max_align_t) ? api()->realloc(p, n)
                                                  : api()->realloc_aligned(p, n, align);
    }
    [[nodiscard]] std::size_t footprint() const noexcept { return held_(&committed); }
    [[nodiscard]] std::size_t usable_size(const void* p) const noexcept { return api()->usable_size(p); }

    /// The entry points, or nullptr when the library does not load.
    struct entry_points {
        decltype(&::mi_malloc) malloc;
        decltype(&::mi_malloc_aligned) malloc_aligned;
        decltype(&::mi_realloc) realloc;
        decltype(&::mi_realloc_aligned) realloc_aligned;
        decltype(&::mi_free) free;
        decltype(&::mi_usable_size) usable_size;
        decltype(&::mi_process_info) process_info;
        decltype(&::mi_collect) collect;
    };
    [[nodiscard]] static const entry_points* api() noexcept {
        static const entry_points* const e = load();
        return e;
    }

private:
    static const entry_points* load() noexcept {
        void* lib = ::dlopen(STRATA_LAB_MIMALLOC_LIBRARY, RTLD_NOW | RTLD_LOCAL | RTLD_DEEPBIND);
        if (lib == nullptr) return nullptr;
        static entry_points e;
        const auto get = [lib](auto& f, const char* name) {
            f = reinterpret_cast<std::remove_reference_t<decltype(f)>>(::dlsym(lib, name));
            return f != nullptr;
        };
        const bool ok = get(e.malloc, "mi_malloc") && get(e.malloc_aligned, "mi_malloc_aligned") &&
                        get(e.realloc, "mi_realloc") && get(e.realloc_aligned, "mi_realloc_aligned") &&
                        get(e.free, "mi_free") && get(e.usable_size, "mi_usable_size") &&
                        get(e.process_info, "mi_process_info") && get(e.collect, "mi_collect");
        return ok ? &e : nullptr;
    }
    static std::size_t committed() noexcept {
        if (api() == nullptr) return 0;
        std::size_t elapsed, user, sys, rss, peak_rss, commit = 0, peak_commit, faults;
        api()->process_info(&elapsed, &user, &sys, &rss, &peak_rss, &commit, &peak_commit, &faults);
        return commit;
    }

    peer_detail::cached_stat held_;
};
#endif

#if defined(STRATA_LAB_HAS_JEMALLOC)
/// jemalloc through mallocx / rallocx / sdallocx (sized frees), linked from a copy of its archive
/// whose malloc-family symbols are renamed (tools/lab/peers.cmake). Footprint: stats.resident less
/// stats.allocated at the start; usable size: sallocx.
class jemalloc_replay {
public:
    static bool applies(const op_workload&) noexcept { return true; }
    explicit jemalloc_replay(const op_workload&) noexcept : baseline_(release_and_count()) {}
    void* allocate(std::size_t size, std::size_t align) noexcept {
        return ::mallocx(std::max<std::size_t>(size, 1), flags(align)); // mallocx(0) is undefined
    }
    void deallocate(void* p, std::size_t size, std::size_t align) noexcept {
        ::sdallocx(p, std::max<std::size_t>(size, 1), flags(align));
    }
    void* reallocate(void* p, std::size_t, std::size_t n, std::size_t align) noexcept {
        if (p == nullptr) return allocate(n, align);
        return ::rallocx(p, std::max<std::size_t>(n, 1), flags(align));
    }
    [[nodiscard]] std::size_t footprint() const noexcept {
        return held_([this] { return peer_detail::held_less(stat("stats.resident"), baseline_); });
    }
    [[nodiscard]] std::size_t usable_size(const void* p) const noexcept { return ::sallocx(p, 0); }

private:
    static int flags(std::size_t align) noexcept {
        return align <= alignof(std::max_align_t) ? 0 : std::countr_zero(align); // MALLOCX_LG_ALIGN
    }
    /// Effects: flushes this thread's cache and purges every arena. Returns: bytes still allocated.
    static std::size_t release_and_count() noexcept {
        (void)::mallctl("thread.tcache.flush", nullptr, nullptr, nullptr, 0);
        (void)::mallctl("arena.4096.purge", nullptr, nullptr, nullptr, 0); // 4096: MALLCTL_ARENAS_ALL
        return stat("stats.allocated");
    }
    /// Returns: the statistic `name` after advancing the epoch (jemalloc caches its statistics).
    static std::size_t stat(const char* name) noexcept {
        std::uint64_t epoch = 1;
        std::size_t len = sizeof epoch;
        (void)::mallctl("epoch", &epoch, &len, &epoch, len);
        std::size_t v = 0;
        len = sizeof v;
        return ::mallctl(name, &v, &len, nullptr, 0) == 0 ? v : 0;
    }

    std::size_t baseline_;
    peer_detail::cached_stat held_;
};
#endif

#if defined(STRATA_LAB_HAS_TCMALLOC)
/// tcmalloc (gperftools' tcmalloc_minimal) through tc_malloc / tc_memalign / tc_realloc /
/// tc_free_sized, linked from a copy of its archive whose malloc-family symbols (and its mmap and
/// sbrk hooks) are renamed (tools/lab/peers.cmake). Footprint: heap size less unmapped bytes, less
/// the bytes allocated at the start (MallocExtension's properties); usable size: tc_malloc_size.
class tcmalloc_replay {
public:
    static bool applies(const op_workload&) noexcept { return true; }
    explicit tcmalloc_replay(const op_workload&) noexcept : baseline_(release_and_count()) {}
    void* allocate(std::size_t size, std::size_t align) noexcept {
        return align <= alignof(std::max_align_t) ? ::tc_malloc(size) : ::tc_memalign(align, size);
    }
    void deallocate(void* p, std::size_t size, std::size_t) noexcept { ::tc_free_sized(p, size); }
    void* reallocate(void* p, std::size_t old_size, std::size_t n, std::size_t align) noexcept {
        if (align <= alignof(std::max_align_t)) return ::tc_realloc(p, n);
        // tc_realloc keeps only malloc's alignment: move an over-aligned block by hand.
        void* q = ::tc_memalign(align, n);
        if (q == nullptr) return nullptr;
        if (p != nullptr) {
            std::memcpy(q, p, std::min(old_size, n));
            ::tc_free(p);
        }
        return q;
    }
    [[nodiscard]] std::size_t footprint() const noexcept {
        return held_([this] {
            const std::size_t heap = property("generic.heap_size");
            const std::size_t unmapped = property("tcmalloc.pageheap_unmapped_bytes");
            return peer_detail::held_less(heap > unmapped ? heap - unmapped : 0, baseline_);
        });
    }
    [[nodiscard]] std::size_t usable_size(const void* p) const noexcept {
        return ::tc_malloc_size(const_cast<void*>(p));
    }

private:
    /// Effects: returns tcmalloc's free pages to the OS. Returns: bytes still allocated.
    static std::size_t release_and_count() noexcept {
        MallocExtension_ReleaseFreeMemory();
        return property("generic.current_allocated_bytes");
    }
    static std::size_t property(const char* name) noexcept {
        std::size_t v = 0;
        return MallocExtension_GetNumericProperty(name, &v) != 0 ? v : 0;
    }

    std::size_t baseline_;
    peer_detail::cached_stat held_;
};
#endif

/// Returns: `r` with the peer contenders compiled into this build inserted after its "malloc"
/// row (at the front when there is none).
[[nodiscard]] inline std::vector<op_contender> with_peers(std::vector<op_contender> r) {
    std::vector<op_contender> peers;
#if defined(STRATA_LAB_HAS_MIMALLOC)
    peers.push_back(make_op_contender<mimalloc_replay>(
        "mimalloc", "mimalloc: mi_malloc/mi_free (dlopened, not the process's malloc)",
        STRATA_LAB_MIMALLOC_LIBRARY " loadable"));
#endif
#if defined(STRATA_LAB_HAS_JEMALLOC)
    peers.push_back(make_op_contender<jemalloc_replay>(
        "jemalloc", "jemalloc: mallocx/sdallocx/rallocx (linked privately, not the process's malloc)"));
#endif
#if defined(STRATA_LAB_HAS_TCMALLOC)
    peers.push_back(make_op_contender<tcmalloc_replay>(
        "tcmalloc",
        "tcmalloc_minimal: tc_malloc/tc_free_sized (linked privately, not the process's malloc)"));
#endif
    auto at = std::find_if(r.begin(), r.end(), [](const op_contender& c) { return c.name == "malloc"; });
    at = at == r.end() ? r.begin() : at + 1;
    r.insert(at, std::make_move_iterator(peers.begin()), std::make_move_iterator(peers.end()));
    return r;
}

/// Returns: true when `name` is one of the peer contenders (mimalloc, jemalloc, tcmalloc), whether
/// or not this build has it.
[[nodiscard]] inline bool is_peer(const std::string& name) noexcept {
    return name == "mimalloc" || name == "jemalloc" || name == "tcmalloc";
}

} // namespace strata::lab
