// Umbrella header: everything a user of the library needs, from one include.
//   core, IR reader, op registry, weights (safetensors, synth, Hugging Face directories), the
//   compiler (passes, fusion, partitioning, planning, .npubin), the NPU cost model (npu/),
//   Pipeline<Target, DType>, the runtime helpers (exported model folders, tensor files, images,
//   LLM generation), and every target this build has:
//   ReferenceTarget and CpuTarget always, OpenCLTarget when the program links npusim::opencl
//   (which defines NPUSIM_WITH_OPENCL).
// Finer-grained headers stay available for programs that want less to compile.
#pragma once

#include "npusim/core/dtype.hpp"
#include "npusim/core/error.hpp"
#include "npusim/core/npy.hpp"
#include "npusim/core/tensor.hpp"
#include "npusim/cpu.hpp"
#include "npusim/ir/reader.hpp"
#include "npusim/npu/record.hpp"
#include "npusim/npu/report.hpp"
#include "npusim/npu/roofline_svg.hpp"
#include "npusim/npu/trace.hpp"
#include "npusim/ops/registry.hpp"
#include "npusim/passes/select_rows.hpp"
#include "npusim/pipeline.hpp"
#include "npusim/program/compiler.hpp"
#include "npusim/program/inspect.hpp"
#include "npusim/program/npubin_weights.hpp"
#include "npusim/reference.hpp"
#include "npusim/runtime/generate.hpp"
#include "npusim/runtime/image.hpp"
#include "npusim/runtime/llm.hpp"
#include "npusim/runtime/model_dir.hpp"
#include "npusim/runtime/tensor_files.hpp"
#include "npusim/runtime/text_generate.hpp"
#include "npusim/text/model_text.hpp"
#include "npusim/version.hpp"
#include "npusim/weights/binding.hpp"
#include "npusim/weights/open.hpp"
#ifdef NPUSIM_WITH_OPENCL
#include "npusim/opencl.hpp"
#endif
