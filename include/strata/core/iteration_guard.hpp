#pragma once
// detail::iteration_guard: marks a container as inside its own for_each / erase_if for a scope, so
// erase, clear and assignment can refuse to pull values out from under the loop.
namespace strata::detail {

/// Raises `depth` for its lifetime (nested iterations count up); the container refuses what would
/// move or destroy values while depth != 0.
class iteration_guard {
public:
    explicit iteration_guard(int& depth) noexcept : depth_(depth) { ++depth_; }
    ~iteration_guard() { --depth_; }
    iteration_guard(const iteration_guard&) = delete;
    iteration_guard& operator=(const iteration_guard&) = delete;

private:
    int& depth_;
};

} // namespace strata::detail
