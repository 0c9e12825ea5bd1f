#pragma once
// handle_table<T>: stable storage addressed by generational handles.
//
// Objects never move: they live in fixed-size chunks that are never reallocated, so a T* from get()
// stays valid until that object is erased (or the table is cleared or destroyed). Each object sits
// at the position of its slot index, so lookup is: validate the generation, then one shift and mask.
// A dense list of live slot indices makes iteration O(live), not O(slots).
//
// Complexity: insert amortized O(1) (a new chunk every chunk_size slots), erase/get/contains O(1),
// iteration O(size()) with one indirection per object.
//
// Bad input (every case leaves the table unchanged):
//   get(stale, null or out-of-range handle)  -> nullptr, no report
//   erase(same)                              -> false; reported as stale_handle at STRATA_CHECKS >= 1
//   erase, erase_if or clear during for_each / erase_if
//                                            -> refused (erase returns false, erase_if 0); reported
//                                               as invalid_argument at checks >= 1
//   move construction from the table during its for_each / erase_if
//                                            -> the new table takes the objects and the loop ends
//                                               early; reported as invalid_argument at checks >= 1
//   index space exhausted                    -> std::length_error; allocator failure -> its exception
#include <cstddef>
#include <memory>
#include <new>
#include <type_traits>
#include <utility>
#include <vector>

#include "strata/core/check.hpp"
#include "strata/core/iteration_guard.hpp"
#include "strata/handle/detail/sparse_slots.hpp"
#include "strata/handle/fwd.hpp"
#include "strata/handle/handle.hpp"
#include "strata/handle/policy.hpp"

namespace strata {

/// Stable, handle-addressed object storage.
template <class T, class Handle, class Alloc, class WrapPolicy, class ReusePolicy>
class handle_table {
    using slots_type = detail::sparse_slots<Handle, Alloc, WrapPolicy, ReusePolicy>;
    using word = typename slots_type::word;
    using value_allocator = typename std::allocator_traits<Alloc>::template rebind_alloc<T>;
    using value_traits = std::allocator_traits<value_allocator>;
    using pointer_allocator = typename std::allocator_traits<Alloc>::template rebind_alloc<T*>;
    using word_allocator = typename std::allocator_traits<Alloc>::template rebind_alloc<word>;

public:
    using value_type = T;
    using handle_type = Handle;
    using size_type = std::size_t;
    /// Objects per chunk (a power of two): objects of slot i live in chunk i / chunk_size.
    static constexpr size_type chunk_size = sizeof(T) >= 1024 ? 16 : (sizeof(T) >= 128 ? 64 : 256);

    /// Effects: an empty table whose chunks and arrays come from `alloc`.
    handle_table() : handle_table(Alloc()) {}
    explicit handle_table(const Alloc& alloc)
        : alloc_(alloc), chunks_(pointer_allocator(alloc)), live_(word_allocator(alloc)), slots_(alloc) {}
    handle_table(const handle_table&) = delete;
    handle_table& operator=(const handle_table&) = delete;
    /// Effects: takes `other`'s objects (their addresses do not change); `other` is left empty.
    /// Handles issued before the move name objects of the new table; given to `other` they are
    /// foreign (its slots start over). Inside `other`'s for_each / erase_if the loop ends early;
    /// reported (see the header).
    handle_table(handle_table&& other) noexcept
        : alloc_(other.alloc_), chunks_(std::move(other.chunks_)), live_(std::move(other.live_)),
          slots_(std::move(other.slots_)) {
        other.chunks_.clear();
        other.live_.clear();
        (void)STRATA_VERIFY(1, other.iterating_ == 0, invalid_argument, "strata::handle_table", nullptr,
                            "move from the table during its for_each/erase_if; the loop ends early");
    }
    handle_table& operator=(handle_table&&) = delete;
    ~handle_table() { destroy(); }

