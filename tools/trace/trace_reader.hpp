#pragma once
// Streaming reader for strata trace files (trace_format.hpp). Reads one zstd stream record by
// record, in sequence order, with memory bounded by the recorder's sweep distance, so a multi-GB
// trace replays without being loaded.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <queue>
#include <string>
#include <vector>

#include "trace_format.hpp"

namespace strata::trace {

/// Counts a reader gathered so far.
struct reader_stats {
    std::uint64_t records = 0; ///< records returned by next()
    std::uint64_t chunks = 0;  ///< chunks decoded
    std::uint64_t compressed_bytes = 0;
    std::uint64_t gaps = 0;         ///< sequence numbers never seen (records lost, e.g. _exit)
    std::uint64_t out_of_order = 0; ///< records whose number was already passed (duplicates, or
                                    ///< released late after the re-ordering window filled)
    std::size_t max_window = 0;     ///< most records held for re-ordering at once
    bool truncated = false;         ///< the stream ended inside a frame or chunk (the recorded
                                    ///< process was killed): the records before the cut are kept
};

class trace_reader {
public:
    /// Effects: opens `path` and reads its header. Throws: std::runtime_error naming the file when
    /// it cannot be opened, is not a strata trace, or has an unsupported version.
    explicit trace_reader(const std::string& path);
    /// Effects: reads a trace held in memory (`name` is used in messages). `data` must outlive the
    /// reader. Throws: as above.
    trace_reader(const void* data, std::size_t size, const std::string& name);
    ~trace_reader();
    trace_reader(const trace_reader&) = delete;
    trace_reader& operator=(const trace_reader&) = delete;

    /// Returns: the file header.
    [[nodiscard]] const file_header& header() const noexcept { return header_; }

    /// Effects: stores the next record in sequence order in `out`. Returns: false at the end.
    /// Throws: std::runtime_error on a corrupt stream. A truncated one ends early and sets
    /// stats().truncated.
    bool next(record& out);

    [[nodiscard]] const reader_stats& stats() const noexcept { return stats_; }

    /// Largest re-ordering window before records are released out of order (a safety net: the
    /// look-ahead normally bounds the window far below it).
    static constexpr std::size_t max_pending = std::size_t{1} << 22;

private:
    void open_header();
    bool read_more();
    void parse();
    /// Returns: how far past a record's number the stream can still bring it (see sweep_distance).
    [[nodiscard]] std::uint64_t look_ahead() const noexcept;

    struct later_seq {
        bool operator()(const record& a, const record& b) const noexcept { return a.seq > b.seq; }
    };

    std::string path_;
    std::FILE* file_ = nullptr;
    void* dctx_ = nullptr; // ZSTD_DCtx
    file_header header_{};
    std::vector<unsigned char> in_;
    std::size_t in_pos_ = 0, in_size_ = 0;
    std::vector<std::uint8_t> plain_; // decompressed, not yet parsed
    std::size_t plain_pos_ = 0;
    bool eof_ = false;
    bool frame_open_ = false; // the last zstd frame is not complete yet
    std::priority_queue<record, std::vector<record>, later_seq> pending_;
    std::uint64_t next_seq_ = 0;
    std::uint64_t max_seq_seen_ = 0;
    std::uint32_t max_thread_seen_ = 0;
    bool started_ = false; // next_seq_ set once the first look-ahead was read
    reader_stats stats_;
};

} // namespace strata::trace
