#pragma once
// Reserve address space now, commit pages when they are needed, give them back when idle.
// POSIX (mmap/mprotect/madvise). The reservation is PROT_NONE, so any uncommitted page inside it
// is also a guard page: touching it faults at the faulting instruction.
#include <cstddef>
#include <system_error>

#include "strata/source/memory_source.hpp"

namespace strata {

/// An owned reservation of virtual address space. Move-only; released on destruction.
class virtual_memory {
public:
    /// Returns: the system page size (4096 on x86-64 Linux).
    [[nodiscard]] static std::size_t page_size() noexcept;

    /// An empty reservation (`reserved() == false`).
    constexpr virtual_memory() noexcept = default;

    /// Effects: reserves `bytes` (rounded up to whole pages) of address space, committing nothing.
    /// Returns: the reservation, or an empty one with `ec` set (std::errc::invalid_argument for 0,
    /// std::errc::value_too_large when rounding overflows, the mmap errno, e.g. ENOMEM, otherwise).
    [[nodiscard]] static virtual_memory reserve(std::size_t bytes, std::error_code& ec) noexcept;

    /// As above. Throws: std::system_error naming the size and the reason, e.g.
    /// "strata::virtual_memory: cannot reserve 4611686018427387904 bytes: Cannot allocate memory".
    [[nodiscard]] static virtual_memory reserve(std::size_t bytes);

    virtual_memory(virtual_memory&& other) noexcept;
    virtual_memory& operator=(virtual_memory&& other) noexcept;
    virtual_memory(const virtual_memory&) = delete;
    virtual_memory& operator=(const virtual_memory&) = delete;
    ~virtual_memory();

    /// Effects: makes the pages covering [offset, offset+bytes) readable and writable; they read as
    /// zero the first time. Returns: false when the range leaves the reservation or the OS refuses.
    [[nodiscard]] bool commit(std::size_t offset, std::size_t bytes) noexcept;

    /// Effects: returns the physical pages covering [offset, offset+bytes) to the OS and makes them
    /// inaccessible again (a later touch faults). Only whole pages inside the range are affected.
    /// Returns: false when the range leaves the reservation.
    bool decommit(std::size_t offset, std::size_t bytes) noexcept;

    /// Effects: makes the pages covering [offset, offset+bytes) inaccessible without giving them
    /// back (a guard page). Returns: false when the range leaves the reservation.
    bool protect(std::size_t offset, std::size_t bytes) noexcept;

    /// Effects: asks the OS to back the range with transparent huge pages (MADV_HUGEPAGE). A hint:
    /// returns false where unsupported, and nothing else changes.
    bool hint_huge_pages(std::size_t offset, std::size_t bytes) noexcept;

    /// Effects: unmaps the whole reservation; `reserved()` becomes false.
    void release() noexcept;

    [[nodiscard]] bool reserved() const noexcept { return base_ != nullptr; }
    [[nodiscard]] std::byte* data() const noexcept { return base_; }
    [[nodiscard]] std::size_t size() const noexcept { return size_; }
    [[nodiscard]] bool contains(const void* p) const noexcept {
        return memory_block{base_, size_, 0}.contains(p);
    }

private:
    virtual_memory(std::byte* base, std::size_t size) noexcept : base_(base), size_(size) {}
    [[nodiscard]] bool page_range(std::size_t offset, std::size_t bytes, bool inner, std::byte*& first,
                                  std::size_t& length) const noexcept;

