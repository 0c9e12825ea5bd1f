// strata-mt: multi-threaded malloc workloads on plain malloc/free, for comparing mallocs swapped in
// with LD_PRELOAD (bench/mt/peers.sh runs every Debian malloc and libstrata_malloc.so).
//
//   strata-mt [--workload NAME,...] [--ops N] [--threads T] [--repeats R] [--rounds K]
//             [--phase-mib M] [--frames F] [--frame-us U] [--no-end-frame] [--side-calls] [--label NAME]
//             [--jsonl FILE]
//             [--seed S]
//
// Workloads (block sizes unless said otherwise: 60% 8-128 B, 30% 128 B-1 KiB, 9% 1-8 KiB, 1% 8-64 KiB;
// every block is written at both ends, so its pages are really touched; the workloads below `big`
// write one byte on every page of every block, and the big buffers in full):
//   local     T threads (default 2), each replacing random slots of its own 4,096-slot array:
//             free + malloc pairs that never cross threads (the per-thread cache fast path).
//   prodcons  one producer mallocs blocks and hands them through a 1,024-entry ring to one consumer,
//             which frees them: every free is a cross-thread free.
//   handoff   T threads (default 4), half writers and half readers (xmalloc-test's shape): a writer
//             mallocs batches of 64 blocks of 8-128 B, writes every block whole and pushes the batch
//             (itself a malloc'd block) onto one mutex-guarded stack of at most 256 batches; a reader
//             pops batches and frees every block and the batch. The readers never malloc: every free
//             is remote, from a thread that allocates nothing. An operation is one block.
//   larson    K rounds of T threads (default 4) that replace random slots of ONE shared 8,192-slot
//             array (atomic exchange): most blocks are freed by a thread other than the one that
//             allocated them, often after that thread has exited (larson's server pattern).
//   relay     T lanes (default 4), each a chunk of 5,000 slots of 8-1,000 B blocks (the main thread
//             fills them): a thread replaces random slots of its lane's chunk, writing a block's first
//             two bytes, and after 250,000 replacements a fresh thread takes the chunk over (the
//             original larson benchmark: each thread first frees blocks its exited predecessor, or
//             the main thread, allocated, then mostly its own).
//   big       T threads (default 2), each replacing random slots of its own 8-slot array with
//             blocks of 1-8 MiB, every page written (streaming buffers, big scratch: what a malloc
//             that gives freed pages back at once pays for in page faults). Not in the default set.
//   tight     one thread, 16-256 B blocks: bursts of 1-8 mallocs freed newest first (LIFO), and one
//             step in 8 replacing a random block of a 64-block working set (malloc's own path).
//   falseshare  T threads (default 2), each mallocing batches of 64 blocks of 8-64 B, writing every
//             block 32 times (interleaved over the batch), then freeing them: an operation is one
//             block (a malloc that puts two threads' blocks on one cache line pays in line bounces).
//   threadchurn K rounds (default 50) of T short-lived threads (default 4): each frees what a thread
//             of the last round left (a different, later thread frees it), churns a 256-slot array
//             of small blocks and, one operation in 200, a 256 KiB-4 MiB buffer written in full (two
//             live at most), then frees half its small blocks and hands the rest and its buffers on.
//   bigloop   one thread, two live buffers of 2-25 MiB: each operation frees one, mallocs the next
//             and writes all of it (what a malloc that unmaps freed big blocks pays for in faults).
//   realloc   one thread, 8 live vectors grown by realloc from 16 B by ~1.5x up to a cap of 1-4 MiB
//             (the new tail's pages written), then freed and started over; an operation is one
//             malloc, realloc or free, on a random vector.
//   growbuf   one thread reading big inputs into one buffer each: the buffer grows by realloc 1 MiB
//             at a time (the new MiB written in full) up to 64-256 MiB, is checked and freed, and the
//             next one starts; between steps 16 random slots of a 4,096-slot array of 16-512 B
//             blocks are replaced (the parser's small objects, whose runs may land after the
//             buffer). An operation is one realloc step.
//   leaky     T threads (default 1) replacing random slots of a 4,096-slot array with 16 B-16 KiB
//             blocks (70% <= 256 B, 25% <= 4 KiB), except that one block in 10 is never freed while
//             the workload runs (leaked: freed after the timed window, untimed, so repeats compare).
//   trickle   one thread shaped like a recorded turn-based strategy game: 24,576 live blocks (~26
//             MiB): 55% 16-64 B, 44% 65 B-4 KiB (log-uniform), 1% 60.5 KiB; one operation in 2,000
//             also mallocs a 1-8 MiB buffer, writes it in full and frees it 1-64 operations later.
//   xchurn32k 4 threads shaped like a recorded voxel game's map generation: each replaces random
//             slots of its own 10,000-slot array (~35 MiB a thread); 10% of blocks are 32 KiB + 1
//             byte, the rest 8 B-1 KiB; 7.5% of the replaced blocks go through a ring to the next
//             thread, which frees them.
//   tilesim   4 threads shaped like a recorded tile-based simulation (title game): each replaces
//             random slots of its own 16,384-slot array, 91% of blocks 8-64 B, the rest up to 4 KiB;
//             one operation in 1,000 also mallocs a 3-4 MiB buffer, writes it in full and frees it
//             1-32 operations later (at most one per thread at a time).
//   rts       T threads (default 4, at least 2) shaped like a recorded real-time strategy game with AI
//             players (8 threads, 12% cross-thread frees): each replaces random slots of its own
//             4,096-slot array with 16-256 B blocks, and one operation in four also mallocs a burst of
//             1-8 blocks of 16-128 B and frees them newest first; 12% of the replaced blocks (about
//             6% of all frees) go, 64 at a time, to a random other thread, which frees them at its
//             next drain (every 256 operations). An operation is one replacement and its burst, about
//             2.1 malloc + free pairs.
//   phase     one thread grows a live set of mixed blocks to --phase-mib MiB (default 1,024),
//             frees a random 90% of it, then idles for --frames frames (default 50) of 20 ms sleep
//             plus 1,000 free + malloc pairs, reading its RSS (/proc/self/statm) at every frame end.
//             When the process has strata_malloc_end_frame (libstrata_malloc.so), it is called at
//             each frame end with a budget of --frame-us microseconds (default 500; --no-end-frame:
//             never, as in a program without a frame loop). Timed: the growth and
//             the shrink (an operation is one block: its malloc and its free); the RSS after growth, after
//             the shrink, at every frame and at the end are reported too (JSONL: rss_frames_kib,
//             final_rss_kib). One repeat unless --repeats says otherwise. Not in the default set, nor in
//             peers.sh's suite. --side-calls: through the frames a second thread mallocs a 2-3 MiB
//             block and a 128-512 KiB one, writes the first byte of each and frees it, over and
//             over, and the worst and the 99.9th-percentile time of those pairs are reported per
//             size (JSONL: side_calls, side_big_p999_us, side_big_max_us, side_mid_p999_us,
//             side_mid_max_us): how long the frames' purges make another thread wait.
// Each repeat warms up first (slots filled, a quarter of the operations untimed), then times N
// operations per thread (an operation is one malloc + one free; in prodcons one block passed on, in
// handoff one block per writer).
// Reported: ns/op = wall time / N, the time one thread spends per operation (median over repeats);
// Mops/s over all threads; minor page faults in the timed window of the last repeat (ru_minflt,
// whole process) and per million operations; the process's peak RSS (ru_maxrss) at the end. Run one
// workload per process when comparing peak RSS (peers.sh does).
#include <dlfcn.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <barrier>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <memory>
#include <mutex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "list_arg.hpp"

