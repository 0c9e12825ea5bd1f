#include "trace_workload.hpp"

#include <cstdint>
#include <cstring>
#include <filesystem>
#include <memory>
#include <stdexcept>
#include <unordered_map>

#include "text.hpp"

#if defined(STRATA_LAB_HAS_TRACE)
#include "trace_reader.hpp"
#endif

namespace strata::lab {

bool trace_support() noexcept {
#if defined(STRATA_LAB_HAS_TRACE)
    return true;
#else
    return false;
#endif
}

#if defined(STRATA_LAB_HAS_TRACE)
namespace {
std::string command_of(const trace::trace_reader& reader) {
    std::string command(reader.header().command,
                        strnlen(reader.header().command, sizeof reader.header().command));
    for (char& c : command)
        if (static_cast<unsigned char>(c) < 0x20) c = ' ';
    while (!command.empty() && command.back() == ' ')
        command.pop_back();
    return command;
}
} // namespace

/// Trace records -> ops, incrementally: the whole-file load and the batch stream share it, so both
/// produce exactly the same ops and slots.
struct trace_batches::converter {
    std::unique_ptr<trace::trace_reader> reader;
    op_builder b;
    trace_conversion conv;
    std::unordered_map<std::uint64_t, std::uint32_t> slot_of; // trace id -> slot of a live block
    std::uint64_t ops = 0, max_ops;
    bool stamps, count_rest, done = false;

    converter(std::unique_ptr<trace::trace_reader> r, const std::string& name, std::uint64_t max,
              bool keep_stamps, bool count_past_max)
        : reader(std::move(r)), b(printable(name), "recorded: " + printable(command_of(*reader))),
          max_ops(max), stamps(keep_stamps), count_rest(count_past_max) {}

    void stamp(std::uint64_t ns) {
        if (stamps) b.stamp(ns);
    }

    /// Effects: converts records until `batch` ops are pending or the trace ends. Returns: false at
    /// the end of the trace.
    bool fill(std::size_t batch) {
        using trace::flag_failed;
        using trace::record;
        record r;
        while (b.pending_ops() < batch) {
            // A replay pass stops decoding at max_ops; only a pass that reports what was cut
            // (load, scan) reads on to count it.
            if (!reader->next(r) || (!count_rest && ops >= max_ops)) {
                conv.gaps = reader->stats().gaps;
                conv.truncated_file = reader->stats().truncated;
                done = true;
                return false;
            }
            step(r);
        }
        return true;
    }

