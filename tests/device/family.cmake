# The device family's Vulkan integration test (vulkan_test.cpp). Included by tests/CMakeLists.txt
# with ${target} = strata_device_tests.
#
# With CMake's FindVulkan finding the headers and the loader, the test links the loader and runs on
# whatever device the loader offers (a real GPU first, else Mesa's lavapipe). Without them it
# compiles to a test that skips, so the build succeeds everywhere.
find_package(Vulkan QUIET)

# Where lavapipe is installed (CI installs mesa-vulkan-drivers) a Vulkan device must be found: the
# test then fails instead of skipping, so it cannot stop running unnoticed.
file(GLOB _strata_lavapipe_icd
    /usr/share/vulkan/icd.d/lvp_icd*.json
    /usr/local/share/vulkan/icd.d/lvp_icd*.json
    /etc/vulkan/icd.d/lvp_icd*.json)

if(Vulkan_FOUND)
    # dlopen and dl_iterate_phdr: under ASan the test keeps the Vulkan libraries loaded (see
    # pin_loaded_libraries() in vulkan_test.cpp).
    target_link_libraries(${target} PRIVATE Vulkan::Vulkan ${CMAKE_DL_LIBS})
    target_compile_definitions(${target} PRIVATE STRATA_HAVE_VULKAN=1)
elseif(_strata_lavapipe_icd)
    message(WARNING "strata: lavapipe is installed but FindVulkan found no Vulkan headers or loader: "
                    "the DeviceVulkan tests will fail (install libvulkan-dev)")
else()
    message(STATUS "strata: no Vulkan headers or loader (libvulkan-dev): the DeviceVulkan tests will skip")
endif()

# add_test() for ${target} comes after this file: the property is set once this directory is done.
# cmake_language(EVAL) expands ${target} now (the loop moves on to other families before the call).
if(_strata_lavapipe_icd)
    cmake_language(EVAL CODE
        "cmake_language(DEFER CALL set_property TEST ${target} APPEND PROPERTY ENVIRONMENT STRATA_REQUIRE_VULKAN=1)")
endif()
unset(_strata_lavapipe_icd)