    /// Effects: constructs an object from `args` in a free slot. Returns: its handle.
    /// Throws: std::length_error when the index space is exhausted; what T's constructor or the
    /// allocator throws. On throw the table is unchanged.
    template <class... Args>
    Handle emplace(Args&&... args) {
        const word i = slots_.prepare();
        if (static_cast<size_type>(i / chunk_size) >= chunks_.size()) add_chunk();
        if (live_.size() == live_.capacity()) live_.reserve(live_.empty() ? 16 : live_.size() * 2);
        value_allocator va(alloc_);
        value_traits::construct(va, slot_ptr(i), std::forward<Args>(args)...);
        const Handle h = slots_.acquire(static_cast<word>(live_.size()));
        live_.push_back(i); // capacity reserved above
        return h;
    }
    /// Effects, returns, throws: as emplace(value).
    Handle insert(const T& value) { return emplace(value); }
    /// Effects, returns, throws: as emplace(std::move(value)).
    Handle insert(T&& value) { return emplace(std::move(value)); }

    /// Effects: destroys the object of `h`; `h` and its copies become stale; the slot is reused per
    /// ReusePolicy. Returns: true; false for a null, stale or foreign handle or during for_each
    /// (reported, see the header).
    bool erase(Handle h) noexcept {
        // Taken apart before the first branch, as in slot_map::erase: inlined after handle_at, the
        // index folds to the slot handle_at loaded and does not wait for the generation load.
        const word slot = h.index();
        const word gen = h.generation();
        if (iterating_ != 0) {
            (void)STRATA_VERIFY(1, false, invalid_argument, "strata::handle_table", nullptr,
                                "erase during for_each; collect handles and erase afterwards");
            return false;
        }
        if (!slots_.valid(slot, gen)) {
            (void)STRATA_VERIFY(1, false, stale_handle, "strata::handle_table", nullptr,
                                "erase with a null, stale or foreign handle");
            return false;
        }
        erase_slot(slot);
        return true;
    }

    /// Returns: the object of `h`, or nullptr when `h` is null, stale or out of range. O(1).
    /// The pointer stays valid until the object is erased.
    [[nodiscard]] T* get(Handle h) noexcept {
        return STRATA_LIKELY(slots_.valid(h)) ? slot_ptr(h.index()) : nullptr;
    }
    /// Returns: as get(h), const.
    [[nodiscard]] const T* get(Handle h) const noexcept {
        return STRATA_LIKELY(slots_.valid(h)) ? slot_ptr(h.index()) : nullptr;
    }
    /// Returns: true when `h` names a live object of this table.
    [[nodiscard]] bool contains(Handle h) const noexcept { return slots_.valid(h); }

    /// Returns: the handle of the i-th live object in iteration order; null (reported as
    /// invalid_argument at checks >= 1) when i >= size().
    [[nodiscard]] Handle handle_at(size_type i) const noexcept {
        if (i >= live_.size()) {
            (void)STRATA_VERIFY(1, false, invalid_argument, "strata::handle_table", nullptr,
                                "handle_at: out of range");
            return Handle{};
        }
        return slots_.handle_of(live_[i]);
    }

    /// Effects: calls f(object) (or f(handle, object) if that is what f takes) for every live
    /// object, each exactly once. Erase is refused inside; collect handles and erase afterwards,
    /// or use erase_if.
    template <class F>
    void for_each(F&& f) {
        const iteration_guard guard(iterating_);
        const size_type n = live_.size();
        // live_.size() only grows here (erase and clear are refused) unless f moves the table away.
        for (size_type k = 0; k < n && k < live_.size(); ++k) {
            const word i = live_[k];
            if constexpr (std::is_invocable_v<F&, Handle, T&>) {
                f(slots_.handle_of(i), *slot_ptr(i));
            } else {
                f(*slot_ptr(i));
            }
        }
    }

