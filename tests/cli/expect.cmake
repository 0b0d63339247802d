# Runs CMD (a ;-list), then checks its exit code (EXPECT_RC) and that its combined output matches
# every regex in EXPECT (a ;-list) and none in FORBID. Used by the CLI tests: exit code and message
# both matter.
execute_process(COMMAND ${CMD} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
set(all "${out}${err}")
message("${all}")
if(NOT "${rc}" STREQUAL "${EXPECT_RC}")
  message(FATAL_ERROR "exit code ${rc}, expected ${EXPECT_RC}")
endif()
foreach(re IN LISTS EXPECT)
  if(NOT all MATCHES "${re}")
    message(FATAL_ERROR "output does not match '${re}'")
  endif()
endforeach()
foreach(re IN LISTS FORBID)
  if(all MATCHES "${re}")
    message(FATAL_ERROR "output matches '${re}', which it must not")
  endif()
endforeach()
