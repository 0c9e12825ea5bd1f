// engine_probe: checks the malloc API from inside a process whose malloc is the engine heap
// (LD_PRELOAD=libstrata_malloc.so, or linked with strata::malloc_replace when STRATA_PROBE_LINKED).
// Exit status 0: every check passed. `engine_probe fork`: fork repeatedly from a threaded process.
#include <dlfcn.h>
#include <malloc.h>
#include <pthread.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <new>
#include <thread>
#include <vector>

extern "C" {
void* __libc_malloc(std::size_t);
}

#if defined(STRATA_PROBE_LINKED)
extern "C" int strata_malloc_owns(const void*);
extern "C" int strata_malloc_check();
extern "C" std::size_t strata_malloc_end_frame(unsigned);
#endif

namespace {

std::atomic<int> failures{0};

#define PROBE(cond)                                                                                          \
    do {                                                                                                     \
        if (!(cond)) {                                                                                       \
            std::fprintf(stderr, "engine_probe: %s:%d: %s\n", __FILE__, __LINE__, #cond);                    \
            ++failures;                                                                                      \
        }                                                                                                    \
    } while (0)

using owns_fn = int (*)(const void*);
using check_fn = int (*)();
owns_fn owns = nullptr;
check_fn check = nullptr;

// Keeps the compiler from pairing or eliding the calls under test.
void* volatile sink;
template <class T>
T opaque(T v) {
    __asm__ __volatile__("" : "+r"(v));
    return v;
}

bool aligned(const void* p, std::size_t a) { return (reinterpret_cast<std::uintptr_t>(p) & (a - 1)) == 0; }

void basic() {
    for (std::size_t size : {0, 1, 24, 200, 4000, 65536, 70000, 3 << 20, 9 << 20}) {
        auto* p = static_cast<unsigned char*>(std::malloc(opaque(size)));
        PROBE(p != nullptr);
        PROBE(owns(p));
        PROBE(aligned(p, 16));
        const std::size_t usable = malloc_usable_size(p);
        PROBE(usable >= size);
        std::memset(p, 0x5a, usable);
        std::free(p);
    }
    std::free(nullptr);
}

void calloc_checks() {
    errno = 0;
    PROBE(std::calloc(opaque(SIZE_MAX / 2), 3) == nullptr);
    PROBE(errno == ENOMEM);
    for (std::size_t size : {16, 5000, 200000, 12 << 20}) {
        auto* dirty = static_cast<unsigned char*>(std::malloc(opaque(size)));
        std::memset(dirty, 0xff, size);
        std::free(dirty);
        auto* z = static_cast<unsigned char*>(std::calloc(opaque(size), 1));
        PROBE(z != nullptr && owns(z));
        bool zero = true;
        for (std::size_t i = 0; i < size; ++i)
            zero = zero && z[i] == 0;
        PROBE(zero);
        std::free(z);
    }
}

void realloc_checks() {
    auto* p = static_cast<unsigned char*>(std::realloc(nullptr, opaque(std::size_t{10})));
    PROBE(p != nullptr && owns(p));
    for (int i = 0; i < 10; ++i)
        p[i] = static_cast<unsigned char>(i);
    std::size_t have = 10;
    for (std::size_t next : {100, 70000, 10 << 20, 300, 16}) {
        auto* q = static_cast<unsigned char*>(std::realloc(p, opaque(next)));
        PROBE(q != nullptr && owns(q));
        if (q == nullptr) return;
        for (std::size_t i = 0; i < std::min(have, next); ++i)
            if (q[i] != static_cast<unsigned char>(i)) {
                PROBE(!"realloc lost contents");
                break;
            }
        for (std::size_t i = have; i < next; ++i)
            q[i] = static_cast<unsigned char>(i);
        have = next;
        p = q;
    }
    PROBE(std::realloc(p, opaque(std::size_t{0})) == nullptr); // glibc: frees, returns NULL
    errno = 0;
    // A failed realloc leaves the block alone (freed through an opaque copy of the pointer, which
    // the compiler cannot tell apart from the one passed to realloc).
    void* keep = std::malloc(32);
    void* keep_copy = opaque(keep);
    PROBE(std::realloc(keep, opaque(SIZE_MAX - 4096)) == nullptr);
    PROBE(errno == ENOMEM);
    std::free(keep_copy);
    void* arr = reallocarray(nullptr, 10, 10);
    void* arr_copy = opaque(arr);
    PROBE(arr != nullptr && owns(arr));
    errno = 0;
    PROBE(reallocarray(arr, opaque(SIZE_MAX / 2), 4) == nullptr && errno == ENOMEM);
    std::free(arr_copy);
}

void alignment_checks() {
    for (std::size_t a = 8; a <= (std::size_t{1} << 20); a *= 2) {
        for (std::size_t size : {1, 100, 100000, 10 << 20}) {
            void* p = aligned_alloc(a, opaque(size));
            PROBE(p != nullptr && aligned(p, a) && owns(p));
            std::memset(p, 1, size);
            std::free(p);
            void* q = nullptr;
            PROBE(posix_memalign(&q, a, size) == 0 && aligned(q, a) && owns(q));
            std::free(q);
            void* r = memalign(a, size);
            PROBE(r != nullptr && aligned(r, a));
            std::free(r);
        }
    }
    errno = 0;
    PROBE(aligned_alloc(opaque(std::size_t{3}), 16) == nullptr && errno == EINVAL);
    void* q = nullptr;
    PROBE(posix_memalign(&q, opaque(std::size_t{3}), 16) == EINVAL);
    PROBE(posix_memalign(&q, opaque(std::size_t{4}), 16) == EINVAL); // not a multiple of sizeof(void*)
    PROBE(posix_memalign(&q, 64, opaque(SIZE_MAX - 100)) == ENOMEM);
    void* m = memalign(opaque(std::size_t{48}), 10); // glibc rounds the alignment up to 64
    PROBE(m != nullptr && aligned(m, 64));
    std::free(m);
    const auto page = static_cast<std::size_t>(sysconf(_SC_PAGESIZE));
    void* v = valloc(opaque(std::size_t{10}));
    PROBE(v != nullptr && aligned(v, page));
    std::free(v);
    void* pv = pvalloc(opaque(std::size_t{10}));
    PROBE(pv != nullptr && aligned(pv, page) && malloc_usable_size(pv) >= page);
    std::free(pv);
}

struct alignas(256) wide {
    char c[300];
};

void cxx_checks() {
    int* i = new int(7);
    PROBE(owns(i));
    delete i;
    auto* arr = new int[1000];
    PROBE(owns(arr));
    delete[] arr;
    auto* w = new wide;
    PROBE(owns(w) && aligned(w, 256));
    delete w;
    auto* wa = new wide[3];
    PROBE(owns(wa) && aligned(wa, 256));
    delete[] wa;
    void* n = ::operator new(opaque(std::size_t{40}), std::nothrow);
    PROBE(owns(n));
    ::operator delete(n, std::nothrow);
    PROBE(::operator new(opaque(SIZE_MAX - 100), std::nothrow) == nullptr);
    PROBE(::operator new[](opaque(SIZE_MAX - 100), std::align_val_t{64}, std::nothrow) == nullptr);
    // A refused nothrow request leaves no exception in flight in the program's runtime (its
    // unitbuf streams, std::cerr among them, stop flushing while one seems to be).
    PROBE(std::uncaught_exceptions() == 0);
    bool threw = false;
    try {
        sink = ::operator new(opaque(SIZE_MAX - 100));
    } catch (const std::bad_alloc&) {
        threw = true;
    }
    PROBE(threw);
    // The new-handler is the program's (std::set_new_handler), called before bad_alloc is thrown
    // and before the nothrow form gives up. It counts its calls and uninstalls itself, so the
    // next failed attempt ends the request.
    static int handler_calls = 0;
    const std::new_handler count_once = [] {
        ++handler_calls;
        std::set_new_handler(nullptr);
    };
    std::set_new_handler(count_once);
    threw = false;
    try {
        sink = ::operator new(opaque(SIZE_MAX - 100));
    } catch (const std::bad_alloc&) {
        threw = true;
    }
    PROBE(threw && handler_calls == 1);
    std::set_new_handler(count_once);
    void* refused = ::operator new(opaque(SIZE_MAX - 100), std::nothrow);
    PROBE(refused == nullptr && handler_calls == 2);
    // A handler that throws bad_alloc ends a nothrow request with nullptr, and the exception is
    // caught where it was thrown: in the program's runtime.
    static int throwing_calls = 0;
    std::set_new_handler([] {
        ++throwing_calls;
        throw std::bad_alloc();
    });
    refused = ::operator new(opaque(SIZE_MAX - 100), std::nothrow);
    PROBE(refused == nullptr && throwing_calls == 1);
    refused = ::operator new (opaque(SIZE_MAX - 100), std::align_val_t{4096}, std::nothrow);
    PROBE(refused == nullptr && throwing_calls == 2);
    std::set_new_handler(nullptr);
    PROBE(std::uncaught_exceptions() == 0);
    void* s = ::operator new(100);
    ::operator delete(s, 100);
    void* al = ::operator new (100, std::align_val_t{4096});
    PROBE(aligned(al, 4096) && owns(al));
    ::operator delete (al, 100, std::align_val_t{4096});
}

void foreign_checks() {
    // A block glibc handed out (as to the loader before the heap existed): free and realloc must
    // give it back to glibc, not crash.
    void* g = __libc_malloc(100);
    PROBE(g != nullptr && !owns(g));
    PROBE(malloc_usable_size(g) >= 100);
    std::free(g);
    void* g2 = __libc_malloc(50);
    void* g3 = std::realloc(g2, 5000);
    PROBE(g3 != nullptr);
    std::free(g3);
}

void thread_checks() {
    constexpr int n = 4;
    std::vector<std::vector<void*>> handoff(n);
    std::vector<std::thread> threads;
    for (int t = 0; t < n; ++t) {
        threads.emplace_back([&, t] {
            for (int i = 0; i < 20000; ++i) {
                void* p = std::malloc(static_cast<std::size_t>((i * 37 + t) % 3000));
                if (!owns(p)) ++failures;
                if (i % 3 == 0)
                    handoff[static_cast<std::size_t>(t)].push_back(p);
                else
                    std::free(p);
            }
        });
    }
    for (auto& th : threads)
        th.join();
    threads.clear();
    // Free every thread's survivors from another thread, after their owners have exited.
    for (int t = 0; t < n; ++t)
        threads.emplace_back([&, t] {
            for (void* p : handoff[static_cast<std::size_t>((t + 1) % n)])
                std::free(p);
        });
    for (auto& th : threads)
        th.join();
    PROBE(check());
}

int fork_checks() {
    std::atomic<bool> stop{false};
    std::vector<std::thread> churners;
    for (int t = 0; t < 3; ++t) {
        churners.emplace_back([&, t] {
            std::vector<void*> live(256, nullptr);
            std::size_t k = static_cast<std::size_t>(t);
            while (!stop.load(std::memory_order_relaxed)) {
                k = k * 6364136223846793005ull + 1442695040888963407ull;
                void*& slot = live[(k >> 33) % live.size()];
                std::free(slot);
                slot = std::malloc((k >> 40) % 100000);
            }
            for (void* p : live)
                std::free(p);
        });
    }
    for (int i = 0; i < 30; ++i) {
        const pid_t pid = fork();
        if (pid == 0) {
            // The child: only this thread exists; every lock must be free.
            std::vector<void*> v;
            for (int j = 0; j < 2000; ++j)
                v.push_back(std::malloc(static_cast<std::size_t>(j % 5000)));
            const bool ours = owns(v[0]) != 0;
            for (void* p : v)
                std::free(p);
            std::thread([] { std::free(std::malloc(100)); }).join();
            _exit(ours ? 0 : 3);
        }
        int status = 0;
        PROBE(pid > 0 && waitpid(pid, &status, 0) == pid && WIFEXITED(status) && WEXITSTATUS(status) == 0);
    }
    stop = true;
    for (auto& th : churners)
        th.join();
    return failures == 0 ? 0 : 1;
}

} // namespace

// Run with STRATA_MALLOC_RESERVE_GB=1: what the heap cannot hold, glibc serves (the medium tier
// and reservations under ulimit -v made malloc fail with most of the address space free).
int past_reserve_checks() {
    const std::size_t big = std::size_t{1536} << 20;
    auto* g = static_cast<unsigned char*>(std::malloc(opaque(big)));
    PROBE(g != nullptr);
    if (g == nullptr) return 1;
    g[0] = 1; // written first: g++ takes owns() and malloc_usable_size for readers of the block
    g[big - 1] = 2;
    PROBE(!owns(g));
    PROBE(malloc_usable_size(g) >= big);
    auto* z = static_cast<unsigned char*>(std::calloc(1, opaque(big)));
    PROBE(z != nullptr && !owns(z) && z[0] == 0 && z[big - 1] == 0);
    void* a = aligned_alloc(4096, opaque(big));
    PROBE(a != nullptr && !owns(a) && aligned(a, 4096));
    auto* e = static_cast<unsigned char*>(std::malloc(opaque(std::size_t{1000})));
    PROBE(e != nullptr && owns(e));
    std::memset(e, 0x6b, 1000);
    auto* moved = static_cast<unsigned char*>(std::realloc(e, opaque(big)));
    PROBE(moved != nullptr && !owns(moved) && moved[0] == 0x6b && moved[999] == 0x6b);
    std::free(g);
    std::free(z);
    std::free(a);
    std::free(moved);
    PROBE(check());
    return failures == 0 ? 0 : 1;
}

// Run with the default reservation (64 GiB): the heap serves a 1.5 GiB block itself. The shim test
// runs it with STRATA_MALLOC_RESERVE_GB set to values the shim must refuse ("1GB", a count whose
// bytes overflow), which keep the default; with "1" it fails (glibc serves the block).
int default_reserve_checks() {
    const std::size_t big = std::size_t{1536} << 20;
    auto* g = static_cast<unsigned char*>(std::malloc(opaque(big)));
    PROBE(g != nullptr);
    if (g == nullptr) return 1;
    g[0] = 1; // written first: g++ takes owns() for a reader of the block
    g[big - 1] = 2;
    PROBE(owns(g));
    std::free(g);
    PROBE(check());
    return failures == 0 ? 0 : 1;
}

// Run with STRATA_MALLOC_RESERVE_GB=0: no heap, glibc serves every call, and answers
// malloc_usable_size for its blocks (the shim answered 0 without a heap).
int no_heap_checks() {
    auto* p = static_cast<unsigned char*>(std::malloc(opaque(std::size_t{100})));
    PROBE(p != nullptr);
    if (p == nullptr) return 1;
    std::memset(p, 1, 100); // written first: g++ takes owns() and malloc_usable_size for readers
    PROBE(!owns(p));
    PROBE(malloc_usable_size(p) >= 100);
    std::free(p);
    return failures == 0 ? 0 : 1;
}

// Run with STRATA_MALLOC_DECAY_MS=10 (and, for "purge-thread", STRATA_MALLOC_PURGE_THREAD_MS=5): a
// freed 16 MiB block stays resident at first, and is given back by strata_malloc_end_frame
// ("decay") or by the purge thread with no call at all ("purge-thread") within a second.
int decay_checks(bool frames) {
    using end_frame_fn = std::size_t (*)(unsigned);
#if defined(STRATA_PROBE_LINKED)
    end_frame_fn end_frame = &strata_malloc_end_frame;
#else
    auto end_frame = reinterpret_cast<end_frame_fn>(dlsym(RTLD_DEFAULT, "strata_malloc_end_frame"));
#endif
    PROBE(end_frame != nullptr);
    if (end_frame == nullptr) return 1;
    const std::size_t n = std::size_t{16} << 20;
    auto* p = static_cast<unsigned char*>(std::malloc(opaque(n)));
    PROBE(p != nullptr);
    if (p == nullptr) return 1;
    std::memset(p, 1, n); // written first: g++ takes owns() for a reader
    PROBE(owns(p));
    // The block's second half: small runs may reuse its front once it is free.
    const auto at = opaque(reinterpret_cast<std::uintptr_t>(p) + n / 2); // a number, read after the free
    const auto resident = [&] {
        std::vector<unsigned char> v(n / 2 / 4096);
        if (mincore(reinterpret_cast<void*>(at), n / 2, v.data()) != 0) return std::size_t{0};
        std::size_t k = 0;
        for (unsigned char c : v)
            k += c & 1u;
        return k;
    };
    std::free(p);
    PROBE(resident() == n / 2 / 4096); // freed, warm
    for (int i = 0; i < 100 && resident() != 0; ++i) {
        std::this_thread::sleep_for(std::chrono::milliseconds{10});
        if (frames) (void)end_frame(100000);
    }
    PROBE(resident() == 0);
    PROBE(check());
    return failures == 0 ? 0 : 1;
}

int main(int argc, char** argv) {
#if defined(STRATA_PROBE_LINKED)
    owns = &strata_malloc_owns;
    check = &strata_malloc_check;
#else
    owns = reinterpret_cast<owns_fn>(dlsym(RTLD_DEFAULT, "strata_malloc_owns"));
    check = reinterpret_cast<check_fn>(dlsym(RTLD_DEFAULT, "strata_malloc_check"));
    if (owns == nullptr || check == nullptr) {
        std::fprintf(stderr, "engine_probe: libstrata_malloc.so is not loaded\n");
        return 2;
    }
#endif
    if (argc > 1 && std::strcmp(argv[1], "fork") == 0) return fork_checks();
    if (argc > 1 && std::strcmp(argv[1], "past-reserve") == 0) return past_reserve_checks();
    if (argc > 1 && std::strcmp(argv[1], "no-heap") == 0) return no_heap_checks();
    if (argc > 1 && std::strcmp(argv[1], "default-reserve") == 0) return default_reserve_checks();
    if (argc > 1 && std::strcmp(argv[1], "decay") == 0) return decay_checks(true);
    if (argc > 1 && std::strcmp(argv[1], "purge-thread") == 0) return decay_checks(false);
    basic();
    calloc_checks();
    realloc_checks();
    alignment_checks();
    cxx_checks();
    foreign_checks();
    thread_checks();
    PROBE(check());
    if (failures != 0) std::fprintf(stderr, "engine_probe: %d failures\n", failures.load());
    return failures == 0 ? 0 : 1;
}
