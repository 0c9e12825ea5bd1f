#include "strata/source/virtual_memory.hpp"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <utility>

#include "strata/core/align.hpp"
#include "strata/core/check.hpp"
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

namespace {

// The offset at or above `offset` whose address is aligned: the reservation is only page-aligned,
// so aligning the offset would miss every alignment above what the base happens to have.
std::optional<std::size_t> aligned_offset(const std::byte* base, std::size_t offset,
                                          std::size_t align) noexcept {
    const auto b = reinterpret_cast<std::uintptr_t>(base);
    const auto at = align_up(b + offset, align);
    if (!at) return std::nullopt;
    return *at - b;
}

} // namespace

virtual_memory_source::virtual_memory_source(std::size_t reserve_bytes, options opts)
    : vm_(virtual_memory::reserve(reserve_bytes)), opts_(opts) {
    // Two holes always have a block of at least a page between them: a list of pages / 2 + 1
    // entries never runs out. It is address space; only what the holes use gets committed.
    const std::size_t pages = vm_.size() / virtual_memory::page_size();
    list_ = virtual_memory::reserve((pages / 2 + 1) * sizeof(range));
}

virtual_memory_source::virtual_memory_source(virtual_memory_source&& other) noexcept
    : vm_(std::move(other.vm_)), list_(std::move(other.list_)), opts_(other.opts_),
      top_(std::exchange(other.top_, 0)), holes_(std::exchange(other.holes_, 0)),
      hole_capacity_(std::exchange(other.hole_capacity_, 0)), committed_(std::exchange(other.committed_, 0)),
      live_(std::exchange(other.live_, 0)), lost_(std::exchange(other.lost_, 0)) {}

virtual_memory_source& virtual_memory_source::operator=(virtual_memory_source&& other) noexcept {
    if (this != &other) {
        vm_ = std::move(other.vm_);
        list_ = std::move(other.list_);
        opts_ = other.opts_;
        top_ = std::exchange(other.top_, 0);
        holes_ = std::exchange(other.holes_, 0);
        hole_capacity_ = std::exchange(other.hole_capacity_, 0);
        committed_ = std::exchange(other.committed_, 0);
        live_ = std::exchange(other.live_, 0);
        lost_ = std::exchange(other.lost_, 0);
    }
    return *this;
}

bool virtual_memory_source::reserve_holes(std::size_t n) noexcept {
    if (n <= hole_capacity_) return true;
    const std::size_t page = virtual_memory::page_size();
    const std::size_t have = hole_capacity_ * sizeof(range);
    const std::size_t want = *align_up(n * sizeof(range), page); // n <= pages / 2 + 1: no overflow
    if (!list_.commit(have, want - have)) return false;
    hole_capacity_ = want / sizeof(range);
    return true;
}

void virtual_memory_source::insert_hole(std::size_t at, range r) noexcept {
    range* h = hole_data();
    std::memmove(h + at + 1, h + at, (holes_ - at) * sizeof(range));
    h[at] = r;
    ++holes_;
}

void virtual_memory_source::erase_hole(std::size_t at) noexcept {
    range* h = hole_data();
    std::memmove(h + at, h + at + 1, (holes_ - at - 1) * sizeof(range));
    --holes_;
}

memory_block virtual_memory_source::commit_block(std::size_t start, std::size_t bytes,
                                                 std::size_t align) noexcept {
    if (!vm_.commit(start, bytes)) return {};
    if (opts_.huge_pages) vm_.hint_huge_pages(start, bytes);
    committed_ += bytes;
    ++live_;
    return {vm_.data() + start, bytes, align};
}

memory_block virtual_memory_source::allocate_block(std::size_t size, std::size_t align) noexcept {
    if (!is_valid_request(size, align) || !vm_.reserved()) return {};
    const std::size_t page = virtual_memory::page_size();
    if (align < page) align = page;
    const auto rounded = align_up(size, page);
    if (!rounded || *rounded > vm_.size()) return {}; // and so bytes + a guard page cannot wrap
    const std::size_t bytes = *rounded;
    const std::size_t need = bytes + (opts_.guard_pages ? page : 0); // the block and its guard
    // The lowest hole that fits: freed address space is used before the top grows.
    range* h = hole_data();
    for (std::size_t i = 0; i < holes_; ++i) {
        const auto start = aligned_offset(vm_.data(), h[i].from, align);
        if (!start || *start > h[i].end || need > h[i].end - *start) continue;
        const bool before = *start != h[i].from;      // alignment padding: stays a hole
        const bool after = *start + need != h[i].end; // the rest: stays a hole
        if (before && after && !reserve_holes(holes_ + 1)) return {};
        memory_block b = commit_block(*start, bytes, align);
        if (b.empty()) return b;
        const range rest{*start + need, h[i].end};
        if (before) {
            h[i].end = *start;
            if (after) insert_hole(i + 1, rest);
        } else if (after) {
            h[i].from = rest.from;
        } else {
            erase_hole(i);
        }
        return b;
    }
    // Above the highest block. The alignment padding becomes a hole: left out of the list, it
    // would stop the top from coming down past it once the blocks around it were freed.
    const auto start = aligned_offset(vm_.data(), top_, align);
    if (!start || *start > vm_.size() || need > vm_.size() - *start) return {};
    const bool padded = *start != top_;
    if (padded && !reserve_holes(holes_ + 1)) return {};
    memory_block b = commit_block(*start, bytes, align);
    if (b.empty()) return b;
    if (padded) insert_hole(holes_, {top_, *start}); // every hole lies below the top: the last one
    top_ = *start + need;
    return b;
}