    /// Effects: erases every object for which pred(object) is true, each visited exactly once.
    /// Erase and clear are refused inside pred (see the header). Returns: how many were erased;
    /// 0 inside this table's for_each / erase_if (refused, reported at checks >= 1).
    template <class Pred>
    size_type erase_if(Pred&& pred) {
        if (iterating_ != 0) {
            (void)STRATA_VERIFY(1, false, invalid_argument, "strata::handle_table", nullptr,
                                "erase_if during for_each/erase_if");
            return 0;
        }
        size_type erased = 0;
        const iteration_guard guard(iterating_);
        // k < size() holds unless pred moved the table away (then the loop ends).
        for (size_type k = live_.size(); k-- > 0 && k < live_.size();) {
            const word i = live_[k];
            if (pred(std::as_const(*slot_ptr(i)))) {
                erase_slot(i);
                ++erased;
            }
        }
        return erased;
    }

    /// Effects: destroys every object; every handle becomes stale; chunks are kept. Refused inside
    /// for_each / erase_if (reported, see the header): the loop would go on over destroyed objects.
    void clear() noexcept {
        if (iterating_ != 0) {
            (void)STRATA_VERIFY(1, false, invalid_argument, "strata::handle_table", nullptr,
                                "clear during for_each/erase_if");
            return;
        }
        destroy_live();
    }
    /// Effects: allocates chunks and arrays for `n` objects. Throws: std::bad_alloc (or the
    /// allocator's exception); what was reserved before the throw is kept.
    void reserve(size_type n) {
        while (chunks_.size() * chunk_size < n)
            add_chunk();
        live_.reserve(n);
        slots_.reserve(n);
    }

    [[nodiscard]] size_type size() const noexcept { return live_.size(); } ///< live objects
    [[nodiscard]] bool empty() const noexcept { return live_.empty(); }    ///< no objects
    [[nodiscard]] size_type capacity() const noexcept { return chunks_.size() * chunk_size; } ///< object room
    [[nodiscard]] size_type slot_count() const noexcept { return slots_.size(); } ///< slots ever made
    [[nodiscard]] size_type retired_count() const noexcept { return slots_.retired_count(); } ///< retired
    /// Returns: the most objects this table can ever hold (the index space).
    [[nodiscard]] static constexpr size_type max_size() noexcept {
        return static_cast<size_type>(Handle::index_space);
    }

    /// Returns: true when the live list, the slots and the free list agree. O(slots).
    [[nodiscard]] bool check() const noexcept {
        if (slots_.live_count() != live_.size()) return false;
        for (size_type k = 0; k < live_.size(); ++k) {
            const word i = live_[k];
            if (!slots_.live(i) || slots_.link(i) != k || i / chunk_size >= chunks_.size()) return false;
        }
        return slots_.check();
    }

private:
    using iteration_guard = detail::iteration_guard;

    [[nodiscard]] T* slot_ptr(word i) const noexcept { return chunks_[i / chunk_size] + (i % chunk_size); }

    void add_chunk() {
        if (chunks_.size() == chunks_.capacity()) chunks_.reserve(chunks_.empty() ? 8 : chunks_.size() * 2);
        value_allocator va(alloc_);
        T* chunk = value_traits::allocate(va, chunk_size);
        chunks_.push_back(chunk); // capacity reserved: cannot throw
    }

    void destroy_at(word i) noexcept {
        value_allocator va(alloc_);
        value_traits::destroy(va, slot_ptr(i));
    }

    void erase_slot(word i) noexcept {
        destroy_at(i);
        const word k = slots_.link(i);
        const word last = live_.back();
        live_[k] = last;
        slots_.set_link(last, k);
        live_.pop_back();
        slots_.release(i);
    }

    void destroy_live() noexcept {
        for (const word i : live_)
            destroy_at(i);
        live_.clear();
        slots_.release_all();
    }

    void destroy() noexcept {
        destroy_live();
        value_allocator va(alloc_);
        for (T* chunk : chunks_)
            value_traits::deallocate(va, chunk, chunk_size);
        chunks_.clear();
    }

    Alloc alloc_;
    std::vector<T*, pointer_allocator> chunks_;
    std::vector<word, word_allocator> live_; // slot indices of live objects, iteration order
    slots_type slots_;
    int iterating_ = 0;
};

} // namespace strata
