#pragma once
// A std::pmr::memory_resource over new/delete that throws std::bad_alloc on a chosen allocation:
// the tests walk that point through an operation to see every allocation in it fail once. Two
// instances never compare equal, so containers over them take the "unequal allocators" paths.
#include <cstddef>
#include <memory_resource>
#include <new>

namespace strata::test {

class failing_resource : public std::pmr::memory_resource {
public:
    /// Effects: the allocation `n` calls from now (0: the next one) throws; -1: none does.
    void fail_after(long n) noexcept { left_ = n; }
    [[nodiscard]] long allocations() const noexcept { return count_; }
    /// Effects: runs `op` with the allocation `n` calls from now failing, then none.
    /// Returns: true when `op` threw std::bad_alloc.
    template <class Op>
    bool throws_when_failing(long n, Op&& op) {
        fail_after(n);
        bool threw = false;
        try {
            op();
        } catch (const std::bad_alloc&) {
            threw = true;
        }
        fail_after(-1);
        return threw;
    }

private:
    void* do_allocate(std::size_t bytes, std::size_t align) override {
        ++count_;
        if (left_ == 0) {
            left_ = -1;
            throw std::bad_alloc();
        }
        if (left_ > 0) --left_;
        return std::pmr::new_delete_resource()->allocate(bytes, align);
    }
    void do_deallocate(void* p, std::size_t bytes, std::size_t align) override {
        std::pmr::new_delete_resource()->deallocate(p, bytes, align);
    }
    [[nodiscard]] bool do_is_equal(const std::pmr::memory_resource& other) const noexcept override {
        return this == &other;
    }

    long left_ = -1;
    long count_ = 0;
};

} // namespace strata::test
