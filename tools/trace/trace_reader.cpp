#include "trace_reader.hpp"

#include <zstd.h>

#include <algorithm>
#include <cstring>
#include <stdexcept>

namespace strata::trace {

trace_reader::trace_reader(const std::string& path) : path_(path) {
    file_ = std::fopen(path.c_str(), "rb");
    if (file_ == nullptr) throw std::runtime_error("strata trace: cannot open '" + path + "'");
    open_header();
}

trace_reader::trace_reader(const void* data, std::size_t size, const std::string& name) : path_(name) {
    // fmemopen gives the same FILE* interface over the bytes (read-only; "rb" never writes).
    file_ = fmemopen(const_cast<void*>(data), size, "rb");
    if (file_ == nullptr) throw std::runtime_error("strata trace: cannot read '" + name + "' from memory");
    open_header();
}

void trace_reader::open_header() {
    const std::string& path = path_;
    if (std::fread(&header_, sizeof header_, 1, file_) != 1 ||
        std::memcmp(header_.magic, file_magic, sizeof file_magic) != 0) {
        std::fclose(file_);
        file_ = nullptr;
        throw std::runtime_error("strata trace: '" + path + "' is not a strata trace file");
    }
    if (header_.version != format_version || header_.header_bytes != sizeof(file_header) ||
        header_.record_bytes != sizeof(record)) {
        std::fclose(file_);
        file_ = nullptr;
        throw std::runtime_error("strata trace: '" + path + "' has format version " +
                                 std::to_string(header_.version) + "; this reader reads version " +
                                 std::to_string(format_version));
    }
    dctx_ = ZSTD_createDCtx();
    in_.resize(ZSTD_DStreamInSize());
}

trace_reader::~trace_reader() {
    ZSTD_freeDCtx(static_cast<ZSTD_DCtx*>(dctx_));
    if (file_ != nullptr) std::fclose(file_);
}

bool trace_reader::read_more() {
    if (eof_) return false;
    const std::size_t before = pending_.size();
    std::vector<unsigned char> out(ZSTD_DStreamOutSize());
    while (pending_.size() == before) {
        if (in_pos_ == in_size_) {
            in_size_ = std::fread(in_.data(), 1, in_.size(), file_);
            in_pos_ = 0;
            stats_.compressed_bytes += in_size_;
            if (in_size_ == 0) {
                eof_ = true;
                // A recording always writes its first call, so a stream with no bytes at all was
                // cut before its first flush (_exit, SIGKILL): everything it recorded is lost.
                stats_.truncated = frame_open_ || plain_.size() != plain_pos_ || stats_.compressed_bytes == 0;
                return pending_.size() != before;
            }
        }
        ZSTD_inBuffer in{in_.data(), in_size_, in_pos_};
        ZSTD_outBuffer o{out.data(), out.size(), 0};
        const std::size_t r = ZSTD_decompressStream(static_cast<ZSTD_DCtx*>(dctx_), &o, &in);
        if (ZSTD_isError(r))
            throw std::runtime_error("strata trace: '" + path_ + "' is corrupt: " + ZSTD_getErrorName(r));
        in_pos_ = in.pos;
        frame_open_ = r != 0;
        plain_.insert(plain_.end(), out.data(), out.data() + o.pos);
        parse();
    }
    return true;
}

void trace_reader::parse() {
    for (;;) {
        const std::size_t avail = plain_.size() - plain_pos_;
        if (avail < sizeof(chunk_header)) break;
        chunk_header h;
        std::memcpy(&h, plain_.data() + plain_pos_, sizeof h);
        if (h.magic != chunk_magic)
            throw std::runtime_error("strata trace: '" + path_ + "' has a corrupt chunk");
        // Checked before waiting for the payload: a header claiming gigabytes is refused at once.
        if (h.count == 0 || h.count > max_chunk_records ||
            std::size_t{h.payload_bytes} > std::size_t{h.count} * max_encoded_record)
            throw std::runtime_error("strata trace: '" + path_ + "' has a chunk of impossible size");
        const std::size_t bytes = sizeof h + std::size_t{h.payload_bytes};
        if (avail < bytes) break;
        chunk_encoder dec;
        dec.seq = h.first_seq;
        dec.time_ns = h.first_time_ns;
        const std::uint8_t* in = plain_.data() + plain_pos_ + sizeof h;
        const std::uint8_t* const end = in + h.payload_bytes;
        for (std::uint32_t i = 0; i < h.count; ++i) {
            record r;
            in = dec.decode(in, end, r);
            if (in == nullptr) throw std::runtime_error("strata trace: '" + path_ + "' has a corrupt record");
            r.thread = h.thread;
            max_seq_seen_ = std::max(max_seq_seen_, r.seq);
            pending_.push(r);
        }
        if (in != end)
            throw std::runtime_error("strata trace: '" + path_ + "' has a chunk of the wrong length");
        plain_pos_ += bytes;
        ++stats_.chunks;
        max_thread_seen_ = std::max(max_thread_seen_, h.thread);
    }
    // Keep the unparsed tail only.
    if (plain_pos_ > (1u << 20) || plain_pos_ == plain_.size()) {
        plain_.erase(plain_.begin(), plain_.begin() + static_cast<std::ptrdiff_t>(plain_pos_));
        plain_pos_ = 0;
    }
    stats_.max_window = std::max(stats_.max_window, pending_.size());
}

std::uint64_t trace_reader::look_ahead() const noexcept {
    // Threads are numbered 1, 2, ... in order of their first call: the highest number seen is a
    // lower bound on how many buffers may be holding records back.
    return 2 *
           (sweep_distance + std::uint64_t{max_chunk_records} * std::max<std::uint32_t>(max_thread_seen_, 1));
}

bool trace_reader::next(record& out) {
    if (!started_) {
        // The first chunk in the file need not hold the first record: a busy thread's full buffer
        // is written before a quiet thread's early records, which wait for a sweep. (A fork
        // child's trace starts where its parent's numbers were, not at 0.) So read until the
        // stream has moved a whole look-ahead past the smallest number seen: nothing below it can
        // come after that.
        while ((pending_.empty() || max_seq_seen_ - pending_.top().seq < look_ahead()) &&
               pending_.size() < max_pending && read_more()) {
        }
        if (pending_.empty()) return false;
        next_seq_ = pending_.top().seq;
        started_ = true;
    }
    while (pending_.empty() || pending_.top().seq > next_seq_) {
        // Once the stream is a look-ahead past next_seq_, that record is lost (not late): go on.
        if (!pending_.empty() && max_seq_seen_ - next_seq_ >= look_ahead()) break;
        if (pending_.size() >= max_pending) break;
        if (!read_more()) break;
    }
    if (pending_.empty()) return false;
    out = pending_.top();
    pending_.pop();
    if (out.seq < next_seq_) {
        ++stats_.out_of_order; // a duplicate, or a record later than the look-ahead
    } else {
        stats_.gaps += out.seq - next_seq_;
        next_seq_ = out.seq + 1;
    }
    ++stats_.records;
    return true;
}

} // namespace strata::trace
