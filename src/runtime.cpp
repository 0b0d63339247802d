// npusim::compiled: The runtime: program runner, profiler, tensor files, images, LLM sessions and generation.
// Every impl/*_inl.hpp is compiled in exactly one of src/*.cpp (ctest layers.compiled_units).
#include "npusim/target/impl/profiler_inl.hpp"
#include "npusim/runtime/impl/program_runner_inl.hpp"
#include "npusim/runtime/impl/tensor_files_inl.hpp"
#include "npusim/runtime/impl/int8_inl.hpp"
#include "npusim/runtime/impl/image_decode_inl.hpp"
#include "npusim/runtime/impl/image_inl.hpp"
#include "npusim/runtime/impl/llm_inl.hpp"
#include "npusim/runtime/impl/model_dir_inl.hpp"
#include "npusim/runtime/impl/sampling_inl.hpp"
#include "npusim/runtime/impl/generate_inl.hpp"
#include "npusim/runtime/impl/text_generate_inl.hpp"
