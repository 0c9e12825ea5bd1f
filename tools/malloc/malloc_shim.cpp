// The C allocation API and every C++ operator new/delete over one strata::engine_heap.
//
// Built twice from this file: libstrata_malloc.so (LD_PRELOAD=... program) and the object target
// strata::malloc_replace (link it into an executable and its definitions replace glibc's at link
// time). See docs/engine.md for the per-call behaviour on bad input.
//
// How it stays safe inside a process that did not expect it:
// - No static constructor and no destructor: the first call into any entry point builds the heap
//   in static storage (placement new), and the heap is never destroyed (threads and atexit
//   handlers may still free after main returns).
// - Re-entrancy during that first build (the heap's own exceptions, pthread_atfork's bookkeeping)
//   is detected with an initial-exec thread-local flag and served by glibc (__libc_malloc); a
//   pointer the heap does not own is always handed back to glibc, so these, and blocks the dynamic
//   loader or anyone else got from glibc before the heap existed, are freed where they came from.
// - fork(): pthread_atfork takes every engine lock before the fork and releases them on both sides.
#include <dlfcn.h>
#include <fcntl.h>
#include <pthread.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <new>

#include "strata/core/spinlock.hpp"
#include "strata/engine/engine_heap.hpp"

// glibc's own entry points (noexcept, as glibc declares its C functions for C++: a call that may
// throw would give every frame that inlines one an exception region).
extern "C" {
void* __libc_malloc(std::size_t) noexcept;
void __libc_free(void*) noexcept;
void* __libc_calloc(std::size_t, std::size_t) noexcept;
void* __libc_realloc(void*, std::size_t) noexcept;
void* __libc_memalign(std::size_t, std::size_t) noexcept;
}

#define STRATA_MALLOC_API extern "C" __attribute__((visibility("default")))
#define STRATA_MALLOC_CXX __attribute__((visibility("default")))

