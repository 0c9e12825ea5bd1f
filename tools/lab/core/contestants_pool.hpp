#pragma once
// strata-lab contestants from the pool and slab families. The lead wires them into
// builtin_registry() with one line: add_pool_contestants(reg);
//
// The lab's frame loop asks for sizes 16..4096 with alignment 8/16/64 and frees every pointer of a
// frame in end_frame(). Both contestants below are size-class allocators, so each remembers the
// size (or class) of every allocation of the frame in a vector reserved up front (one store per
// allocate) and frees the frame's pointers one by one in end_frame().
#include <array>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "strata/pool/size_class_pool.hpp"
#include "strata/slab/slab_cache.hpp"
#include "strata/source/heap_source.hpp"

#include "contestants.hpp"
#include "registry.hpp"

namespace strata::lab {

/// strata::size_class_pool (default classes: 16 B quantum, 4 per doubling, up to 4 KiB) growing
/// from a heap_source; end_frame frees each pointer with its recorded size and alignment.
class size_class_pool_adapter {
public:
    explicit size_class_pool_adapter(const workload& w) : pool_(source_), sizes_(w.max_frame_allocs) {}

    void* allocate(std::size_t size, std::size_t align) noexcept {
        sizes_[n_++] = {static_cast<std::uint32_t>(size), static_cast<std::uint32_t>(align)};
        return pool_.allocate(size, align);
    }
    void end_frame(std::span<void* const> frame) noexcept {
        for (std::size_t i = 0; i < frame.size(); ++i)
            pool_.deallocate(frame[i], sizes_[i].size, sizes_[i].align);
        n_ = 0;
    }
    void sample(std::span<void* const>) noexcept { peaks_.observe(pool_.stats()); }
    [[nodiscard]] memory_figures memory() const noexcept { return peaks_.figures(source_.calls()); }

private:
    struct request {
        std::uint32_t size;
        std::uint32_t align;
    };
    counting_source<heap_source> source_;
    size_class_pool pool_;
    std::vector<request> sizes_;
    std::size_t n_ = 0;
    strata_peaks peaks_;
};

/// Seven strata::slab_caches of 64-byte-aligned blocks, 64 B to 4 KiB in powers of two (a request
/// takes the class of max(size, 64) rounded up to a power of two, so every alignment up to 64 holds).
class slab_classes_adapter {
public:
    explicit slab_classes_adapter(const workload& w) : classes_(w.max_frame_allocs) {}

    void* allocate(std::size_t size, std::size_t align) noexcept {
        (void)align; // every block is 64-byte aligned; the workload never asks for more
        const std::size_t k = size <= 64 ? 0 : static_cast<std::size_t>(std::bit_width(size - 1)) - 6;
        classes_[n_++] = static_cast<std::uint8_t>(k);
        switch (k) {
        case 0: return c64_.allocate();
        case 1: return c128_.allocate();
        case 2: return c256_.allocate();
        case 3: return c512_.allocate();
        case 4: return c1k_.allocate();
        case 5: return c2k_.allocate();
        case 6: return c4k_.allocate();
        default: return nullptr;
        }
    }
    void end_frame(std::span<void* const> frame) noexcept {
        for (std::size_t i = 0; i < frame.size(); ++i) {
            void* p = frame[i];
            switch (classes_[i]) {
            case 0: c64_.deallocate(static_cast<block<64>*>(p)); break;
            case 1: c128_.deallocate(static_cast<block<128>*>(p)); break;
            case 2: c256_.deallocate(static_cast<block<256>*>(p)); break;
            case 3: c512_.deallocate(static_cast<block<512>*>(p)); break;
            case 4: c1k_.deallocate(static_cast<block<1024>*>(p)); break;
            case 5: c2k_.deallocate(static_cast<block<2048>*>(p)); break;
            default: c4k_.deallocate(static_cast<block<4096>*>(p)); break;
            }
        }
        n_ = 0;
    }
    void sample(std::span<void* const>) noexcept {
        strata::stats total;
        for (const strata::stats& s : {c64_.stats(), c128_.stats(), c256_.stats(), c512_.stats(),
                                       c1k_.stats(), c2k_.stats(), c4k_.stats()}) {
            total.in_use += s.in_use; // at this moment: the classes' own peaks came at other times
            total.capacity += s.capacity;
        }
        peaks_.observe(total);
    }
    [[nodiscard]] memory_figures memory() const noexcept { return peaks_.figures(source_.calls()); }

private:
    template <std::size_t N>
    struct alignas(64) block {
        std::byte bytes[N];
    };
    counting_source<heap_source> source_;
    slab_cache<block<64>> c64_{source_};
    slab_cache<block<128>> c128_{source_};
    slab_cache<block<256>> c256_{source_};
    slab_cache<block<512>> c512_{source_};
    slab_cache<block<1024>> c1k_{source_};
    slab_cache<block<2048>> c2k_{source_};
    slab_cache<block<4096>> c4k_{source_};
    std::vector<std::uint8_t> classes_;
    std::size_t n_ = 0;
    strata_peaks peaks_;
};

/// Effects: registers the pool and slab contestants.
inline void add_pool_contestants(registry& reg) {
    reg.add(make_contestant<size_class_pool_adapter>(
        "size_class_pool", "strata::size_class_pool (16 B quantum, 4 classes per doubling, to 4 KiB) from a "
                           "heap_source; every block freed (sized) at frame end"));
    reg.add(make_contestant<slab_classes_adapter>(
        "slab_classes", "seven strata::slab_caches, 64 B-4 KiB powers of two, 64-byte aligned; every block "
                        "freed at frame end"));
}

} // namespace strata::lab
