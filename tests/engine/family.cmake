# strata_engine_tests: the malloc shim is exercised through a probe program run two ways, under
# LD_PRELOAD=libstrata_malloc.so and linked with strata::malloc_replace (neither exists in
# sanitizer builds, where the shim test skips itself).
if(TARGET strata_malloc AND TARGET strata_malloc_replace)
    add_executable(strata_engine_probe "${CMAKE_CURRENT_LIST_DIR}/probe/engine_probe.cpp")
    target_link_libraries(strata_engine_probe PRIVATE Threads::Threads ${CMAKE_DL_LIBS})
    set_target_properties(strata_engine_probe PROPERTIES CXX_EXTENSIONS OFF)
    strata_set_warnings(strata_engine_probe)

    add_executable(strata_engine_probe_linked "${CMAKE_CURRENT_LIST_DIR}/probe/engine_probe.cpp")
    target_link_libraries(strata_engine_probe_linked PRIVATE strata::malloc_replace Threads::Threads ${CMAKE_DL_LIBS})
    target_compile_definitions(strata_engine_probe_linked PRIVATE STRATA_PROBE_LINKED=1)
    set_target_properties(strata_engine_probe_linked PROPERTIES CXX_EXTENSIONS OFF)
    strata_set_warnings(strata_engine_probe_linked)

    # clang 14 leaves sized deallocation off; the probe calls the sized operator delete.
    target_compile_options(strata_engine_probe PRIVATE -fsized-deallocation)
    target_compile_options(strata_engine_probe_linked PRIVATE -fsized-deallocation)

    add_dependencies(${target} strata_malloc strata_engine_probe strata_engine_probe_linked)
    target_compile_definitions(${target} PRIVATE
        STRATA_MALLOC_SO="$<TARGET_FILE:strata_malloc>"
        STRATA_ENGINE_PROBE="$<TARGET_FILE:strata_engine_probe>"
        STRATA_ENGINE_PROBE_LINKED="$<TARGET_FILE:strata_engine_probe_linked>")
endif()
