// Checking a runner's outputs against references (an exported folder's io.safetensors, or any
// expected tensors): per output the max-abs error, relative L2, cosine and, for classifiers, the
// top-5 next to the reference's; tolerances by dtype and reduction length. Used by the CLI, the
// tests and the benchmarks; not part of the installed library.
#pragma once

#include <chrono>
#include <cstdio>
#include <functional>

#include "npusim/harness/compare.hpp"
#include "npusim/ops/registry.hpp"
#include "npusim/runtime/model_dir.hpp"
#include "npusim/runtime/sampling.hpp"
#include "npusim/target/runner.hpp"

namespace npusim::inline NPUSIM_ABI::harness {

// Longest reduction in the graph (a conv's Cin/groups*kh*kw, a matmul's K, a softmax row, ...):
// float32 results drift with it, so the default tolerance does too.
inline std::int64_t longest_reduction(const ir::Graph& g) {
  std::int64_t best = 1;
  for (const ir::Node& n : g.nodes) {
    auto in = [&](std::size_t i) -> const Shape& { return g.tensor(n.inputs.at(i)).shape; };
    auto out = [&](std::size_t i) -> const Shape& { return g.tensor(n.outputs.at(i)).shape; };
    auto idx = ops::find_op(n.op_type);
    if (!idx || n.inputs.empty()) continue;
    std::string_view id = ops::op_info(*idx).id;
    std::int64_t r = 1;
    if (id == "conv2d") r = in(1)[1] * in(1)[2] * in(1)[3];
    else if (id == "linear") r = in(0).back();
    else if (id == "matmul" && !in(0).empty()) r = in(0).back();
    else if (id == "mean" || id == "sum" || id == "adaptive_avg_pool2d") r = numel(in(0)) / std::max<std::int64_t>(1, numel(out(0)));
    else if (id == "softmax" || id == "log_softmax") r = in(0).empty() ? 1 : *std::max_element(in(0).begin(), in(0).end());
    else if (id == "layer_norm") r = in(0).back();
    else if (id == "sdpa") r = std::max(in(0).back(), in(1)[in(1).size() - 2]);
    best = std::max(best, r);
  }
  return best;
}

inline bool graph_is_half(const ir::Graph& g) {
  for (const auto& t : g.tensors)
    if (is_half(t.dtype)) return true;
  return false;
}

// Default relative-L2 tolerance: 1e-5 for float32 (1e-4 once a reduction exceeds 1k elements);
// in f16/bf16, about twice PyTorch's own half-precision error on the fixtures: 1e-2 for op cases,
// 0.05 for deep classifiers (PyTorch's ResNet-50 fp16 is at 0.022; top-1 and the top-5 set are
// checked too), 0.035 for LLM logits (PyTorch's Qwen2.5-1.5B bf16 prefill is at 0.017).
inline double default_tolerance(const ir::Graph& g, bool half_compute, std::string_view kind = {}) {
  if (half_compute || graph_is_half(g)) {
    if (kind == "vision") return 0.05;
    if (kind == "causal_lm") return 0.035;
    return 1e-2;
  }
  return longest_reduction(g) > 1024 ? 1e-4 : 1e-5;
}

struct OutputCheck {
  std::string name;
  Shape shape;
  Metrics metrics;
  double tolerance = 0;
  bool exact = false;  // integer/bool outputs must match exactly
  bool classifier = false;
  std::vector<std::int64_t> top5, top5_ref;
  bool top5_ok = true;
  // On a top-5 mismatch: the two neighbouring ranks of PyTorch's logits that decided it (0-based;
  // the first that differs and the next when the order counts) and their gap, to read next to max_abs:
  // a gap smaller than the error is a near-tie at this precision.
  int tie_rank = -1;
  double tie_gap = 0;
  bool pass = false;
};

struct CaseResult {
  std::vector<OutputCheck> outputs;
  std::vector<std::string> skipped;  // graph outputs with no expected value
  double seconds = 0;
  bool pass = false;
};

// When the expected tensor holds only the last positions of a [.., S, V] output (the 1.5B
// prefill stores the last position only), compare those rows.
inline Tensor align_to_expected(const Tensor& got, const Tensor& want) {
  if (got.shape() == want.shape() || got.numel() == want.numel()) return got;
  const Shape &gs = got.shape(), &ws = want.shape();
  if (gs.size() == ws.size() && gs.size() >= 2 && ws[ws.size() - 2] < gs[gs.size() - 2] &&
      std::equal(gs.end() - 1, gs.end(), ws.end() - 1) && std::equal(gs.begin(), gs.end() - 2, ws.begin())) {
    Tensor f = got.to(DType::f32);
    const std::int64_t rows = gs[gs.size() - 2], keep = ws[ws.size() - 2], v = gs.back(), outer = numel(Shape(gs.begin(), gs.end() - 2));
    Tensor r = Tensor::empty(DType::f32, ws);
    for (std::int64_t o = 0; o < outer; ++o)
      std::memcpy(r.data<float>() + o * keep * v, f.data<float>() + (o * rows + rows - keep) * v, static_cast<std::size_t>(keep * v) * 4);
    return r;
  }
  throw Error(ErrorCode::shape, "the model's output and its expected value differ in shape", {.expected = to_string(ws) + " (the expected value's)",
              .found = to_string(gs) + " (the output's)"});
}

struct CheckOptions {
  std::optional<double> tolerance;  // relative L2; default from default_tolerance()
  bool half_compute = false;        // the target computed in f16/bf16
  bool top5_in_order = true;        // classifiers: top-5 identical in order (else: top-1 and the set)
};

// Compares outputs (named `names`, in order) with the expected values `expected(name)` gives
// (null: no expected value; that output is listed as skipped). `tolerance` is the relative L2
// bound for float outputs; integer/bool outputs must match exactly. Classifier logits ([N, C],
// C >= 5, when `classifier` is set) must also give PyTorch's top-5.
inline CaseResult check_outputs(const std::vector<std::string>& names, const std::vector<DType>& dtypes, const std::vector<Tensor>& out,
                                const std::function<std::optional<Tensor>(const std::string&)>& expected, double tol, bool classifier,
                                const CheckOptions& opt = {}) {
  CaseResult res;
  res.pass = true;
  for (std::size_t i = 0; i < names.size(); ++i) {
    std::optional<Tensor> want = expected(names[i]);
    if (!want) {
      res.skipped.push_back(names[i]);
      continue;
    }
    OutputCheck oc;
    oc.name = names[i];
    oc.shape = want->shape();
    Tensor got;
    try {
      got = align_to_expected(out.at(i), *want);
    } catch (Error& e) {
      throw e.with_tensor(names[i]);  // which output; the caller adds the expected file
    }
    oc.metrics = compare(got, *want);
    oc.exact = !is_floating(dtypes.at(i));
    oc.tolerance = oc.exact ? 0.0 : tol;
    // NaN/Inf must match by class (compare()); a comparison of no elements proves nothing.
    oc.pass = oc.metrics.compared() && oc.metrics.nonfinite == 0 && (oc.exact ? oc.metrics.max_abs == 0 : oc.metrics.rel_l2 <= tol);
    oc.classifier = classifier && want->rank() == 2 && want->shape()[1] >= 5;
    if (oc.classifier) {
      auto g = llm::last_row(got), w = llm::last_row(*want);
      oc.top5 = topk(g, 5), oc.top5_ref = topk(w, 5);
      if (opt.top5_in_order) {
        oc.top5_ok = oc.top5 == oc.top5_ref;
      } else {
        auto a = oc.top5, b = oc.top5_ref;
        std::sort(a.begin(), a.end()), std::sort(b.begin(), b.end());
        oc.top5_ok = a == b && oc.top5[0] == oc.top5_ref[0];
      }
      oc.pass = oc.pass && oc.top5_ok;
      if (!oc.top5_ok && w.size() >= 6) {
        const auto r6 = topk(w, 6);
        auto gap = [&](int r) { return static_cast<double>(w[static_cast<std::size_t>(r6[static_cast<std::size_t>(r)])]) -
                                       static_cast<double>(w[static_cast<std::size_t>(r6[static_cast<std::size_t>(r) + 1])]); };
        if (opt.top5_in_order) {  // the first rank that differs, against the next one
          oc.tie_rank = 0;
          while (oc.tie_rank < 4 && oc.top5[static_cast<std::size_t>(oc.tie_rank)] == oc.top5_ref[static_cast<std::size_t>(oc.tie_rank)]) ++oc.tie_rank;
        } else {  // the set (ranks 5 and 6) or the top-1 (ranks 1 and 2)
          oc.tie_rank = oc.top5[0] != oc.top5_ref[0] ? 0 : 4;
        }
        oc.tie_gap = gap(oc.tie_rank);
      }
    }
    res.pass = res.pass && oc.pass;
    res.outputs.push_back(std::move(oc));
  }
  if (res.outputs.empty()) res.pass = false;
  return res;
}

// Runs a case on its inputs and checks the outputs against its io.safetensors. outputs: where to
// keep the outputs (for writing them out), when not null.
inline CaseResult check_case(const runtime::ModelDir& c, Runner& runner, const CheckOptions& opt = {}, std::vector<Tensor>* outputs = nullptr) {
  std::vector<Tensor> in = c.inputs();
  auto t0 = std::chrono::steady_clock::now();
  std::vector<Tensor> out = runner.run(in);
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (outputs) *outputs = out;
  std::vector<std::string> names;
  std::vector<DType> dtypes;
  for (auto t : c.graph.outputs) names.push_back(c.graph.tensor(t).name), dtypes.push_back(c.graph.tensor(t).dtype);
  auto expected = [&](const std::string& n) -> std::optional<Tensor> {
    if (!c.io || !c.io->find(n)) return std::nullopt;
    return c.io->tensor(n);
  };
  CaseResult res = check_outputs(names, dtypes, out, expected, opt.tolerance.value_or(default_tolerance(c.graph, opt.half_compute, c.kind())),
                                 c.kind() == "vision", opt);
  res.seconds = secs;
  return res;
}

inline std::string fmt(const char* f, double v) {
  char b[64];
  std::snprintf(b, sizeof b, f, v);
  return b;
}

inline void print_case_result(std::FILE* out, const std::string& name, const CaseResult& r) {
  for (const OutputCheck& o : r.outputs) {
    std::fprintf(out, "  output %-24s %-18s max_abs %-10s rel_l2 %-10s cos %-10s %s %s\n", ("'" + o.name + "'").c_str(),
                 to_string(o.shape).c_str(), fmt("%.3g", o.metrics.max_abs).c_str(), fmt("%.3g", o.metrics.rel_l2).c_str(),
                 fmt("%.7f", o.metrics.cosine).c_str(), o.exact ? "(exact)" : ("tol " + fmt("%.0e", o.tolerance)).c_str(),
                 o.pass ? "OK" : "FAIL");
    if (o.metrics.nonfinite)
      std::fprintf(out, "    %lld value(s) differ in class from the expected ones (NaN where a number or another NaN/Inf is expected, or the reverse)\n",
                   static_cast<long long>(o.metrics.nonfinite));
    if (!o.metrics.compared() && !o.metrics.nonfinite) std::fprintf(out, "    nothing compared: the output has no elements\n");
    if (o.classifier) {
      auto join = [](const std::vector<std::int64_t>& v) {
        std::string s;
        for (auto x : v) s += (s.empty() ? "" : " ") + std::to_string(x);
        return s;
      };
      std::fprintf(out, "    top-5 npusim:  %s\n    top-5 PyTorch: %s  %s\n", join(o.top5).c_str(), join(o.top5_ref).c_str(),
                   o.top5_ok ? "(match)" : "(MISMATCH)");
      if (o.tie_rank >= 0)
        std::fprintf(out, "    PyTorch's logits ranked %d and %d differ by %s, %s than the largest error (max_abs %s)%s\n", o.tie_rank + 1, o.tie_rank + 2,
                     fmt("%.3g", o.tie_gap).c_str(), o.tie_gap < o.metrics.max_abs ? "less" : "more", fmt("%.3g", o.metrics.max_abs).c_str(),
                     o.tie_gap < o.metrics.max_abs ? ": a near-tie at this precision" : "");
    }
  }
  for (const auto& s : r.skipped) std::fprintf(out, "  output '%s': no expected value (not checked)\n", s.c_str());
  std::fprintf(out, "%s %s (%.3f s)\n", r.pass ? "PASS" : "FAIL", name.c_str(), r.seconds);
}

inline void print_case_result(std::FILE* out, const runtime::ModelDir& c, const CaseResult& r) { print_case_result(out, c.name, r); }

}  // namespace npusim::inline NPUSIM_ABI::harness