namespace {

using clock_type = std::chrono::steady_clock;

struct options {
    std::vector<std::string> workloads{"local", "prodcons", "larson"};
    std::uint64_t ops = 0; // per thread; 0: the workload's default
    unsigned threads = 0;  // 0: the workload's default
    unsigned repeats = 0;  // 0: the workload's default (5; phase: 1)
    unsigned rounds = 0;   // 0: the workload's default (larson: 4; threadchurn: 50)
    std::uint64_t phase_mib = 1024;
    unsigned frames = 50;
    unsigned frame_us = 500; // phase: the budget given to strata_malloc_end_frame each frame
    bool end_frame = true;   // phase: whether it is called at all (--no-end-frame)
    bool side_calls = false; // phase: a second thread's big malloc + free pairs through the frames
    std::uint64_t seed = 1;
    std::string label = "malloc";
    std::string jsonl;
};

// xorshift64*: cheap enough not to dominate a malloc + free pair, and seeded per thread.
struct rng {
    std::uint64_t state;
    explicit rng(std::uint64_t seed) : state(seed * 0x9E3779B97F4A7C15ull | 1) {}
    std::uint64_t next() {
        state ^= state >> 12;
        state ^= state << 25;
        state ^= state >> 27;
        return state * 0x2545F4914F6CDD1Dull;
    }
    std::size_t below(std::size_t n) { return static_cast<std::size_t>((next() >> 32) % n); }
};

// malloc, or a message and abort: a workload never runs on with a null block.
void* checked_malloc(std::size_t size) {
    void* p = std::malloc(size);
    if (p == nullptr) {
        std::fprintf(stderr, "strata-mt: malloc(%zu) returned null\n", size);
        std::abort();
    }
    return p;
}

std::size_t block_size(rng& r) {
    const std::size_t pick = r.below(100);
    if (pick < 60) return 8 + r.below(121);
    if (pick < 90) return 128 + r.below(897);
    if (pick < 99) return 1024 + r.below(7169);
    return 8192 + r.below(57345);
}

// Writes both ends, so the pages are touched and the call cannot be optimized away.
void* make_block(rng& r) {
    const std::size_t size = block_size(r);
    auto* p = static_cast<unsigned char*>(checked_malloc(size));
    p[0] = static_cast<unsigned char>(size);
    p[size - 1] = static_cast<unsigned char>(size >> 8);
    return p;
}

long minor_faults() {
    rusage u{};
    getrusage(RUSAGE_SELF, &u);
    return u.ru_minflt;
}

long peak_rss_kib() {
    rusage u{};
    getrusage(RUSAGE_SELF, &u);
    return u.ru_maxrss;
}

struct sample {
    double seconds = 0;
    long faults = 0;
};

// The timed window of one repeat: the workload's threads meet at `start` after their warm-up and at
// `stop` when done; the caller's thread is the third party to both, reads the clock and the fault
// counter, and lets them go.
struct window {
    std::barrier<> start, stop;
    explicit window(unsigned parties) : start(parties + 1), stop(parties + 1) {}
    sample measure() {
        start.arrive_and_wait();
        const long f0 = minor_faults();
        const auto t0 = clock_type::now();
        stop.arrive_and_wait();
        const auto t1 = clock_type::now();
        return {std::chrono::duration<double>(t1 - t0).count(), minor_faults() - f0};
    }
};

// Runs worker(t, w) on `threads` fresh threads (t = 0, 1, ...) and returns the window they meet in.
template <class Worker>
sample run_workers(unsigned threads, Worker&& worker) {
    window w(threads);
    std::vector<std::thread> pool;
    for (unsigned t = 0; t < threads; ++t)
        pool.emplace_back([&, t] { worker(t, w); });
    const sample s = w.measure();
    for (auto& th : pool)
        th.join();
    return s;
}

// One thread's part of the window: churn(ops / 4) untimed, then churn(ops) between start and stop.
template <class Churn>
void warm_then_time(window& w, Churn&& churn, std::uint64_t ops) {
    churn(ops / 4);
    w.start.arrive_and_wait();
    churn(ops);
    w.stop.arrive_and_wait();
}

// T threads, each replacing random slots of its own array with blocks from `make` (local, big).
sample run_own_slots(unsigned threads, std::uint64_t ops, std::uint64_t seed, std::size_t slots,
                     void* (*make)(rng&)) {
    return run_workers(threads, [&](unsigned t, window& w) {
        rng r(seed * 131 + t);
        std::vector<void*> mine(slots);
        for (auto& p : mine)
            p = make(r);
        auto churn = [&](std::uint64_t n) {
            for (std::uint64_t i = 0; i < n; ++i) {
                const std::size_t k = r.below(slots);
                std::free(mine[k]);
                mine[k] = make(r);
            }
        };
        warm_then_time(w, churn, ops);
        for (void* p : mine)
            std::free(p);
    });
}

// A 1-8 MiB block with a byte written on every page.
void* make_big_block(rng& r) {
    const std::size_t size = (std::size_t{1} << 20) + r.below(std::size_t{7} << 20);
    auto* p = static_cast<unsigned char*>(checked_malloc(size));
    for (std::size_t at = 0; at < size; at += 4096)
        p[at] = static_cast<unsigned char>(at >> 12);
    p[size - 1] = 1;
    return p;
}

// A single-producer single-consumer ring of block pointers. Waiting yields: on a machine with fewer
// free cores than threads a spinning waiter would steal the other side's time slice.
class ring {
public:
    static constexpr std::size_t capacity = 1024;
    void push(void* p) {
        const std::size_t h = head_.load(std::memory_order_relaxed);
        while (h - tail_.load(std::memory_order_acquire) == capacity)
            std::this_thread::yield();
        cells_[h % capacity] = p;
        head_.store(h + 1, std::memory_order_release);
    }
    void* pop() {
        const std::size_t t = tail_.load(std::memory_order_relaxed);
        while (head_.load(std::memory_order_acquire) == t)
            std::this_thread::yield();
        void* p = cells_[t % capacity];
        tail_.store(t + 1, std::memory_order_release);
        return p;
    }

