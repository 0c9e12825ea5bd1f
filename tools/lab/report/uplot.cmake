# Where uPlot is for the lab's pages: sets STRATA_LAB_UPLOT_DIR (tools/lab/web/node_modules/uplot/dist)
# and runs `npm ci` in tools/lab/web once, at configure time, when that folder lacks uPlot and npm is
# there. Included by tools/lab/report/embed_assets.cmake (the HTML report) and
# tools/lab/serve/serve.cmake (the live lab): one npm ci serves both.
set(STRATA_LAB_WEB_PACKAGE_DIR "${CMAKE_CURRENT_LIST_DIR}/../web")
get_filename_component(STRATA_LAB_WEB_PACKAGE_DIR "${STRATA_LAB_WEB_PACKAGE_DIR}" ABSOLUTE)
set(STRATA_LAB_UPLOT_DIR "${STRATA_LAB_WEB_PACKAGE_DIR}/node_modules/uplot/dist")
# A failed npm ci (offline) is not retried on every re-configure of this build folder.
if(NOT CMAKE_SCRIPT_MODE_FILE AND NOT EXISTS "${STRATA_LAB_UPLOT_DIR}/uPlot.iife.min.js"
   AND EXISTS "${STRATA_LAB_WEB_PACKAGE_DIR}/package-lock.json" AND NOT STRATA_LAB_UPLOT_NPM_FAILED)
    find_program(STRATA_NPM npm)
    if(STRATA_NPM)
        message(STATUS "strata: npm ci in tools/lab/web (uPlot for the report and the live lab)")
        execute_process(COMMAND "${STRATA_NPM}" ci --no-audit --no-fund --loglevel=error
                        WORKING_DIRECTORY "${STRATA_LAB_WEB_PACKAGE_DIR}" RESULT_VARIABLE _strata_npm_rc
                        OUTPUT_QUIET TIMEOUT 180) # offline: give up rather than hang the configure
        if(NOT _strata_npm_rc EQUAL 0)
            message(WARNING "strata: npm ci in tools/lab/web failed (${_strata_npm_rc}); the report and the live lab have no charts")
            set(STRATA_LAB_UPLOT_NPM_FAILED ON CACHE INTERNAL "npm ci for uPlot failed in this build folder")
        endif()
    else()
        message(STATUS "strata: npm not found; the report and the live lab are built without uPlot (no charts)")
    endif()
endif()
