// A program whose allocations the recorder test knows: run under libstrata_trace.so by
// tests/trace/recorder_test.cpp. Marker sizes (1000xx) pick its own calls out of the C++ runtime's.
//
//   strata_trace_victim basic    every C entry point once, then frees
//   strata_trace_victim threads  4 threads x 2000 malloc/free, and producer/consumer cross-thread frees
//   strata_trace_victim fork     allocates, forks; the child allocates 100777 and frees it
//   strata_trace_victim exec     allocates 100555, then execs itself with "basic"
#include <malloc.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

namespace {

void* keep(void* p) {
    // Stop the compiler from eliding malloc/free pairs.
    static void* volatile sink;
    sink = p;
    return p;
}

int basic() {
    void* a = keep(std::malloc(100001));
    void* b = keep(std::calloc(10, 10002)); // 100020 bytes
    void* c = keep(std::realloc(a, 100003));
    void* d = keep(aligned_alloc(64, 100032));
    void* e = nullptr;
    if (posix_memalign(&e, 4096, 100005) != 0) return 1;
    keep(e);
    void* f = keep(memalign(32, 100006));
    void* g = keep(valloc(100007));
    void* volatile no_block = nullptr; // volatile: GCC would turn realloc(nullptr, n) into malloc(n)
    void* h = keep(std::realloc(no_block, 100008));
    std::free(h);
    std::free(g);
    std::free(f);
    std::free(e);
    std::free(d);
    std::free(c);
    std::free(b);
    std::free(nullptr);
    return 0;
}

int threads() {
    std::vector<std::thread> pool;
    for (int t = 0; t < 4; ++t)
        pool.emplace_back([t] {
            for (int i = 0; i < 2000; ++i)
                std::free(keep(std::malloc(100100 + static_cast<std::size_t>(t))));
        });
    // Producer/consumer: allocated on one thread, freed on another.
    constexpr int n = 3000;
    std::vector<std::atomic<void*>> box(n);
    std::thread producer([&] {
        for (int i = 0; i < n; ++i)
            box[i].store(std::malloc(100200), std::memory_order_release);
    });
    std::thread consumer([&] {
        for (int i = 0; i < n; ++i) {
            void* p = nullptr;
            while ((p = box[i].load(std::memory_order_acquire)) == nullptr)
                std::this_thread::yield();
            std::free(p);
        }
    });
    producer.join();
    consumer.join();
    for (auto& th : pool)
        th.join();
    return 0;
}

int forking() {
    void* p = keep(std::malloc(100666));
    const pid_t pid = fork();
    if (pid < 0) return 1;
    if (pid == 0) {
        std::free(keep(std::malloc(100777)));
        std::free(p); // a block the parent's trace allocated
        std::exit(0);
    }
    int status = 0;
    waitpid(pid, &status, 0);
    std::free(p);
    return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : 1;
}

int exec_self(const char* self) {
    keep(std::malloc(100555)); // never freed: still live when the image is replaced
    execl(self, self, "basic", static_cast<char*>(nullptr));
    return 1;
}

} // namespace

int main(int argc, char** argv) {
    const std::string mode = argc > 1 ? argv[1] : "basic";
    if (mode == "basic") return basic();
    if (mode == "threads") return threads();
    if (mode == "fork") return forking();
    if (mode == "exec") return exec_self(argv[0]);
    std::fprintf(stderr, "victim: unknown mode %s\n", mode.c_str());
    return 2;
}