namespace {

using strata::engine_heap;
// The heap holds TLS slot 0 for the life of the process (engine_options::first_slot: no other heap
// can take it, so a cache found there is always this heap's).
constexpr auto resident = engine_heap::slot_use::first_for_life;

alignas(engine_heap) unsigned char heap_storage[sizeof(engine_heap)];
constinit std::atomic<engine_heap*> global_heap{nullptr};
// The heap's data range (engine_heap::data_begin, data_bytes), stored once it is built, before
// global_heap: free tests ownership with these two words (read plainly, so that the test is two
// operands of a sub and a cmp), and 0 bytes before then owns nothing. owned_bytes is stored last,
// with release order, so a reader that sees it sees owned_begin too. A block is only ever freed
// after its allocation returned, so a pointer inside the range finds the heap built. (The first
// malloc builds the heap, nearly always before a second thread exists.)
constinit std::uintptr_t owned_begin = 0;
alignas(std::atomic_ref<std::size_t>::required_alignment) constinit std::size_t owned_bytes = 0;

/// Returns: the heap, at its fixed address in heap_storage. Requires: it is built (owned_bytes set).
inline engine_heap* built_heap() noexcept {
    return std::launder(reinterpret_cast<engine_heap*>(heap_storage));
}
constinit std::atomic<int> init_state{0}; // 0 not yet, 1 building, 2 ready, 3 failed
constinit std::atomic<pid_t> init_pid{0}; // the process that builds (see init_heap)
__thread bool in_init __attribute__((tls_model("initial-exec"))) = false;

/// Effects: writes "strata malloc: ignoring NAME=VALUE (...)" to stderr, one line, with write(2):
/// this runs inside the first malloc, so nothing here may allocate (no stdio).
void warn_bad_env(const char* name, const char* value, const char* unit) noexcept {
    char line[256];
    std::size_t n = 0;
    const auto add = [&](const char* s, std::size_t most) {
        for (std::size_t i = 0; s[i] != '\0' && i < most && n < sizeof line; ++i)
            line[n++] = s[i];
    };
    add("strata malloc: ignoring ", SIZE_MAX);
    add(name, 64);
    add("=", 1);
    add(value, 48); // a long value is cut: the line stays one line
    add(" (not a whole number of ", SIZE_MAX);
    add(unit, SIZE_MAX);
    add(" that fits); using the default\n", SIZE_MAX);
    [[maybe_unused]] const ssize_t written = ::write(STDERR_FILENO, line, n); // at most 194 bytes
}

/// Returns: environment variable `name` read as a count of 2^shift-byte units, in bytes; `fallback`
/// when it is unset or empty. Anything but decimal digits ("64MB", "-1", " 64", "abc") or a count
/// whose bytes overflow size_t is refused: `fallback`, and one warning line on stderr.
std::size_t env_size(const char* name, std::size_t fallback, unsigned shift, const char* unit) noexcept {
    const char* v = std::getenv(name); // getenv reads environ; it never allocates
    if (v == nullptr || *v == '\0') return fallback;
    std::size_t n = 0;
    for (const char* c = v; *c != '\0'; ++c) {
        const auto digit = static_cast<unsigned>(*c) - '0';
        if (digit > 9 || n > (SIZE_MAX - digit) / 10) {
            warn_bad_env(name, v, unit);
            return fallback;
        }
        n = n * 10 + digit;
    }
    if (n > (SIZE_MAX >> shift)) {
        warn_bad_env(name, v, unit);
        return fallback;
    }
    return n << shift;
}

/// Returns: the address space this process maps now (/proc/self/statm), or 0 when unknown.
std::size_t mapped_bytes() noexcept {
    const int fd = ::open("/proc/self/statm", O_RDONLY | O_CLOEXEC);
    if (fd < 0) return 0;
    char buf[64];
    const ssize_t n = ::read(fd, buf, sizeof buf - 1);
    ::close(fd);
    std::size_t pages = 0;
    for (ssize_t i = 0; i < n && buf[i] >= '0' && buf[i] <= '9'; ++i)
        pages = pages * 10 + static_cast<std::size_t>(buf[i] - '0');
    const long page = sysconf(_SC_PAGESIZE);
    return pages * static_cast<std::size_t>(page > 0 ? page : 4096);
}

/// Returns: the reservation to try first: `wanted`, or under an address-space limit (ulimit -v)
/// half of what the limit leaves, so thread stacks and mappings keep the other half.
std::size_t first_reservation(std::size_t wanted) noexcept {
    rlimit rl{};
    if (::getrlimit(RLIMIT_AS, &rl) != 0 || rl.rlim_cur == RLIM_INFINITY) return wanted;
    const std::size_t limit = static_cast<std::size_t>(rl.rlim_cur);
    const std::size_t used = mapped_bytes();
    const std::size_t left = limit > used ? limit - used : 0;
    return wanted < left / 2 ? wanted : left / 2;
}

void fork_prepare() noexcept { engine_heap::prepare_fork(); }
void fork_parent() noexcept { engine_heap::after_fork_parent(); }
void fork_child() noexcept { engine_heap::after_fork_child(); }

[[gnu::noinline]] engine_heap* init_heap() noexcept {
    if (in_init) return nullptr;
    // Stored before the state changes, by every thread that may build, so a child forked while
    // another thread builds (that thread does not exist in the child) always finds the pid.
    if (init_state.load(std::memory_order_acquire) == 0) init_pid.store(getpid(), std::memory_order_relaxed);
    int expected = 0;
    if (init_state.compare_exchange_strong(expected, 1, std::memory_order_acq_rel)) {
        in_init = true;
        strata::engine_options o;
        o.reserve_bytes = env_size("STRATA_MALLOC_RESERVE_GB", o.reserve_bytes, 30, "GiB");
        o.retain_bytes = env_size("STRATA_MALLOC_RETAIN_MB", o.retain_bytes, 20, "MiB");
        o.purge_medium_bytes = env_size("STRATA_MALLOC_PURGE_KB", o.purge_medium_bytes, 10, "KiB");
        o.medium_retain_bytes = env_size("STRATA_MALLOC_MEDIUM_RETAIN_MB", o.medium_retain_bytes, 20, "MiB");
        o.stash_bytes = env_size("STRATA_MALLOC_STASH_KB", o.stash_bytes, 10, "KiB");
        o.depot_bytes = env_size("STRATA_MALLOC_DEPOT_KB", o.depot_bytes, 10, "KiB");
        o.populate_after_bytes = env_size("STRATA_MALLOC_POPULATE_MB", o.populate_after_bytes, 20, "MiB");
        o.large_keep_bytes = env_size("STRATA_MALLOC_LARGE_KEEP_MB", o.large_keep_bytes, 20, "MiB");
        o.batch_purges = env_size("STRATA_MALLOC_BATCH_PURGES", 1, 0, "0/1") != 0;
        const std::size_t decay = env_size("STRATA_MALLOC_DECAY_MS", o.decay_ms, 0, "milliseconds");
        o.decay_ms = static_cast<std::uint32_t>(std::min<std::size_t>(decay, UINT32_MAX / 2));
        // The fast paths find threads' caches through slot 0 (slot_use::first_for_life), which
        // only a heap that asks takes (a program's own heaps get slots 1-15). Were it held, the
        // constructor would refuse, and glibc would serve.
        o.first_slot = true;
        engine_heap* h = nullptr;
        // Smaller reservations where address space is limited (ulimit -v, 32-bit-ish containers).
        // Whatever the heap cannot hold, glibc serves (see engine_refused).
        for (std::size_t reserve = first_reservation(o.reserve_bytes);
             h == nullptr && reserve >= (std::size_t{1} << 28); reserve /= 2) {
            o.reserve_bytes = reserve;
            try {
                h = new (heap_storage) engine_heap(o);
            } catch (...) {
                h = nullptr;
            }
        }
        if (h != nullptr) {
            (void)pthread_atfork(&fork_prepare, &fork_parent, &fork_child);
            owned_begin = h->data_begin();
            std::atomic_ref<std::size_t>(owned_bytes).store(h->data_bytes(), std::memory_order_release);
        }
        global_heap.store(h, std::memory_order_release);
        init_state.store(h != nullptr ? 2 : 3, std::memory_order_release);
        in_init = false;
        return h;
    }
    // Another thread builds: wait for it as a spinlock waits (core/spinlock.hpp).
    for (strata::spin_backoff b; init_state.load(std::memory_order_acquire) == 1; b.wait()) {
        if (getpid() != init_pid.load(std::memory_order_relaxed)) {
            // Forked mid-build: the builder is not in this process. This copy of the state says
            // "failed", so the child is served by glibc from now on.
            init_state.store(3, std::memory_order_relaxed);
            break;
        }
    }
    return global_heap.load(std::memory_order_acquire);
}

inline engine_heap* heap() noexcept {
    engine_heap* h = global_heap.load(std::memory_order_acquire);
    if (STRATA_LIKELY(h != nullptr)) return h;
    return init_heap();
}

/// The heap refused (its reservation is full, or the request is impossible): glibc serves it, or
/// answers nullptr with ENOMEM. free, realloc and malloc_usable_size send blocks the heap does not
/// own to glibc, so the two may mix. Out of line so that malloc's fast path keeps nothing live
/// across a call (it then needs no stack frame and no saved register).
[[gnu::noinline, gnu::cold]] void* engine_refused(std::size_t size) noexcept { return __libc_malloc(size); }

/// do_malloc before the heap exists: builds it, or hands the call to glibc (re-entry, failure).
[[gnu::noinline]] void* malloc_first(std::size_t size) noexcept {
    if (engine_heap* h = init_heap()) {
        void* p = h->allocate(size);
        return p != nullptr ? p : engine_refused(size);
    }
    return __libc_malloc(size);
}

/// do_malloc when the thread's cache has no block at hand (or the heap is not built yet): the
/// heap's slow paths, then glibc.
[[gnu::noinline]] void* malloc_slow(std::size_t size) noexcept {
    engine_heap* h = global_heap.load(std::memory_order_acquire);
    if (STRATA_UNLIKELY(h == nullptr)) return malloc_first(size);
    void* p = h->allocate(size);
    return p != nullptr ? p : engine_refused(size);
}

inline void* do_malloc(std::size_t size) noexcept {
    // The thread's cache in slot 0 exists only once the heap does, so the hit path reads neither
    // the heap nor its pointer; it makes no call and saves no register. A miss ends in a tail call.
    if (void* p = engine_heap::allocate_cached_slot0(size)) return p;
    return malloc_slow(size);
}

STRATA_ALWAYS_INLINE void do_free(void* p) noexcept {
    const std::uintptr_t off = reinterpret_cast<std::uintptr_t>(p) - owned_begin;
    if (STRATA_LIKELY(off < owned_bytes)) {
        built_heap()->deallocate_at<resident>(p, off);
        return;
    }
    if (p != nullptr) __libc_free(p);
}

/// calloc when the thread's cache has no block at hand: the heap's zeroed allocation (fresh spans
/// are not written twice), then glibc. total == count * size (no overflow).
[[gnu::noinline]] void* calloc_slow(std::size_t count, std::size_t size, std::size_t total) noexcept {
    if (engine_heap* h = heap()) {
        if (void* p = h->allocate_zeroed(total)) return p;
    }
    return __libc_calloc(count, size); // no heap, or it refused (as engine_refused)
}

/// align: a power of two (callers check). Returns nullptr with errno ENOMEM on failure.
void* do_aligned(std::size_t align, std::size_t size) noexcept {
    if (engine_heap* h = heap()) {
        if (void* p = h->allocate(size, align)) return p;
    }
    return __libc_memalign(align, size); // no heap, or it refused (as engine_refused)
}

bool power_of_two(std::size_t a) noexcept { return a != 0 && (a & (a - 1)) == 0; }

std::size_t page_size() noexcept {
    static std::atomic<std::size_t> cached{0};
    std::size_t p = cached.load(std::memory_order_relaxed);
    if (p == 0) {
        const long s = sysconf(_SC_PAGESIZE);
        p = s > 0 ? static_cast<std::size_t>(s) : 4096;
        cached.store(p, std::memory_order_relaxed);
    }
    return p;
}

// --- operator new ---------------------------------------------------------------------------
// libstrata_malloc.so carries its own copy of the C++ runtime (-static-libstdc++), so that a C
// program maps no libstdc++. The new-handler a C++ program sets, and the bad_alloc it catches,
// belong to the program's runtime: they are looked up there first (the library's copies are
// local). Only failed allocations look.

/// Returns: `name` in the process's libstdc++ (global, or loaded locally by a plugin); nullptr when
/// none is loaded.
void* program_cxx_symbol(const char* name) noexcept {
    if (void* sym = dlsym(RTLD_DEFAULT, name)) return sym;
    void* lib = dlopen("libstdc++.so.6", RTLD_LAZY | RTLD_NOLOAD);
    if (lib == nullptr) return nullptr;
    void* sym = dlsym(lib, name);
    dlclose(lib); // NOLOAD took a reference
    return sym;
}

std::new_handler current_new_handler() noexcept {
    using get_fn = std::new_handler (*)() noexcept;
    if (auto get = reinterpret_cast<get_fn>(program_cxx_symbol("_ZSt15get_new_handlerv"))) return get();
    return std::get_new_handler();
}

[[noreturn]] void throw_bad_alloc() {
    using throw_fn = void (*)();
    if (auto raise = reinterpret_cast<throw_fn>(program_cxx_symbol("_ZSt17__throw_bad_allocv"))) raise();
    throw std::bad_alloc();
}

// One attempt of operator new: malloc's path, or the aligned one past max_align_t.
void* new_attempt(std::size_t size, std::size_t align) noexcept {
    return align <= alignof(std::max_align_t) ? do_malloc(size) : do_aligned(align, size);
}

[[gnu::noinline]] void* new_attempt_outlined(std::size_t size, std::size_t align) noexcept {
    return new_attempt(size, align);
}
[[gnu::noinline]] std::new_handler new_handler_outlined() noexcept { return current_new_handler(); }

// After a refusal: the new-handler, and attempts, until one succeeds or there is no handler. Out of
// line, and calling only out-of-line functions: its frame, the one a bad_alloc the program catches
// unwinds through, carries no personality routine (an inlined noexcept body would give it one),
// so the program's unwinder never calls into this library's copy of the C++ runtime (linked with
// its own copy of the unwinder). operator new reaches it by a tail call: its own frame is gone.
[[gnu::noinline]] void* new_retry(std::size_t size, std::size_t align) {
    for (;;) {
        std::new_handler handler = new_handler_outlined();
        if (handler == nullptr) throw_bad_alloc();
        handler();
        if (void* p = new_attempt_outlined(size, align)) return p;
    }
}

/// operator new's miss with malloc's alignment: malloc's slow path, then the retry loop.
[[gnu::noinline]] void* new_miss(std::size_t size) {
    if (void* p = malloc_slow(size); STRATA_LIKELY(p != nullptr)) return p;
    return new_retry(size, 0);
}

STRATA_ALWAYS_INLINE void* new_impl(std::size_t size, std::size_t align) {
    if (align <= alignof(std::max_align_t)) {
        // As do_malloc: the hit path keeps nothing across a call; a miss ends in a tail call.
        if (void* p = engine_heap::allocate_cached_slot0(size)) return p;
        return new_miss(size);
    }
    if (void* p = do_aligned(align, size); STRATA_LIKELY(p != nullptr)) return p;
    return new_retry(size, align);
}

// The nothrow forms. With no new-handler a refusal is nullptr at once: no exception is thrown, so
// none is left counted as in flight by the program's runtime (one thrown there and caught here, in
// the library's copy, would be: its unitbuf streams, std::cerr among them, would stop flushing).
// With a handler, which may throw bad_alloc, the request goes through the program's libstdc++'s own
// nothrow operator new, which calls the throwing form (this library's) and catches in the runtime
// that threw. Without a libstdc++.so the handler is this library's own, and so is the catch.
void* new_nothrow(std::size_t size, std::size_t align) noexcept {
    if (void* p = new_attempt(size, align); STRATA_LIKELY(p != nullptr)) return p;
    if (current_new_handler() == nullptr) return nullptr;
    if (void* lib = dlopen("libstdc++.so.6", RTLD_LAZY | RTLD_NOLOAD)) {
        const bool aligned = align > alignof(std::max_align_t);
        void* sym = dlsym(lib, aligned ? "_ZnwmSt11align_val_tRKSt9nothrow_t" : "_ZnwmRKSt9nothrow_t");
        dlclose(lib); // NOLOAD took a reference
        using plain_fn = void* (*)(std::size_t, const std::nothrow_t&) noexcept;
        using aligned_fn = void* (*)(std::size_t, std::align_val_t, const std::nothrow_t&) noexcept;
        if (sym != nullptr && aligned)
            return reinterpret_cast<aligned_fn>(sym)(size, std::align_val_t{align}, std::nothrow);
        if (sym != nullptr) return reinterpret_cast<plain_fn>(sym)(size, std::nothrow);
    }
    try {
        return new_impl(size, align);
    } catch (...) {
        return nullptr;
    }
}

} // namespace