    std::byte* base_ = nullptr;
    std::size_t size_ = 0;
    // End offset of the highest page ever committed: what release() must unpoison for ASan. All of
    // size_ would fault in shadow for the whole reservation (8 GiB of it for a 64 GiB reserve).
    std::size_t committed_high_ = 0;
};

/// A memory source over one reservation: blocks are committed on demand, each optionally followed
/// by an uncommitted guard page; a freed block is decommitted (its pages go back to the OS) and its
/// address range becomes a hole. Holes are kept sorted and merged with their neighbours, so every
/// freed page of address space is reusable while other blocks live: a request takes the lowest hole
/// it fits (alignment padding inside it stays a hole), else the range above the highest block, and
/// a hole that reaches that top lowers it. The hole list lives in a second reservation, committed a
/// page at a time as it grows (at most one hole per two pages of the main one).
/// Cost: allocate_block and deallocate_block are O(holes) (a first-fit scan, an insertion), plus the
/// mprotect/madvise system calls; they are slow-path calls for the allocators that grow on them.
/// Not thread-safe.
///
/// Bad input (reported at STRATA_CHECKS >= 1, then ignored; ignored silently at 0): a block not from
/// this reservation, or not page-aligned, or reaching past the highest block (foreign_pointer); a
/// block that overlaps a hole, such as one freed twice (double_free). A block freed twice after its
/// range was handed out again cannot be told from the new owner's block.
class virtual_memory_source {
public:
    struct options {
        bool guard_pages = false; ///< leave one inaccessible page after every block
        bool huge_pages = false;  ///< hint transparent huge pages on every block
    };

    /// Effects: reserves `reserve_bytes` of address space (and a small one for the hole list).
    /// Throws: std::system_error on failure.
    explicit virtual_memory_source(std::size_t reserve_bytes)
        : virtual_memory_source(reserve_bytes, options{}) {}
    virtual_memory_source(std::size_t reserve_bytes, options opts);

    /// Effects: takes over `other`'s reservation and blocks; `other` is left with none.
    virtual_memory_source(virtual_memory_source&& other) noexcept;
    virtual_memory_source& operator=(virtual_memory_source&& other) noexcept;

    /// Returns: a committed block of `size` rounded up to whole pages, aligned to max(align, page),
    /// or an empty block when no hole and not the top has room, or the request is invalid (size 0,
    /// alignment not a power of two, size too large).
    [[nodiscard]] memory_block allocate_block(std::size_t size, std::size_t align) noexcept;

    /// Requires: `b` exactly as allocate_block returned it. Effects: decommits `b` and makes its
    /// range (and its guard page) a hole, merged with the holes beside it.
    void deallocate_block(memory_block b) noexcept;

    [[nodiscard]] std::size_t committed_bytes() const noexcept { return committed_; }
    [[nodiscard]] std::size_t reserved_bytes() const noexcept { return vm_.size(); }
    [[nodiscard]] const virtual_memory& reservation() const noexcept { return vm_; }
    /// Returns: how many holes (free ranges below the highest block) there are now.
    [[nodiscard]] std::size_t holes() const noexcept { return holes_; }
    /// Returns: bytes of address space above the highest block plus all holes: what could be
    /// handed out if alignment and fragmentation allowed.
    [[nodiscard]] std::size_t free_address_space() const noexcept;

    /// Returns: true when the holes are sorted, page-aligned, apart (never adjacent) and below the
    /// top, and the address space adds up: holes + blocks + guard pages == top. Walks every hole.
    [[nodiscard]] bool check() const noexcept;

private:
    struct range {
        std::size_t from;
        std::size_t end;
    };
    [[nodiscard]] range* hole_data() const noexcept { return reinterpret_cast<range*>(list_.data()); }
    [[nodiscard]] bool reserve_holes(std::size_t n) noexcept;
    void insert_hole(std::size_t at, range r) noexcept;
    void erase_hole(std::size_t at) noexcept;
    [[nodiscard]] memory_block commit_block(std::size_t start, std::size_t bytes, std::size_t align) noexcept;

    virtual_memory vm_;
    virtual_memory list_; // holes, sorted by address, committed up to hole_capacity_ entries
    options opts_;
    std::size_t top_ = 0;   // offset of the first byte above the highest block (its guard included)
    std::size_t holes_ = 0; // entries in list_
    std::size_t hole_capacity_ = 0;
    std::size_t committed_ = 0;
    std::size_t live_ = 0; // blocks handed out and not freed
    std::size_t lost_ = 0; // freed ranges the list had no room for (see deallocate_block)
};

} // namespace strata
