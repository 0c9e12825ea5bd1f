#pragma once
// The strata trace file format, version 1 (docs/trace-format.md is the prose version).
//
//   file    := file_header (128 bytes, uncompressed) zstd_stream
//   stream  := one or more concatenated zstd frames; decompressed, a sequence of chunks
//   chunk   := chunk_header encoded_record[count]   (payload_bytes long; encoding below)
//
// Records carry a global sequence number that is dense (0, 1, 2, ...) over the whole process: a
// reader that emits records in `seq` order replays the allocations in an order that really
// happened (a block's free always follows its allocation). Chunks come from per-thread buffers, so
// within the stream records are ordered per thread but interleaved across threads; the recorder
// bounds how far a record can trail its sequence number (see recorder.cpp, "sweep").
//
// All integers are little-endian (the recorder runs on x86-64 and aarch64 Linux).
#include <cstddef>
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

/// One allocator call, as the recorder keeps it in memory and the reader returns it. 48 bytes.
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

/// Precedes a chunk's encoded records. A chunk holds records of one thread, in that thread's order.
struct chunk_header {
    std::uint32_t magic;         ///< chunk_magic
    std::uint32_t count;         ///< records in the chunk
    std::uint32_t thread;        ///< their thread number
    std::uint32_t payload_bytes; ///< encoded bytes that follow
    std::uint64_t first_seq;     ///< the seq the first delta is taken from
    std::uint64_t first_time_ns; ///< the time the first delta is taken from
};
static_assert(sizeof(chunk_header) == 32);

// Record encoding inside a chunk (before zstd), ~5-8 bytes instead of 48:
//   tag     u8: bits 0-3 op, bit 4 failed, bit 5 alignment follows, bit 6 old_id follows, bit 7 id follows
//   varint  seq - previous seq (the first record: seq - first_seq)
//   varint  time_ns - previous time_ns (clamped at 0)
//   [varint zigzag(id - previous id)]      when bit 7; "previous id" is the last id in the chunk (0 at start)
//   [varint zigzag(old_id - previous id)]  when bit 6
//   [varint size]                          unless op is free
//   [u8     log2_align]                    when bit 5
inline constexpr std::size_t max_encoded_record = 1 + 10 * 5 + 1;
/// The most records a chunk holds (the recorder's per-thread buffer). A reader refuses a chunk that
/// claims more, or more payload than that many records can take: a few corrupt bytes must not make
/// it buffer gigabytes.
inline constexpr std::uint32_t max_chunk_records = 1024;
/// The recorder drains a thread's buffer once its oldest record trails the global sequence by this
/// much (checked whenever any buffer is flushed). So a record reaches the stream before the sequence
/// has moved about 2 * (sweep_distance + threads * max_chunk_records) past it: what a reader must
/// look ahead to restore the order.
inline constexpr std::uint64_t sweep_distance = std::uint64_t{1} << 16;

namespace detail {
inline std::uint8_t* put_varint(std::uint8_t* out, std::uint64_t v) noexcept {
    while (v >= 0x80) {
        *out++ = static_cast<std::uint8_t>(v | 0x80);
        v >>= 7;
    }
    *out++ = static_cast<std::uint8_t>(v);
    return out;
}
inline std::uint64_t zigzag(std::int64_t v) noexcept {
    return (static_cast<std::uint64_t>(v) << 1) ^ static_cast<std::uint64_t>(v >> 63);
}
inline std::int64_t unzigzag(std::uint64_t v) noexcept {
    return static_cast<std::int64_t>(v >> 1) ^ -static_cast<std::int64_t>(v & 1);
}
/// Returns: the end of the varint read into `v`, or nullptr when it runs past `end` or is too long.
inline const std::uint8_t* get_varint(const std::uint8_t* in, const std::uint8_t* end,
                                      std::uint64_t& v) noexcept {
    v = 0;
    for (unsigned shift = 0; shift < 64 && in < end; shift += 7) {
        const std::uint8_t b = *in++;
        v |= static_cast<std::uint64_t>(b & 0x7f) << shift;
        if ((b & 0x80) == 0) return in;
    }
    return nullptr;
}
} // namespace detail

/// Incremental encoder state for one chunk.
struct chunk_encoder {
    std::uint64_t seq = 0, time_ns = 0, id = 0;

    /// Effects: starts a chunk at `first` (fills h's seq/time bases).
    void begin(chunk_header& h, const record& first) noexcept {
        h.first_seq = seq = first.seq;
        h.first_time_ns = time_ns = first.time_ns;
        id = 0;
    }
    /// Effects: writes r at out (at most max_encoded_record bytes). Returns: the end.
    std::uint8_t* encode(std::uint8_t* out, const record& r) noexcept {
        using namespace detail;
        std::uint8_t tag = static_cast<std::uint8_t>(r.kind & 15u);
        if ((r.flags & 1u) != 0) tag |= 1u << 4;
        if (r.log2_align != 0) tag |= 1u << 5;
        if (r.old_id != 0) tag |= 1u << 6;
        if (r.id != 0) tag |= 1u << 7;
        *out++ = tag;
        out = put_varint(out, r.seq - seq);
        out = put_varint(out, r.time_ns > time_ns ? r.time_ns - time_ns : 0);
        seq = r.seq;
        time_ns = r.time_ns > time_ns ? r.time_ns : time_ns;
        if (r.id != 0) out = put_varint(out, zigzag(static_cast<std::int64_t>(r.id - id)));
        if (r.old_id != 0) out = put_varint(out, zigzag(static_cast<std::int64_t>(r.old_id - id)));
        if (r.id != 0) id = r.id;
        if (r.kind != static_cast<std::uint8_t>(op::free)) out = put_varint(out, r.size);
        if (r.log2_align != 0) *out++ = r.log2_align;
        return out;
    }
    /// Effects: reads one record from [in, end) into r (thread set by the caller).
    /// Returns: the end of the record, nullptr when the bytes are malformed.
    const std::uint8_t* decode(const std::uint8_t* in, const std::uint8_t* end, record& r) noexcept {
        using namespace detail;
        if (in >= end) return nullptr;
        const std::uint8_t tag = *in++;
        r = record{};
        r.kind = tag & 15u;
        if (r.kind == 0 || r.kind > static_cast<std::uint8_t>(op::pvalloc)) return nullptr; // no such op
        r.flags = (tag >> 4) & 1u;
        std::uint64_t v = 0;
        if ((in = get_varint(in, end, v)) == nullptr) return nullptr;
        r.seq = seq += v;
        if ((in = get_varint(in, end, v)) == nullptr) return nullptr;
        r.time_ns = time_ns += v;
        if ((tag & 0x80u) != 0) {
            if ((in = get_varint(in, end, v)) == nullptr) return nullptr;
            r.id = id + static_cast<std::uint64_t>(unzigzag(v));
        }
        if ((tag & 0x40u) != 0) {
            if ((in = get_varint(in, end, v)) == nullptr) return nullptr;
            r.old_id = id + static_cast<std::uint64_t>(unzigzag(v));
        }
        if (r.id != 0) id = r.id;
        if (r.kind != static_cast<std::uint8_t>(op::free)) {
            if ((in = get_varint(in, end, v)) == nullptr) return nullptr;
            r.size = v;
        }
        if ((tag & 0x20u) != 0) {
            if (in >= end) return nullptr;
            r.log2_align = *in++;
            if (r.log2_align > 64) return nullptr; // a 64-bit size_t has no larger alignment
        }
        return in;
    }
};

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
