#pragma once
// size_class_pool: a small-object allocator. One pool per size class; a request is rounded up to
// its class by one table load, so allocate and sized deallocate are O(1) with no search.
#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

#include "strata/core/align.hpp"
#include "strata/core/config.hpp"
#include "strata/core/stats.hpp"
#include "strata/pool/pool.hpp"
#include "strata/source/memory_source.hpp"

namespace strata {

/// The classes of a size_class_pool and how each grows.
///
/// Classes are multiples of 16 (the quantum): 16, 32, ... up to 16 * classes_per_doubling, then
/// `classes_per_doubling` evenly spaced classes per power of two: with 4, 64 | 80 96 112 128 |
/// 160 192 224 256 | 320 ... The last class is the first one >= max_size.
///
/// Worst-case internal waste (a request of s bytes gets class(s) >= s): class(s) - s < max(16, s /
/// classes_per_doubling) bytes, i.e. below 1/classes_per_doubling of the request once s > 16 *
/// classes_per_doubling (25% with the default 4; 12.5% with 8), and at most 15 bytes below that.
/// tests/pool/size_class_pool_test.cpp checks it for every size.
struct size_class_options {
    std::size_t max_size = 4096;                     ///< largest request served; at most 256 KiB
    std::size_t classes_per_doubling = 4;            ///< spacing: a power of two in [1, 16]
    std::size_t chunk_bytes = std::size_t{64} << 10; ///< bytes each class asks its source for at a time
};

/// A size-class allocator over one memory source.
///
/// allocate(size, align) serves 0 < size <= max_size() with align any power of two up to 4096
/// whenever size rounded up to align fits the last class (always with the default max_size 4096):
/// alignments above 16 round the size up to a multiple of the alignment first, and every class is
/// aligned to its lowest set bit, so the class found is aligned enough. Not thread-safe.
///
/// Bad input: size 0, size > max_size(), align not a power of two or > 4096, or size rounded up to
/// align larger than the last class (e.g. align 4096 with max_size 1000): nullptr, no state
/// change. deallocate(nullptr, ...) is a no-op. deallocate with a size or alignment other than the
/// allocation's names another class: reported at checks >= 1 as foreign_pointer by that class's
/// pool when the pointer is not one of its slots (undefined at checks 0); foreign pointers and
/// double frees likewise (foreign_pointer / double_free). Invalid options (max_size 0 or >
/// 256 KiB, classes_per_doubling not a power of two in [1, 16]) or no memory for the class table
/// leave the allocator invalid: valid() is false and every allocate returns nullptr.
class size_class_pool {
public:
    static constexpr std::size_t quantum = 16;
    static constexpr std::size_t max_supported_size = std::size_t{256} << 10;
    static constexpr std::size_t max_alignment = 4096;

    /// Effects: an allocator whose class pools grow from `source`. Requires: `source` outlives it.
    explicit size_class_pool(source_ref source, size_class_options options = {}) noexcept;

    /// Effects: takes `other`'s classes; `other` is left invalid (valid() false, every allocate
    /// nullptr), not with a size limit and no classes behind it.
    size_class_pool(size_class_pool&& other) noexcept
        : table_(std::move(other.table_)), pools_(std::move(other.pools_)),
          max_size_(std::exchange(other.max_size_, 0)), per_doubling_(other.per_doubling_) {}
    size_class_pool& operator=(size_class_pool&& other) noexcept {
        if (this != &other) {
            table_ = std::move(other.table_);
            pools_ = std::move(other.pools_);
            max_size_ = std::exchange(other.max_size_, 0);
            per_doubling_ = other.per_doubling_;
        }
        return *this;
    }
    size_class_pool(const size_class_pool&) = delete;
    size_class_pool& operator=(const size_class_pool&) = delete;
    /// Effects: every class returns its chunks to the source.
    ~size_class_pool() = default;

