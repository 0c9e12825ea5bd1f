# The live-lab tests (the API through api::handle, the HTTP layer through real sockets on
# 127.0.0.1) link strata_lab_serve. Where the lab itself is not built (the tsan preset), the server
# library is built here for them, so ThreadSanitizer runs the tests that say Thread; without
# nlohmann-json the tests compile to a single skipped case.
if(NOT TARGET strata_lab_serve AND TARGET strata_lab_core)
    include("${CMAKE_CURRENT_LIST_DIR}/../../tools/lab/serve/serve.cmake")
endif()
if(TARGET strata_lab_serve)
    target_link_libraries(${target} PRIVATE strata_lab_serve)
    target_compile_definitions(${target} PRIVATE STRATA_SERVE_AVAILABLE=1)
endif()
