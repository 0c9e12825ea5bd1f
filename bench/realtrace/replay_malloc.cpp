// strata-replay-malloc TRACE [--batch N] [--label NAME]
//
// Replays a recorded trace through whatever malloc the process has (swap one in with LD_PRELOAD),
// in its recorded global order, and prints one JSON line: the malloc's time per operation, page
// faults and peak RSS during the replay. Blocks are written whole when allocated (and the grown
// part when reallocated), as the recorded program wrote them, so resident memory is the malloc's
// real cost. `--dry` decodes and keeps the tables but allocates nothing. Its peak RSS is NOT the
// replayer's share of a real replay's: each malloc keeps the replayer's freed temporaries resident
// differently and reuses them for heap blocks (glibc's and mimalloc's real peak less their dry peak
// came out below the live bytes), so peers.sh reports whole-process peaks only.
// The trace is streamed in small batches (trace_batches), so the replayer's own memory
// is one batch plus one pointer per live block.
#include <malloc.h>
#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "trace_workload.hpp"

namespace {

using namespace strata::lab;

/// Peak resident memory of the whole process (the replayer's own tables included: the zstd reader,
/// one batch of ops, a pointer and a size per slot, the id -> slot map).
long max_rss_kib() {
    rusage u{};
    getrusage(RUSAGE_SELF, &u);
    return u.ru_maxrss;
}
long minor_faults() {
    rusage u{};
    getrusage(RUSAGE_SELF, &u);
    return u.ru_minflt;
}

void* allocate(std::size_t size, std::size_t align) {
    if (align <= alignof(std::max_align_t)) return std::malloc(size);
    void* p = nullptr;
    return posix_memalign(&p, align, size) == 0 ? p : nullptr;
}

} // namespace

int main(int argc, char** argv) {
    std::string path, label = "malloc";
    std::size_t batch = 1 << 16;
    bool dry = false; // decode and keep the tables, allocate nothing: the replayer's own footprint
    for (int i = 1; i < argc; ++i) {
        const std::string a = argv[i];
        if (a == "--dry") {
            dry = true;
        } else if (a == "--batch" && i + 1 < argc) {
            batch = std::strtoull(argv[++i], nullptr, 10);
        } else if (a == "--label" && i + 1 < argc) {
            label = argv[++i];
        } else if (!a.empty() && a[0] != '-' && path.empty()) {
            path = a;
        } else {
            std::fprintf(stderr, "usage: strata-replay-malloc TRACE [--batch N] [--label NAME] [--dry]\n");
            return 2;
        }
    }
    if (path.empty() || batch == 0) {
        std::fprintf(stderr, "usage: strata-replay-malloc TRACE [--batch N] [--label NAME] [--dry]\n");
        return 2;
    }
    try {
        std::vector<void*> ptr;
        std::vector<std::uint64_t> size;
        std::vector<op> ops;
        ops.reserve(batch);
        trace_batches in(path, UINT64_MAX);
        const long flt0 = minor_faults();
        double seconds = 0;
        std::uint64_t failed = 0, n = 0;
        while (in.next(ops, batch)) {
            const std::uint32_t slots = in.shape().slots; // slots only grow: resize between batches
            if (slots > ptr.size()) {
                ptr.resize(slots + slots / 2, nullptr);
                size.resize(ptr.size(), 0);
            }
            const auto t0 = std::chrono::steady_clock::now();
            for (const op& o : ops) {
                if (dry) {
                    ++n;
                    continue;
                }
                switch (o.kind) {
                case op_kind::allocate: {
                    void* p = allocate(o.size, std::size_t{1} << o.log2_align);
                    if (p == nullptr) {
                        ++failed;
                        break;
                    }
                    std::memset(p, static_cast<int>(n), o.size);
                    ptr[o.slot] = p;
                    size[o.slot] = o.size;
                    break;
                }
                case op_kind::free:
                    std::free(ptr[o.slot]);
                    ptr[o.slot] = nullptr;
                    size[o.slot] = 0;
                    break;
                case op_kind::reallocate: {
                    void* p = std::realloc(ptr[o.slot], o.size);
                    if (p == nullptr) {
                        ++failed;
                        break;
                    }
                    if (o.size > size[o.slot])
                        std::memset(static_cast<char*>(p) + size[o.slot], static_cast<int>(n),
                                    o.size - size[o.slot]);
                    ptr[o.slot] = p;
                    size[o.slot] = o.size;
                    break;
                }
                case op_kind::frame: break;
                }
                ++n;
            }
            seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        }
        const long flt1 = minor_faults();
        for (std::size_t s = 0; s < ptr.size(); ++s)
            std::free(ptr[s]);
        std::printf(
            "{\"label\":\"%s\",\"dry\":%s,\"trace\":\"%s\",\"ops\":%llu,\"failed\":%llu,\"seconds\":%.6f,"
            "\"ns_per_op\":%.2f,\"minor_faults\":%ld,\"peak_rss_kib\":%ld,"
            "\"peak_live_bytes\":%llu}\n",
            label.c_str(), dry ? "true" : "false", path.c_str(), static_cast<unsigned long long>(n),
            static_cast<unsigned long long>(failed), seconds,
            n ? seconds * 1e9 / static_cast<double>(n) : 0.0, flt1 - flt0, max_rss_kib(),
            static_cast<unsigned long long>(in.shape().peak_live_bytes));
        return failed == 0 ? 0 : 1;
    } catch (const std::exception& e) {
        std::fprintf(stderr, "strata-replay-malloc: %s\n", e.what());
        return 1;
    }
}
