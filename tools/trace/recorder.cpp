// libstrata_trace.so: records every heap call of an unmodified program, for strata-lab replay.
//
//   LD_PRELOAD=libstrata_trace.so STRATA_TRACE_OUT=trace.st program args...
//
// It interposes malloc, free, calloc, realloc, aligned_alloc, posix_memalign, memalign, valloc and
// pvalloc (operator new/delete reach them through libstdc++) and forwards each to glibc's own
// entry points (__libc_malloc and friends), so it never calls dlsym and never recurses.
//
// How it stays correct:
// - Every global is constinit: libc and other libraries call malloc before this library's dynamic
//   initializers would run, and such an initializer would wipe the state the first call set up.
// - Ids, not pointers. A pointer -> id table, split in 64 stripes each behind a spinlock, gives each
//   block an id when it is handed out and takes it back when it is freed. The global sequence number
//   is taken inside the stripe lock, so for any block, allocate.seq < free.seq, and a pointer that
//   is freed on one thread and reused on another gets a new id in a later seq.
// - Nothing here allocates through malloc: tables, thread buffers and the zstd context's memory
//   come from mmap / __libc_malloc, thread state lives in initial-exec TLS, and a per-thread
//   "inside the recorder" flag sends any nested call (zstd, pthread_atfork) straight to glibc.
// - Thread buffers (1024 records) are flushed to one zstd stream under a writer lock. Every flush
//   also sweeps the other threads' buffers once the sequence has moved far past their oldest
//   record, so a reader re-sorting by seq needs a bounded window.
// - Exit: a destructor flushes everything and ends the zstd frame; calls after that (other
//   libraries' destructors, threads still running) are written as one small frame each, so none
//   are lost. exec*: the stream is completed before the exec and reopened if it fails. fork: the
//   child writes its own file (OUT.<pid>), the parent's buffers are flushed before the fork.
#include <dlfcn.h>
#include <fcntl.h>
#include <pthread.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdarg>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <new>

#define ZSTD_STATIC_LINKING_ONLY // ZSTD_customMem: zstd must not allocate through the hooked malloc
#include <zstd.h>

#include "strata/core/spinlock.hpp"

#include "trace_format.hpp"

extern "C" {
void* __libc_malloc(std::size_t);
void __libc_free(void*);
void* __libc_calloc(std::size_t, std::size_t);
void* __libc_realloc(void*, std::size_t);
void* __libc_memalign(std::size_t, std::size_t);
void* __libc_valloc(std::size_t);
void* __libc_pvalloc(std::size_t);
}

#define STRATA_TRACE_EXPORT extern "C" __attribute__((visibility("default")))
#define STRATA_TRACE_TLS __attribute__((tls_model("initial-exec"))) thread_local

