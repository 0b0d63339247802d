# Regenerates a committed, generated file and fails when it differs from the committed copy:
# runs CMD (a ;-list that writes OUT), then compares OUT with COMMITTED. REGENERATE tells how.
execute_process(COMMAND ${CMD} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
message("${out}${err}")
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "generating ${OUT} failed (${rc})")
endif()
execute_process(COMMAND ${CMAKE_COMMAND} -E compare_files "${OUT}" "${COMMITTED}" RESULT_VARIABLE differ)
if(NOT differ EQUAL 0)
  message(FATAL_ERROR "${COMMITTED} is out of date with the code (fresh copy: ${OUT}).\n"
                      "Regenerate it and commit the result:\n  ${REGENERATE}")
endif()