    void step(const trace::record& r) {
        ++conv.records;
        if ((r.flags & trace::flag_failed) != 0) {
            ++conv.failed_calls;
            return;
        }
        if (ops >= max_ops) {
            ++conv.truncated_ops;
            return;
        }
        const auto thread =
            static_cast<std::uint16_t>(r.thread > 0 ? std::min<std::uint32_t>(r.thread - 1, 65535) : 0);
        const auto kind = static_cast<trace::op>(r.kind);
        if (kind == trace::op::free) {
            const auto it = slot_of.find(r.id);
            if (it == slot_of.end()) {
                ++conv.unknown_blocks;
                return;
            }
            b.free(it->second, thread);
            stamp(r.time_ns);
            slot_of.erase(it);
            ++ops;
            return;
        }
        if (kind == trace::op::realloc && r.old_id != 0) {
            const auto it = slot_of.find(r.old_id);
            if (it == slot_of.end()) {
                ++conv.unknown_blocks; // its contents came from before the trace: replay as malloc
            } else {
                const std::uint32_t slot = it->second;
                slot_of.erase(it);
                if (r.id == 0) { // realloc(p, 0) freed p
                    b.free(slot, thread);
                } else {
                    b.reallocate(slot, r.size == 0 ? 1 : r.size, thread);
                    slot_of[r.id] = slot;
                }
                stamp(r.time_ns);
                ++ops;
                return;
            }
        }
        if (r.id == 0) return;
        // An op carries a 32-bit alignment: a request aligned past 1 GiB is replayed at 1 GiB and
        // counted, so the header line can say the replay is not the recording there.
        if (r.log2_align > 30) ++conv.clamped_alignments;
        const std::uint32_t align = r.log2_align == 0 ? 16u : (1u << std::min<unsigned>(r.log2_align, 30));
        slot_of[r.id] = b.allocate(r.size == 0 ? 1 : r.size, std::max<std::uint32_t>(align, 1), thread);
        stamp(r.time_ns);
        ++ops;
    }
};

namespace {
op_workload convert(std::unique_ptr<trace::trace_reader> reader, const std::string& name,
                    std::uint64_t max_ops, trace_conversion* info) {
    trace_batches::converter c(std::move(reader), name, max_ops, true, true);
    (void)c.fill(SIZE_MAX);
    if (info != nullptr) *info = c.conv;
    return c.b.finish();
}
} // namespace

trace_batches::trace_batches(const std::string& path, std::uint64_t max_ops, bool count_past_max)
    : c_(std::make_unique<converter>(std::make_unique<trace::trace_reader>(path),
                                     std::filesystem::path(path).filename().string(), max_ops, false,
                                     count_past_max)) {}

trace_batches::trace_batches(const void* data, std::size_t size, const std::string& name,
                             std::uint64_t max_ops, bool count_past_max)
    : c_(std::make_unique<converter>(std::make_unique<trace::trace_reader>(data, size, name), name, max_ops,
                                     false, count_past_max)) {}

trace_batches::~trace_batches() = default;

bool trace_batches::next(std::vector<op>& out, std::size_t batch_ops) {
    if (!c_->done) (void)c_->fill(std::max<std::size_t>(batch_ops, 1));
    c_->b.take_ops(out);
    return !out.empty();
}

op_workload trace_batches::shape() const { return c_->b.shape(); }

const trace_conversion& trace_batches::conversion() const noexcept { return c_->conv; }

op_workload scan_trace(const std::string& path, std::uint64_t max_ops, trace_conversion* info) {
    trace_batches t(path, max_ops, true);
    std::vector<op> batch;
    while (t.next(batch, std::size_t{1} << 16)) {
    }
    if (info != nullptr) *info = t.conversion();
    return t.shape();
}
#else
struct trace_batches::converter {};
namespace {
[[noreturn]] void no_trace_support() {
    throw std::logic_error(
        "this strata-lab was built without trace support (install libzstd-dev and rebuild)");
}
} // namespace
trace_batches::trace_batches(const std::string&, std::uint64_t, bool) { no_trace_support(); }
trace_batches::trace_batches(const void*, std::size_t, const std::string&, std::uint64_t, bool) {
    no_trace_support();
}
trace_batches::~trace_batches() = default;
bool trace_batches::next(std::vector<op>&, std::size_t) { return false; }
op_workload trace_batches::shape() const { return {}; }
const trace_conversion& trace_batches::conversion() const noexcept {
    static const trace_conversion none;
    return none;
}
op_workload scan_trace(const std::string&, std::uint64_t, trace_conversion*) { no_trace_support(); }
#endif

op_workload load_trace(const std::string& path, std::uint64_t max_ops, trace_conversion* info) {
#if defined(STRATA_LAB_HAS_TRACE)
    return convert(std::make_unique<trace::trace_reader>(path),
                   std::filesystem::path(path).filename().string(), max_ops, info);
#else
    (void)path, (void)max_ops, (void)info;
    no_trace_support();
#endif
}

op_workload load_trace(const void* data, std::size_t size, const std::string& name, std::uint64_t max_ops,
                       trace_conversion* info) {
#if defined(STRATA_LAB_HAS_TRACE)
    return convert(std::make_unique<trace::trace_reader>(data, size, name), name, max_ops, info);
#else
    (void)data, (void)size, (void)name, (void)max_ops, (void)info;
    no_trace_support();
#endif
}

} // namespace strata::lab
