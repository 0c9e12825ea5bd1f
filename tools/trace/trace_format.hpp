#pragma once
// The strata trace file format, version 1 (docs/trace-format.md is the prose version).
//
//   file    := file_header (128 bytes, uncompressed) zstd_stream
//   stream  := one or more concatenated zstd frames; decompressed, a sequence of chunks
//   chunk   := chunk_header record[count]
//
// Records carry a global sequence number that is dense (0, 1, 2, ...) over the whole process: a
// reader that emits records in `seq` order replays the allocations in an order that really
// happened (a block's free always follows its allocation). Chunks come from per-thread buffers, so
// within the stream records are ordered per thread but interleaved across threads; the recorder
// bounds how far a record can trail its sequence number (see recorder.cpp, "sweep").
//
// All integers are little-endian (the recorder runs on x86-64 and aarch64 Linux).
#include <cstdint>

namespace strata::trace {

inline constexpr char file_magic[8] = {'S', 'T', 'R', 'A', 'T', 'R', 'C', '\n'};
inline constexpr std::uint32_t format_version = 1;
inline constexpr std::uint32_t chunk_magic = 0x4b4e4843; // "CHNK"

/// What a record did.
enum class op : std::uint8_t {
    malloc = 1,
    free = 2,
    calloc = 3,  ///< size = count * size (overflowing requests are recorded as failed)
    realloc = 4, ///< old_id -> id; realloc(nullptr, n) has old_id 0; realloc(p, 0) that frees has id 0
    aligned_alloc = 5,
    posix_memalign = 6,
    memalign = 7,
    valloc = 8,
    pvalloc = 9,
};

/// Record flags.
enum record_flags : std::uint8_t {
    flag_failed = 1, ///< the call returned nullptr / an error; for realloc the old block stays live
};

/// One allocator call. 48 bytes.
struct record {
    std::uint64_t seq;       ///< global order, dense from 0
    std::uint64_t time_ns;   ///< CLOCK_MONOTONIC nanoseconds since the trace started
    std::uint64_t id;        ///< the block allocated (allocations, realloc) or freed (free); 0 = none
    std::uint64_t old_id;    ///< realloc: the block passed in (0 for realloc(nullptr, n))
    std::uint64_t size;      ///< bytes requested; 0 for free
    std::uint32_t thread;    ///< 1, 2, 3... in order of each thread's first call
    std::uint8_t kind;       ///< an `op`
    std::uint8_t flags;      ///< record_flags
    std::uint8_t log2_align; ///< requested alignment as a power of two (0 = the default, 16)
    std::uint8_t reserved;
};
static_assert(sizeof(record) == 48);

/// Precedes `count` records in the decompressed stream.
struct chunk_header {
    std::uint32_t magic; ///< chunk_magic
    std::uint32_t count;
};
static_assert(sizeof(chunk_header) == 8);

/// The first 128 bytes of a trace file.
struct file_header {
    char magic[8];               ///< file_magic
    std::uint32_t version;       ///< format_version
    std::uint32_t header_bytes;  ///< sizeof(file_header) = 128
    std::uint32_t record_bytes;  ///< sizeof(record) = 48
    std::uint32_t pid;           ///< the recorded process
    std::uint64_t start_unix_ns; ///< CLOCK_REALTIME at the start of recording
    char command[96];            ///< /proc/self/cmdline, NULs as spaces, truncated
};
static_assert(sizeof(file_header) == 128);

} // namespace strata::trace
