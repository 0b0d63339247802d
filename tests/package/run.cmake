# Configures SOURCE_DIR as a standalone project against the npusim installed in PREFIX (with the
# cache arguments CONFIG, a ;-list, default -DCMAKE_BUILD_TYPE=Release; NONE for none), builds it
# in WORK_DIR, runs WORK_DIR/EXE with ARGS (a ;-list), and checks exit code 0 and that the output
# matches every regex in EXPECT (a ;-list). It also checks that find_package found the installed
# tree, not the source or build tree.
file(REMOVE_RECURSE "${WORK_DIR}")
macro(run)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  message("${out}${err}")
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "failed (${rc}): ${ARGN}")
  endif()
endmacro()
# CONFIG NONE: no cache arguments at all, as a user who sets no build type configures; then
# EXPECT_BUILD_TYPE is the build type the project must have chosen for itself.
if(NOT CONFIG)
  set(CONFIG -DCMAKE_BUILD_TYPE=Release)
elseif(CONFIG STREQUAL "NONE")
  set(CONFIG "")
endif()
run(${CMAKE_COMMAND} -S "${SOURCE_DIR}" -B "${WORK_DIR}" "-DCMAKE_PREFIX_PATH=${PREFIX}" ${CONFIG})
if(EXPECT_BUILD_TYPE)
  file(STRINGS "${WORK_DIR}/CMakeCache.txt" bt REGEX "^CMAKE_BUILD_TYPE:")
  if(NOT bt MATCHES "=${EXPECT_BUILD_TYPE}$")
    message(FATAL_ERROR "configured with no build type, the project chose '${bt}', expected ${EXPECT_BUILD_TYPE}")
  endif()
endif()
file(STRINGS "${WORK_DIR}/CMakeCache.txt" found REGEX "^npusim_DIR:")
file(REAL_PATH "${PREFIX}" prefix_real)
if(NOT found MATCHES "=${prefix_real}/")
  message(FATAL_ERROR "npusim was not found in the installed prefix ${prefix_real}: ${found}")
endif()
run(${CMAKE_COMMAND} --build "${WORK_DIR}")
run("${WORK_DIR}/${EXE}" ${ARGS})
foreach(re IN LISTS EXPECT)
  if(NOT "${out}${err}" MATCHES "${re}")
    message(FATAL_ERROR "${EXE}: output does not match '${re}'")
  endif()
endforeach()