// --- C API ----------------------------------------------------------------------------------------

STRATA_MALLOC_API void* malloc(std::size_t size) { return do_malloc(size); }

STRATA_MALLOC_API void free(void* p) { do_free(p); }

STRATA_MALLOC_API void* calloc(std::size_t count, std::size_t size) {
    std::size_t total = 0;
    if (__builtin_mul_overflow(count, size, &total)) {
        errno = ENOMEM;
        return nullptr;
    }
    // A small block at hand is zeroed here (a reused block holds old bytes); the rest, out of line.
    if (void* p = engine_heap::allocate_cached_slot0(total)) return std::memset(p, 0, total);
    return calloc_slow(count, size, total);
}

STRATA_MALLOC_API void* realloc(void* p, std::size_t size) {
    if (p == nullptr) return do_malloc(size);
    engine_heap* h = heap();
    if (h != nullptr && h->owns(p)) {
        if (size == 0) { // glibc: realloc(p, 0) frees p and returns NULL
            h->deallocate<resident>(p);
            return nullptr;
        }
        if (void* q = h->reallocate(p, size)) return q;
        // The heap cannot hold the new size: move the block to glibc (p stays live if it cannot).
        void* q = __libc_malloc(size);
        if (q != nullptr) {
            const std::size_t old_size = h->usable_size(p);
            std::memcpy(q, p, old_size < size ? old_size : size);
            h->deallocate<resident>(p);
        }
        return q;
    }
    // A block from glibc (allocated before the heap existed) stays with glibc.
    return __libc_realloc(p, size);
}