void virtual_memory_source::deallocate_block(memory_block b) noexcept {
    if (b.empty()) return;
    const std::size_t page = virtual_memory::page_size();
    const std::size_t guard = opts_.guard_pages ? page : 0;
    // Checked in every build (a slow path): a bad block is reported at checks >= 1 and ignored.
    const bool inside = vm_.contains(b.data);
    const auto offset = inside ? static_cast<std::size_t>(b.data - vm_.data()) : 0;
    // offset >= top_ first: above the top the subtractions below would wrap and accept the block (a
    // block freed twice after the top came down past it, or never handed out).
    if (!inside || offset % page != 0 || b.size == 0 || b.size % page != 0 || offset >= top_ ||
        b.size > top_ - offset || guard > top_ - offset - b.size) {
        (void)STRATA_VERIFY(1, false, foreign_pointer, "strata::virtual_memory_source", b.data,
                            "deallocate_block of a block this source did not hand out");
        return;
    }
    const range r{offset, offset + b.size + guard};
    // The holes on either side: `next` is the first hole starting above the block.
    range* h = hole_data();
    const std::size_t next = static_cast<std::size_t>(
        std::upper_bound(h, h + holes_, r.from, [](std::size_t at, const range& x) { return at < x.from; }) -
        h);
    if ((next > 0 && h[next - 1].end > r.from) || (next < holes_ && h[next].from < r.end)) {
        (void)STRATA_VERIFY(1, false, double_free, "strata::virtual_memory_source", b.data,
                            "deallocate_block of a block already freed");
        return;
    }
    vm_.decommit(offset, b.size);
    committed_ -= b.size;
    if (--live_ == 0) { // nothing live: the whole reservation is one free range again
        top_ = holes_ = lost_ = 0;
        return;
    }
    const bool join_below = next > 0 && h[next - 1].end == r.from;
    const bool join_above = next < holes_ && h[next].from == r.end;
    range merged = r;
    if (join_below) merged.from = h[next - 1].from;
    if (join_above) merged.end = h[next].end;
    if (merged.end == top_) { // the highest block: the top comes down past it and the hole below
        top_ = merged.from;
        if (join_below) erase_hole(next - 1);
        return;
    }
    if (join_below && join_above) {
        h[next - 1].end = merged.end;
        erase_hole(next);
    } else if (join_below) {
        h[next - 1].end = merged.end;
    } else if (join_above) {
        h[next].from = merged.from;
    } else if (reserve_holes(holes_ + 1)) {
        insert_hole(next, merged);
    } else {
        lost_ += r.end - r.from; // no page for the list: unusable until every block is freed
    }
}

std::size_t virtual_memory_source::free_address_space() const noexcept {
    std::size_t free = vm_.size() - top_;
    const range* h = hole_data();
    for (std::size_t i = 0; i < holes_; ++i)
        free += h[i].end - h[i].from;
    return free;
}

bool virtual_memory_source::check() const noexcept {
    const std::size_t page = virtual_memory::page_size();
    const range* h = hole_data();
    std::size_t in_holes = 0;
    for (std::size_t i = 0; i < holes_; ++i) {
        if (h[i].from % page != 0 || h[i].end % page != 0 || h[i].from >= h[i].end) return false;
        if (i > 0 && h[i - 1].end >= h[i].from) return false; // sorted, and apart: merged otherwise
        in_holes += h[i].end - h[i].from;
    }
    if (holes_ > 0 && h[holes_ - 1].end >= top_) return false; // a hole at the top lowers the top
    if (top_ > vm_.size() || top_ % page != 0 || committed_ % page != 0) return false;
    const std::size_t guards = opts_.guard_pages ? live_ * page : 0;
    return in_holes + committed_ + guards + lost_ == top_ && (live_ != 0 || top_ == 0);
}

} // namespace strata
