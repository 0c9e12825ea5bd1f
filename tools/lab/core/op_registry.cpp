// strata-lab's registry of replay contenders: every adapter of op_contenders.hpp and the peers of
// peer_contenders.hpp, in report order. Compiled once here: each entry instantiates a replay of
// its allocator.
#include "op_contenders.hpp"

namespace strata::lab {

const std::vector<op_contender>& op_registry() {
    static constexpr const char* frame = "every block freed within its frame";
    static constexpr const char* align4096 = "alignment <= 4096";
    static constexpr const char* scan = "at most 500,000 operations, alignment <= 4096";
    static const std::vector<op_contender> r = with_peers({
        make_op_contender<malloc_replay>("malloc", "glibc malloc/free/realloc"),
        make_op_contender<pmr_pool_replay>("pmr_pool",
                                           "std::pmr::unsynchronized_pool_resource (pools up to 64 KiB)"),
        make_op_contender<arena_replay>("arena", "strata::arena from a heap_source, reset each frame", frame),
        make_op_contender<stack_replay>("stack", "strata::stack_allocator over a buffer, LIFO frees", frame),
        make_op_contender<pmr_monotonic_replay>(
            "pmr_monotonic", "std::pmr::monotonic_buffer_resource over new/delete, release() each frame",
            frame),
        make_op_contender<buffer_frame_replay<arena>>(
            "arena_buffer", "strata::arena over one fixed buffer, reset each frame", frame),
        make_op_contender<buffer_frame_replay<double_stack>>(
            "double_stack", "strata::double_stack over a fixed buffer, bottom end, reset each frame", frame),
        make_op_contender<frame2_replay>(
            "frame_allocator2", "strata::frame_allocator<2> from a heap_source, next_frame() each frame",
            frame),
        make_op_contender<tracked_arena_replay>(
            "tracked_arena", "strata::tracked<arena> counting on a tracker, reset each frame", frame),
        make_op_contender<debug_arena_replay>(
            "debug_arena", "strata::debug<arena>: fences, fills, a record per block; reset each frame",
            frame),
        make_op_contender<locked_arena_replay>(
            "locked_arena", "strata::locked<arena, std::mutex>, uncontended; reset each frame", frame),
        make_op_contender<slab_classes_replay>(
            "slab_classes", "seven strata::slab_caches, 64 B-4 KiB powers of two, 64-byte aligned",
            "requests <= 4 KiB, alignment <= 64"),
        make_op_contender<pool_replay>("pool",
                                       "strata::pool of the workload's one size, chunks from a heap_source",
                                       "one request size, alignment <= 16"),
        make_op_contender<size_class_replay>("size_class", "strata::size_class_pool (4 classes per doubling)",
                                             "requests <= 256 KiB, alignment <= 4096"),
        make_op_contender<engine_replay>(
            "engine_heap", "strata::engine_heap: thread-cached size classes to 64 KiB, TLSF arenas, spans"),
        make_op_contender<tlsf_replay<5>>(
            "tlsf", "strata::tlsf (SLI 5) over one region of 2x peak live bytes", align4096),
        make_op_contender<tlsf_replay<4>>("tlsf_sli4", "strata::basic_tlsf<4> over the same region",
                                          align4096),
        make_op_contender<buddy_replay>("buddy",
                                        "strata::buddy over a power-of-two region of >= 4x peak live bytes",
                                        "peak live bytes of at most 1 GiB, alignment <= 4096"),
        make_op_contender<offset_heap_replay>(
            "offset_heap",
            "strata::offset_heap: TLSF over the offsets of the same region, metadata outside it",
            "alignment <= 4096, a region under 64 GiB"),
        make_op_contender<device_pool_replay>(
            "device_pool",
            "strata::device_pool: blocks of the peak rounded to 2^k (256 KiB-64 MiB), host callbacks",
            align4096),
        make_op_contender<free_list_replay<free_list_first_fit>>(
            "first_fit", "strata::free_list<first_fit> (the baseline)", scan),
        make_op_contender<free_list_replay<free_list_best_fit>>("best_fit", "strata::free_list<best_fit>",
                                                                scan),
        make_op_contender<free_list_replay<free_list_next_fit>>("next_fit", "strata::free_list<next_fit>",
                                                                scan),
    });
    return r;
}

} // namespace strata::lab
