#include "trace_workload.hpp"

#include <cstring>
#include <filesystem>
#include <stdexcept>
#include <unordered_map>

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
op_workload convert(trace::trace_reader& reader, const std::string& name, std::uint64_t max_ops,
                    trace_conversion* info) {
    using trace::flag_failed;
    using trace::record;
    std::string command(reader.header().command,
                        strnlen(reader.header().command, sizeof reader.header().command));
    for (char& c : command)
        if (static_cast<unsigned char>(c) < 0x20) c = ' ';
    while (!command.empty() && command.back() == ' ')
        command.pop_back();
    op_builder b(name, "recorded: " + command);
    trace_conversion conv;
    std::unordered_map<std::uint64_t, std::uint32_t> slot_of; // trace id -> slot
    std::uint64_t ops = 0;
    for (record r; reader.next(r);) {
        ++conv.records;
        if ((r.flags & flag_failed) != 0) {
            ++conv.failed_calls;
            continue;
        }
        if (ops >= max_ops) {
            ++conv.truncated_ops;
            continue;
        }
        const auto thread =
            static_cast<std::uint16_t>(r.thread > 0 ? std::min<std::uint32_t>(r.thread - 1, 65535) : 0);
        const auto kind = static_cast<trace::op>(r.kind);
        if (kind == trace::op::free) {
            const auto it = slot_of.find(r.id);
            if (it == slot_of.end()) {
                ++conv.unknown_blocks;
                continue;
            }
            b.free(it->second, thread);
            b.stamp(r.time_ns);
            slot_of.erase(it);
            ++ops;
            continue;
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
                b.stamp(r.time_ns);
                ++ops;
                continue;
            }
        }
        if (r.id == 0) continue;
        const std::uint32_t align = r.log2_align == 0 ? 16u : (1u << std::min<unsigned>(r.log2_align, 30));
        slot_of[r.id] = b.allocate(r.size == 0 ? 1 : r.size, std::max<std::uint32_t>(align, 1), thread);
        b.stamp(r.time_ns);
        ++ops;
    }
    conv.gaps = reader.stats().gaps;
    conv.truncated_file = reader.stats().truncated;
    if (info != nullptr) *info = conv;
    return b.finish();
}
} // namespace
#endif

op_workload load_trace(const std::string& path, std::uint64_t max_ops, trace_conversion* info) {
#if defined(STRATA_LAB_HAS_TRACE)
    trace::trace_reader reader(path);
    return convert(reader, std::filesystem::path(path).filename().string(), max_ops, info);
#else
    (void)path, (void)max_ops, (void)info;
    throw std::logic_error(
        "this strata-lab was built without trace support (install libzstd-dev and rebuild)");
#endif
}

op_workload load_trace(const void* data, std::size_t size, const std::string& name, std::uint64_t max_ops,
                       trace_conversion* info) {
#if defined(STRATA_LAB_HAS_TRACE)
    trace::trace_reader reader(data, size, name);
    return convert(reader, name, max_ops, info);
#else
    (void)data, (void)size, (void)name, (void)max_ops, (void)info;
    throw std::logic_error(
        "this strata-lab was built without trace support (install libzstd-dev and rebuild)");
#endif
}

} // namespace strata::lab
