// The validators and shared options of tools/npusim/options.hpp.
#include "options.hpp"

#include <cerrno>
#include <cmath>
#include <cstdlib>

#include "cli.hpp"

namespace npusim::cli {

CLI::Validator finite_range(double lo, double hi, bool lo_open) {
  const std::string desc = std::string(lo_open ? "(" : "[") + fmt_num(lo) + ", " + fmt_num(hi) + "]";
  return CLI::Validator(
      [=](std::string& in) -> std::string {
        double v = 0;
        if (!CLI::detail::lexical_cast(in, v) || !std::isfinite(v) || v < lo || v > hi || (lo_open && v == lo))
          return "value " + in + " is not a finite number in " + desc;
        return {};
      },
      "FLOAT in " + desc);
}

CLI::Validator integer_in(std::uint64_t lo, std::uint64_t hi) {
  const std::string desc = "an integer in [" + std::to_string(lo) + ", " + std::to_string(hi) + "]";
  return CLI::Validator(
      [=](std::string& in) -> std::string {
        const std::size_t sign = !in.empty() && (in[0] == '-' || in[0] == '+') ? 1 : 0;
        if (in.size() <= sign || in.find_first_not_of("0123456789", sign) != std::string::npos)
          return "value " + in + " is not an integer (expected " + desc + ")";
        if (in[0] == '-') return "value " + in + " must not be negative (expected " + desc + ")";
        errno = 0;
        const unsigned long long v = std::strtoull(in.c_str(), nullptr, 10);
        if (errno == ERANGE || v < lo || v > hi) return "value " + in + " is out of range (expected " + desc + ")";
        return {};
      },
      "INT in [" + std::to_string(lo) + ", " + std::to_string(hi) + "]");
}

void add_target_options(CLI::App* sub, TargetChoice& tc, bool interpret) {
  const std::string target_help = "execution target: " + [] {
    std::string s;
    for (const auto& n : target_names()) s += (s.empty() ? "" : ", ") + n + (n == default_target ? " (default)" : "");
    return s;
  }();
  sub->add_option_function<std::string>("--target", [&tc](const std::string& t) { tc.target = t, tc.target_given = true; }, target_help)
      ->check(CLI::IsMember(target_names()));
  sub->add_option_function<std::string>("--dtype", [&tc](const std::string& d) { tc.dtype = d, tc.dtype_given = true; }, "compute dtype (default f32)")
      ->check(CLI::IsMember({"f32", "f16", "bf16"}));
  sub->add_option("--force-fallback", tc.force_fallback,
                  "debug: run these on the fallback (op types, op ids or node:NAME, comma-separated; also NPUSIM_FORCE_FALLBACK)");
  sub->add_option("--no-pattern", tc.no_patterns,
                  "fusion patterns to leave out, comma-separated (kernel kinds as inspect and explain show them, e.g. "
                  "linear_group_rope_kv): their ops become the kernels the other patterns make; to time or debug a pattern")
      ->delimiter(',');
  auto* wd = sub->add_option("--weights-dtype", tc.weights_dtype,
                             "linear layers' weights quantized to blocks of 32: q8 (int8, 8.5 bits) or q4 (4.5 bits); every target")
                 ->check(CLI::IsMember({"q8", "q4", "q8_0", "q4_0"}));
  sub->add_option("--keep", tc.keep, "with --weights-dtype: weights that stay as they are (a state_dict key or part of one, e.g. lm_head)")
      ->delimiter(',')->needs(wd);
  sub->add_option_function<int>("--stages", [&tc](int n) { tc.stages = n, tc.stages_given = true; },
                                "pipeline stages: cut the model into N contiguous stages balanced by weights and FLOPs (an LLM between "
                                "layers); under mpirun, one stage per rank (docs/scale-out.md)")
      ->check(integer_in(1, 4096));
  if (interpret) sub->add_flag("--interpret", tc.interpret, "reference only: interpret the IR node by node (no passes, no fusion)");
  sub->add_option("--device", tc.device, "opencl target: device index or name substring (sets NPUSIM_OPENCL_DEVICE; see `npusim devices`)");
  sub->add_option("--devices", tc.devices, "opencl target: one device per pipeline stage, e.g. 0,1 (--stages defaults to their count; "
                                           "activations cross through the host)")
      ->delimiter(',');
}

void add_input_options(CLI::App* sub, InputArgs& in) {
  sub->add_option("--input", in.inputs, "an input's value: NAME=FILE (.npy, .safetensors, raw:FILE); NAME may be left out for a single input")
      ->allow_extra_args(false);
  sub->add_option("--image", in.image, "image classifiers: a JPEG/PNG/BMP, with ImageNet preprocessing (resize, centre crop, normalise)");
}

}  // namespace npusim::cli
