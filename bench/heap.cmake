# strata_bench_heap replays the strata-churn workloads (bench/churn/churn.hpp, which includes the
# lab's timer and generator headers from strata_lab_core).
target_include_directories(${target} PRIVATE "${CMAKE_CURRENT_SOURCE_DIR}/churn")
target_link_libraries(${target} PRIVATE strata_lab_core)