STRATA_MALLOC_API void* reallocarray(void* p, std::size_t count, std::size_t size) {
    std::size_t total = 0;
    if (__builtin_mul_overflow(count, size, &total)) {
        errno = ENOMEM;
        return nullptr;
    }
    return realloc(p, total);
}

STRATA_MALLOC_API void* aligned_alloc(std::size_t align, std::size_t size) {
    if (!power_of_two(align)) {
        errno = EINVAL;
        return nullptr;
    }
    return do_aligned(align, size);
}

STRATA_MALLOC_API int posix_memalign(void** out, std::size_t align, std::size_t size) {
    if (!power_of_two(align) || align % sizeof(void*) != 0) return EINVAL;
    const int saved = errno; // posix_memalign reports through its result, not errno
    void* p = do_aligned(align, size);
    errno = saved;
    if (p == nullptr) return ENOMEM;
    *out = p;
    return 0;
}

STRATA_MALLOC_API void* memalign(std::size_t align, std::size_t size) {
    // glibc: an alignment that is not a power of two is rounded up to one.
    if (!power_of_two(align)) {
        if (align > (std::size_t{1} << 63)) {
            errno = EINVAL;
            return nullptr;
        }
        std::size_t a = 1;
        while (a < align)
            a <<= 1;
        align = a;
    }
    return do_aligned(align, size);
}

