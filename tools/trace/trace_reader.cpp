#include "trace_reader.hpp"

#include <zstd.h>

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
                stats_.truncated = frame_open_ || plain_.size() != plain_pos_;
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
        if (!seq_started_) { // a fork child's trace goes on from its parent's sequence numbers
            next_seq_ = h.first_seq;
            seq_started_ = true;
        }
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
            pending_.push(r);
        }
        if (in != end)
            throw std::runtime_error("strata trace: '" + path_ + "' has a chunk of the wrong length");
        plain_pos_ += bytes;
        ++stats_.chunks;
    }
    // Keep the unparsed tail only.
    if (plain_pos_ > (1u << 20) || plain_pos_ == plain_.size()) {
        plain_.erase(plain_.begin(), plain_.begin() + static_cast<std::ptrdiff_t>(plain_pos_));
        plain_pos_ = 0;
    }
    stats_.max_window = std::max(stats_.max_window, pending_.size());
}

bool trace_reader::next(record& out) {
    while (pending_.empty() || pending_.top().seq != next_seq_) {
        if (pending_.size() >= max_pending) break;
        if (!read_more()) break;
    }
    if (pending_.empty()) return false;
    out = pending_.top();
    pending_.pop();
    if (out.seq < next_seq_) {
        ++stats_.out_of_order; // a duplicate, or released late after the window filled
    } else {
        stats_.gaps += out.seq - next_seq_;
        next_seq_ = out.seq + 1;
    }
    ++stats_.records;
    return true;
}

} // namespace strata::trace
