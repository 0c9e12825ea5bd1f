#include "strata/source/virtual_memory.hpp"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <string>
#include <utility>

#include "strata/core/align.hpp"
#include "strata/core/poison.hpp"

namespace strata {

std::size_t virtual_memory::page_size() noexcept {
    static const std::size_t size = [] {
        const long s = ::sysconf(_SC_PAGESIZE);
        return s > 0 ? static_cast<std::size_t>(s) : std::size_t{4096};
    }();
    return size;
}

virtual_memory virtual_memory::reserve(std::size_t bytes, std::error_code& ec) noexcept {
    ec.clear();
    if (bytes == 0) {
        ec = std::make_error_code(std::errc::invalid_argument);
        return {};
    }
    const auto rounded = align_up(bytes, page_size());
    if (!rounded) {
        ec = std::make_error_code(std::errc::value_too_large);
        return {};
    }
    void* p = ::mmap(nullptr, *rounded, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (p == MAP_FAILED) {
        ec = std::error_code(errno, std::generic_category());
        return {};
    }
    return virtual_memory(static_cast<std::byte*>(p), *rounded);
}

virtual_memory virtual_memory::reserve(std::size_t bytes) {
    std::error_code ec;
    virtual_memory vm = reserve(bytes, ec);
    if (ec) {
        throw std::system_error(ec,
                                "strata::virtual_memory: cannot reserve " + std::to_string(bytes) + " bytes");
    }
    return vm;
}

virtual_memory::virtual_memory(virtual_memory&& other) noexcept
    : base_(std::exchange(other.base_, nullptr)), size_(std::exchange(other.size_, 0)),
      committed_high_(std::exchange(other.committed_high_, 0)) {}

virtual_memory& virtual_memory::operator=(virtual_memory&& other) noexcept {
    if (this != &other) {
        release();
        base_ = std::exchange(other.base_, nullptr);
        size_ = std::exchange(other.size_, 0);
        committed_high_ = std::exchange(other.committed_high_, 0);
    }
    return *this;
}

virtual_memory::~virtual_memory() { release(); }

void virtual_memory::release() noexcept {
    if (base_) {
        // ASan keeps shadow state across munmap: bytes an allocator poisoned here would still read
        // as poisoned when the kernel hands the same addresses to the next mapping. Only committed
        // pages can have been poisoned (decommit unpoisons what it drops, but a page may have been
        // committed, poisoned and never decommitted).
        unpoison(base_, committed_high_);
        ::munmap(base_, size_);
    }
    base_ = nullptr;
    size_ = 0;
    committed_high_ = 0;
}

// Maps [offset, offset+bytes) to whole pages: the covering pages (inner == false) or only the pages
// entirely inside the range (inner == true, so a decommit never drops a neighbour's bytes).
bool virtual_memory::page_range(std::size_t offset, std::size_t bytes, bool inner, std::byte*& first,
                                std::size_t& length) const noexcept {
    if (!base_ || offset > size_ || bytes > size_ - offset) return false;
    if (bytes == 0) { // an empty range covers no page (rounding out would give a whole one)
        first = base_ + offset;
        length = 0;
        return true;
    }
    const std::size_t page = page_size();
    const std::size_t lo = inner ? *align_up(offset, page) : align_down(offset, page);
    const std::size_t hi = inner ? align_down(offset + bytes, page) : *align_up(offset + bytes, page);
    first = base_ + lo;
    length = hi > lo ? hi - lo : 0;
    return true;
}

bool virtual_memory::commit(std::size_t offset, std::size_t bytes) noexcept {
    std::byte* p = nullptr;
    std::size_t n = 0;
    if (!page_range(offset, bytes, false, p, n)) return false;
    if (n == 0) return true;
    if (::mprotect(p, n, PROT_READ | PROT_WRITE) != 0) return false;
    committed_high_ = std::max(committed_high_, static_cast<std::size_t>(p + n - base_));
    return true;
}

bool virtual_memory::decommit(std::size_t offset, std::size_t bytes) noexcept {
    std::byte* p = nullptr;
    std::size_t n = 0;
    if (!page_range(offset, bytes, true, p, n)) return false;
    if (n == 0) return true;
    // The pages read back as zero when committed again; their ASan shadow must say "addressable"
    // too, or the next user of these addresses inherits the last one's poison.
    unpoison(p, n);
    // MADV_DONTNEED drops the pages now (anonymous private memory reads back as zero); PROT_NONE
    // makes a stale pointer fault instead of silently re-committing a fresh zero page.
    ::madvise(p, n, MADV_DONTNEED);
    return ::mprotect(p, n, PROT_NONE) == 0;
}

bool virtual_memory::protect(std::size_t offset, std::size_t bytes) noexcept {
    std::byte* p = nullptr;
    std::size_t n = 0;
    if (!page_range(offset, bytes, false, p, n)) return false;
    return n == 0 || ::mprotect(p, n, PROT_NONE) == 0;
}

bool virtual_memory::hint_huge_pages(std::size_t offset, std::size_t bytes) noexcept {
#ifdef MADV_HUGEPAGE
    std::byte* p = nullptr;
    std::size_t n = 0;
    if (!page_range(offset, bytes, false, p, n)) return false;
    return n == 0 || ::madvise(p, n, MADV_HUGEPAGE) == 0;
#else
    (void)offset, (void)bytes;
    return false;
#endif
}

virtual_memory_source::virtual_memory_source(std::size_t reserve_bytes, options opts)
    : vm_(virtual_memory::reserve(reserve_bytes)), opts_(opts) {}

memory_block virtual_memory_source::allocate_block(std::size_t size, std::size_t align) noexcept {
    if (!is_valid_request(size, align)) return {};
    const std::size_t page = virtual_memory::page_size();
    if (align < page) align = page;
    const auto bytes = align_up(size, page);
    // The address is what must be aligned, not the offset: the reservation is only page-aligned.
    const auto base = reinterpret_cast<std::uintptr_t>(vm_.data());
    const auto at = align_up(base + top_, align);
    if (!bytes || !at || *at - base > vm_.size() || *bytes > vm_.size() - (*at - base)) return {};
    const std::size_t start = *at - base;
    const std::size_t guard = opts_.guard_pages ? page : 0;
    const std::size_t end = start + *bytes;
    if (guard > vm_.size() - end) return {};
    if (!vm_.commit(start, *bytes)) return {};
    if (opts_.huge_pages) vm_.hint_huge_pages(start, *bytes);
    last_from_ = top_;
    last_end_ = end + guard;
    top_ = end + guard;
    committed_ += *bytes;
    return {vm_.data() + start, *bytes, align};
}

void virtual_memory_source::deallocate_block(memory_block b) noexcept {
    if (b.empty() || !vm_.contains(b.data)) return;
    const auto offset = static_cast<std::size_t>(b.data - vm_.data());
    vm_.decommit(offset, b.size);
    committed_ -= b.size;
    if (committed_ == 0) { // nothing live: the whole reservation is free again
        top_ = last_end_ = freed_count_ = 0;
        return;
    }
    const std::size_t guard = opts_.guard_pages ? virtual_memory::page_size() : 0;
    const std::size_t end = offset + b.size + guard;
    if (end != top_) {
        if (freed_count_ < max_freed) freed_[freed_count_++] = {offset, end};
        return;
    }
    // The highest block: lower the top past it (and its alignment padding, when it is the most
    // recent), then past each remembered range that now ends at the top.
    top_ = end == last_end_ ? last_from_ : offset;
    last_end_ = 0;
    for (std::size_t i = 0; i < freed_count_;) {
        if (freed_[i].end == top_) {
            top_ = freed_[i].from;
            freed_[i] = freed_[--freed_count_];
            i = 0;
        } else {
            ++i;
        }
    }
}

} // namespace strata
