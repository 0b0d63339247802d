// Definitions for npusim/runtime/tensor_files.hpp (NPUSIM_FUNC: npusim/config.hpp).
#pragma once

#include <algorithm>
#include <filesystem>
#include <limits>

#include "npusim/config.hpp"
#include "npusim/core/file.hpp"
#include "npusim/core/npy.hpp"
#include "npusim/runtime/tensor_files.hpp"

namespace npusim::inline NPUSIM_ABI::runtime {

NPUSIM_FUNC TensorArg parse_tensor_arg(std::string_view arg, std::string_view option) {
  auto bad = [&](std::string msg) {
    return Error(ErrorCode::attr, std::string(option) + " '" + std::string(arg) + "': " + std::move(msg), {.expected = "NAME=FILE or FILE"});
  };
  if (arg.empty()) throw bad("empty argument");
  const auto eq = arg.find('=');
  if (eq == std::string_view::npos) return {"", std::string(arg)};
  if (eq == 0) throw bad("nothing before '='; give the tensor's name, or leave out the '='");
  if (eq + 1 == arg.size()) throw bad("no file after '='");
  return {std::string(arg.substr(0, eq)), std::string(arg.substr(eq + 1))};
}

NPUSIM_FUNC std::vector<TensorArg> assign_input_args(std::vector<TensorArg> args, const std::vector<std::string>& input_names,
                                                     std::string_view option) {
  auto list = [&] {
    std::string s;
    for (const auto& n : input_names) s += (s.empty() ? "" : ", ") + n;
    return s.empty() ? std::string("(none)") : s;
  };
  for (TensorArg& a : args) {
    if (a.name.empty()) {
      if (input_names.size() != 1)
        throw Error(ErrorCode::attr, std::string(option) + " '" + a.path + "': the graph has " + std::to_string(input_names.size()) +
                                         " inputs, so say which one with NAME=FILE", {.expected = "one of " + list()});
      a.name = input_names[0];
    } else if (std::find(input_names.begin(), input_names.end(), a.name) == input_names.end()) {
      throw Error(ErrorCode::attr, std::string(option) + " '" + a.name + "=" + a.path + "': the graph has no input named '" + a.name + "'",
                  {.expected = "one of " + list(), .found = a.name});
    }
  }
  for (std::size_t i = 0; i < args.size(); ++i)
    for (std::size_t j = 0; j < i; ++j)
      if (args[i].name == args[j].name)
        throw Error(ErrorCode::attr, std::string(option) + ": input '" + args[i].name + "' is given twice", {.found = args[j].path + " and " + args[i].path});
  return args;
}

}  // namespace npusim::inline NPUSIM_ABI::runtime

namespace npusim::inline NPUSIM_ABI::runtime {
namespace tensor_files_detail {

NPUSIM_FUNC Tensor convert_integers(const Tensor& t, DType to, const std::string& file, const std::string& name) {
  Tensor out = Tensor::empty(to, t.shape());
  visit_dtype(t.dtype(), [&]<class S>() {
    visit_dtype(to, [&]<class D>() {
      if constexpr (std::is_integral_v<S> && std::is_integral_v<D> && !std::is_same_v<S, bool> && !std::is_same_v<D, bool>) {
        const S* s = t.data<S>();
        D* d = out.data<D>();
        for (std::int64_t i = 0; i < t.numel(); ++i) {
          if (!std::in_range<D>(s[i]))
            throw Error(ErrorCode::dtype, "value at flat index " + std::to_string(i) + " does not fit the input's " + std::string(dtype_name(to)),
                        {.file = file, .tensor = name, .expected = "[" + std::to_string(std::numeric_limits<D>::min()) + ", " + std::to_string(std::numeric_limits<D>::max()) + "]",
                         .found = std::to_string(s[i])});
          d[i] = static_cast<D>(s[i]);
        }
      }
    });
  });
  return out;
}

}  // namespace tensor_files_detail
}  // namespace npusim::inline NPUSIM_ABI::runtime

