# The live-lab API tests talk HTTP to a server started in-process (strata_lab_serve, present when
# the lab is built and cpp-httplib and nlohmann-json are); without it the tests compile to a single
# skipped case.
if(TARGET strata_lab_serve)
    target_link_libraries(${target} PRIVATE strata_lab_serve)
    target_compile_definitions(${target} PRIVATE STRATA_SERVE_AVAILABLE=1)
endif()
