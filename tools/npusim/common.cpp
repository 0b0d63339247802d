// Helpers every subcommand uses (cli.hpp).
#include <unistd.h>

#include "cli.hpp"
#include "npusim/program/inspect.hpp"

namespace npusim::cli {

double seconds_since(clock_type::time_point t) { return std::chrono::duration<double>(clock_type::now() - t).count(); }

std::string fmt_num(double v) {
  char b[32];
  std::snprintf(b, sizeof b, "%g", v);
  return b;
}

Progress console_progress() {
  auto p = std::make_shared<ConsoleProgress>(stderr);
  p->tty_ = ::isatty(2);
  return [p](std::string_view s, std::uint64_t d, std::uint64_t t) { (*p)(s, d, t); };
}

void print_compile_summary(const program::CompiledProgram& p, double secs, FILE* out) {
  std::int64_t arena = 0;
  for (const auto& part : p.partitions) arena += part.plan.arena_bytes;
  std::fprintf(out, "compiled for %s (%s) in %.0f ms: %lld nodes -> %lld kernels (%lld fused, %lld zero-copy), %zu partition(s), arena %s\n",
              p.target.c_str(), std::string(dtype_short_name(p.compute)).c_str(), secs * 1000, static_cast<long long>(p.stats.nodes_in),
              static_cast<long long>(p.stats.kernels - p.stats.view_kernels), static_cast<long long>(p.stats.fused_kernels),
              static_cast<long long>(p.stats.view_kernels), p.partitions.size(), program::human_bytes(arena).c_str());
  // --weights-dtype: how many linear layers read blocks, and in which format.
  if (const ir::AttrValue* q = p.stats.pass_counts.find("quantize_weights"); q && q->is_int()) {
    const std::string format = [&]() -> std::string {
      for (const auto& part : p.partitions)
        for (const auto& n : part.graph.nodes)
          if (const ir::AttrValue* f = n.attrs.find("weight_format"); f && f->is_string() && !f->as_string().empty()) return f->as_string();
      return "blocks";
    }();
    std::fprintf(out, "linear weights quantized to %s: %lld layer(s)\n", format.c_str(), static_cast<long long>(q->as_int()));
  }
}

void print_device(const TargetChoice& tc, FILE* out) {
  if (tc.target != "opencl") return;
  if (tc.devices.empty()) std::fprintf(out, "device: %s\n", opencl_device_description().c_str());
  for (std::size_t s = 0; s < tc.devices.size(); ++s)
    std::fprintf(out, "stage %zu on device: %s\n", s, opencl_device_description(tc.devices[s]).c_str());
}

Prepared prepare(const TargetChoice& tc, const ir::Graph& g, const weights::WeightSource* src, std::unordered_map<std::string, Tensor>* cache,
                 FILE* info, int program_id) {
  Prepared r;
  weights::BindOptions bo;
  bo.progress = console_progress();
  bo.cache = cache;
  if (tc.interpret) {
    auto io = interpreter_bind_options();
    io.progress = bo.progress, io.cache = cache;
    r.runner = make_interpreter(tc, g, weights::bind_weights(g, src, io));
    return r;
  }
  auto t0 = clock_type::now();
  program::CompiledProgram p = compile(tc, g);
  print_compile_summary(p, seconds_since(t0), info);
  auto plan = make_runner(p, src, bo, program_id);
  r.plan = plan.get();
  r.runner = std::move(plan);
  return r;
}

std::string written_size(const std::string& path) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec)) return "written through: not a regular file";
  const std::uintmax_t n = std::filesystem::file_size(path, ec);
  return ec ? std::string("size unknown") : program::human_bytes(static_cast<std::int64_t>(n));
}

void print_float_islands(const program::CompiledProgram& p, FILE* out) {
  std::size_t islands = 0, integer = 0;
  for (const program::Partition& part : p.partitions) {
    const ir::Graph& g = part.graph;
    for (const ir::Node& n : g.nodes) {
      if (n.op_type.starts_with("npusim.q")) ++integer;
      const ops::OpInfo& info = ops::op_info(ops::require_op(n));
      if (info.op_class == ops::OpClass::view || info.op_class == ops::OpClass::noop || info.op_class == ops::OpClass::quantization) continue;
      for (ir::TensorId t : n.inputs) {
        // Through views back to a dequantize: this op computes in float on int8 values.
        for (std::int32_t q = g.tensor(t).producer; q >= 0;) {
          const ir::Node& prod = g.nodes[static_cast<std::size_t>(q)];
          if (prod.op_type == "quantized_decomposed.dequantize_per_tensor.default") {
            if (!islands++) std::fprintf(out, "in float between dequantize and quantize (no integer kernel):\n");
            std::fprintf(out, "  float  %-32s %-34s reads %s\n", printable(n.name).c_str(), printable(n.op_type).c_str(),
                         printable(g.tensor(prod.inputs.at(0)).name).c_str());
            break;
          }
          if (ops::op_info(ops::require_op(prod)).op_class != ops::OpClass::view) break;
          q = g.tensor(prod.inputs.at(0)).producer;
        }
      }
    }
  }
  if (integer) std::fprintf(out, "%zu integer op(s), %zu float op(s) on dequantized values\n", integer, islands);
}

}  // namespace npusim::cli