STRATA_MALLOC_API void* valloc(std::size_t size) { return do_aligned(page_size(), size); }

STRATA_MALLOC_API void* pvalloc(std::size_t size) {
    const std::size_t page = page_size();
    std::size_t rounded = 0;
    if (__builtin_add_overflow(size, page - 1, &rounded)) {
        errno = ENOMEM;
        return nullptr;
    }
    rounded &= ~(page - 1);
    return do_aligned(page, rounded == 0 ? page : rounded);
}

STRATA_MALLOC_API std::size_t malloc_usable_size(void* p) {
    if (p == nullptr) return 0;
    engine_heap* h = global_heap.load(std::memory_order_acquire);
    if (h != nullptr && h->owns(p)) return h->usable_size(p);
    // glibc's own answer for its blocks; looked up once the heap exists (dlsym may allocate).
    using usable_fn = std::size_t (*)(void*);
    static std::atomic<usable_fn> next{nullptr};
    usable_fn f = next.load(std::memory_order_acquire);
    // Not while this thread builds the heap (dlsym may allocate; that must not re-enter the
    // build). Without a heap at all (it could not reserve) glibc owns every block: ask it.
    if (f == nullptr && !in_init) {
        f = reinterpret_cast<usable_fn>(dlsym(RTLD_NEXT, "malloc_usable_size"));
        next.store(f, std::memory_order_release);
    }
    return f != nullptr ? f(p) : 0;
}

