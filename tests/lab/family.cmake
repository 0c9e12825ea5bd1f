# The lab tests link the HTML report writer (tools/lab/html_report.cpp) and its embedded assets.
include("${PROJECT_SOURCE_DIR}/tools/lab/report/embed_assets.cmake")
target_sources(${target} PRIVATE "${PROJECT_SOURCE_DIR}/tools/lab/html_report.cpp")
target_include_directories(${target} PRIVATE "${STRATA_LAB_REPORT_GENERATED_DIR}")
# ... and the race (its rows, the waste and latency columns, the JSON), with the report and timer
# helpers it uses.
target_sources(${target} PRIVATE "${PROJECT_SOURCE_DIR}/tools/lab/race.cpp" "${PROJECT_SOURCE_DIR}/tools/lab/report.cpp"
                                  "${PROJECT_SOURCE_DIR}/tools/lab/timer.cpp"
                                  "${PROJECT_SOURCE_DIR}/tools/lab/race_summary.cpp")
# ... and the peer contenders (mimalloc, jemalloc, tcmalloc) where installed.
include("${PROJECT_SOURCE_DIR}/tools/lab/peers.cmake")
target_link_libraries(${target} PRIVATE strata_lab_peers)
