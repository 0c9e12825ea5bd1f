#pragma once
// Memory sources hand whole blocks (pages, chunks) to allocators that grow. They are called on
// slow paths only, so `source_ref` erases their type behind two function pointers.
#include <concepts>
#include <cstddef>
#include <functional>
#include <memory>

namespace strata {

/// A contiguous block handed out by a memory source. An empty block (data == nullptr) means failure.
struct memory_block {
    std::byte* data = nullptr;
    std::size_t size = 0;
    std::size_t align = 0; ///< the alignment the block was allocated with (sources need it back)

    [[nodiscard]] constexpr bool empty() const noexcept { return data == nullptr; }
    [[nodiscard]] constexpr std::byte* end() const noexcept { return data + size; }
    [[nodiscard]] bool contains(const void* p) const noexcept {
        auto* b = static_cast<const std::byte*>(p);
        return data != nullptr && std::less_equal<>{}(data, b) && std::less<>{}(b, data + size);
    }
};

/// A memory source: `allocate_block(size, align)` returns a block of at least `size` bytes aligned
/// to `align` (the block may be larger: `size` is rounded up to the source's granularity), or an
/// empty block; `deallocate_block(b)` takes back a block it returned, exactly as returned.
// clang-format 14 mangles requires-expressions and requires-clauses; keep them as written.
// clang-format off
template <class S>
concept memory_source = requires(S& s, std::size_t n, memory_block b) {
    { s.allocate_block(n, n) } noexcept -> std::same_as<memory_block>;
    { s.deallocate_block(b) } noexcept;
};

/// A non-owning, type-erased reference to a memory source. Used by allocators that grow so they
/// need not be templates on the source; the indirect call only happens when a block is needed.
class source_ref {
public:
    /// An empty reference: allocators built on it cannot grow.
    constexpr source_ref() noexcept = default;

    /// Requires: `source` outlives every allocator that holds this reference.
    template <memory_source S>
        requires(!std::same_as<S, source_ref>)
    source_ref(S& source) noexcept // NOLINT(google-explicit-constructor): a reference, like std::span
        : self_(std::addressof(source)),
          allocate_([](void* s, std::size_t n, std::size_t a) noexcept {
              return static_cast<S*>(s)->allocate_block(n, a);
          }),
          deallocate_([](void* s, memory_block b) noexcept { static_cast<S*>(s)->deallocate_block(b); }) {}

    // clang-format on
    [[nodiscard]] memory_block allocate_block(std::size_t size, std::size_t align) const noexcept {
        return self_ ? allocate_(self_, size, align) : memory_block{};
    }
    void deallocate_block(memory_block b) const noexcept {
        if (self_ && !b.empty()) deallocate_(self_, b);
    }
    [[nodiscard]] explicit operator bool() const noexcept { return self_ != nullptr; }
    [[nodiscard]] const void* get() const noexcept { return self_; }

private:
    void* self_ = nullptr;
    memory_block (*allocate_)(void*, std::size_t, std::size_t) noexcept = nullptr;
    void (*deallocate_)(void*, memory_block) noexcept = nullptr;
};

} // namespace strata
