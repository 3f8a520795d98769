# Read by ctest, not cmake (tests/faults/CMakeLists.txt): one test per fault
# cell that `vmm-faults --names --quick --rotate N` lists now, the CI subset
# labelled faults_ci, this hour's rotation faults_rotation, all of them
# guest and faults. (No label holds another's name: `ctest -L quick` is a
# regular expression, and a label faults_quick would pull every cell into
# scripts/test.sh --quick.) The paths come from fault_tests_paths.cmake (generated).
set(_rotate 3)
if(DEFINED ENV{VMM_FAULTS_ROTATE})
  set(_rotate "$ENV{VMM_FAULTS_ROTATE}")
endif()
execute_process(COMMAND "${VMM_FAULTS}" --names --quick
                RESULT_VARIABLE _rc_quick OUTPUT_VARIABLE _quick ERROR_VARIABLE _err_quick)
execute_process(COMMAND "${VMM_FAULTS}" --names --quick --rotate "${_rotate}"
                RESULT_VARIABLE _rc_all OUTPUT_VARIABLE _all ERROR_VARIABLE _err_all)
if(NOT _rc_quick EQUAL 0 OR NOT _rc_all EQUAL 0 OR _quick STREQUAL "")
  # No list (vmm-faults not built, or it refused): one test says so and fails.
  string(STRIP "${_rc_quick} ${_err_quick} ${_err_all}" _why)
  add_test(faults.cells /bin/sh -c "echo \"FAIL: ${VMM_FAULTS} --names --quick --rotate ${_rotate} gave no cell list: $1\" >&2; exit 1" sh "${_why}")
  set_tests_properties(faults.cells PROPERTIES LABELS "guest;faults")
  return()
endif()
string(STRIP "${_quick}" _quick)
string(STRIP "${_all}" _all)
string(REPLACE "\n" ";" _quick "${_quick}")
string(REPLACE "\n" ";" _all "${_all}")
foreach(_cell IN LISTS _all)
  string(REPLACE ":" "_" _dir "${_cell}")
  list(FIND _quick "${_cell}" _at) # (no IN_LIST: ctest reads this without cmake's policies)
  if(_at GREATER -1)
    set(_tier faults_ci)
  else()
    set(_tier faults_rotation)
  endif()
  add_test(faults.${_cell} bash "${FAULTS_RUNNER}" "${_cell}")
  # A source and a target each running a dirtying guest: two of ctest's -j
  # slots (tests/integration/CMakeLists.txt). A cell lasts 3-25 s on a host
  # with KVM and several times that emulated; COST starts them early.
  set_tests_properties(faults.${_cell} PROPERTIES
    SKIP_RETURN_CODE 77
    TIMEOUT 300
    PROCESSORS 2
    COST 20
    LABELS "guest;faults;${_tier}"
    ENVIRONMENT "${FAULTS_ENV};WORK=${FAULTS_WORK}/work-${_dir}")
endforeach()
