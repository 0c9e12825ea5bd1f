# strata_lab_peers: an interface target that brings mimalloc, jemalloc and tcmalloc into the lab's
# op contenders (tools/lab/core/peer_contenders.hpp), each only when its Debian package is installed
# (libmimalloc-dev, libjemalloc-dev, libgoogle-perftools-dev). A missing package is no error: its
# contender is simply not compiled in. Every target that includes op_contenders.hpp links this one.
#
# None of the three may replace the process's malloc (the lab's own vectors, glibc's malloc row):
#   - jemalloc and tcmalloc link statically from a copy of their archive in which every symbol that
#     glibc, libm or libstdc++ also defines (malloc, free, operator new, tcmalloc's mmap/sbrk hooks,
#     ...) is renamed with a private prefix, so their own calls stay inside them and nothing else
#     binds to them. Their prefixed APIs (mallocx/sdallocx, tc_malloc/tc_free) keep their names.
#     (dlopen is no way for jemalloc: its 2.6 KiB of initial-exec TLS does not fit the static TLS
#     surplus glibc leaves for dlopen.)
#   - mimalloc ships no static archive; its shared library exports malloc, so it is dlopened with
#     RTLD_LOCAL | RTLD_DEEPBIND at first use and called through pointers (peer_contenders.hpp).
#     mimalloc is C and allocates nothing through libc, so deep binding shares no block with glibc.
if(TARGET strata_lab_peers)
    return()
endif()
add_library(strata_lab_peers INTERFACE)
# Under a sanitizer the peers would only blind it (their blocks bypass its malloc) and mimalloc's
# RTLD_DEEPBIND is refused by the sanitizer runtime: sanitized builds race without them.
if(STRATA_SANITIZE)
    message(STATUS "strata: lab peer contenders: none (STRATA_SANITIZE=${STRATA_SANITIZE})")
    return()
endif()

set(_peer_dir "${CMAKE_BINARY_DIR}/strata_lab_peers")
file(MAKE_DIRECTORY "${_peer_dir}")

# Returns in ${out_var} a copy of `archive` whose symbols shared with the system libraries (or with
# the archives given after `prefix`: jemalloc and tcmalloc both define nallocx) carry `prefix`;
# empty when a tool is missing.
function(strata_private_archive out_var archive prefix)
    set(${out_var} "" PARENT_SCOPE)
    if(NOT CMAKE_NM OR NOT CMAKE_OBJCOPY)
        return()
    endif()
    get_filename_component(_name "${archive}" NAME)
    set(_out "${_peer_dir}/${prefix}${_name}")
    set(_system "")
    foreach(_lib c m stdc++)
        execute_process(COMMAND ${CMAKE_CXX_COMPILER} -print-file-name=lib${_lib}.so.6
                        OUTPUT_VARIABLE _so OUTPUT_STRIP_TRAILING_WHITESPACE)
        if(NOT EXISTS "${_so}")
            execute_process(COMMAND ${CMAKE_CXX_COMPILER} -print-file-name=lib${_lib}.so
                            OUTPUT_VARIABLE _so OUTPUT_STRIP_TRAILING_WHITESPACE)
        endif()
        execute_process(COMMAND ${CMAKE_NM} -D --defined-only "${_so}" OUTPUT_VARIABLE _syms ERROR_QUIET)
        string(APPEND _system "${_syms}")
    endforeach()
    foreach(_other IN LISTS ARGN)
        execute_process(COMMAND ${CMAKE_NM} -g --defined-only "${_other}" OUTPUT_VARIABLE _syms ERROR_QUIET)
        string(APPEND _system "${_syms}")
    endforeach()
    # One variable per system symbol: a lookup per archive symbol instead of a list search.
    string(REGEX MATCHALL " [A-Za-z] [^\n@]+" _system_names "${_system}")
    foreach(_s IN LISTS _system_names)
        string(REGEX REPLACE "^ [A-Za-z] " "" _s "${_s}")
        set("_sys_${_s}" 1)
    endforeach()
    execute_process(COMMAND ${CMAKE_NM} -g --defined-only "${archive}" OUTPUT_VARIABLE _own ERROR_QUIET)
    string(REGEX MATCHALL "[0-9a-f]+ [A-Za-z] [^\n]+" _own_lines "${_own}")
    set(_map "")
    foreach(_line IN LISTS _own_lines)
        string(REGEX REPLACE "^[0-9a-f]+ [A-Za-z] " "" _s "${_line}")
        if(DEFINED "_sys_${_s}" AND NOT DEFINED "_mapped_${_s}")
            set("_mapped_${_s}" 1)
            string(APPEND _map "${_s} ${prefix}${_s}\n")
        endif()
    endforeach()
    if(NOT _map)
        return()
    endif()
    file(WRITE "${_out}.syms" "${_map}")
    # Into a new file, copied over the old only when it differs: a reconfigure does not relink.
    execute_process(COMMAND ${CMAKE_OBJCOPY} "--redefine-syms=${_out}.syms" "${archive}" "${_out}.new"
                    RESULT_VARIABLE _rc ERROR_QUIET)
    if(_rc EQUAL 0)
        file(COPY_FILE "${_out}.new" "${_out}" ONLY_IF_DIFFERENT)
        file(REMOVE "${_out}.new")
        set(${out_var} "${_out}" PARENT_SCOPE)
    endif()
