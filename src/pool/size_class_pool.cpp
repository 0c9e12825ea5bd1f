#include "strata/pool/size_class_pool.hpp"

#include <algorithm>
#include <bit>

#include "strata/core/bit.hpp"
#include "strata/core/check.hpp"

namespace strata {

namespace {

// The class sizes for the options: see size_class_options.
std::vector<std::size_t> make_classes(std::size_t max_size, std::size_t per_doubling) {
    std::vector<std::size_t> classes;
    const std::size_t linear_top = size_class_pool::quantum * per_doubling;
    for (std::size_t c = size_class_pool::quantum; c <= linear_top; c += size_class_pool::quantum) {
        classes.push_back(c);
        if (c >= max_size) return classes;
    }
    for (std::size_t base = linear_top;; base *= 2) {
        const std::size_t step = base / per_doubling;
        for (std::size_t c = base + step; c <= 2 * base; c += step) {
            classes.push_back(c);
            if (c >= max_size) return classes;
        }
    }
}

} // namespace

size_class_pool::size_class_pool(source_ref source, size_class_options options) noexcept {
    if (options.max_size == 0 || options.max_size > max_supported_size ||
        !is_pow2(options.classes_per_doubling) || options.classes_per_doubling > 16)
        return;
    try {
        const std::vector<std::size_t> classes = make_classes(options.max_size, options.classes_per_doubling);
        pools_.reserve(classes.size());
        for (const std::size_t c : classes) {
            const std::size_t align = std::min<std::size_t>(c & (~c + 1), max_alignment); // lowest set bit
            pool_options po;
            po.slots_per_chunk = std::max<std::size_t>(4, options.chunk_bytes / c);
            pools_.emplace_back(c, align, source, po);
        }
        table_.resize(options.max_size / quantum + 2);
        std::size_t k = 0;
        for (std::size_t i = 0; i < table_.size(); ++i) {
            // Entry i serves sizes in ((i - 1) * 16, i * 16]: the first class >= i * 16.
            while (k + 1 < classes.size() && classes[k] < i * quantum)
                ++k;
            table_[i] = static_cast<std::uint8_t>(k);
        }
    } catch (...) {
        pools_.clear();
        table_.clear();
        return;
    }
    per_doubling_ = options.classes_per_doubling;
    max_size_ = options.max_size;
}

std::size_t size_class_pool::class_of(std::size_t size, std::size_t align) const noexcept {
    if (size == 0 || size > max_size_ || !is_pow2(align) || align > max_alignment || max_size_ == 0)
        return pools_.size();
    if (align > quantum) {
        const auto rounded = align_up(size, align);
        if (!rounded) return pools_.size();
        size = *rounded;
    }
    if (size > max_size_) {
        // Only the alignment can have pushed it past (allocate checked the size): the last class is
        // the first one >= max_size and may still hold it.
        const pool& last = pools_.back();
        return size <= last.slot_size() && last.slot_align() >= align ? pools_.size() - 1 : pools_.size();
    }
    const std::size_t k = table_[(size + quantum - 1) / quantum];
    return pools_[k].slot_align() >= align ? k : pools_.size();
}

void* size_class_pool::allocate_aligned(std::size_t size, std::size_t align) noexcept {
    const std::size_t k = class_of(size, align);
    return k < pools_.size() ? pools_[k].allocate() : nullptr;
}

void size_class_pool::deallocate_aligned(void* p, std::size_t size, std::size_t align) noexcept {
    if (p == nullptr) return;
    const std::size_t k = class_of(size, align);
    if (k < pools_.size()) {
        pools_[k].deallocate(p);
        return;
    }
    // No class serves this request, so p cannot have come from allocate(size, align): report it and
    // free nothing, at every checks level (at checks 0 silently): a class pool would free a slot of
    // its own whatever size it was told.
#if STRATA_CHECKS >= 1
    bool ours = false;
    for (const pool& c : pools_)
        ours = ours || c.owns(p);
    if (ours) {
        (void)STRATA_VERIFY(1, false, size_mismatch, "strata::size_class_pool", p,
                            "freed with a size and alignment no class serves");
    } else {
        (void)STRATA_VERIFY(1, false, foreign_pointer, "strata::size_class_pool", p,
                            "freed a pointer no class owns");
    }
#else
    (void)size, (void)align;
#endif
}

bool size_class_pool::owns(const void* p) const noexcept {
    return std::any_of(pools_.begin(), pools_.end(), [p](const pool& c) { return c.owns(p); });
}

strata::stats size_class_pool::stats() const noexcept {
    strata::stats s;
    for (const pool& c : pools_) {
        const strata::stats cs = c.stats();
        add_counts(s, cs);
        s.largest_free_block = std::max(s.largest_free_block, cs.largest_free_block);
    }
    return s;
}

bool size_class_pool::check() const noexcept {
    if (!valid()) return pools_.empty();
    return std::all_of(pools_.begin(), pools_.end(), [](const pool& c) { return c.check(); });
}

} // namespace strata
