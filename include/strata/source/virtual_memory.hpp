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

/// A memory source over one reservation: blocks are committed on demand, front to back, each
/// optionally followed by an uncommitted guard page; a freed block is decommitted (its pages go
/// back to the OS). Address ranges are reused from the top down: freeing the highest block lowers
/// the top past it and past every freed block directly below it (up to 32 freed ranges are
/// remembered; one freed while the list is full is reused only once every block is freed). Freeing
/// every block makes the whole reservation reusable. Alignment padding in front of an over-aligned
/// block is reclaimed with it only when it is the most recent block.
/// Not thread-safe.
class virtual_memory_source {
public:
    struct options {
        bool guard_pages = false; ///< leave one inaccessible page after every block
        bool huge_pages = false;  ///< hint transparent huge pages on every block
    };

    /// Effects: reserves `reserve_bytes` of address space. Throws: std::system_error on failure.
    explicit virtual_memory_source(std::size_t reserve_bytes)
        : virtual_memory_source(reserve_bytes, options{}) {}
    virtual_memory_source(std::size_t reserve_bytes, options opts);

    /// Returns: a committed block of `size` rounded up to whole pages, aligned to max(align, page),
    /// or an empty block when the reservation is exhausted or the request is invalid.
    [[nodiscard]] memory_block allocate_block(std::size_t size, std::size_t align) noexcept;

    /// Effects: decommits `b`; reclaims its address range, and any freed ranges directly below it,
    /// when it is the highest block (see the class comment).
    void deallocate_block(memory_block b) noexcept;

    [[nodiscard]] std::size_t committed_bytes() const noexcept { return committed_; }
    [[nodiscard]] std::size_t reserved_bytes() const noexcept { return vm_.size(); }
    [[nodiscard]] const virtual_memory& reservation() const noexcept { return vm_; }

private:
    virtual_memory vm_;
    options opts_;
    std::size_t top_ = 0;       // offset of the first never-used byte
    std::size_t last_from_ = 0; // top_ before the most recent block, for LIFO reuse
    std::size_t last_end_ = 0;  // end offset of the most recent block's pages (guard included)
    std::size_t committed_ = 0;
    // Freed blocks below the top, [from, end), waiting for the blocks above them to go: a pool frees
    // its chunks in address order, so one level of undo reclaimed only the highest.
    struct range {
        std::size_t from;
        std::size_t end;
    };
    static constexpr std::size_t max_freed = 32;
    range freed_[max_freed] = {};
    std::size_t freed_count_ = 0;
};

} // namespace strata
