#pragma once
// Construction helpers: objects and arrays in any strata allocator, and std::unique_ptr with an
// allocator-aware deleter. The strata contract answers exhaustion with nullptr, and so do these
// (an empty unique_ptr); an exception thrown by a constructor frees the memory and propagates.
#include <cstddef>
#include <cstring>
#include <memory>
#include <new>
#include <optional>
#include <type_traits>
#include <utility>

#include "strata/adapt/fwd.hpp"
#include "strata/core/align.hpp"
#include "strata/core/allocator.hpp"

namespace strata {

/// Returns: a T constructed from `args` in `alloc.allocate(sizeof(T), alignof(T))`, or nullptr
/// when the allocator answers nullptr. Throws: what T's constructor throws, after the memory has
/// been returned to `alloc`. Release with destroy(alloc, p).
template <class T, allocator A, class... Args>
[[nodiscard]] T* make(A& alloc, Args&&... args) {
    static_assert(!std::is_array_v<T>, "make<T[]> is make_array<T>");
    void* p = alloc.allocate(sizeof(T), alignof(T));
    if (p == nullptr) return nullptr;
    if constexpr (std::is_nothrow_constructible_v<T, Args...>) {
        return ::new (p) T(std::forward<Args>(args)...);
    } else {
        try {
            return ::new (p) T(std::forward<Args>(args)...);
        } catch (...) {
            alloc.deallocate(p, sizeof(T), alignof(T));
            throw;
        }
    }
}

/// Effects: destroys `*p` and returns its memory to `alloc` (sizeof(T), alignof(T)); nullptr is
/// ignored. Requires: `p` came from make<T>(alloc, ...), and T is its dynamic type (as sized
/// delete: destroying a derived object through a base pointer passes the wrong size).
template <class T, allocator A>
void destroy(A& alloc, T* p) noexcept {
    if (p == nullptr) return;
    p->~T();
    alloc.deallocate(const_cast<std::remove_cv_t<T>*>(p), sizeof(T), alignof(T));
}

namespace detail {
/// Bytes in front of an array that hold its count: at least sizeof(std::size_t), a multiple of
/// alignof(T) so the elements stay aligned; the count sits in the last size_t before element 0.
template <class T>
inline constexpr std::size_t array_header = alignof(T) > sizeof(std::size_t) ? alignof(T)
                                                                             : sizeof(std::size_t);
template <class T>
inline constexpr std::size_t array_align = alignof(T) > alignof(std::size_t) ? alignof(T)
                                                                             : alignof(std::size_t);
} // namespace detail

/// Returns: the element count of an array from make_array. Requires: `p` came from make_array<T>.
template <class T>
[[nodiscard]] std::size_t array_size(const T* p) noexcept {
    std::size_t n;
    std::memcpy(&n, reinterpret_cast<const std::byte*>(p) - sizeof(std::size_t), sizeof n);
    return n;
}

/// Returns: an array of `n` value-initialized T (constructed first to last) with the count stored
/// in front of it, or nullptr when the allocator answers nullptr or the byte count overflows.
/// n == 0 gives a valid, empty, non-null array. Throws: what T's constructor throws; the elements
/// already built are destroyed in reverse order and the memory is freed first.
/// Release with destroy_array(alloc, p).
template <class T, allocator A>
[[nodiscard]] T* make_array(A& alloc, std::size_t n) {
    static_assert(!std::is_array_v<T>, "make_array<T> builds T[n]");
    const auto body = checked_mul(n, sizeof(T));
    const auto bytes = body ? checked_add(*body, detail::array_header<T>) : std::nullopt;
    if (!bytes) return nullptr;
    auto* base = static_cast<std::byte*>(alloc.allocate(*bytes, detail::array_align<T>));
    if (base == nullptr) return nullptr;
    T* first = reinterpret_cast<T*>(base + detail::array_header<T>);
    std::memcpy(base + detail::array_header<T> - sizeof(std::size_t), &n, sizeof n);
    std::size_t built = 0;
    if constexpr (std::is_nothrow_default_constructible_v<T>) {
        for (; built < n; ++built)
            ::new (static_cast<void*>(first + built)) T();
    } else {
        try {
            for (; built < n; ++built)
                ::new (static_cast<void*>(first + built)) T();
        } catch (...) {
            while (built > 0)
                first[--built].~T();
            alloc.deallocate(base, *bytes, detail::array_align<T>);
            throw;
        }
    }
    return std::launder(first);
}

/// Effects: destroys the elements of `p` last to first and returns the memory to `alloc` with the
/// size and alignment make_array used; nullptr is ignored. Requires: `p` came from
/// make_array<T>(alloc, n) (the count is read from the array's header).
template <class T, allocator A>
void destroy_array(A& alloc, T* p) noexcept {
    if (p == nullptr) return;
    const std::size_t n = array_size(p);
    for (std::size_t i = n; i > 0; --i)
        p[i - 1].~T();
    auto* base = reinterpret_cast<std::byte*>(const_cast<std::remove_cv_t<T>*>(p)) - detail::array_header<T>;
    alloc.deallocate(base, n * sizeof(T) + detail::array_header<T>, detail::array_align<T>);
}

/// A std::unique_ptr deleter that destroys through an allocator: destroy(alloc, p) for T,
/// destroy_array(alloc, p) for T[]. Holds a pointer to the allocator (which must outlive it).
template <class T, allocator A>
class allocator_deleter {
public:
    /// Effects: a deleter over `alloc`.
    explicit allocator_deleter(A& alloc) noexcept : alloc_(std::addressof(alloc)) {}
    /// Effects: converts from a deleter of a derived type U (as std::default_delete does).
    /// Requires: T's destructor is virtual or U is T: the size freed is sizeof(U) either way,
    /// because the converted deleter remembers it.
    template <class U>
    requires std::is_convertible_v<U*, T*> &&(!std::is_array_v<T>)allocator_deleter(
        const allocator_deleter<U, A>& other) noexcept // NOLINT(google-explicit-constructor)
        : alloc_(std::addressof(other.get_allocator())), size_(other.object_size()),
          align_(other.object_align()) {}