/// Returns: 1 when `p` came from the engine heap (tests and tools check the shim is active).
STRATA_MALLOC_API int strata_malloc_owns(const void* p) {
    engine_heap* h = global_heap.load(std::memory_order_acquire);
    return h != nullptr && h->owns(p) ? 1 : 0;
}

/// Returns: 1 when the engine heap's check() passes (call while other threads are quiet).
STRATA_MALLOC_API int strata_malloc_check() {
    engine_heap* h = heap();
    return h != nullptr && h->check() ? 1 : 0;
}

/// Effects: hands the calling thread's cache back and purges every free span.
STRATA_MALLOC_API void strata_malloc_trim() {
    if (engine_heap* h = global_heap.load(std::memory_order_acquire)) {
        h->flush_thread_cache();
        h->trim();
    }
}

/// Effects: this frame's maintenance (engine_heap::end_frame) within `budget_us` microseconds.
/// Returns: bytes given back to the OS.
STRATA_MALLOC_API std::size_t strata_malloc_end_frame(unsigned budget_us) {
    engine_heap* h = global_heap.load(std::memory_order_acquire);
    return h != nullptr ? h->end_frame(std::chrono::microseconds{budget_us}) : 0;
}

namespace {
/// STRATA_MALLOC_PURGE_THREAD_MS=N (N > 0): a purge thread steps every N ms, for programs that go
/// idle without frame calls. Started once the process runs (a constructor, not inside malloc).
[[gnu::constructor]] void start_purge_thread_from_env() noexcept {
    const std::size_t ms = env_size("STRATA_MALLOC_PURGE_THREAD_MS", 0, 0, "milliseconds");
    if (ms == 0) return;
    if (engine_heap* h = heap())
        (void)h->start_purge_thread(std::chrono::milliseconds{std::min<std::size_t>(ms, 60000)});
}
} // namespace

