# tests/programs: real Debian programs run twice, plainly and with LD_PRELOAD=libstrata_malloc.so,
# must print the same bytes (programs_test.cpp; the workloads are tests/programs/gen/workload.sh).
# Everything the test needs arrives as compile definitions; an empty value makes the test skip.
set(_strata_programs_lib "")
if(TARGET strata_malloc AND STRATA_SANITIZE STREQUAL "")
    set(_strata_programs_lib "$<TARGET_FILE:strata_malloc>")
    add_dependencies(${target} strata_malloc)
endif()
# Debian's programs, found once per build directory. python3 is looked up in /usr/bin only: a pyenv
# shim earlier on PATH would put a different interpreter (and a shell script) under test.
find_program(STRATA_PROGRAMS_BASH bash)
find_program(STRATA_PROGRAMS_SQLITE3 sqlite3)
find_program(STRATA_PROGRAMS_PYTHON3 python3 PATHS /usr/bin NO_DEFAULT_PATH)
find_program(STRATA_PROGRAMS_GIT git)
find_program(STRATA_PROGRAMS_GXX g++)
find_program(STRATA_PROGRAMS_NM nm)
find_program(STRATA_PROGRAMS_ABC berkeley-abc)
find_program(STRATA_PROGRAMS_Z3 z3)
find_program(STRATA_PROGRAMS_RUBY ruby)
find_program(STRATA_PROGRAMS_LUA lua5.4)
# ImageMagick 6's own name: /usr/bin/convert may be GraphicsMagick's, or a wrapper earlier on PATH.
find_program(STRATA_PROGRAMS_CONVERT convert-im6.q16 PATHS /usr/bin NO_DEFAULT_PATH)
set(_strata_programs_defs
    STRATA_PROGRAMS_MALLOC_LIB="${_strata_programs_lib}"
    STRATA_PROGRAMS_SANITIZE="${STRATA_SANITIZE}"
    STRATA_PROGRAMS_WORKLOAD="${CMAKE_CURRENT_LIST_DIR}/gen/workload.sh")
foreach(_program IN ITEMS BASH SQLITE3 PYTHON3 GIT GXX NM ABC Z3 RUBY LUA CONVERT)
    if(STRATA_PROGRAMS_${_program})
        list(APPEND _strata_programs_defs STRATA_PROGRAMS_${_program}="${STRATA_PROGRAMS_${_program}}")
    else()
        list(APPEND _strata_programs_defs STRATA_PROGRAMS_${_program}="")
    endif()
endforeach()
target_compile_definitions(${target} PRIVATE ${_strata_programs_defs})
