#pragma once
// What the measuring demos (race, latency, layout) share: measuring_demo (a demo whose one
// operation, "run", measures and keeps the result as its state), the server-wide measure_mutex, and
// os_buffer / os_allocator, memory mapped straight from the OS and unmapped when done, so a run's
// buffers leave nothing behind in the process (glibc keeps the memory freed to it).
#include <sys/mman.h>

#include <cstddef>
#include <cstdint>
#include <mutex>
#include <new>
#include <string_view>
#include <utility>

#include "strata/core/poison.hpp"

#include "demo.hpp"

namespace strata::lab::serve {

/// Returns: the mutex every measurement holds while it runs: one at a time, server-wide (they take
/// the CPU and tens of MiB each).
inline std::mutex& measure_mutex() {
    static std::mutex m;
    return m;
}

/// Returns: `bytes` of fresh zeroed pages mapped from the OS; nullptr when the mapping fails. Under
/// ASan the range is unpoisoned: the allocators a run builds over such memory poison what they do
/// not hand out, and ASan keeps that shadow after a munmap, for whatever is mapped there next.
inline void* os_map(std::size_t bytes, int extra_flags = 0) noexcept {
    void* p =
        ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | extra_flags, -1, 0);
    if (p == MAP_FAILED) return nullptr;
    strata::unpoison(p, bytes);
    return p;
}

/// Effects: unmaps what os_map returned (unpoisoned first, for the next mapping at that address).
inline void os_unmap(void* p, std::size_t bytes) noexcept {
    strata::unpoison(p, bytes);
    ::munmap(p, bytes);
}

/// Bytes mapped from the OS (anonymous, private, zeroed), unmapped by the destructor.
class os_buffer {
public:
    /// Effects: an empty buffer (nothing mapped).
    os_buffer() noexcept = default;
    /// Effects: maps `bytes` (rounded up to pages by the kernel), faulted in at once when
    /// `populate` (so a timed loop over it takes no page fault). Throws: std::bad_alloc when the
    /// mapping fails.
    explicit os_buffer(std::size_t bytes, bool populate = false) : size_(bytes) {
        if (bytes == 0) return;
        void* p = os_map(bytes, populate ? MAP_POPULATE : 0);
        if (p == nullptr) throw std::bad_alloc();
        data_ = static_cast<std::byte*>(p);
    }
    os_buffer(os_buffer&& o) noexcept
        : data_(std::exchange(o.data_, nullptr)), size_(std::exchange(o.size_, 0)) {}
    os_buffer& operator=(os_buffer o) noexcept {
        std::swap(data_, o.data_);
        std::swap(size_, o.size_);
        return *this;
    }
    /// Effects: unmaps the bytes: they go back to the OS at once.
    ~os_buffer() {
        if (data_ != nullptr) os_unmap(data_, size_);
    }
    /// Returns: the first byte (page aligned), nullptr when empty.
    [[nodiscard]] std::byte* data() const noexcept { return data_; }
    /// Returns: the bytes asked for.
    [[nodiscard]] std::size_t size() const noexcept { return size_; }
    /// Returns: the buffer as an array of `T` (trivial types only: nothing is constructed).
    template <class T>
    [[nodiscard]] T* as() const noexcept {
        return reinterpret_cast<T*>(data_);
    }

private:
    std::byte* data_ = nullptr;
    std::size_t size_ = 0;
};

/// A standard allocator whose every allocation is its own mapping (os_buffer's), unmapped on
/// deallocate. For the few large buffers of a measurement, not for many small ones.
template <class T>
struct os_allocator {
    using value_type = T;
    os_allocator() noexcept = default;
    template <class U>
    os_allocator(const os_allocator<U>&) noexcept {}
    /// Returns: n T's worth of fresh zeroed pages. Throws: std::bad_alloc when the mapping fails.
    T* allocate(std::size_t n) {
        if (n > SIZE_MAX / sizeof(T)) throw std::bad_alloc();
        void* p = os_map(n * sizeof(T));
        if (p == nullptr) throw std::bad_alloc();
        return static_cast<T*>(p);
    }
    /// Effects: unmaps the n T's at p.
    void deallocate(T* p, std::size_t n) noexcept { os_unmap(p, n * sizeof(T)); }
    template <class U>
    friend bool operator==(const os_allocator&, const os_allocator<U>&) noexcept {
        return true;
    }
};

/// A measuring demo: one operation, "run", whose result (`measure(args)`) is the state until the
/// next run. `result_bytes` bounds the size of that result.
class measuring_demo final : public demo {
public:
    /// Returns: the result of one run. Throws: api_error(400) for bad arguments.
    using measure_fn = json (*)(const json& args);
    /// Effects: a demo named `name` (for error messages) that runs `measure`.
    measuring_demo(std::string_view name, measure_fn measure, std::size_t result_bytes)
        : name_(name), measure_(measure), result_bytes_(result_bytes) {}
    json call(std::string_view op, const json& args) override {
        if (op != "run") unknown_op(name_, op);
        last_ = measure_(args);
        return {{"ok", true}};
    }
    json state() const override { return last_; }
    std::size_t bytes() const noexcept override { return sizeof(*this) + result_bytes_; }

private:
    std::string_view name_;
    measure_fn measure_;
    std::size_t result_bytes_;
    json last_ = json::object();
};

} // namespace strata::lab::serve