namespace {

using namespace strata::trace;

// ------------------------------------------------------------------------------------------------
// Small tools that never allocate
// ------------------------------------------------------------------------------------------------

using strata::spinlock; // reset() after fork: only the forking thread exists
using lock_guard = strata::spin_guard;

void* map_pages(std::size_t bytes) noexcept {
    void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    return p == MAP_FAILED ? nullptr : p;
}

std::uint64_t now_ns(clockid_t clock) noexcept {
    timespec ts{};
    clock_gettime(clock, &ts);
    return static_cast<std::uint64_t>(ts.tv_sec) * 1'000'000'000u + static_cast<std::uint64_t>(ts.tv_nsec);
}

void write_all(int fd, const void* data, std::size_t n) noexcept {
    const auto* p = static_cast<const char*>(data);
    while (n > 0) {
        const ssize_t w = ::write(fd, p, n);
        if (w < 0) {
            if (errno == EINTR) continue;
            return; // nothing sensible to do: the program must go on
        }
        p += w;
        n -= static_cast<std::size_t>(w);
    }
}

/// Appends the decimal digits of `v` at `out`; returns the end.
char* put_decimal(char* out, std::uint64_t v) noexcept {
    char digits[24];
    int n = 0;
    do {
        digits[n++] = static_cast<char>('0' + v % 10);
        v /= 10;
    } while (v != 0);
    while (n > 0)
        *out++ = digits[--n];
    return out;
}

// ------------------------------------------------------------------------------------------------
// Pointer -> id table: 64 stripes of linear-probing tables, grown by doubling (mmap).
// ------------------------------------------------------------------------------------------------

struct slot {
    std::uintptr_t key; // 0 = empty
    std::uint64_t id;
};

struct stripe {
    spinlock lock;
    slot* slots = nullptr;
    std::size_t mask = 0; // capacity - 1
    std::size_t used = 0;
    char pad[64 - sizeof(spinlock) - 3 * sizeof(std::size_t)] = {};
};

constexpr std::size_t stripe_count = 64;
constinit stripe g_stripes[stripe_count];

std::size_t hash_ptr(std::uintptr_t p) noexcept {
    std::uint64_t h = p >> 4;
    h ^= h >> 33;
    h *= 0xff51afd7ed558ccdull;
    h ^= h >> 33;
    return static_cast<std::size_t>(h);
}

stripe& stripe_of(std::uintptr_t p) noexcept { return g_stripes[(hash_ptr(p) >> 40) % stripe_count]; }

bool grow(stripe& s) noexcept {
    const std::size_t cap = s.slots == nullptr ? 1024 : (s.mask + 1) * 2;
    auto* fresh = static_cast<slot*>(map_pages(cap * sizeof(slot)));
    if (fresh == nullptr) return false;
    for (std::size_t i = 0; s.slots != nullptr && i <= s.mask; ++i) {
        if (s.slots[i].key == 0) continue;
        std::size_t j = hash_ptr(s.slots[i].key) & (cap - 1);
        while (fresh[j].key != 0)
            j = (j + 1) & (cap - 1);
        fresh[j] = s.slots[i];
    }
    if (s.slots != nullptr) munmap(s.slots, (s.mask + 1) * sizeof(slot));
    s.slots = fresh;
    s.mask = cap - 1;
    return true;
}

/// Requires: s locked. Effects: maps key -> id (replacing a stale mapping of the same key).
void table_insert(stripe& s, std::uintptr_t key, std::uint64_t id) noexcept {
    if ((s.used + 1) * 2 > s.mask + 1 || s.slots == nullptr)
        if (!grow(s)) return;
    std::size_t i = hash_ptr(key) & s.mask;
    while (s.slots[i].key != 0 && s.slots[i].key != key)
        i = (i + 1) & s.mask;
    if (s.slots[i].key == 0) ++s.used;
    s.slots[i] = {key, id};
}

/// Requires: s locked. Returns: the id of key and removes it (backward-shift deletion), or 0.
std::uint64_t table_take(stripe& s, std::uintptr_t key) noexcept {
    if (s.slots == nullptr) return 0;
    std::size_t i = hash_ptr(key) & s.mask;
    while (s.slots[i].key != key) {
        if (s.slots[i].key == 0) return 0;
        i = (i + 1) & s.mask;
    }
    const std::uint64_t id = s.slots[i].id;
    // Shift later members of the probe run back so lookups never stop at a hole.
    std::size_t hole = i;
    for (std::size_t j = (i + 1) & s.mask; s.slots[j].key != 0; j = (j + 1) & s.mask) {
        const std::size_t home = hash_ptr(s.slots[j].key) & s.mask;
        const bool movable = hole <= j ? (home <= hole || home > j) : (home <= hole && home > j);
        if (movable) {
            s.slots[hole] = s.slots[j];
            hole = j;
        }
    }
    s.slots[hole].key = 0;
    --s.used;
    return id;
}

// ------------------------------------------------------------------------------------------------
// Per-thread buffers and the writer
// ------------------------------------------------------------------------------------------------

constexpr std::uint32_t buffer_records = max_chunk_records;
// A buffer whose oldest record trails the global sequence by sweep_distance (trace_format.hpp) is
// swept.

struct thread_buffer {
    spinlock lock;
    std::uint32_t thread = 0;
    std::uint32_t count = 0;
    bool in_use = false; // false: its thread exited; reusable by a new thread
    thread_buffer* next = nullptr;
    record records[buffer_records];
};

struct writer_state {
    spinlock lock;
    int fd = -1;
    // The trace file's identity: a program may close every descriptor it did not open (daemons,
    // process spawners) and reuse the number; writing to it then would corrupt the program's file.
    dev_t dev = 0;
    ino_t ino = 0;
    ZSTD_CCtx* cctx = nullptr;
    bool frame_open = false;
    // After the exit flush: one frame per chunk. Read by append() under a buffer lock only.
    std::atomic<bool> finalized{false};
    char path[4096] = {};
    std::size_t path_len = 0;
    unsigned char out[1 << 16] = {};
    std::uint8_t scratch[buffer_records * max_encoded_record] = {}; // one encoded chunk
};

constinit writer_state g_writer;
constinit spinlock g_init_lock;
constinit std::atomic<int> g_state{0}; // 0 = not started, 1 = starting, 2 = recording, 3 = disabled
constinit std::atomic<std::uint64_t> g_seq{0};
constinit std::atomic<std::uint32_t> g_next_thread{1};
constinit std::uint64_t g_start_ns = 0;
constinit std::uint64_t g_last_sweep_seq = 0; // guarded by g_writer.lock
constinit spinlock g_buffers_lock;
constinit thread_buffer* g_buffers = nullptr;
constinit pthread_key_t g_thread_key = 0;

STRATA_TRACE_TLS int t_inside = 0; // > 0: a recorder call is on this thread's stack
STRATA_TRACE_TLS thread_buffer* t_buffer = nullptr;

struct inside_guard {
    inside_guard() noexcept { ++t_inside; }
    ~inside_guard() { --t_inside; }
    inside_guard(const inside_guard&) = delete;
    inside_guard& operator=(const inside_guard&) = delete;
};

void* zstd_alloc(void*, std::size_t n) { return __libc_malloc(n); }
void zstd_free(void*, void* p) { __libc_free(p); }

/// Returns: true when `fd` is the trace file.
bool is_trace_file(int fd) noexcept {
    struct stat st {};
    return fd >= 0 && ::fstat(fd, &st) == 0 && st.st_dev == g_writer.dev && st.st_ino == g_writer.ino;
}

/// Effects: makes `fd` the writer's, moved to a high number the program's own open() calls will
/// not take (the lowest free number is what they get).
void adopt_fd(int fd) noexcept {
    const int high = ::fcntl(fd, F_DUPFD_CLOEXEC, 512);
    if (high >= 0) {
        ::close(fd);
        fd = high;
    }
    g_writer.fd = fd;
}

/// Requires: writer locked. Appends to the trace file, after checking the descriptor still is it;
/// if the program closed it, the file is opened again by name (appending, so the stream goes on)
/// or, when that fails, recording stops writing: the reader then reports the trace truncated.
/// errno is the program's: no call of the recorder's may change it (free() preserves errno).
void write_out(const void* data, std::size_t n) noexcept {
    writer_state& w = g_writer;
    const int saved = errno;
    if (!is_trace_file(w.fd)) {
        const int fd = ::open(w.path, O_WRONLY | O_APPEND | O_CLOEXEC);
        if (fd >= 0 && is_trace_file(fd)) {
            adopt_fd(fd);
        } else {
            if (fd >= 0) ::close(fd);
            w.fd = -1;
        }
    }
    if (w.fd >= 0) write_all(w.fd, data, n);
    errno = saved;
}

/// Requires: writer locked. Compresses `n` bytes into the stream, ending the frame if `end`.
void compress(const void* data, std::size_t n, bool end) noexcept {
    writer_state& w = g_writer;
    if (w.fd < 0 || w.cctx == nullptr) return;
    ZSTD_inBuffer in{data, n, 0};
    const ZSTD_EndDirective mode = end ? ZSTD_e_end : ZSTD_e_continue;
    for (;;) {
        ZSTD_outBuffer out{w.out, sizeof w.out, 0};
        const std::size_t left = ZSTD_compressStream2(w.cctx, &out, &in, mode);
        if (ZSTD_isError(left)) return;
        write_out(w.out, out.pos);
        if (end ? left == 0 : in.pos == in.size) break;
    }
    w.frame_open = !end;
}

/// Requires: writer locked. Encodes and writes the chunk; after finalization each chunk is its own
/// frame.
void emit_chunk(const record* records, std::uint32_t count) noexcept {
    if (count == 0) return;
    chunk_header h{};
    h.magic = chunk_magic;
    h.count = count;
    h.thread = records[0].thread;
    chunk_encoder enc;
    enc.begin(h, records[0]);
    std::uint8_t* end = g_writer.scratch;
    for (std::uint32_t i = 0; i < count; ++i)
        end = enc.encode(end, records[i]);
    h.payload_bytes = static_cast<std::uint32_t>(end - g_writer.scratch);
    compress(&h, sizeof h, false);
    compress(g_writer.scratch, h.payload_bytes, g_writer.finalized.load(std::memory_order_relaxed));
}

/// Requires: writer locked. Moves b's records into the stream.
void drain(thread_buffer& b) noexcept {
    lock_guard g(b.lock);
    emit_chunk(b.records, b.count);
    b.count = 0;
}

/// Requires: writer locked. Drains every buffer whose oldest record trails the sequence too far
/// (all of them when `all`).
void sweep(bool all) noexcept {
    const std::uint64_t seq = g_seq.load(std::memory_order_relaxed);
    if (!all && seq - g_last_sweep_seq < sweep_distance) return;
    g_last_sweep_seq = seq;
    lock_guard g(g_buffers_lock);
    for (thread_buffer* b = g_buffers; b != nullptr; b = b->next) {
        lock_guard bg(b->lock);
        if (b->count != 0 && (all || seq - b->records[0].seq >= sweep_distance)) {
            emit_chunk(b->records, b->count);
            b->count = 0;
        }
    }
}

/// Requires: writer locked. Ends the current frame so the file is complete as it stands.
void end_frame() noexcept {
    if (g_writer.frame_open) compress(nullptr, 0, true);
}

/// Opens the output: STRATA_TRACE_OUT itself for the first process image that claims it, else
/// STRATA_TRACE_OUT.<pid>[.<k>] (fork children; a program exec'd by a recorded one).
bool open_output(const char* base) noexcept {
    writer_state& w = g_writer;
    const std::size_t len = std::strlen(base);
    if (len + 48 >= sizeof w.path) return false;
    std::memcpy(w.path, base, len + 1);
    int fd = ::open(w.path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    for (std::uint64_t k = 0; fd < 0 && errno == EEXIST && k < 1000; ++k) {
        char* e = w.path + len;
        *e++ = '.';
        e = put_decimal(e, static_cast<std::uint64_t>(getpid()));
        if (k != 0) {
            *e++ = '.';
            e = put_decimal(e, k);
        }
        *e = '\0';
        fd = ::open(w.path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    }
    if (fd < 0) return false;
    struct stat st {};
    if (::fstat(fd, &st) != 0) {
        ::close(fd);
        return false;
    }
    w.dev = st.st_dev;
    w.ino = st.st_ino;
    adopt_fd(fd);
    fd = w.fd;
    w.path_len = std::strlen(w.path);

    file_header h{};
    std::memcpy(h.magic, file_magic, sizeof h.magic);
    h.version = format_version;
    h.header_bytes = sizeof(file_header);
    h.record_bytes = sizeof(record);
    h.pid = static_cast<std::uint32_t>(getpid());
    h.start_unix_ns = now_ns(CLOCK_REALTIME);
    const int cmd = ::open("/proc/self/cmdline", O_RDONLY | O_CLOEXEC);
    if (cmd >= 0) {
        const ssize_t n = ::read(cmd, h.command, sizeof h.command - 1);
        for (ssize_t i = 0; i < n; ++i)
            if (h.command[i] == '\0') h.command[i] = ' ';
        ::close(cmd);
    }
    write_all(fd, &h, sizeof h);

    const ZSTD_customMem mem{zstd_alloc, zstd_free, nullptr};
    if (w.cctx == nullptr)
        w.cctx = ZSTD_createCCtx_advanced(mem);
    else
        ZSTD_CCtx_reset(w.cctx, ZSTD_reset_session_only);
    // Level 1 by default: compression is most of the recorder's cost, and level 3 only shrinks a
    // trace by ~10% more. STRATA_TRACE_LEVEL=N picks another zstd level (negative = faster).
    int level = 1;
    if (const char* l = getenv("STRATA_TRACE_LEVEL"); l != nullptr && *l != '\0') level = atoi(l);
    if (w.cctx != nullptr) ZSTD_CCtx_setParameter(w.cctx, ZSTD_c_compressionLevel, level);
    w.frame_open = false;
    w.finalized.store(false, std::memory_order_relaxed);
    return w.cctx != nullptr;
}

// fork: hold every lock across the fork so the child inherits consistent tables and stream state.
void before_fork() noexcept {
    if (g_state.load(std::memory_order_acquire) != 2) return;
    inside_guard guard;
    g_writer.lock.lock();
    sweep(true);
    end_frame();
    for (stripe& s : g_stripes)
        s.lock.lock();
}
void after_fork_parent() noexcept {
    if (g_state.load(std::memory_order_acquire) != 2) return;
    for (stripe& s : g_stripes)
        s.lock.unlock();
    g_writer.lock.unlock();
}
void after_fork_child() noexcept {
    if (g_state.load(std::memory_order_acquire) != 2) return;
    inside_guard guard;
    for (stripe& s : g_stripes)
        s.lock.reset();
    g_buffers_lock.reset();
    for (thread_buffer* b = g_buffers; b != nullptr; b = b->next) {
        b->lock.reset();
        b->count = 0;
    }
    writer_state& w = g_writer;
    w.lock.reset();
    if (is_trace_file(w.fd)) ::close(w.fd); // the parent's; if the number is not, it is not ours
    w.fd = -1;
    // The child's file continues the sequence; ids allocated in the parent stay valid in it.
    const char* base = getenv("STRATA_TRACE_OUT");
    if (base == nullptr || !open_output(base)) g_state.store(3, std::memory_order_release);
}

void thread_exit(void* p) noexcept {
    auto* b = static_cast<thread_buffer*>(p);
    inside_guard guard;
    {
        lock_guard w(g_writer.lock);
        drain(*b);
    }
    lock_guard g(b->lock);
    b->in_use = false;
    t_buffer = nullptr; // a later call on this thread (other TLS destructors) takes a fresh buffer
}

void finish() noexcept {
    if (g_state.load(std::memory_order_acquire) != 2) return;
    inside_guard guard;
    lock_guard w(g_writer.lock);
    sweep(true);
    end_frame();
    g_writer.finalized.store(true, std::memory_order_release); // from now on every chunk is a whole frame
    // A thread that appended after the sweep took its buffer, but read `finalized` before the store
    // above, left its record in the buffer: sweep again. Any later append reads true (it takes the
    // buffer lock after this sweep released it) and drains its own record.
    sweep(true);
}

/// Returns: true when recording. Starts the recorder on the first call from any thread.
bool recording() noexcept {
    const int s = g_state.load(std::memory_order_acquire);
    if (s == 2) return true;
    if (s != 0) return false;
    lock_guard g(g_init_lock);
    if (g_state.load(std::memory_order_relaxed) != 0) return g_state.load(std::memory_order_relaxed) == 2;
    g_state.store(1, std::memory_order_relaxed);
    inside_guard guard;
    struct keep_errno { // the program's errno, whatever opening the output did to it
        int saved = errno;
        ~keep_errno() { errno = saved; }
    } errno_kept;
    const char* out = getenv("STRATA_TRACE_OUT");
    if (out == nullptr || *out == '\0' || !open_output(out)) {
        g_state.store(3, std::memory_order_release);
        return false;
    }
    g_start_ns = now_ns(CLOCK_MONOTONIC);
    pthread_key_create(&g_thread_key, thread_exit);
    pthread_atfork(before_fork, after_fork_parent, after_fork_child);
    g_state.store(2, std::memory_order_release);
    return true;
}

thread_buffer* my_buffer() noexcept {
    if (t_buffer != nullptr) return t_buffer;
    thread_buffer* b = nullptr;
    {
        lock_guard g(g_buffers_lock);
        for (thread_buffer* it = g_buffers; it != nullptr; it = it->next) {
            if (!it->in_use) {
                b = it;
                break;
            }
        }
        if (b == nullptr) {
            b = static_cast<thread_buffer*>(map_pages(sizeof(thread_buffer)));
            if (b == nullptr) return nullptr;
            new (b) thread_buffer();
            b->next = g_buffers;
            g_buffers = b;
        }
        b->in_use = true;
        b->count = 0;
        b->thread = g_next_thread.fetch_add(1, std::memory_order_relaxed);
    }
    t_buffer = b;
    pthread_setspecific(g_thread_key, b);
    return b;
}

void append(const record& r) noexcept {
    thread_buffer* b = my_buffer();
    if (b == nullptr) return;
    for (;;) {
        {
            lock_guard g(b->lock);
            if (b->count < buffer_records) {
                b->records[b->count] = r;
                b->records[b->count].thread = b->thread;
                ++b->count;
                if (!g_writer.finalized.load(std::memory_order_acquire)) return;
            }
        }
        lock_guard w(g_writer.lock);
        drain(*b);
        sweep(false);
        if (b->count == 0 && g_writer.finalized.load(std::memory_order_relaxed))
            return; // the record went out in its own frame
    }
}

/// Returns: log2 of the alignment the call got: glibc rounds one that is not a power of two up.
std::uint8_t log2_of(std::size_t align) noexcept {
    return align <= 1 ? 0 : static_cast<std::uint8_t>(64 - __builtin_clzll(align - 1));
}

/// Effects: gives the block at `p` its id: r.seq is taken inside the stripe lock (so it follows the
/// free of any earlier block at this address), r.id = r.seq + 1 (unique and never 0, without a
/// second atomic counter).
void assign_id(void* p, record& r) noexcept {
    const auto key = reinterpret_cast<std::uintptr_t>(p);
    stripe& s = stripe_of(key);
    lock_guard g(s.lock);
    r.seq = g_seq.fetch_add(1, std::memory_order_relaxed);
    r.id = r.seq + 1;
    table_insert(s, key, r.id);
}

/// Records an allocation that returned `p` (nullptr: failed).
void note_alloc(op kind, void* p, std::size_t size, std::size_t align) noexcept {
    record r{};
    r.kind = static_cast<std::uint8_t>(kind);
    r.size = size;
    r.log2_align = log2_of(align);
    if (p == nullptr) {
        r.flags = flag_failed;
        r.seq = g_seq.fetch_add(1, std::memory_order_relaxed);
    } else {
        assign_id(p, r);
    }
    r.time_ns = now_ns(CLOCK_MONOTONIC) - g_start_ns;
    append(r);
}

/// Takes p's id before the block is released, and when `seq` is given and the block was known, a
/// sequence number (inside the stripe lock, so it precedes any reuse of the address). Returns: the
/// id, 0 if the block was never seen (allocated before recording started): no seq is consumed
/// then, so the sequence stays dense.
std::uint64_t take_id(void* p, std::uint64_t* seq) noexcept {
    const auto key = reinterpret_cast<std::uintptr_t>(p);
    stripe& s = stripe_of(key);
    lock_guard g(s.lock);
    const std::uint64_t id = table_take(s, key);
    if (seq != nullptr && id != 0) *seq = g_seq.fetch_add(1, std::memory_order_relaxed);
    return id;
}

/// Puts p's id back (a realloc that failed keeps its block).
void restore_id(void* p, std::uint64_t id) noexcept {
    const auto key = reinterpret_cast<std::uintptr_t>(p);
    stripe& s = stripe_of(key);
    lock_guard g(s.lock);
    table_insert(s, key, id);
}

bool should_record() noexcept { return t_inside == 0 && recording(); }

template <class Call>
void* recorded_alloc(op kind, std::size_t size, std::size_t align, Call call) noexcept {
    if (!should_record()) return call();
    void* p = call();
    inside_guard guard;
    note_alloc(kind, p, size, align);
    return p;
}

} // namespace

// ------------------------------------------------------------------------------------------------
// The interposed C API
// ------------------------------------------------------------------------------------------------

STRATA_TRACE_EXPORT void* malloc(std::size_t size) {
    return recorded_alloc(op::malloc, size, 0, [&] { return __libc_malloc(size); });
}

STRATA_TRACE_EXPORT void free(void* p) {
    if (p == nullptr) return;
    if (!should_record()) return __libc_free(p);
    {
        inside_guard guard;
        record r{};
        r.kind = static_cast<std::uint8_t>(op::free);
        r.id = take_id(p, &r.seq);
        r.time_ns = now_ns(CLOCK_MONOTONIC) - g_start_ns;
        if (r.id != 0) append(r);
    }
    __libc_free(p);
}

STRATA_TRACE_EXPORT void* calloc(std::size_t n, std::size_t size) {
    std::size_t bytes = 0;
    if (__builtin_mul_overflow(n, size, &bytes)) bytes = SIZE_MAX;
    return recorded_alloc(op::calloc, bytes, 0, [&] { return __libc_calloc(n, size); });
}

STRATA_TRACE_EXPORT void* realloc(void* p, std::size_t size) {
    if (!should_record()) return __libc_realloc(p, size);
    if (p == nullptr) {
        void* q = __libc_realloc(nullptr, size);
        inside_guard guard;
        note_alloc(op::realloc, q, size, 0);
        return q;
    }
    record r{};
    r.kind = static_cast<std::uint8_t>(op::realloc);
    r.size = size;
    {
        inside_guard guard;
        r.old_id = take_id(p, nullptr);
    }
    void* q = __libc_realloc(p, size);
    inside_guard guard;
    if (q == nullptr && size != 0) { // failed: p is still live
        if (r.old_id != 0) restore_id(p, r.old_id);
        r.flags = flag_failed;
        r.seq = g_seq.fetch_add(1, std::memory_order_relaxed);
    } else if (q == nullptr) { // realloc(p, 0) freed p
        r.seq = g_seq.fetch_add(1, std::memory_order_relaxed);
    } else {
        assign_id(q, r);
    }
    r.time_ns = now_ns(CLOCK_MONOTONIC) - g_start_ns;
    append(r);
    return q;
}

STRATA_TRACE_EXPORT void* memalign(std::size_t align, std::size_t size) {
    return recorded_alloc(op::memalign, size, align, [&] { return __libc_memalign(align, size); });
}

// glibc 2.36 (Debian 12) makes aligned_alloc an alias of memalign: any alignment is taken (rounded
// up to a power of two), and a recorded program must see what it sees without the recorder.
STRATA_TRACE_EXPORT void* aligned_alloc(std::size_t align, std::size_t size) {
    return recorded_alloc(op::aligned_alloc, size, align, [&] { return __libc_memalign(align, size); });
}

STRATA_TRACE_EXPORT int posix_memalign(void** out, std::size_t align, std::size_t size) {
    if (align < sizeof(void*) || (align & (align - 1)) != 0) return EINVAL;
    void* p = recorded_alloc(op::posix_memalign, size, align, [&] { return __libc_memalign(align, size); });
    if (p == nullptr) return ENOMEM;
    *out = p;
    return 0;
}

STRATA_TRACE_EXPORT void* valloc(std::size_t size) {
    return recorded_alloc(op::valloc, size, static_cast<std::size_t>(getpagesize()),
                          [&] { return __libc_valloc(size); });
}

STRATA_TRACE_EXPORT void* pvalloc(std::size_t size) {
    return recorded_alloc(op::pvalloc, size, static_cast<std::size_t>(getpagesize()),
                          [&] { return __libc_pvalloc(size); });
}

// exec replaces the image: complete the stream first; if exec fails, recording goes on in new
// frames. The exec'd program, if it is preloaded too, claims a file of its own. glibc's execl*
// reach execve internally (not through the PLT), so each variant is wrapped.
namespace {
void before_exec() noexcept {
    if (g_state.load(std::memory_order_acquire) != 2) return;
    inside_guard guard;
    lock_guard w(g_writer.lock);
    sweep(true);
    end_frame();
}

template <class Fn>
Fn next_symbol(const char* name) noexcept {
    return reinterpret_cast<Fn>(dlsym(RTLD_NEXT, name));
}

using execve_fn = int (*)(const char*, char* const[], char* const[]);
using execvp_fn = int (*)(const char*, char* const[]);
using fexecve_fn = int (*)(int, char* const[], char* const[]);

int call_execve(const char* path, char* const argv[], char* const envp[]) noexcept {
    static const auto real = next_symbol<execve_fn>("execve");
    if (real == nullptr) return errno = ENOSYS, -1;
    return real(path, argv, envp);
}
int call_execvpe(const char* file, char* const argv[], char* const envp[]) noexcept {
    static const auto real = next_symbol<execve_fn>("execvpe");
    if (real == nullptr) return errno = ENOSYS, -1;
    return real(file, argv, envp);
}

/// Collects a NULL-terminated variadic argument list (execl*) into `out` (at most max - 1 entries).
template <std::size_t Max>
bool collect_args(const char* first, va_list ap, char* (&out)[Max], char* const** envp) noexcept {
    std::size_t n = 0;
    out[n++] = const_cast<char*>(first);
    while (out[n - 1] != nullptr) {
        if (n == Max) return false;
        out[n++] = va_arg(ap, char*);
    }
    if (envp != nullptr) *envp = va_arg(ap, char* const*);
    return true;
}
constexpr std::size_t max_exec_args = 4096;
} // namespace

STRATA_TRACE_EXPORT int execve(const char* path, char* const argv[], char* const envp[]) {
    before_exec();
    return call_execve(path, argv, envp);
}
STRATA_TRACE_EXPORT int execv(const char* path, char* const argv[]) {
    before_exec();
    return call_execve(path, argv, environ);
}
STRATA_TRACE_EXPORT int execvpe(const char* file, char* const argv[], char* const envp[]) {
    before_exec();
    return call_execvpe(file, argv, envp);
}
STRATA_TRACE_EXPORT int execvp(const char* file, char* const argv[]) {
    before_exec();
    return call_execvpe(file, argv, environ);
}
STRATA_TRACE_EXPORT int fexecve(int fd, char* const argv[], char* const envp[]) {
    before_exec();
    static const auto real = next_symbol<fexecve_fn>("fexecve");
    if (real == nullptr) return errno = ENOSYS, -1;
    return real(fd, argv, envp);
}
STRATA_TRACE_EXPORT int execl(const char* path, const char* arg, ...) {
    char* argv[max_exec_args];
    va_list ap;
    va_start(ap, arg);
    const bool ok = collect_args(arg, ap, argv, nullptr);
    va_end(ap);
    if (!ok) return errno = E2BIG, -1;
    return execv(path, argv);
}
STRATA_TRACE_EXPORT int execlp(const char* file, const char* arg, ...) {
    char* argv[max_exec_args];
    va_list ap;
    va_start(ap, arg);
    const bool ok = collect_args(arg, ap, argv, nullptr);
    va_end(ap);
    if (!ok) return errno = E2BIG, -1;
    return execvp(file, argv);
}
STRATA_TRACE_EXPORT int execle(const char* path, const char* arg, ...) {
    char* argv[max_exec_args];
    char* const* envp = nullptr;
    va_list ap;
    va_start(ap, arg);
    const bool ok = collect_args(arg, ap, argv, &envp);
    va_end(ap);
    if (!ok) return errno = E2BIG, -1;
    return execve(path, argv, envp);
}

// The constructor starts recording before main even if nothing allocates earlier; the destructor
// runs late (low priority number) and completes the stream; later calls still get recorded.
__attribute__((constructor)) static void strata_trace_start() { (void)recording(); }
__attribute__((destructor(101))) static void strata_trace_finish() { finish(); }
