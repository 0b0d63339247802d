// Users' own tensors as files: `--input NAME=FILE` for a graph input and `--output FILE` for the
// results. FILE is .npy, .safetensors (one tensor, or the one named like the input) or raw bytes
// (`raw:PATH` / `raw:DTYPE:PATH`, shape from the graph). A loaded tensor must have the graph
// input's shape exactly; its dtype converts only within a family (float64 -> float32, int32 ->
// int64 when every value fits), never between integers and floats: token ids given as floats, or
// an image given as integers, is a mistake to report, not to paper over. docs/inputs.md is the
// user's view of the same rules.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "npusim/config.hpp"
#include "npusim/core/tensor.hpp"
#include "npusim/weights/safetensors.hpp"

namespace npusim::inline NPUSIM_ABI::runtime {

// One `NAME=FILE` argument. `name` is empty when the argument had no '='.
struct TensorArg {
  std::string name;
  std::string path;
};

// Splits `NAME=FILE` at the first '=' (so FILE may contain '=', NAME may not); a plain FILE gives
// an empty name. `option` ("--input") names the argument in errors.
TensorArg parse_tensor_arg(std::string_view arg, std::string_view option = "--input");

// Gives every argument its graph input: an unnamed argument is allowed only when the graph has
// exactly one input. Names must exist and appear once. Returns the arguments with names filled in.
std::vector<TensorArg> assign_input_args(std::vector<TensorArg> args, const std::vector<std::string>& input_names,
                                         std::string_view option = "--input");

// What a graph input needs.
struct ExpectedTensor {
  std::string name;
  DType dtype = DType::f32;
  Shape shape;
};

namespace tensor_files_detail {

// Narrowing integer conversion with every value range-checked (npusim never wraps ids silently).
Tensor convert_integers(const Tensor& t, DType to, const std::string& file, const std::string& name);

}  // namespace tensor_files_detail

// Checks a loaded tensor against the input it is for, converting where that loses nothing a user
// could mean: float <-> float (float64 -> float32 rounds) and integer -> integer (range-checked).
// `file` names the source in errors.
Tensor conform_tensor(const Tensor& t, const ExpectedTensor& want, const std::string& file);

// Loads a tensor from `spec` for the graph input `want`:
//   FILE.npy                 the array in it
//   FILE.safetensors         the tensor named want.name, else the file's only tensor
//   raw:PATH                 bytes of want.dtype in C order, want.shape (size checked)
//   raw:DTYPE:PATH           bytes of DTYPE (f32, f64, i64, ...), converted like a file's tensor
// Other extensions are read as .npy when they start with NumPy's magic, else rejected.
Tensor load_tensor_file(const std::string& spec, const ExpectedTensor& want);

// Writes graph outputs where `spec` says (see docs/inputs.md):
//   FILE.safetensors         every output, by name, in its own dtype
//   FILE.npy                 the only output (several outputs: an error naming them)
//   NAME=FILE.npy|.safetensors  just output NAME
// .npy cannot hold bfloat16: such an output is written as float32 (exact) and a note says so.
// Returns notes for the user (empty when nothing needs saying). Files are written atomically.
std::vector<std::string> save_outputs(const std::string& spec, const std::vector<std::pair<std::string, Tensor>>& outputs);

}  // namespace npusim::inline NPUSIM_ABI::runtime

#ifndef NPUSIM_COMPILED_LIB
#include "npusim/runtime/impl/tensor_files_inl.hpp"
#endif
