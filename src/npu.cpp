// npusim::compiled: The NPU cost model and its reports.
// Every impl/*_inl.hpp is compiled in exactly one of src/*.cpp (ctest layers.compiled_units).
#include "npusim/npu/impl/description_inl.hpp"
#include "npusim/npu/impl/description_json_inl.hpp"
#include "npusim/npu/impl/workload_inl.hpp"
#include "npusim/npu/impl/tiling_inl.hpp"
#include "npusim/npu/impl/estimate_inl.hpp"
#include "npusim/npu/impl/cost_model_inl.hpp"
#include "npusim/npu/impl/record_inl.hpp"
#include "npusim/npu/impl/report_inl.hpp"
#include "npusim/npu/impl/roofline_svg_inl.hpp"
#include "npusim/npu/impl/trace_inl.hpp"
