# The live-lab API tests talk HTTP to a server started in-process (tools/lab/serve). The library is
# defined later (tools/lab comes after tests), so this guards on the option, not on the target; a
# build without the lab (asan, tsan presets) compiles the tests to a single skipped case.
if(STRATA_BUILD_LAB)
    find_package(PkgConfig QUIET)
    if(PkgConfig_FOUND)
        pkg_check_modules(STRATA_SERVE_TEST_HTTPLIB QUIET cpp-httplib)
    endif()
    find_package(nlohmann_json 3 QUIET)
    if(STRATA_SERVE_TEST_HTTPLIB_FOUND AND nlohmann_json_FOUND)
        target_link_libraries(${target} PRIVATE strata_lab_serve)
        target_compile_definitions(${target} PRIVATE STRATA_SERVE_AVAILABLE=1)
    endif()
endif()
