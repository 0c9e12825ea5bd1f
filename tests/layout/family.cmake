# Codegen check: the soa_vector loops in codegen_soa_loop.cpp must vectorize at -O2 (g++ 12's
# very-cheap cost model; clang's loop vectorizer). Compiles the file with the build's compiler and
# counts the vectorizer's "loop vectorized" remarks: 3 loops, 3 remarks, or the test fails.
set(_strata_codegen_src "${CMAKE_CURRENT_LIST_DIR}/codegen_soa_loop.cpp")
set(_strata_codegen_inc "${PROJECT_SOURCE_DIR}/include")
if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU")
    set(_strata_codegen_flags "-fopt-info-vec-optimized")
    set(_strata_codegen_pattern "loop vectorized")
elseif(CMAKE_CXX_COMPILER_ID MATCHES "Clang")
    set(_strata_codegen_flags "-Rpass=loop-vectorize")
    set(_strata_codegen_pattern "vectorized loop")
endif()
if(DEFINED _strata_codegen_flags)
    add_test(NAME strata_layout_codegen
             COMMAND sh -c "n=$(\"$0\" -std=c++20 -O2 -DNDEBUG -I\"$1\" $2 -c \"$3\" -o /dev/null 2>&1 | grep -c \"$4\"); echo \"vectorized loops: $n (want 3)\"; test \"$n\" -eq 3"
                     "${CMAKE_CXX_COMPILER}" "${_strata_codegen_inc}" "${_strata_codegen_flags}"
                     "${_strata_codegen_src}" "${_strata_codegen_pattern}")
    set_tests_properties(strata_layout_codegen PROPERTIES TIMEOUT 120)
endif()
