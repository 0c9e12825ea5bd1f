# Cache options of the strata build and the helpers that apply them.
include_guard(GLOBAL)

option(STRATA_BUILD_TESTS "Build the GoogleTest suite (strata_tests)" ${PROJECT_IS_TOP_LEVEL})
option(STRATA_BUILD_BENCH "Build the Google Benchmark suite (strata_bench)" ${PROJECT_IS_TOP_LEVEL})
option(STRATA_BUILD_LAB "Build the strata-lab tool" ${PROJECT_IS_TOP_LEVEL})
option(STRATA_INSTALL "Generate install rules and the strata CMake package" ${PROJECT_IS_TOP_LEVEL})
option(STRATA_WERROR "Treat warnings in strata's own targets as errors" OFF)

set(STRATA_CHECKS "" CACHE STRING
    "Contract checks level: empty = header default (1 without NDEBUG, 0 with NDEBUG), 0, 1 or 2")
set_property(CACHE STRATA_CHECKS PROPERTY STRINGS "" 0 1 2)
if(NOT STRATA_CHECKS MATCHES "^[012]?$")
    message(FATAL_ERROR "STRATA_CHECKS must be empty, 0, 1 or 2 (got '${STRATA_CHECKS}')")
endif()

set(STRATA_SANITIZE "" CACHE STRING "Sanitizer for the whole build: empty, address (ASan+UBSan) or thread")
set_property(CACHE STRATA_SANITIZE PROPERTY STRINGS "" address thread)

# The sanitizer presets build the library at -O1 (every test runs through it) and the test sources
# and the lab's libraries at -O0: a test file instantiates many templates once and runs them briefly,
# and the lab's libraries (JSON-heavy in the live lab's server) serve only the lab and serve tests
# there, so optimizing them costs more build time than it saves in run time.
set(STRATA_TEST_OPTIMIZE "" CACHE STRING
    "Optimization flag for the test sources only (e.g. -O0); empty = the build type's")
set(STRATA_LAB_OPTIMIZE "" CACHE STRING
    "Optimization flag for the lab's libraries (strata_lab_core, strata_lab_serve) only; empty = the build type's")

# Sanitizers apply to every target in this directory tree (library, tests, bench, lab), so that
# instrumented and uninstrumented code never mix within one build.
if(STRATA_SANITIZE STREQUAL "address")
    set(_strata_san_flags -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined)
elseif(STRATA_SANITIZE STREQUAL "thread")
    set(_strata_san_flags -fsanitize=thread -fno-omit-frame-pointer)
elseif(NOT STRATA_SANITIZE STREQUAL "")
    message(FATAL_ERROR "STRATA_SANITIZE must be empty, 'address' or 'thread' (got '${STRATA_SANITIZE}')")
endif()
if(_strata_san_flags)
    add_compile_options(${_strata_san_flags})
    add_link_options(${_strata_san_flags})
endif()

# strata_set_warnings(<target>): the warning set for strata's own targets (never propagated to users).
function(strata_set_warnings target)
    if(CMAKE_CXX_COMPILER_ID MATCHES "GNU|Clang")
        target_compile_options(${target} PRIVATE -Wall -Wextra -Wpedantic)
        if(STRATA_WERROR)
            target_compile_options(${target} PRIVATE -Werror)
        endif()
    elseif(MSVC)
        target_compile_options(${target} PRIVATE /W4 /permissive-)
        if(STRATA_WERROR)
            target_compile_options(${target} PRIVATE /WX)
        endif()
    endif()
endfunction()