// --- C++ operators --------------------------------------------------------------------------------

STRATA_MALLOC_CXX void* operator new(std::size_t n) { return new_impl(n, 0); }
STRATA_MALLOC_CXX void* operator new[](std::size_t n) { return new_impl(n, 0); }
STRATA_MALLOC_CXX void* operator new(std::size_t n, const std::nothrow_t&) noexcept {
    return new_nothrow(n, 0);
}
STRATA_MALLOC_CXX void* operator new[](std::size_t n, const std::nothrow_t&) noexcept {
    return new_nothrow(n, 0);
}
STRATA_MALLOC_CXX void* operator new(std::size_t n, std::align_val_t a) {
    return new_impl(n, static_cast<std::size_t>(a));
}
STRATA_MALLOC_CXX void* operator new[](std::size_t n, std::align_val_t a) {
    return new_impl(n, static_cast<std::size_t>(a));
}
STRATA_MALLOC_CXX void* operator new(std::size_t n, std::align_val_t a, const std::nothrow_t&) noexcept {
    return new_nothrow(n, static_cast<std::size_t>(a));
}
STRATA_MALLOC_CXX void* operator new[](std::size_t n, std::align_val_t a, const std::nothrow_t&) noexcept {
    return new_nothrow(n, static_cast<std::size_t>(a));
}

STRATA_MALLOC_CXX void operator delete(void* p) noexcept { do_free(p); }
STRATA_MALLOC_CXX void operator delete[](void* p) noexcept { do_free(p); }
STRATA_MALLOC_CXX void operator delete(void* p, std::size_t) noexcept { do_free(p); }
STRATA_MALLOC_CXX void operator delete[](void* p, std::size_t) noexcept { do_free(p); }
STRATA_MALLOC_CXX void operator delete(void* p, const std::nothrow_t&) noexcept { do_free(p); }
STRATA_MALLOC_CXX void operator delete[](void* p, const std::nothrow_t&) noexcept { do_free(p); }
STRATA_MALLOC_CXX void operator delete(void* p, std::align_val_t) noexcept { do_free(p); }
STRATA_MALLOC_CXX void operator delete[](void* p, std::align_val_t) noexcept { do_free(p); }
STRATA_MALLOC_CXX void operator delete(void* p, std::size_t, std::align_val_t) noexcept { do_free(p); }
STRATA_MALLOC_CXX void operator delete[](void* p, std::size_t, std::align_val_t) noexcept { do_free(p); }
STRATA_MALLOC_CXX void operator delete(void* p, std::align_val_t, const std::nothrow_t&) noexcept {
    do_free(p);
}
STRATA_MALLOC_CXX void operator delete[](void* p, std::align_val_t, const std::nothrow_t&) noexcept {
    do_free(p);
}