endfunction()

find_path(STRATA_MIMALLOC_INCLUDE_DIR mimalloc.h)
find_library(STRATA_MIMALLOC_LIBRARY NAMES mimalloc)
if(STRATA_MIMALLOC_INCLUDE_DIR AND STRATA_MIMALLOC_LIBRARY)
    # The soname (libmimalloc.so.2), not the -dev symlink's path: what the runtime package installs.
    get_filename_component(_mi_real "${STRATA_MIMALLOC_LIBRARY}" REALPATH)
    get_filename_component(_mi_dir "${_mi_real}" DIRECTORY)
    file(GLOB _mi_soname "${_mi_dir}/libmimalloc.so.[0-9]")
    if(NOT _mi_soname)
        set(_mi_soname "${_mi_real}")
    endif()
    list(GET _mi_soname 0 _mi_soname)
    target_compile_definitions(strata_lab_peers INTERFACE STRATA_LAB_HAS_MIMALLOC=1
                                                          STRATA_LAB_MIMALLOC_LIBRARY="${_mi_soname}")
    target_include_directories(strata_lab_peers SYSTEM INTERFACE "${STRATA_MIMALLOC_INCLUDE_DIR}")
    target_link_libraries(strata_lab_peers INTERFACE ${CMAKE_DL_LIBS})
endif()

find_path(STRATA_JEMALLOC_INCLUDE_DIR jemalloc/jemalloc.h)
find_library(STRATA_JEMALLOC_ARCHIVE NAMES jemalloc_pic.a libjemalloc_pic.a)
if(STRATA_JEMALLOC_INCLUDE_DIR AND STRATA_JEMALLOC_ARCHIVE)
    strata_private_archive(_je "${STRATA_JEMALLOC_ARCHIVE}" strata_je_)
    if(_je)
        target_compile_definitions(strata_lab_peers INTERFACE STRATA_LAB_HAS_JEMALLOC=1)
        target_link_libraries(strata_lab_peers INTERFACE "${_je}" Threads::Threads m ${CMAKE_DL_LIBS})
    endif()
endif()

find_path(STRATA_TCMALLOC_INCLUDE_DIR gperftools/tcmalloc.h)
find_library(STRATA_TCMALLOC_ARCHIVE NAMES libtcmalloc_minimal.a)
if(STRATA_TCMALLOC_INCLUDE_DIR AND STRATA_TCMALLOC_ARCHIVE)
    strata_private_archive(_tc "${STRATA_TCMALLOC_ARCHIVE}" strata_tc_ ${STRATA_JEMALLOC_ARCHIVE})
    if(_tc)
        target_compile_definitions(strata_lab_peers INTERFACE STRATA_LAB_HAS_TCMALLOC=1)
        target_link_libraries(strata_lab_peers INTERFACE "${_tc}" Threads::Threads)
    endif()
endif()

set(_peers "")
foreach(_p MIMALLOC JEMALLOC TCMALLOC)
    get_target_property(_defs strata_lab_peers INTERFACE_COMPILE_DEFINITIONS)
    if(_defs MATCHES "STRATA_LAB_HAS_${_p}")
        string(TOLOWER "${_p}" _lp)
        list(APPEND _peers "${_lp}")
    endif()
endforeach()
message(STATUS "strata: lab peer contenders: ${_peers}")