    /// Returns: at least `size` bytes aligned to `align`, or nullptr (see the class comment).
    /// Complexity: O(1): one table load, then the class pool's allocate.
    [[nodiscard]] STRATA_ALWAYS_INLINE void* allocate(std::size_t size,
                                                      std::size_t align = default_alignment) noexcept {
        if (STRATA_LIKELY(align - 1 < quantum && (align & (align - 1)) == 0 && size - 1 < max_size_))
            return pools_[table_[(size + quantum - 1) / quantum]].allocate();
        return allocate_aligned(size, align);
    }

    /// Effects: frees `p`, which allocate(size, align) returned; nullptr is a no-op. Complexity: O(1).
    STRATA_ALWAYS_INLINE void deallocate(void* p, std::size_t size,
                                         std::size_t align = default_alignment) noexcept {
        if (STRATA_LIKELY(align - 1 < quantum && (align & (align - 1)) == 0 && size - 1 < max_size_)) {
            pools_[table_[(size + quantum - 1) / quantum]].deallocate(p);
            return;
        }
        deallocate_aligned(p, size, align);
    }

    /// Returns: the class index serving (size, align), or class_count() when none does. O(1).
    [[nodiscard]] std::size_t class_of(std::size_t size,
                                       std::size_t align = default_alignment) const noexcept;
    /// Returns: the slot size of class `index`. Requires: index < class_count().
    [[nodiscard]] std::size_t class_size(std::size_t index) const noexcept {
        return pools_[index].slot_size();
    }
    /// Returns: the slot alignment of class `index`. Requires: index < class_count().
    [[nodiscard]] std::size_t class_align(std::size_t index) const noexcept {
        return pools_[index].slot_align();
    }
    /// Returns: the number of classes.
    [[nodiscard]] std::size_t class_count() const noexcept { return pools_.size(); }
    /// Returns: the pool of class `index` (for stats and walks). Requires: index < class_count().
    [[nodiscard]] const pool& class_pool(std::size_t index) const noexcept { return pools_[index]; }
    /// Returns: the largest request served.
    [[nodiscard]] std::size_t max_size() const noexcept { return max_size_; }
    /// Returns: the documented waste bound for a request of `size` bytes: max(16, size /
    /// classes_per_doubling); class(size) - size is strictly below it.
    [[nodiscard]] std::size_t waste_bound(std::size_t size) const noexcept {
        return size / per_doubling_ > quantum ? size / per_doubling_ : quantum;
    }
    /// Returns: false when the options were invalid or the class table could not be allocated.
    [[nodiscard]] bool valid() const noexcept { return max_size_ != 0; }

    /// Returns: true when some class owns `p`. Complexity: O(classes * log chunks).
    [[nodiscard]] bool owns(const void* p) const noexcept;
    /// Returns: the sum over classes (in_use and capacity count class-rounded bytes). peak is the
    /// sum of the classes' pool::stats().peak, and what that is depends on the level: with counters
    /// (checks >= 1 or ASan) each class's peak is exact, so the sum is an upper bound of the true
    /// peak (classes peak at different times); at checks 0 each class's peak is only a lower bound
    /// (pool::stats()), so the sum bounds nothing: it can lie below the true peak (0 after a burst
    /// that fit the first chunks) or above it. For a dependable peak at checks 0, wrap the
    /// allocator in tracked<> (an exact peak of the requested bytes).
    [[nodiscard]] strata::stats stats() const noexcept;
    /// Returns: true when every class pool passes check().
    [[nodiscard]] bool check() const noexcept;

private:
    void* allocate_aligned(std::size_t size, std::size_t align) noexcept;
    void deallocate_aligned(void* p, std::size_t size, std::size_t align) noexcept;

    std::vector<std::uint8_t> table_; // (size + 15) / 16 -> class index
    std::vector<pool> pools_;
    std::size_t max_size_ = 0; // 0 marks an invalid allocator
    std::size_t per_doubling_ = 1;
};

} // namespace strata