    // Returns: false when the ring is full (the caller keeps the block).
    bool try_push(void* p) {
        const std::size_t h = head_.load(std::memory_order_relaxed);
        if (h - tail_.load(std::memory_order_acquire) == capacity) return false;
        cells_[h % capacity] = p;
        head_.store(h + 1, std::memory_order_release);
        return true;
    }
    // Returns: the next block, or null when the ring is empty.
    void* try_pop() {
        const std::size_t t = tail_.load(std::memory_order_relaxed);
        if (head_.load(std::memory_order_acquire) == t) return nullptr;
        void* p = cells_[t % capacity];
        tail_.store(t + 1, std::memory_order_release);
        return p;
    }

private:
    alignas(64) std::atomic<std::size_t> head_{0};
    alignas(64) std::atomic<std::size_t> tail_{0};
    alignas(64) void* cells_[capacity] = {};
};

// Thread 0 produces, thread 1 consumes.
sample run_prodcons(std::uint64_t ops, std::uint64_t seed) {
    auto q = std::make_unique<ring>();
    return run_workers(2, [&](unsigned t, window& w) {
        if (t == 0) {
            rng r(seed * 131);
            auto produce = [&](std::uint64_t n) {
                for (std::uint64_t i = 0; i < n; ++i)
                    q->push(make_block(r));
            };
            warm_then_time(w, produce, ops);
            return;
        }
        std::uint64_t sum = 0;
        auto drain = [&](std::uint64_t n) {
            for (std::uint64_t i = 0; i < n; ++i) {
                auto* p = static_cast<unsigned char*>(q->pop());
                sum += p[0];
                std::free(p);
            }
        };
        warm_then_time(w, drain, ops);
        if (sum == 1) std::puts(""); // keeps the reads
    });
}

// Threads 0 .. writers-1 write batches, the others read them (handoff).
sample run_handoff(unsigned threads, std::uint64_t ops, std::uint64_t seed) {
    constexpr std::size_t per_batch = 64, max_batches = 256;
    struct batch {
        batch* next;
        void* blocks[per_batch];
    };
    const unsigned writers = std::max(1u, threads / 2), readers = std::max(1u, threads - writers);
    std::mutex m;
    std::condition_variable changed;
    batch* stack = nullptr;
    std::size_t depth = 0, popped = 0; // popped: batches taken since the start (all phases)
    return run_workers(writers + readers, [&](unsigned t, window& w) {
        if (t < writers) {
            rng r(seed * 131 + t);
            auto write = [&](std::uint64_t n) {
                for (std::uint64_t i = 0; i < n / per_batch; ++i) {
                    auto* b = static_cast<batch*>(checked_malloc(sizeof(batch)));
                    for (void*& p : b->blocks) {
                        const std::size_t size = 8 + r.below(121);
                        p = checked_malloc(size);
                        std::memset(p, static_cast<int>(size), size);
                    }
                    std::unique_lock lock(m);
                    changed.wait(lock, [&] { return depth < max_batches; });
                    b->next = stack;
                    stack = b;
                    ++depth;
                    changed.notify_all();
                }
            };
            warm_then_time(w, write, ops);
            return;
        }
        // Each phase ends once every batch the writers make in it is taken: the readers know the
        // running total, so no batch of the next phase is taken early.
        std::size_t target = 0;
        auto read = [&](std::uint64_t n) {
            target += writers * (n / per_batch);
            for (;;) {
                batch* b = nullptr;
                {
                    std::unique_lock lock(m);
                    changed.wait(lock, [&] { return stack != nullptr || popped == target; });
                    if (stack == nullptr) break; // popped == target: the phase is done
                    b = stack;
                    stack = b->next;
                    --depth;
                    ++popped;
                    changed.notify_all();
                }
                for (void* p : b->blocks)
                    std::free(p);
                std::free(b);
            }
        };
        warm_then_time(w, read, ops);
    });
}

sample run_larson(unsigned threads, std::uint64_t ops, unsigned rounds, std::uint64_t seed) {
    constexpr std::size_t slots = 8192;
    std::vector<std::atomic<void*>> shared(slots);
    rng setup(seed);
    for (auto& s : shared)
        s.store(make_block(setup), std::memory_order_relaxed);
    // One round: `threads` fresh threads replace random shared slots, then exit, leaving their
    // blocks behind for the next round's threads to free.
    auto round = [&](std::uint64_t n, unsigned round_no) {
        std::vector<std::thread> pool;
        for (unsigned t = 0; t < threads; ++t)
            pool.emplace_back([&, t] {
                rng r(seed * 7919 + round_no * 131 + t);
                for (std::uint64_t i = 0; i < n; ++i) {
                    void* fresh = make_block(r);
                    std::free(shared[r.below(slots)].exchange(fresh, std::memory_order_acq_rel));
                }
            });
        for (auto& th : pool)
            th.join();
    };
    round(ops / 4, 0);
    const long f0 = minor_faults();
    const auto t0 = clock_type::now();
    for (unsigned k = 1; k <= rounds; ++k)
        round(ops / rounds, k);
    const auto t1 = clock_type::now();
    const sample s{std::chrono::duration<double>(t1 - t0).count(), minor_faults() - f0};
    for (auto& slot : shared)
        std::free(slot.load(std::memory_order_relaxed));
    return s;
}

// The original larson's block: 8-1,000 bytes, the first two written.
void* make_relay_block(rng& r) {
    const std::size_t size = 8 + r.below(993);
    auto* p = static_cast<unsigned char*>(checked_malloc(size));
    p[0] = 'a';
    p[1] = 'b';
    return p;
}

sample run_relay(unsigned lanes, std::uint64_t ops, std::uint64_t seed) {
    constexpr std::size_t slots = 5'000;
    constexpr std::uint64_t per_thread = 250'000;
    std::vector<void*> chunks(std::size_t{lanes} * slots);
    rng setup(seed);
    for (auto& p : chunks)
        p = make_relay_block(setup);
    // Each lane runs n replacements on its chunk, per_thread at a time, each stint on a fresh thread.
    auto run_lanes = [&](std::uint64_t n, unsigned pass) {
        std::vector<std::thread> drivers;
        for (unsigned lane = 0; lane < lanes; ++lane)
            drivers.emplace_back([&, lane] {
                void** chunk = chunks.data() + std::size_t{lane} * slots;
                for (std::uint64_t done = 0, stint = 0; done < n; done += per_thread, ++stint)
                    std::thread([&, stint] {
                        rng r(seed * 7919 + pass * 1'000'003 + lane * 131 + stint);
                        const std::uint64_t m = std::min(per_thread, n - done);
                        for (std::uint64_t i = 0; i < m; ++i) {
                            const std::size_t k = r.below(slots);
                            std::free(chunk[k]);
                            chunk[k] = make_relay_block(r);
                        }
                    }).join();
            });
        for (auto& d : drivers)
            d.join();
    };
    run_lanes(ops / 4, 0);
    const long f0 = minor_faults();
    const auto t0 = clock_type::now();
    run_lanes(ops, 1);
    const auto t1 = clock_type::now();
    const sample s{std::chrono::duration<double>(t1 - t0).count(), minor_faults() - f0};
    for (void* p : chunks)
        std::free(p);
    return s;
}

// ---- the program-kind workloads (tight ... phase): every page of every block is written ----

// One byte on every 4 KiB page of [p + from, p + to), and the last byte: the pages are really touched.
void touch(void* block, std::size_t from, std::size_t to) {
    auto* p = static_cast<unsigned char*>(block);
    if (to <= from) return;
    for (std::size_t at = from; at < to; at += 4096)
        p[at] = static_cast<unsigned char>(at >> 12);
    p[to - 1] = static_cast<unsigned char>(to);
}

void* make_touched(std::size_t size) {
    void* p = checked_malloc(size);
    touch(p, 0, size);
    return p;
}

// A buffer written in full (memset), as a decoder or a big scratch buffer would be.
void* make_filled(std::size_t size) {
    void* p = checked_malloc(size);
    std::memset(p, static_cast<int>(size & 0xff), size);
    return p;
}

// A single-threaded timed window.
template <class F>
sample timed(F&& body) {
    const long f0 = minor_faults();
    const auto t0 = clock_type::now();
    body();
    const auto t1 = clock_type::now();
    return {std::chrono::duration<double>(t1 - t0).count(), minor_faults() - f0};
}

sample run_tight(std::uint64_t ops, std::uint64_t seed) {
    rng r(seed * 131);
    constexpr std::size_t working = 64;
    auto small = [&] { return make_touched(16 + r.below(241)); };
    void* held[working];
    for (auto& p : held)
        p = small();
    void* burst[8];
    auto churn = [&](std::uint64_t n) {
        for (std::uint64_t done = 0; done < n;) {
            const std::uint64_t x = r.next();
            if ((x & 7) == 0) { // a random block of the working set replaced: not LIFO
                const std::size_t k = (x >> 8) % working;
                std::free(held[k]);
                held[k] = small();
                ++done;
            } else { // a burst of 1-8 blocks freed newest first
                const std::size_t depth = 1 + ((x >> 3) & 7);
                for (std::size_t i = 0; i < depth; ++i)
                    burst[i] = small();
                for (std::size_t i = depth; i-- > 0;)
                    std::free(burst[i]);
                done += depth;
            }
        }
    };
    churn(ops / 4);
    const sample s = timed([&] { churn(ops); });
    for (void* p : held)
        std::free(p);
    return s;
}

sample run_falseshare(unsigned threads, std::uint64_t ops, std::uint64_t seed) {
    constexpr std::size_t batch = 64;
    constexpr unsigned writes = 32;
    return run_workers(threads, [&](unsigned t, window& w) {
        rng r(seed * 131 + t);
        volatile unsigned char* b[batch];
        auto work = [&](std::uint64_t n) {
            for (std::uint64_t done = 0; done < n; done += batch) {
                for (auto& p : b)
                    p = static_cast<volatile unsigned char*>(make_touched(8 + r.below(57)));
                for (unsigned k = 0; k < writes; ++k)
                    for (auto* p : b)
                        p[k & 7] = static_cast<unsigned char>(p[k & 7] + 1);
                for (auto* p : b)
                    std::free(const_cast<unsigned char*>(p));
            }
        };
        warm_then_time(w, work, ops);
    });
}

sample run_threadchurn(unsigned threads, std::uint64_t ops, unsigned rounds, std::uint64_t seed) {
    constexpr std::size_t slots = 256;
    const std::uint64_t per = std::max<std::uint64_t>(1, ops / rounds);
    // handed[t]: what thread t of the last round left; thread (t + T - 1) % T of this round frees it.
    std::vector<std::vector<void*>> handed(threads), next(threads);
    auto round = [&](unsigned round_no) {
        std::vector<std::thread> pool;
        for (unsigned t = 0; t < threads; ++t)
            pool.emplace_back([&, t] {
                rng r(seed * 7919 + round_no * 131 + t);
                auto& inherited = handed[(t + 1) % threads];
                for (void* p : inherited)
                    std::free(p);
                inherited.clear();
                std::vector<void*> mine(slots);
                for (auto& p : mine)
                    p = make_touched(block_size(r));
                void* bufs[2] = {nullptr, nullptr};
                for (std::uint64_t i = 0; i < per; ++i) {
                    if (r.below(200) == 0) {
                        const std::size_t size =
                            (std::size_t{256} << 10) + r.below((std::size_t{15} << 18) + 1);
                        std::free(bufs[i & 1]);
                        bufs[i & 1] = make_filled(size);
                    } else {
                        const std::size_t k = r.below(slots);
                        std::free(mine[k]);
                        mine[k] = make_touched(block_size(r));
                    }
                }
                auto& out = next[t];
                for (std::size_t k = 0; k < slots; ++k) {
                    if (k % 2 == 0)
                        std::free(mine[k]);
                    else
                        out.push_back(mine[k]);
                }
                for (void* b : bufs)
                    if (b != nullptr) out.push_back(b);
            });
        for (auto& th : pool)
            th.join();
        std::swap(handed, next);
    };
    round(0); // warm-up: leaves the first hand-over
    const sample s = timed([&] {
        for (unsigned k = 1; k <= rounds; ++k)
            round(k);
    });
    for (auto& v : handed)
        for (void* p : v)
            std::free(p);
    return s;
}

sample run_bigloop(std::uint64_t ops, std::uint64_t seed) {
    rng r(seed * 131);
    auto big = [&] { return make_filled((std::size_t{2} << 20) + r.below((std::size_t{23} << 20) + 1)); };
    void* live[2] = {big(), big()};
    auto loop = [&](std::uint64_t n) {
        for (std::uint64_t i = 0; i < n; ++i) {
            std::free(live[i & 1]);
            live[i & 1] = big();
        }
    };
    loop(std::max<std::uint64_t>(2, ops / 4));
    const sample s = timed([&] { loop(ops); });
    std::free(live[0]);
    std::free(live[1]);
    return s;
}

sample run_realloc(std::uint64_t ops, std::uint64_t seed) {
    struct vec {
        void* p = nullptr;
        std::size_t size = 0, cap = 0;
    };
    rng r(seed * 131);
    vec v[8];
    auto step = [&](vec& g) {
        if (g.p == nullptr) {
            g.cap = (std::size_t{1} << 20) + r.below((std::size_t{3} << 20) + 1);
            g.size = 16;
            g.p = make_touched(16);
        } else if (g.size >= g.cap) {
            std::free(g.p);
            g.p = nullptr;
        } else {
            const std::size_t grown = std::min(g.cap, g.size + g.size / 2);
            void* q = std::realloc(g.p, grown);
            if (q == nullptr) {
                std::fprintf(stderr, "strata-mt: realloc(%zu) returned null\n", grown);
                std::abort();
            }
            touch(q, g.size, grown);
            g.p = q;
            g.size = grown;
        }
    };
    auto run = [&](std::uint64_t n) {
        for (std::uint64_t i = 0; i < n; ++i)
            step(v[r.below(8)]);
    };
    run(ops / 4);
    const sample s = timed([&] { run(ops); });
    for (auto& g : v)
        std::free(g.p);
    return s;
}

sample run_growbuf(std::uint64_t ops, std::uint64_t seed) {
    rng r(seed * 131);
    constexpr std::size_t step = std::size_t{1} << 20;
    std::vector<void*> small(4096);
    for (auto& b : small)
        b = make_touched(16 + r.below(497));
    unsigned char* buf = nullptr;
    std::size_t size = 0, cap = 0;
    auto one = [&] {
        if (size >= cap) {
            // Each MiB still holds what was written when it was the new one, across every move.
            for (std::size_t k = 0; buf != nullptr && k < size / step; ++k)
                if (buf[k * step] != static_cast<unsigned char>(k + 1) ||
                    buf[k * step + step - 1] != static_cast<unsigned char>(k + 1)) {
                    std::fprintf(stderr, "strata-mt: growbuf lost its contents\n");
                    std::abort();
                }
            std::free(buf);
            buf = nullptr;
            size = 0;
            cap = (std::size_t{64} + r.below(193)) * step;
        }
        auto* q = static_cast<unsigned char*>(std::realloc(buf, size + step));
        if (q == nullptr) {
            std::fprintf(stderr, "strata-mt: realloc(%zu) returned null\n", size + step);
            std::abort();
        }
        buf = q;
        size += step;
        std::memset(buf + size - step, static_cast<int>(size >> 20), step);
        for (int i = 0; i < 16; ++i) {
            void*& b = small[r.below(small.size())];
            std::free(b);
            b = make_touched(16 + r.below(497));
        }
    };
    for (std::uint64_t i = 0; i < ops / 4; ++i)
        one();
    const sample s = timed([&] {
        for (std::uint64_t i = 0; i < ops; ++i)
            one();
    });
    std::free(buf);
    for (void* b : small)
        std::free(b);
    return s;
}

std::size_t leaky_size(rng& r) {
    const std::size_t pick = r.below(100);
    if (pick < 70) return 16 + r.below(241);
    if (pick < 95) return 256 + r.below(3841);
    return 4096 + r.below(12289);
}

sample run_leaky(unsigned threads, std::uint64_t ops, std::uint64_t seed) {
    constexpr std::size_t slots = 4096;
    return run_workers(threads, [&](unsigned t, window& w) {
        rng r(seed * 131 + t);
        std::vector<void*> mine(slots), leaked;
        leaked.reserve(ops / 8 + ops / 32);
        for (auto& p : mine)
            p = make_touched(leaky_size(r));
        auto churn = [&](std::uint64_t n) {
            for (std::uint64_t i = 0; i < n; ++i) {
                void* p = make_touched(leaky_size(r));
                if (r.below(10) == 0) {
                    leaked.push_back(p);
                } else {
                    const std::size_t k = r.below(slots);
                    std::free(mine[k]);
                    mine[k] = p;
                }
            }
        };
        warm_then_time(w, churn, ops);
        for (void* p : mine)
            std::free(p);
        for (void* p : leaked)
            std::free(p);
    });
}

std::size_t trickle_size(rng& r) {
    const std::size_t pick = r.below(100);
    if (pick < 55) return 16 + r.below(49);
    if (pick < 99) { // log-uniform 65 B-4 KiB
        const double u = static_cast<double>(r.next() >> 11) * 0x1.0p-53;
        return std::clamp<std::size_t>(static_cast<std::size_t>(65.0 * std::exp2(5.977 * u)), 65, 4096);
    }
    return 61952; // 60.5 KiB
}

sample run_trickle(std::uint64_t ops, std::uint64_t seed) {
    constexpr std::size_t slots = 24'576;
    rng r(seed * 131);
    std::vector<void*> mine(slots);
    for (auto& p : mine)
        p = make_touched(trickle_size(r));
    struct pending {
        void* p;
        std::uint64_t dies_at;
    };
    std::vector<pending> buffers;
    std::uint64_t clock = 0;
    auto churn = [&](std::uint64_t n) {
        for (std::uint64_t i = 0; i < n; ++i, ++clock) {
            const std::size_t k = r.below(slots);
            std::free(mine[k]);
            mine[k] = make_touched(trickle_size(r));
            if (r.below(2000) == 0)
                buffers.push_back({make_filled((std::size_t{1} << 20) + r.below((std::size_t{7} << 20) + 1)),
                                   clock + 1 + r.below(64)});
            for (std::size_t b = 0; b < buffers.size();) {
                if (buffers[b].dies_at <= clock) {
                    std::free(buffers[b].p);
                    buffers[b] = buffers.back();
                    buffers.pop_back();
                } else {
                    ++b;
                }
            }
        }
    };
    churn(ops / 4);
    const sample s = timed([&] { churn(ops); });
    for (auto& b : buffers)
        std::free(b.p);
    for (void* p : mine)
        std::free(p);
    return s;
}

std::size_t xchurn_size(rng& r) {
    const std::size_t pick = r.below(1000);
    if (pick < 100) return 32769; // 32 KiB + 1 byte
    if (pick < 640) return 8 + r.below(121);
    return 129 + r.below(896);
}

sample run_xchurn32k(unsigned threads, std::uint64_t ops, std::uint64_t seed) {
    constexpr std::size_t slots = 10'000;
    // inbox[t]: the blocks thread (t + T - 1) % T hands thread t to free.
    std::vector<std::unique_ptr<ring>> inbox;
    for (unsigned t = 0; t < threads; ++t)
        inbox.push_back(std::make_unique<ring>());
    return run_workers(threads, [&](unsigned t, window& w) {
        rng r(seed * 131 + t);
        ring& mine_in = *inbox[t];
        ring& neighbour = *inbox[(t + 1) % threads];
        std::vector<void*> mine(slots);
        for (auto& p : mine)
            p = make_touched(xchurn_size(r));
        auto drain = [&] {
            while (void* p = mine_in.try_pop())
                std::free(p);
        };
        auto churn = [&](std::uint64_t n) {
            for (std::uint64_t i = 0; i < n; ++i) {
                const std::size_t k = r.below(slots);
                void* victim = mine[k];
                mine[k] = make_touched(xchurn_size(r));
                if (r.below(1000) >= 75 || !neighbour.try_push(victim)) std::free(victim);
                if ((i & 15) == 0) drain();
            }
            drain();
        };
        warm_then_time(w, churn, ops);
        drain(); // past stop: nobody hands anything on any more
        for (void* p : mine)
            std::free(p);
    });
}

std::size_t tilesim_size(rng& r) {
    const std::size_t pick = r.below(100);
    if (pick < 91) return 8 + r.below(57); // 8-64 B
    return 65 + r.below(4032);             // 65 B-4 KiB
}

sample run_tilesim(unsigned threads, std::uint64_t ops, std::uint64_t seed) {
    constexpr std::size_t slots = 16'384;
    return run_workers(threads, [&](unsigned t, window& w) {
        rng r(seed * 977 + t);
        std::vector<void*> mine(slots);
        for (auto& p : mine)
            p = make_touched(tilesim_size(r));
        void* buffer = nullptr; // at most one 3-4 MiB buffer per thread, freed a few ops later
        std::uint64_t buffer_dies = 0;
        auto churn = [&](std::uint64_t n) {
            for (std::uint64_t i = 0; i < n; ++i) {
                const std::size_t k = r.below(slots);
                std::free(mine[k]);
                mine[k] = make_touched(tilesim_size(r));
                if (buffer == nullptr && r.below(1000) == 0) {
                    buffer = make_filled((std::size_t{3} << 20) + r.below((std::size_t{1} << 20) + 1));
                    buffer_dies = i + 1 + r.below(32);
                } else if (buffer != nullptr && i >= buffer_dies) {
                    std::free(buffer);
                    buffer = nullptr;
                }
            }
        };
        warm_then_time(w, churn, ops);
        std::free(buffer);
        for (void* p : mine)
            std::free(p);
    });
}

// Blocks one rts thread hands another to free, a batch at a time.
struct rts_inbox {
    std::mutex lock;
    std::vector<void*> blocks;
};

sample run_rts(unsigned threads, std::uint64_t ops, std::uint64_t seed) {
    constexpr std::size_t slots = 4096;
    constexpr std::size_t batch = 64;
    std::vector<std::unique_ptr<rts_inbox>> boxes;
    for (unsigned t = 0; t < threads; ++t)
        boxes.push_back(std::make_unique<rts_inbox>());
    std::atomic<unsigned> finished{0};
    return run_workers(threads, [&](unsigned t, window& w) {
        rng r(seed * 613 + t);
        std::vector<void*> mine(slots), out, in;
        out.reserve(batch);
        for (auto& p : mine)
            p = make_touched(16 + r.below(241));
        auto hand_on = [&] { // to a random other thread
            rts_inbox& to = *boxes[(t + 1 + r.below(threads - 1)) % threads];
            const std::lock_guard g(to.lock);
            to.blocks.insert(to.blocks.end(), out.begin(), out.end());
            out.clear();
        };
        auto drain = [&] {
            {
                const std::lock_guard g(boxes[t]->lock);
                in.swap(boxes[t]->blocks);
            }
            for (void* p : in)
                std::free(p);
            in.clear();
        };
        auto churn = [&](std::uint64_t n) {
            void* burst[8];
            for (std::uint64_t i = 0; i < n; ++i) {
                const std::size_t k = r.below(slots);
                void* victim = mine[k];
                mine[k] = make_touched(16 + r.below(241)); // 16-256 B
                if (r.below(100) < 12) {
                    out.push_back(victim);
                    if (out.size() == batch) hand_on();
                } else {
                    std::free(victim);
                }
                if (r.below(4) == 0) { // a burst of scratch blocks, freed newest first
                    const std::size_t m = 1 + r.below(8);
                    for (std::size_t j = 0; j < m; ++j)
                        burst[j] = make_touched(16 + r.below(113)); // 16-128 B
                    for (std::size_t j = m; j-- > 0;)
                        std::free(burst[j]);
                }
                if ((i & 255) == 255) drain();
            }
        };
        warm_then_time(w, churn, ops);
        if (!out.empty()) hand_on();
        // Past stop: every thread drains until the last one has handed its batch on.
        finished.fetch_add(1, std::memory_order_acq_rel);
        while (finished.load(std::memory_order_acquire) < threads) {
            drain();
            std::this_thread::yield();
        }
        drain();
        for (void* p : mine)
            std::free(p);
    });
}

long resident_kib() {
    std::ifstream statm("/proc/self/statm");
    long size = 0, resident = 0;
    statm >> size >> resident;
    return resident * (sysconf(_SC_PAGESIZE) / 1024);
}

// Times of calls in 0.1 us steps up to 10 ms, and the worst: a fixed table, so that recording a
// call allocates nothing (the workload measures the malloc's memory too).
struct latency_table {
    static constexpr std::size_t steps = 100000;
    std::vector<std::uint32_t> count; // empty until start(): a phase run without side calls pays nothing
    std::uint64_t calls = 0;
    double worst_us = 0;
    void start() { *this = latency_table{std::vector<std::uint32_t>(steps + 1)}; }
    void add(double us) {
        ++count[std::min<std::size_t>(steps, static_cast<std::size_t>(us * 10))];
        ++calls;
        worst_us = std::max(worst_us, us);
    }
    // Returns: the time (us, to the step) under which the share q of the calls took.
    [[nodiscard]] double quantile(double q) const {
        const auto want = static_cast<std::uint64_t>(q * static_cast<double>(calls));
        std::uint64_t seen = 0;
        for (std::size_t i = 0; i < count.size(); ++i)
            if ((seen += count[i]) > want) return static_cast<double>(i + 1) / 10;
        return worst_us;
    }
};

struct phase_report {
    std::uint64_t blocks = 0; // allocations in the growth
    long grown_kib = 0, shrunk_kib = 0, final_kib = 0;
    std::vector<long> frames_kib;
    bool end_frame = false;
    latency_table side_big, side_mid; // the second thread's pairs (--side-calls)
};

using end_frame_fn = std::size_t (*)(unsigned);

end_frame_fn find_end_frame() {
    void* sym = dlsym(RTLD_DEFAULT, "strata_malloc_end_frame");
    end_frame_fn fn = nullptr;
    static_assert(sizeof fn == sizeof sym);
    std::memcpy(&fn, &sym, sizeof fn);
    return fn;
}

sample run_phase(std::uint64_t mib, unsigned frames, unsigned frame_us, bool call_end_frame, bool side_calls,
                 std::uint64_t seed, phase_report& out) {
    rng r(seed * 131);
    const std::uint64_t target = mib << 20;
    std::vector<void*> blocks;
    std::vector<void*> kept;
    const sample s = timed([&] {
        for (std::uint64_t live = 0; live < target;) {
            const std::size_t size = block_size(r);
            blocks.push_back(make_touched(size));
            live += size;
        }
        out.grown_kib = resident_kib(); // inside the window: a read of /proc, next to the growth's cost
        for (void* p : blocks) {
            if (r.below(10) == 0)
                kept.push_back(p);
            else
                std::free(p);
        }
    });
    out.blocks = blocks.size();
    blocks = {};
    out.shrunk_kib = resident_kib();
    const end_frame_fn end_frame = call_end_frame ? find_end_frame() : nullptr;
    out.end_frame = end_frame != nullptr;
    out.frames_kib.clear();
    if (side_calls) {
        out.side_big.start();
        out.side_mid.start();
    }
    std::atomic<bool> idle_done{false};
    std::thread side;
    if (side_calls)
        side = std::thread([&] {
            rng sr(seed * 137);
            const auto pair = [](std::size_t size) {
                const auto t0 = clock_type::now();
                auto* p = static_cast<volatile char*>(std::malloc(size));
                if (p != nullptr) p[0] = 1;
                std::free(const_cast<char*>(p));
                return std::chrono::duration<double, std::micro>(clock_type::now() - t0).count();
            };
            while (!idle_done.load(std::memory_order_relaxed)) {
                out.side_big.add(pair((std::size_t{2} << 20) + sr.below(std::size_t{1} << 20)));
                out.side_mid.add(pair((std::size_t{128} << 10) + sr.below(std::size_t{384} << 10)));
            }
        });
    for (unsigned f = 0; f < frames; ++f) {
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
        for (int i = 0; i < 1000 && !kept.empty(); ++i) {
            const std::size_t k = r.below(kept.size());
            std::free(kept[k]);
            kept[k] = make_touched(block_size(r));
        }
        if (end_frame != nullptr) (void)end_frame(frame_us);
        out.frames_kib.push_back(resident_kib());
    }
    idle_done.store(true);
    if (side.joinable()) side.join();
    out.final_kib = resident_kib();
    for (void* p : kept)
        std::free(p);
    return s;
}

using strata_bench::split_list;

int usage() {
    std::fputs(
        "usage: strata-mt [--workload NAME,...] [--ops N] [--threads T] [--repeats R] [--rounds K]\n"
        "                 [--phase-mib M] [--frames F] [--frame-us U] [--no-end-frame] [--side-calls] "
        "[--label NAME]\n"
        "                 [--jsonl FILE] [--seed S]\n"
        "workloads: local prodcons larson (the default set), handoff relay big tight falseshare threadchurn "
        "bigloop\n"
        "           realloc growbuf leaky trickle xchurn32k tilesim rts phase\n",
        stderr);
    return 2;
}

} // namespace

