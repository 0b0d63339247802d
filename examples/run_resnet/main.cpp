// run_resnet: compile a classifier fixture (ResNet-18/50) for a target and compute dtype chosen at
// run time, run it, and print its top-5 next to PyTorch's (the reference logits in io.safetensors
// and meta.json) and the latency. Exit code 0 when the top-5 agrees.
//   run_resnet tests/data/models/resnet50 --target cpu --dtype bf16 --runs 20
//
// Target and dtype are template parameters of Pipeline; a small table maps the command-line
// strings to the instantiations this program was built with.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <functional>
#include <npusim/ir/json.hpp>  // meta.json
#include <npusim/npusim.hpp>

namespace {

struct Args {
  std::string dir, target = "cpu", dtype = "f32";
  int runs = 10;
};

struct Result {
  npusim::Tensor logits;      // the first output
  std::string compiled;       // what was compiled for where
  double compile_ms = 0, load_ms = 0;
  std::vector<double> run_ms;
};

double ms_since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t).count();
}

template <class Target, class DType>
Result run(const npusim::runtime::ModelDir& c, int runs) {
  Result r;
  auto t0 = std::chrono::steady_clock::now();
  npusim::Pipeline<Target, DType> model(c.dir + "/ir.json");
  r.compile_ms = ms_since(t0);
  const auto& s = model.program().stats;
  r.compiled = std::string(Target::name) + " (" + std::string(DType::name) + "): " + std::to_string(s.nodes_in) + " nodes -> " +
               std::to_string(s.kernels - s.view_kernels) + " kernels, " + std::to_string(model.program().partitions.size()) + " partition(s)";
  t0 = std::chrono::steady_clock::now();
  model.load_weights(*c.weights);  // synthesised from synth.json (or read from weights.safetensors)
  r.load_ms = ms_since(t0);
  const std::vector<npusim::Tensor> inputs = c.inputs();
  r.logits = model.run(inputs).at(0);  // warm-up; also the result we check
  for (int i = 0; i < runs; ++i) {
    t0 = std::chrono::steady_clock::now();
    model.run(inputs);
    r.run_ms.push_back(ms_since(t0));
  }
  return r;
}

using RunFn = Result (*)(const npusim::runtime::ModelDir&, int);

RunFn pick(const std::string& target, const std::string& dtype) {
  struct Entry {
    const char *target, *dtype;
    RunFn fn;
  };
  static constexpr Entry table[] = {
      {"cpu", "f32", &run<npusim::CpuTarget, npusim::F32>},
      {"cpu", "f16", &run<npusim::CpuTarget, npusim::F16>},
      {"cpu", "bf16", &run<npusim::CpuTarget, npusim::Bf16>},
      {"reference", "f32", &run<npusim::ReferenceTarget, npusim::F32>},
      {"reference", "f16", &run<npusim::ReferenceTarget, npusim::F16>},
      {"reference", "bf16", &run<npusim::ReferenceTarget, npusim::Bf16>},
  };
  for (const Entry& e : table)
    if (target == e.target && dtype == e.dtype) return e.fn;
  return nullptr;
}

// The k largest entries of v, largest first (ties: the lower index first).
std::vector<std::int64_t> top_k(const std::vector<float>& v, std::size_t k) {
  std::vector<std::int64_t> idx(v.size());
  for (std::size_t i = 0; i < idx.size(); ++i) idx[i] = static_cast<std::int64_t>(i);
  k = std::min(k, idx.size());
  std::partial_sort(idx.begin(), idx.begin() + static_cast<std::ptrdiff_t>(k), idx.end(), [&](std::int64_t a, std::int64_t b) {
    const float x = v[static_cast<std::size_t>(a)], y = v[static_cast<std::size_t>(b)];
    return x > y || (x == y && a < b);
  });
  idx.resize(k);
  return idx;
}

