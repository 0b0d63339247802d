# What a program that links npusim::compiled parses (docs/compiled.md): the headers of HEADERS (a
# ;-list, e.g. npusim/npusim.hpp) with NPUSIM_COMPILED_LIB defined must not reach any of the heavy
# headers below; in header-only mode they do (MODE=header-only: then the check must find them, which
# proves it can fail).
#   cmake -DCXX=c++ "-DINCLUDES=dir;dir" "-DDEFINES=X=1;Y" "-DHEADERS=npusim/npusim.hpp" -DMODE=compiled|header-only -P check_light_headers.cmake
cmake_minimum_required(VERSION 3.21)
set(heavy
  "/Eigen/"                      # linear algebra (the CPU and reference kernels)
  "/nlohmann/json.hpp"           # JSON values (json_fwd.hpp is fine)
  "/msgpack"                     # .npubin encoding
  "/xsimd/"                      # the CPU target's SIMD
  "/xtensor/"                    # the reference target's kernels
  "npusim/text/unicode_tables.hpp"
  "npusim/target/opencl/kernels_cl.hpp"
  "/png.h"                      # image decoding (runtime/image_decode.hpp)
  "/jpeglib.h"
  "/CL/cl.h")
set(src "${CMAKE_CURRENT_BINARY_DIR}/light_headers_${MODE}.cpp")
set(text "")
foreach(h IN LISTS HEADERS)
  string(APPEND text "#include <${h}>\n")
endforeach()
file(WRITE "${src}" "${text}")
set(args -std=c++20 -M "${src}")
if(MODE STREQUAL "compiled")
  list(APPEND args -DNPUSIM_COMPILED_LIB)
endif()
foreach(d IN LISTS DEFINES)
  list(APPEND args "-D${d}")
endforeach()
foreach(i IN LISTS INCLUDES)
  if(i)
    list(APPEND args "-I${i}")
  endif()
endforeach()
execute_process(COMMAND ${CXX} ${args} RESULT_VARIABLE rc OUTPUT_VARIABLE deps ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "${CXX} -M failed (${rc}): ${err}")
endif()
string(REPLACE "\\\n" " " deps "${deps}")
set(found "")
foreach(h IN LISTS heavy)
  string(FIND "${deps}" "${h}" at)
  if(NOT at EQUAL -1)
    list(APPEND found "${h}")
  endif()
endforeach()
string(REGEX MATCHALL "[^ \n]+\\.h(pp)?" files "${deps}")
list(LENGTH files n)
if(MODE STREQUAL "compiled")
  if(found)
    message(FATAL_ERROR "${HEADERS} with NPUSIM_COMPILED_LIB reach heavy headers: ${found} (${n} headers in all)")
  endif()
  message("${HEADERS} with NPUSIM_COMPILED_LIB: ${n} headers, none of: ${heavy}")
else()
  message("${HEADERS} header-only: ${n} headers, heavy ones reached: ${found}")
endif()
