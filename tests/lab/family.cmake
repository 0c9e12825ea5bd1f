# The lab tests link the lab's libraries: strata_lab_core (workloads, replay, contenders with the peers where installed, race) and
# strata_lab_report (the HTML report writer).
target_link_libraries(${target} PRIVATE strata_lab_core strata_lab_report)