namespace npusim::inline NPUSIM_ABI::runtime {

NPUSIM_FUNC Tensor conform_tensor(const Tensor& t, const ExpectedTensor& want, const std::string& file) {
  if (t.shape() != want.shape)
    throw Error(ErrorCode::shape, "file's tensor has the wrong shape for graph input '" + want.name + "'",
                {.file = file, .tensor = want.name, .expected = to_string(want.shape), .found = to_string(t.shape())});
  const DType from = t.dtype(), to = want.dtype;
  if (from == to) return t;
  if (is_floating(from) && is_floating(to)) return t.to(to);
  if (is_integral(from) && is_integral(to)) return tensor_files_detail::convert_integers(t, to, file, want.name);
  const auto family = [](DType d) { return is_floating(d) ? "floating-point" : is_integral(d) ? "integer" : "bool"; };
  // NumPy's spelling of the target type (it has no bfloat16: float32 converts exactly into one).
  const std::string np_type = to == DType::bf16 ? "float32" : to == DType::boolean ? "bool_" : std::string(dtype_name(to));
  throw Error(ErrorCode::dtype,
              std::string("file holds ") + family(from) + " values but graph input '" + want.name + "' is " + family(to) +
                  "; npusim does not convert between the two (convert in NumPy, e.g. arr.astype(np." + np_type + "))",
              {.file = file, .tensor = want.name, .expected = std::string(dtype_name(to)), .found = std::string(dtype_name(from))});
}

NPUSIM_FUNC Tensor load_tensor_file(const std::string& spec, const ExpectedTensor& want) {
  if (spec.starts_with("raw:")) {
    std::string path = spec.substr(4);
    DType stored = want.dtype;
    if (const auto colon = path.find(':'); colon != std::string::npos) {
      if (auto d = parse_dtype(std::string_view(path).substr(0, colon))) {
        stored = *d;
        path = path.substr(colon + 1);
      }
    }
    if (path.empty()) throw Error(ErrorCode::attr, "raw input '" + spec + "' names no file", {.tensor = want.name, .expected = "raw:PATH or raw:DTYPE:PATH"});
    std::uint64_t need = 0;
    try {
      need = static_cast<std::uint64_t>(checked_nbytes(want.shape, stored));  // never a wrapped byte count
    } catch (Error& e) {
      throw e.with_file(path).with_tensor(want.name);
    }
    std::error_code ec;
    const auto size = std::filesystem::file_size(path, ec);
    if (!ec && size != need)
      throw Error(ErrorCode::shape, "raw file's size does not match graph input '" + want.name + "' (" + std::string(dtype_name(stored)) + " " + to_string(want.shape) + ")",
                  {.file = path, .tensor = want.name, .expected = std::to_string(need) + " bytes", .found = std::to_string(size) + " bytes"});
    check_allocation(need, [&] { return "raw input '" + want.name + "'"; });
    const std::string bytes = read_file(path, need);
    if (bytes.size() != need)
      throw Error(ErrorCode::shape, "raw file's size does not match graph input '" + want.name + "'",
                  {.file = path, .tensor = want.name, .expected = std::to_string(need) + " bytes", .found = std::to_string(bytes.size()) + " bytes"});
    Tensor t = Tensor::empty(stored, want.shape);
    if (need) std::memcpy(t.raw(), bytes.data(), need);
    if (stored == DType::boolean)
      for (std::size_t i = 0; i < need; ++i)
        if (static_cast<unsigned char>(bytes[i]) > 1)
          throw Error(ErrorCode::parse, "raw bool data holds a byte that is not 0 or 1", {.file = path, .tensor = want.name, .offset = i, .found = std::to_string(static_cast<unsigned char>(bytes[i]))});
    return conform_tensor(t, want, path);
  }
  if (spec.ends_with(".safetensors")) {
    auto f = weights::SafetensorsFile::open(spec);
    const weights::SafetensorsEntry* e = f.find(want.name);
    if (!e) {
      if (f.entries().size() != 1) {
        std::string names;
        for (const auto& x : f.entries()) names += (names.empty() ? "" : ", ") + x.name;
        throw Error(ErrorCode::weights, "file has " + std::to_string(f.entries().size()) + " tensors and none is named '" + want.name + "'",
                    {.file = spec, .tensor = want.name, .expected = "a tensor named '" + want.name + "' or exactly one tensor", .found = names.empty() ? "no tensors" : names});
      }
      e = &f.entries()[0];
    }
    return conform_tensor(f.tensor(*e), want, spec);
  }
  if (spec.ends_with(".npy")) return conform_tensor(read_npy(spec), want, spec);
  const std::string bytes = read_file(spec);
  if (bytes.starts_with(npy_detail::magic)) return conform_tensor(parse_npy(bytes, spec), want, spec);
  throw Error(ErrorCode::unsupported, "cannot tell the file's format from its name", {.file = spec, .tensor = want.name,
              .expected = "FILE.npy, FILE.safetensors, raw:PATH or raw:DTYPE:PATH"});
}

NPUSIM_FUNC std::vector<std::string> save_outputs(const std::string& spec, const std::vector<std::pair<std::string, Tensor>>& outputs) {
  const TensorArg arg = parse_tensor_arg(spec, "--output");
  std::vector<std::pair<std::string, Tensor>> chosen;
  if (!arg.name.empty()) {
    std::string names;
    for (const auto& [n, t] : outputs) {
      names += (names.empty() ? "" : ", ") + n;
      if (n == arg.name) chosen.emplace_back(n, t);
    }
    if (chosen.empty())
      throw Error(ErrorCode::attr, "--output '" + spec + "': the graph has no output named '" + arg.name + "'", {.expected = "one of " + names, .found = arg.name});
  } else {
    chosen = outputs;
  }
  std::vector<std::string> notes;
  if (arg.path.ends_with(".safetensors")) {
    weights::write_safetensors(arg.path, chosen);
    return notes;
  }
  if (!arg.path.ends_with(".npy"))
    throw Error(ErrorCode::attr, "--output '" + spec + "': unknown file type", {.file = arg.path, .expected = "FILE.safetensors, FILE.npy or NAME=FILE.npy"});
  if (chosen.size() != 1) {
    std::string names;
    for (const auto& [n, t] : chosen) names += (names.empty() ? "" : ", ") + n;
    throw Error(ErrorCode::attr, "--output '" + spec + "': a .npy file holds one tensor but the graph has " + std::to_string(chosen.size()) +
                                     " outputs; write them all to a .safetensors file, or one per --output as NAME=FILE.npy",
                {.file = arg.path, .expected = "1 output", .found = names});
  }
  Tensor t = chosen[0].second;
  if (t.dtype() == DType::bf16) {
    t = t.to(DType::f32);
    notes.push_back("output '" + chosen[0].first + "' is bfloat16, which .npy cannot hold: written as float32 (exactly the same values) to " + arg.path);
  }
  write_npy(arg.path, t);
  return notes;
}

}  // namespace npusim::inline NPUSIM_ABI::runtime
