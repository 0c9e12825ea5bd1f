# tests/trace: the trace reader always; the recorder round trip only where libstrata_trace.so is
# built (not in sanitizer builds: a sanitized preload library cannot load into a plain program).
# The lab's trace -> op_workload conversion (strata_lab_core) is tested here too: record, convert,
# replay.
target_link_libraries(${target} PRIVATE strata_lab_core)
if(TARGET strata_trace_io)
    target_compile_definitions(${target} PRIVATE STRATA_TRACE_HAVE_IO=1)
endif()
if(TARGET strata_trace)
    add_executable(strata_trace_victim "${CMAKE_CURRENT_LIST_DIR}/victim/victim.cpp")
    target_link_libraries(strata_trace_victim PRIVATE Threads::Threads)
    set_target_properties(strata_trace_victim PROPERTIES CXX_EXTENSIONS OFF)
    add_dependencies(${target} strata_trace strata_trace_victim)
    target_compile_definitions(${target} PRIVATE STRATA_TRACE_LIB="$<TARGET_FILE:strata_trace>"
                                                 STRATA_TRACE_VICTIM="$<TARGET_FILE:strata_trace_victim>")
endif()
# The lab's embedded real trace: the streaming and determinism tests replay it.
if(TARGET strata_trace_io AND EXISTS "${PROJECT_SOURCE_DIR}/tools/lab/data/openttd-server.st")
    target_compile_definitions(${target} PRIVATE
        STRATA_LAB_DEFAULT_TRACE="${PROJECT_SOURCE_DIR}/tools/lab/data/openttd-server.st")
endif()