int main(int argc, char** argv) {
    options o;
    for (int i = 1; i < argc; ++i) {
        const std::string a = argv[i];
        auto value = [&]() -> std::string {
            if (i + 1 >= argc) {
                std::fprintf(stderr, "strata-mt: %s needs a value\n", a.c_str());
                std::exit(usage());
            }
            return argv[++i];
        };
        if (a == "--workload")
            o.workloads = split_list(value());
        else if (a == "--ops")
            o.ops = std::stoull(value());
        else if (a == "--threads")
            o.threads = static_cast<unsigned>(std::stoul(value()));
        else if (a == "--repeats")
            o.repeats = std::max(1u, static_cast<unsigned>(std::stoul(value())));
        else if (a == "--rounds")
            o.rounds = std::max(1u, static_cast<unsigned>(std::stoul(value())));
        else if (a == "--phase-mib")
            o.phase_mib = std::max<std::uint64_t>(1, std::stoull(value()));
        else if (a == "--frames")
            o.frames = static_cast<unsigned>(std::stoul(value()));
        else if (a == "--frame-us")
            o.frame_us = static_cast<unsigned>(std::stoul(value()));
        else if (a == "--no-end-frame")
            o.end_frame = false;
        else if (a == "--side-calls")
            o.side_calls = true;
        else if (a == "--seed")
            o.seed = std::stoull(value());
        else if (a == "--label")
            o.label = value();
        else if (a == "--jsonl")
            o.jsonl = value();
        else
            return usage();
    }
    std::printf("%-10s %-11s %7s %10s %9s %10s %10s %12s %10s\n", "malloc", "workload", "threads",
                "ops/thread", "ns/op", "Mops/s", "minflt", "flt/1M ops", "peak MiB");
    for (const std::string& name : o.workloads) {
        unsigned threads = 0;
        std::uint64_t ops = 0;
        unsigned repeats = o.repeats ? o.repeats : 5;
        double ops_factor = 0; // total operations = ops * ops_factor; 0: ops * threads
        phase_report phase;
        std::function<sample()> body;
        if (name == "local") {
            threads = o.threads ? o.threads : 2;
            ops = o.ops ? o.ops : 2'000'000;
            body = [&] { return run_own_slots(threads, ops, o.seed, 4096, make_block); };
        } else if (name == "prodcons") {
            threads = 2;
            ops = o.ops ? o.ops : 2'000'000;
            ops_factor = 1; // each block is one operation shared by the pair
            body = [&] { return run_prodcons(ops, o.seed); };
        } else if (name == "handoff") {
            threads = o.threads ? std::max(2u, o.threads) : 4;
            ops = o.ops ? o.ops : 2'000'000;
            ops_factor = threads / 2; // the writers' blocks, each one operation
            body = [&] { return run_handoff(threads, ops, o.seed); };
        } else if (name == "larson") {
            threads = o.threads ? o.threads : 4;
            ops = o.ops ? o.ops : 1'000'000;
            body = [&] { return run_larson(threads, ops, o.rounds ? o.rounds : 4, o.seed); };
        } else if (name == "relay") {
            threads = o.threads ? o.threads : 4;
            ops = o.ops ? o.ops : 2'000'000;
            body = [&] { return run_relay(threads, ops, o.seed); };
        } else if (name == "big") {
            threads = o.threads ? o.threads : 2;
            ops = o.ops ? o.ops : 2'000;
            body = [&] { return run_own_slots(threads, ops, o.seed, 8, make_big_block); };
        } else if (name == "tight") {
            threads = 1;
            ops = o.ops ? o.ops : 20'000'000;
            body = [&] { return run_tight(ops, o.seed); };
        } else if (name == "falseshare") {
            threads = o.threads ? o.threads : 2;
            ops = o.ops ? o.ops : 4'000'000;
            body = [&] { return run_falseshare(threads, ops, o.seed); };
        } else if (name == "threadchurn") {
            threads = o.threads ? o.threads : 4;
            ops = o.ops ? o.ops : 100'000;
            body = [&] { return run_threadchurn(threads, ops, o.rounds ? o.rounds : 50, o.seed); };
        } else if (name == "bigloop") {
            threads = 1;
            ops = o.ops ? o.ops : 200;
            body = [&] { return run_bigloop(ops, o.seed); };
        } else if (name == "realloc") {
            threads = 1;
            ops = o.ops ? o.ops : 50'000;
            body = [&] { return run_realloc(ops, o.seed); };
        } else if (name == "growbuf") {
            threads = 1;
            ops = o.ops ? o.ops : 2'000;
            body = [&] { return run_growbuf(ops, o.seed); };
        } else if (name == "leaky") {
            threads = o.threads ? o.threads : 1;
            ops = o.ops ? o.ops : 1'000'000;
            body = [&] { return run_leaky(threads, ops, o.seed); };
        } else if (name == "trickle") {
            threads = 1;
            ops = o.ops ? o.ops : 2'000'000;
            body = [&] { return run_trickle(ops, o.seed); };
        } else if (name == "xchurn32k") {
            threads = o.threads ? o.threads : 4;
            ops = o.ops ? o.ops : 1'000'000;
            body = [&] { return run_xchurn32k(threads, ops, o.seed); };
        } else if (name == "tilesim") {
            threads = o.threads ? o.threads : 4;
            ops = o.ops ? o.ops : 500'000;
            body = [&] { return run_tilesim(threads, ops, o.seed); };
        } else if (name == "rts") {
            threads = o.threads ? std::max(2u, o.threads) : 4;
            ops = o.ops ? o.ops : 2'000'000;
            body = [&] { return run_rts(threads, ops, o.seed); };
        } else if (name == "phase") {
            threads = 1;
            repeats = o.repeats ? o.repeats : 1;
            body = [&] {
                return run_phase(o.phase_mib, o.frames, o.frame_us, o.end_frame, o.side_calls, o.seed, phase);
            };
        } else {
            std::fprintf(
                stderr,
                "strata-mt: unknown workload '%s' (local, prodcons, handoff, larson, relay, big, "
                "tight, falseshare, "
                "threadchurn, bigloop, realloc, growbuf, leaky, trickle, xchurn32k, tilesim, rts, phase)\n",
                name.c_str());
            return 2;
        }
        std::vector<double> seconds;
        sample last;
        for (unsigned rep = 0; rep < repeats; ++rep) {
            last = body();
            seconds.push_back(last.seconds);
        }
        if (name == "phase") ops = phase.blocks; // known once it ran: the growth's allocations
        // Every thread performs `ops` operations, except in prodcons, which moves `ops` blocks, each
        // one operation shared by the pair, and handoff, where each writer moves `ops` blocks. ns/op is wall
        // time / ops either way.
        const double total_ops = static_cast<double>(ops) * (ops_factor != 0 ? ops_factor : threads);
        std::sort(seconds.begin(), seconds.end());
        const double median_s =
            (seconds[(seconds.size() - 1) / 2] + seconds[seconds.size() / 2]) / 2; // sorted
        const double median_ns = median_s * 1e9 / static_cast<double>(ops);
        const double ops_per_s = total_ops / median_s;
        const double faults_per_m = static_cast<double>(last.faults) * 1e6 / total_ops;
        const long rss = peak_rss_kib();
        std::printf("%-10s %-11s %7u %10llu %9.1f %10.3g %10ld %12.1f %10.1f\n", o.label.c_str(),
                    name.c_str(), threads, static_cast<unsigned long long>(ops), median_ns, ops_per_s / 1e6,
                    last.faults, faults_per_m, static_cast<double>(rss) / 1024.0);
        std::string extra; // phase: the RSS trail
        if (name == "phase") {
            const auto [lo, hi] = std::minmax_element(phase.frames_kib.begin(), phase.frames_kib.end());
            std::printf("%-10s   phase RSS MiB: grown %.1f, shrunk %.1f, frames %.1f-%.1f, final %.1f "
                        "(strata_malloc_end_frame: %s)\n",
                        o.label.c_str(), phase.grown_kib / 1024.0, phase.shrunk_kib / 1024.0,
                        lo == phase.frames_kib.end() ? 0.0 : *lo / 1024.0,
                        hi == phase.frames_kib.end() ? 0.0 : *hi / 1024.0, phase.final_kib / 1024.0,
                        phase.end_frame ? "called"
                        : o.end_frame   ? "absent"
                                        : "not called");
            extra = R"(,"phase_mib":)" + std::to_string(o.phase_mib) + R"(,"grown_rss_kib":)" +
                    std::to_string(phase.grown_kib) + R"(,"shrunk_rss_kib":)" +
                    std::to_string(phase.shrunk_kib) + R"(,"rss_frames_kib":[)";
            for (std::size_t f = 0; f < phase.frames_kib.size(); ++f)
                extra += (f ? "," : "") + std::to_string(phase.frames_kib[f]);
            extra += R"(],"final_rss_kib":)" + std::to_string(phase.final_kib) + R"(,"end_frame":)" +
                     (phase.end_frame ? "true" : "false");
            if (phase.side_big.calls != 0) {
                const latency_table& big = phase.side_big;
                const latency_table& mid = phase.side_mid;
                std::printf(
                    "%-10s   side calls through the frames: %llu pairs of each size; 2-3 MiB p99.9 %.1f us, "
                    "worst %.1f us; 128-512 KiB p99.9 %.1f us, worst %.1f us\n",
                    o.label.c_str(), static_cast<unsigned long long>(big.calls), big.quantile(0.999),
                    big.worst_us, mid.quantile(0.999), mid.worst_us);
                extra += R"(,"side_calls":)" + std::to_string(big.calls) + R"(,"side_big_p999_us":)" +
                         std::to_string(big.quantile(0.999)) + R"(,"side_big_max_us":)" +
                         std::to_string(big.worst_us) + R"(,"side_mid_p999_us":)" +
                         std::to_string(mid.quantile(0.999)) + R"(,"side_mid_max_us":)" +
                         std::to_string(mid.worst_us);
            }
        }
        if (!o.jsonl.empty()) {
            std::ofstream out(o.jsonl, std::ios::app);
            char line[512];
            std::snprintf(line, sizeof line,
                          R"({"malloc":"%s","workload":"%s","threads":%u,"ops_per_thread":%llu,"repeats":%u,)"
                          R"("ns_per_op":%.2f,"ops_per_s":%.0f,"minflt":%ld,"faults_per_mop":%.1f,)"
                          R"("peak_rss_kib":%ld)",
                          o.label.c_str(), name.c_str(), threads, static_cast<unsigned long long>(ops),
                          repeats, median_ns, ops_per_s, last.faults, faults_per_m, rss);
            out << line << extra << "}\n";
        }
        std::fflush(stdout);
    }
    return 0;
}