// ||got - want|| / ||want|| and the cosine of the two, over float32 copies.
std::pair<double, double> rel_l2_cosine(const npusim::Tensor& got, const npusim::Tensor& want) {
  const npusim::Tensor g = got.to(npusim::DType::f32), w = want.to(npusim::DType::f32);
  double d = 0, gg = 0, ww = 0, gw = 0;
  for (std::int64_t i = 0; i < w.numel(); ++i) {
    const double x = g.data<float>()[i], y = w.data<float>()[i];
    d += (x - y) * (x - y), gg += x * x, ww += y * y, gw += x * y;
  }
  return {std::sqrt(d / ww), gw / std::sqrt(gg * ww)};
}

std::string join(const std::vector<std::int64_t>& v) {
  std::string s;
  for (auto x : v) s += (s.empty() ? "" : " ") + std::to_string(x);
  return s;
}

}  // namespace

int main(int argc, char** argv) try {
  Args a;
  for (int i = 1; i < argc; ++i) {
    std::string k = argv[i];
    auto value = [&] { return i + 1 < argc ? std::string(argv[++i]) : std::string(); };
    if (k == "--target") a.target = value();
    else if (k == "--dtype") a.dtype = value();
    else if (k == "--runs") a.runs = std::atoi(value().c_str());
    else if (a.dir.empty() && !k.starts_with("--")) a.dir = k;
    else a.runs = 0;  // unknown argument: print the usage
  }
  RunFn fn = pick(a.target, a.dtype);
  if (a.dir.empty() || !fn || a.runs < 1) {
    std::fprintf(stderr, "usage: run_resnet MODEL_DIR [--target cpu|reference] [--dtype f32|f16|bf16] [--runs N]\n");
    return 2;
  }
  const npusim::runtime::ModelDir c = npusim::runtime::ModelDir::open(a.dir);
  if (!c.weights || !c.io) throw npusim::Error(npusim::ErrorCode::io, "the case needs weights and io.safetensors", {.file = a.dir});

  Result r = fn(c, a.runs);
  std::printf("compiled for %s in %.1f ms; weights ready in %.1f ms\n", r.compiled.c_str(), r.compile_ms, r.load_ms);

  // PyTorch's answer: the top-5 noted in meta.json, and the logits stored in io.safetensors.
  const std::string out_name = c.graph.tensor(c.graph.outputs.at(0)).name;
  const npusim::Tensor want = c.io->tensor(out_name);
  const auto top5 = top_k(npusim::llm::last_row(r.logits), 5), top5_ref = top_k(npusim::llm::last_row(want), 5);
  const auto [rel_l2, cosine] = rel_l2_cosine(r.logits, want);
  std::printf("top-5 npusim:  %s\n", join(top5).c_str());
  std::printf("top-5 PyTorch: %s\n", join(top5_ref).c_str());
  if (c.meta().is_object() && c.meta().contains("top5")) std::printf("top-5 meta.json: %s\n", join(c.meta()["top5"].get<std::vector<std::int64_t>>()).c_str());
  std::printf("logits rel_l2 %.3g, cosine %.7f\n", rel_l2, cosine);

  std::sort(r.run_ms.begin(), r.run_ms.end());
  std::printf("latency over %d runs: median %.2f ms, min %.2f ms\n", a.runs, r.run_ms[r.run_ms.size() / 2], r.run_ms.front());
  // float32 must give PyTorch's top-5 in order; f16/bf16 the same five classes (neighbours whose
  // logits differ by less than the rounding may swap), as `npusim run` checks.
  bool pass = top5 == top5_ref;
  if (a.dtype != "f32") {
    auto a5 = top5, b5 = top5_ref;
    std::sort(a5.begin(), a5.end()), std::sort(b5.begin(), b5.end());
    pass = a5 == b5;
  }
  std::printf("%s\n", pass ? (a.dtype == "f32" ? "top-5 matches PyTorch" : "top-5 set matches PyTorch")
                           : "top-5 DIFFERS from PyTorch");
  return pass ? 0 : 1;
} catch (const std::exception& e) {
  std::fprintf(stderr, "%s\n", e.what());
  return 2;
}
