# strata_bench_heap replays the strata-churn workloads (bench/churn/churn.hpp, which includes the
# lab's header-only timer and workload helpers).
target_include_directories(${target} PRIVATE "${CMAKE_CURRENT_SOURCE_DIR}/churn" "${PROJECT_SOURCE_DIR}/tools/lab")