    void operator()(std::remove_extent_t<T>* p) const noexcept {
        if constexpr (std::is_array_v<T>) {
            destroy_array(*alloc_, p);
        } else {
            if (p == nullptr) return;
            // After a conversion p may point at a base that does not start the object (multiple
            // or virtual inheritance): free the whole object's address, found before it dies.
            void* const whole = [p]() noexcept -> void* {
                if constexpr (std::is_polymorphic_v<T>) {
                    return const_cast<void*>(dynamic_cast<const volatile void*>(p)); // no RTTI needed
                } else {
                    return static_cast<void*>(const_cast<std::remove_cv_t<T>*>(p));
                }
            }();
            p->~T(); // virtual where T's destructor is
            alloc_->deallocate(whole, size_, align_);
        }
    }

    [[nodiscard]] A& get_allocator() const noexcept { return *alloc_; }
    [[nodiscard]] std::size_t object_size() const noexcept { return size_; }
    [[nodiscard]] std::size_t object_align() const noexcept { return align_; }

private:
    template <class U>
    static constexpr std::size_t size_of() noexcept {
        if constexpr (std::is_array_v<U>) {
            return 0;
        } else {
            return sizeof(U);
        }
    }
    template <class U>
    static constexpr std::size_t align_of() noexcept {
        if constexpr (std::is_array_v<U>) {
            return 0;
        } else {
            return alignof(U);
        }
    }

    A* alloc_;
    std::size_t size_ = size_of<T>();
    std::size_t align_ = align_of<T>();
};

/// The unique_ptr allocate_unique returns.
template <class T, allocator A>
using alloc_unique_ptr = std::unique_ptr<T, allocator_deleter<T, A>>;

/// Returns: a unique_ptr owning make<T>(alloc, args...), empty when the allocator answers nullptr.
/// Throws: what T's constructor throws (nothing is leaked).
template <class T, allocator A, class... Args>
requires(!std::is_array_v<T>) [[nodiscard]] alloc_unique_ptr<T, A> allocate_unique(A& alloc, Args&&... args) {
    return alloc_unique_ptr<T, A>(make<T>(alloc, std::forward<Args>(args)...),
                                  allocator_deleter<T, A>(alloc));
}

/// Returns: a unique_ptr<T[]> owning make_array<T>(alloc, n), empty on nullptr.
template <class T, allocator A>
requires std::is_unbounded_array_v<T>
[[nodiscard]] alloc_unique_ptr<T, A> allocate_unique(A& alloc, std::size_t n) {
    using E = std::remove_extent_t<T>;
    return alloc_unique_ptr<T, A>(make_array<E>(alloc, n), allocator_deleter<T, A>(alloc));
}

} // namespace strata
