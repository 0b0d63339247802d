// Structure-aware mutation fuzzers that need no libFuzzer (GCC or clang, any build): they mutate
// valid inputs the way a forger would, so every mutation gets past the frame and the parser.
//
//   npusim_mutation_fuzz npubin DATA_DIR EXECUTIONS [SEED [SECONDS]]
//     Compiles every op fixture for the reference and the CPU target, then per execution takes
//     one, applies 1-3 mutations to the CompiledProgram itself (kernel kinds, operands and member
//     nodes; tensor shapes, dtypes and kinds, with the plan's sizes kept in step half of the time
//     so mutations reach the checks behind it; plan places, offsets, roots and storage types;
//     node ops, operands and attributes; io specs; partition targets) or to its serialised bytes,
//     writes it with a correct checksum, and reads it back. A program that is read back is run on
//     its target (the CPU target's kernels for cpu partitions) with synthetic weights and inputs.
//   npusim_mutation_fuzz kv DATA_DIR EXECUTIONS [SEED [SECONDS]]
//     Mutates the tiny Qwen2's kv_mapping.json (numbers, layer entries, tensor names taken from
//     the graphs, fields dropped or duplicated), reads it and checks it against the prefill and
//     decode graphs; a mapping that is accepted and differs from those already run drives a
//     prefill and two decode steps on the reference target.
//
// Counted and printed: executions, programs or mappings rejected (npusim::Error when read),
// accepted, accepted that then failed when run (an npusim::Error from the run other than an index
// out of range, which depends on the data), and anything but npusim::Error escaping. Exit status
// 1 when either of the last two is not zero. A crash (signal) ends the process: the seed and the
// execution number are printed every 2^16 executions, so a crash can be replayed.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>
#include <set>

#include "fuzz_util.hpp"
#include "npusim/ir/json.hpp"
#include "npusim/program/compiler.hpp"
#include "npusim/target/cpu/parallel.hpp"
#include "npusim/program/impl/npubin_format.hpp"
#include "npusim/program/npubin.hpp"
#include "npusim/harness/check.hpp"
#include "npusim/runtime/generate.hpp"
#include "npusim/cpu.hpp"
#include "npusim/target/describe.hpp"
#include "npusim/reference.hpp"
#include "npusim/target/reference/interpreter.hpp"

using namespace npusim;
namespace fs = std::filesystem;

namespace {

struct Counts {
  std::uint64_t executions = 0, rejected = 0, accepted = 0, failed_when_run = 0, escaped = 0, data_errors = 0, run = 0, refused_when_loaded = 0;
  std::map<std::string, std::uint64_t> reject_reasons, load_reasons;
};

std::mt19937_64 rng;
// SECONDS (optional): stop at this time even if fewer executions were made.
std::chrono::steady_clock::time_point deadline = std::chrono::steady_clock::time_point::max();
bool out_of_time(std::uint64_t execution) { return (execution & 0xff) == 0 && std::chrono::steady_clock::now() >= deadline; }
std::uint64_t below(std::uint64_t n) { return n ? rng() % n : 0; }
bool coin(int one_in = 2) { return below(static_cast<std::uint64_t>(one_in)) == 0; }

// The first words of an error message: what kind of rejection it was.
std::string reason(const Error& e) {
  std::string m = e.message();
  if (auto c = m.find(": "); c != std::string::npos && m.starts_with("malformed .npubin: partition")) m = m.substr(c + 2);
  if (m.size() > 60) m.resize(60);
  return std::string(error_code_name(e.code())) + ": " + m;
}

// Errors a run may give for a valid program: an index out of range in the input data, a weight the
// source lacks or holds in another shape (the weights are the user's: the fuzzer synthesises them
// from the mutated program, so a mutated weight key or shape can disagree with another partition's),
// a limit (the allocation limit, lowered here to 256 MiB), a target this build has no executor for
// (a program for "opencl" read by a build without it, or a target name changed byte by byte).
bool data_dependent(const Error& e) {
  const std::string& m = e.message();
  return (e.code() == ErrorCode::runtime && m.find("index out of range") != std::string::npos) || e.code() == ErrorCode::weights ||
         (e.code() == ErrorCode::unsupported && m.find("no executor for target") != std::string::npos) ||
         m.find("bound weight has the wrong shape") != std::string::npos || (e.code() == ErrorCode::resource && m.find("allocation limit") != std::string::npos);
}

// NPUSIM_FUZZ_FAILED=DIR keeps every input that was accepted and then failed when run, or let
// something other than npusim::Error escape.
void keep_failed(const std::string& bytes, const char* ext) {
  static int n = 0;
  if (const char* dir = std::getenv("NPUSIM_FUZZ_FAILED")) write_file_atomic(std::string(dir) + "/failed-" + std::to_string(n++) + ext, bytes);
}

// A program its target refused while it was being loaded for it (weights bound, kernels bound),
// before any input was given: what `npusim run` reports before running anything.
struct RefusedWhenLoaded {
  Error error;
};

template <class F>
void report_run(Counts& c, F&& f, const std::string& what, const std::string& bytes, const char* ext) {
  try {
    ++c.run;
    f();
  } catch (const RefusedWhenLoaded& r) {
    if (data_dependent(r.error)) {
      ++c.data_errors;
      return;
    }
    if (r.error.message().find("npusim bug") == std::string::npos) {  // a refusal, not an internal error
      ++c.refused_when_loaded, ++c.load_reasons[reason(r.error)];
      return;
    }
    keep_failed(bytes, ext);
    if (c.failed_when_run++ < 20) std::fprintf(stderr, "accepted, then failed when loaded (%s): %s\n", what.c_str(), r.error.what());
  } catch (const Error& e) {
    if (data_dependent(e)) {
      ++c.data_errors;
      return;
    }
    keep_failed(bytes, ext);
    if (c.failed_when_run++ < 20) std::fprintf(stderr, "accepted, then failed when run (%s): %s\n", what.c_str(), e.what());
  }
}

// ---- .npubin ----------------------------------------------------------------------------------------

std::int64_t mutate_int(std::int64_t v) {
  const auto u = static_cast<std::uint64_t>(v);  // wrapping arithmetic: the fuzzer itself has no UB
  switch (below(8)) {
    case 0: return 0;
    case 1: return static_cast<std::int64_t>(u + 1);
    case 2: return static_cast<std::int64_t>(u - 1);
    case 3: return static_cast<std::int64_t>(u * 2);
    case 4: return static_cast<std::int64_t>(0 - u);
    case 5: return static_cast<std::int64_t>(below(64));
    case 6: return std::int64_t{1} << below(63);
    default: return static_cast<std::int64_t>(rng());
  }
}

std::string random_kind() {
  static const std::vector<std::string> kinds = [] {
    std::vector<std::string> k{"view", "no_such_kind", ""};
    for (std::size_t i = 0; i < ops::op_count; ++i) k.emplace_back(ops::op_info(i).id);
    [&]<class... Ps>(meta::list<Ps...>) { (k.emplace_back(Ps::name), ...); }(fusion::all_patterns{});
    return k;
  }();
  return kinds[below(kinds.size())];
}

std::string random_op_type() {
  const ops::OpInfo& info = ops::op_info(below(ops::op_count));
  return std::string(info.aten[below(info.aten.size())]);
}

const DType all_dtypes[] = {DType::f32, DType::f16, DType::bf16, DType::f64, DType::i64, DType::i32, DType::i16, DType::i8, DType::u8, DType::boolean};

void resize_plan(program::Partition& part, std::size_t t) {
  plan::TensorPlan& tp = part.plan.tensors[t];
  try {
    tp.bytes = checked_nbytes(part.graph.tensors[t].shape, tp.storage);
  } catch (const Error&) {
  }
}

void mutate_program(program::CompiledProgram& p) {
  if (p.partitions.empty()) return;
  program::Partition& part = p.partitions[below(p.partitions.size())];
  ir::Graph& g = part.graph;
  const auto T = static_cast<std::int64_t>(g.tensors.size());
  auto any_tensor = [&] { return static_cast<ir::TensorId>(below(static_cast<std::uint64_t>(T))); };
  switch (below(18)) {
    case 0:  // kernel kind
      if (!part.kernels.empty()) part.kernels[below(part.kernels.size())].kind = random_kind();
      break;
    case 1: {  // kernel operands
      if (part.kernels.empty() || T == 0) break;
      Kernel& k = part.kernels[below(part.kernels.size())];
      auto& v = coin() ? k.inputs : k.outputs;
      if (coin() || v.empty()) v.push_back(any_tensor());
      else if (coin()) v[below(v.size())] = any_tensor();
      else v.erase(v.begin() + static_cast<std::ptrdiff_t>(below(v.size())));
      break;
    }
    case 2: {  // kernel members and order
      if (part.kernels.empty()) break;
      Kernel& k = part.kernels[below(part.kernels.size())];
      if (coin() && part.kernels.size() > 1) std::swap(part.kernels[below(part.kernels.size())], part.kernels[below(part.kernels.size())]);
      else if (coin() && !g.nodes.empty()) k.nodes.push_back(static_cast<std::int32_t>(below(g.nodes.size())));
      else if (!k.nodes.empty()) k.nodes.erase(k.nodes.begin() + static_cast<std::ptrdiff_t>(below(k.nodes.size())));
      break;
    }
    case 3:
    case 4: {  // a tensor's shape (the plan kept in step half of the time)
      if (T == 0) break;
      const auto t = static_cast<std::size_t>(any_tensor());
      Shape& s = g.tensors[t].shape;
      if (s.empty() || coin(4)) s.push_back(1 + static_cast<std::int64_t>(below(4)));
      else if (coin()) s[below(s.size())] = coin(4) ? mutate_int(s[0]) : 1 + static_cast<std::int64_t>(below(8));
      else if (s.size() > 1) std::swap(s[0], s[s.size() - 1]);
      else s.pop_back();
      if (coin()) resize_plan(part, t);
      break;
    }
    case 5: {  // a tensor's dtype
      if (T == 0) break;
      const auto t = static_cast<std::size_t>(any_tensor());
      g.tensors[t].dtype = all_dtypes[below(std::size(all_dtypes))];
      if (coin()) part.plan.tensors[t].storage = g.tensors[t].dtype, resize_plan(part, t);
      break;
    }
    case 6:  // a tensor's kind
      if (T) g.tensors[static_cast<std::size_t>(any_tensor())].kind = static_cast<ir::TensorKind>(below(4));
      break;
    case 7: {  // plan place / root
      if (T == 0) break;
      plan::TensorPlan& tp = part.plan.tensors[static_cast<std::size_t>(any_tensor())];
      if (coin()) tp.place = static_cast<plan::Place>(below(5));
      else tp.root = any_tensor();
      break;
    }
    case 8: {  // plan offset / bytes / arena
      if (T == 0) break;
      plan::TensorPlan& tp = part.plan.tensors[static_cast<std::size_t>(any_tensor())];
      if (coin(3)) part.plan.arena_bytes = coin() ? mutate_int(part.plan.arena_bytes) : part.plan.arena_bytes / 2;
      else if (coin()) tp.offset = coin() ? static_cast<std::int64_t>(below(static_cast<std::uint64_t>(std::max<std::int64_t>(1, part.plan.arena_bytes)))) : mutate_int(tp.offset);
      else tp.bytes = mutate_int(tp.bytes);
      break;
    }
    case 9: {  // plan storage type
      if (T == 0) break;
      const auto t = static_cast<std::size_t>(any_tensor());
      part.plan.tensors[t].storage = all_dtypes[below(std::size(all_dtypes))];
      if (coin()) resize_plan(part, t);
      break;
    }
    case 10:  // a node's op
      if (!g.nodes.empty()) g.nodes[below(g.nodes.size())].op_type = random_op_type();
      break;
    case 11: {  // a node's operands
      if (g.nodes.empty() || T == 0) break;
      ir::Node& n = g.nodes[below(g.nodes.size())];
      auto& v = coin(3) ? n.outputs : n.inputs;
      if (v.empty() || coin(4)) v.push_back(any_tensor());
      else if (coin()) v[below(v.size())] = any_tensor();
      else v.erase(v.begin() + static_cast<std::ptrdiff_t>(below(v.size())));
      break;
    }
    case 12: {  // a node's attributes
      if (g.nodes.empty()) break;
      ir::Node& n = g.nodes[below(g.nodes.size())];
      if (n.attrs.items.empty() || coin(4)) {
        n.attrs.set(coin() ? "dim" : "alpha", ir::AttrValue{mutate_int(1)});
        break;
      }
      auto& [key, val] = n.attrs.items[below(n.attrs.items.size())];
      if (val.is_int()) val = ir::AttrValue{mutate_int(val.as_int())};
      else if (val.is_double()) val = ir::AttrValue{coin() ? 0.0 : -val.as_double() * 1e30};
      else if (val.is_list() && !val.as_list().empty()) {
        ir::AttrList l = val.as_list();
        if (coin()) l.pop_back();
        else if (l[0].is_int()) l[0] = ir::AttrValue{mutate_int(l[0].as_int())};
        val = ir::AttrValue{l};
      } else n.attrs.items.erase(n.attrs.items.begin() + static_cast<std::ptrdiff_t>(below(n.attrs.items.size())));
      (void)key;
      break;
    }
    case 13: {  // graph inputs / outputs lists
      if (T == 0) break;
      auto& v = coin() ? g.inputs : g.outputs;
      if (v.empty() || coin()) v.push_back(any_tensor());
      else v.erase(v.begin() + static_cast<std::ptrdiff_t>(below(v.size())));
      break;
    }
    case 14: {  // program io specs
      auto& v = coin() ? p.inputs : p.outputs;
      if (v.empty()) break;
      program::IoSpec& io = v[below(v.size())];
      if (coin() && !io.shape.empty()) io.shape[below(io.shape.size())] = mutate_int(io.shape[0]);
      else io.dtype = all_dtypes[below(std::size(all_dtypes))];
      break;
    }
    case 15:  // partition target
      part.target = coin() ? "reference" : "cpu";
      break;
    case 16: {  // a view kernel: a node claimed zero-copy, its output aliased to its input
      if (part.kernels.empty()) break;
      Kernel& k = part.kernels[below(part.kernels.size())];
      k.kind = "view";
      if (!k.nodes.empty()) {
        const ir::Node& n = g.nodes[static_cast<std::size_t>(k.nodes[0])];
        if (!n.outputs.empty() && !n.inputs.empty()) {
          plan::TensorPlan& tp = part.plan.tensors[static_cast<std::size_t>(n.outputs[0])];
          tp.place = plan::Place::view, tp.root = part.plan.tensors[static_cast<std::size_t>(n.inputs[0])].root;
        }
      }
      break;
    }
    default: {  // a tensor renamed to another's name, or a weight key changed
      if (T < 2) break;
      ir::TensorInfo& a = g.tensors[static_cast<std::size_t>(any_tensor())];
      if (coin()) a.name = g.tensors[static_cast<std::size_t>(any_tensor())].name;
      else a.weight_key = coin() ? std::string() : a.weight_key + "x";
      break;
    }
  }
}

// Bytes changed behind the frame, checksum recomputed.
std::string mutate_bytes(std::string bytes) {
  constexpr std::size_t header = 20, trailer = 8;
  if (bytes.size() <= header + trailer) return bytes;
  const std::size_t n = 1 + below(4);
  for (std::size_t i = 0; i < n; ++i) {
    const std::size_t at = header + below(bytes.size() - header - trailer);
    switch (below(3)) {
      case 0: bytes[at] = static_cast<char>(bytes[at] ^ (1 << below(8))); break;
      case 1: bytes[at] = static_cast<char>(below(256)); break;
      default: bytes[at] = static_cast<char>(coin() ? 0 : 0xff); break;
    }
  }
  const std::string_view payload = std::string_view(bytes).substr(header, bytes.size() - header - trailer);
  const std::uint64_t sum = program::npubin_detail::fnv1a(payload);
  for (int i = 0; i < 8; ++i) bytes[bytes.size() - trailer + static_cast<std::size_t>(i)] = static_cast<char>((sum >> (8 * i)) & 0xff);
  return bytes;
}

void run_program(const program::CompiledProgram& p) {
  if (!fuzz::small_program(p)) return;
  weights::SynthSource src = fuzz::synth_for_program(p);
  const std::vector<Tensor> in = fuzz::inputs_for_program(p);
  std::unique_ptr<Runner> r;
  try {
    r = p.target == "cpu" ? runner_for<CpuTarget>::make(p, &src) : runner_for<ReferenceTarget>::make(p, &src);
  } catch (const Error& e) {
    throw RefusedWhenLoaded{e};
  }
  r->run(in);
}

std::vector<program::CompiledProgram> npubin_seeds(const fs::path& data) {
  std::vector<program::CompiledProgram> seeds;
  std::vector<fs::path> dirs;
  for (const auto& e : fs::directory_iterator(data / "ops")) dirs.push_back(e.path());
  std::sort(dirs.begin(), dirs.end());
  for (const auto& d : dirs) {
    runtime::ModelDir c = runtime::ModelDir::open(d.string(), "none");
    program::CompileOptions ro;
    ro.evaluator = &ref::evaluate_node;
    seeds.push_back(program::compile(c.graph, describe_target<ReferenceTarget>(), ro));
    program::CompileOptions co;
    co.evaluator = evaluator_for<CpuTarget>();
    seeds.push_back(program::compile(c.graph, describe_target<CpuTarget>(), co));
  }
  return seeds;
}

int fuzz_npubin(const fs::path& data, std::uint64_t executions, std::uint64_t seed) {
  const std::vector<program::CompiledProgram> seeds = npubin_seeds(data);
  std::fprintf(stderr, "npubin: %zu seed programs (op fixtures for reference and cpu)\n", seeds.size());
  Counts c;
  for (; c.executions < executions && !out_of_time(c.executions); ++c.executions) {
    if ((c.executions & 0xffff) == 0) std::fprintf(stderr, "  seed %llu execution %llu\n", static_cast<unsigned long long>(seed), static_cast<unsigned long long>(c.executions));
    program::CompiledProgram p = seeds[below(seeds.size())];
    std::string bytes;
    try {
      if (coin(5)) {
        bytes = mutate_bytes(program::serialize(p));
      } else {
        for (std::uint64_t m = 1 + below(3); m; --m) mutate_program(p);
        bytes = program::serialize(p);
      }
    } catch (const Error& e) {  // serialising refused what the mutation made (a non-UTF-8 name, ...)
      ++c.rejected, ++c.reject_reasons["serialize: " + reason(e)];
      continue;
    } catch (const std::exception& e) {
      if (c.escaped++ < 20) std::fprintf(stderr, "escaped while serialising: %s: %s\n", typeid(e).name(), e.what());
      continue;
    }
    try {
      program::CompiledProgram q = program::deserialize(bytes, "fuzz.npubin");
      ++c.accepted;
      // NPUSIM_FUZZ_LAST=FILE keeps the program about to run (after a crash: the one that crashed).
      if (const char* last = std::getenv("NPUSIM_FUZZ_LAST")) write_file_atomic(last, bytes);
      // NPUSIM_FUZZ_RING=DIR keeps the last 256 programs run (DIR/ring-<n mod 256>.npubin): memory
      // corrupted by one run may be detected only runs later; `replay` runs them one by one.
      if (const char* ring = std::getenv("NPUSIM_FUZZ_RING"))
        std::ofstream(std::string(ring) + "/ring-" + std::to_string(c.executions % 256) + ".npubin", std::ios::binary) << bytes;
      report_run(c, [&] { run_program(q); }, q.target, bytes, ".npubin");
    } catch (const Error& e) {
      ++c.rejected, ++c.reject_reasons[reason(e)];
    } catch (const std::exception& e) {
      keep_failed(bytes, ".npubin");
      if (c.escaped++ < 20) std::fprintf(stderr, "escaped: %s: %s\n", typeid(e).name(), e.what());
    }
  }
  std::printf("npubin: %llu executions: %llu rejected when read, %llu accepted (%llu loaded for their target: %llu refused by the target when loaded, "
              "%llu errors of the data, weights or limits, %llu failed otherwise), %llu non-npusim exceptions\n",
              static_cast<unsigned long long>(c.executions), static_cast<unsigned long long>(c.rejected), static_cast<unsigned long long>(c.accepted),
              static_cast<unsigned long long>(c.run), static_cast<unsigned long long>(c.refused_when_loaded), static_cast<unsigned long long>(c.data_errors),
              static_cast<unsigned long long>(c.failed_when_run), static_cast<unsigned long long>(c.escaped));
  auto print_top = [](const std::map<std::string, std::uint64_t>& reasons, std::size_t n) {
    std::vector<std::pair<std::uint64_t, std::string>> top;
    for (const auto& [r, k] : reasons) top.push_back({k, r});
    std::sort(top.rbegin(), top.rend());
    for (std::size_t i = 0; i < std::min<std::size_t>(top.size(), n); ++i)
      std::printf("  %10llu  %s\n", static_cast<unsigned long long>(top[i].first), top[i].second.c_str());
  };
  print_top(c.reject_reasons, 25);
  if (!c.load_reasons.empty()) std::printf(" refused by the target when loaded:\n");
  print_top(c.load_reasons, 25);
  return c.failed_when_run || c.escaped ? 1 : 0;
}

// ---- kv_mapping.json -------------------------------------------------------------------------------

ir::json mutate_number(const ir::json& v) {
  switch (below(8)) {
    case 0: return 0;
    case 1: return -1;
    case 2: return 1000000000000LL;
    case 3: return v.is_number_integer() ? ir::json(static_cast<std::int64_t>(v.get<std::uint64_t>() + 1)) : ir::json(1);
    case 4: return v.is_number_integer() ? ir::json(static_cast<std::int64_t>(v.get<std::uint64_t>() - 1)) : ir::json(1);
    case 5: return 1.5;
    case 6: return "16";
    default: return static_cast<std::int64_t>(below(200));
  }
}

void mutate_mapping(ir::json& j, const std::vector<std::string>& names) {
  static const char* top_fields[] = {"num_layers", "prefill_seq_len", "max_cache_len", "layers"};
  static const char* layer_fields[] = {"layer", "prefill_key_output", "prefill_value_output", "decode_key_input", "decode_value_input",
                                       "decode_key_output", "decode_value_output"};
  if (!j.is_object()) return;  // an earlier mutation made it an array or null: nothing to reach into
  ir::json& layers = j["layers"];
  switch (below(9)) {
    case 0:
    case 1: {
      const char* f = top_fields[below(3)];
      j[f] = mutate_number(j.contains(f) ? j[f] : ir::json(0));
      break;
    }
    case 2: j.erase(top_fields[below(4)]); break;
    case 3:  // a layer duplicated, dropped or swapped
      if (!layers.is_array() || layers.empty()) break;
      if (coin()) layers.push_back(layers[below(layers.size())]);
      else if (coin()) layers.erase(below(layers.size()));
      else std::swap(layers[0], layers[layers.size() - 1]);
      break;
    case 4:
    case 5: {  // a tensor name replaced by another name of the graphs (or nonsense)
      if (!layers.is_array() || layers.empty()) break;
      ir::json& l = layers[below(layers.size())];
      if (!l.is_object()) break;
      const char* f = layer_fields[1 + below(6)];
      l[f] = coin(8) ? ir::json("no_such_tensor") : ir::json(names[below(names.size())]);
      break;
    }
    case 6: {  // a layer index or field changed or dropped
      if (!layers.is_array() || layers.empty()) break;
      ir::json& l = layers[below(layers.size())];
      if (!l.is_object()) break;
      const char* f = layer_fields[below(7)];
      if (coin()) l.erase(f);
      else l[f] = mutate_number(l.contains(f) ? l[f] : ir::json(0));
      break;
    }
    case 7: j = coin() ? ir::json::array() : ir::json(nullptr); break;
    default:
      if (layers.is_array() && !layers.empty() && coin()) layers[below(layers.size())] = mutate_number(0);
      else j["layers"] = coin() ? ir::json::object() : ir::json::array();
      break;
  }
}

int fuzz_kv(const fs::path& data, std::uint64_t executions, std::uint64_t seed) {
  runtime::ModelDir pc = runtime::ModelDir::open((data / "models/qwen2_tiny_prefill").string());
  runtime::ModelDir dc = runtime::ModelDir::open((data / "models/qwen2_tiny_decode").string(), "none");
  const ir::json base = ir::parse_json(read_file((data / "models/qwen2_tiny_decode/kv_mapping.json").string()), "kv_mapping.json");
  std::vector<std::string> names;
  for (const ir::Graph* g : {&pc.graph, &dc.graph})
    for (const auto& t : g->tensors) names.push_back(t.name);
  auto pb = pc.bind(), db = weights::bind_weights(dc.graph, pc.weights.get());
  ref::InterpreterRunner prefill(pc.graph, pb.tensors), decode(dc.graph, db.tensors);
  Counts c;
  std::set<std::string> ran;
  for (; c.executions < executions && !out_of_time(c.executions); ++c.executions) {
    if ((c.executions & 0xffff) == 0) std::fprintf(stderr, "  seed %llu execution %llu\n", static_cast<unsigned long long>(seed), static_cast<unsigned long long>(c.executions));
    ir::json j = base;
    for (std::uint64_t m = 1 + below(3); m; --m) mutate_mapping(j, names);
    const std::string text = j.dump();
    try {
      llm::KvMapping map = llm::KvMapping::parse(text, "kv_mapping.json");
      llm::LlmPrograms model(prefill, decode, map, pc.graph, dc.graph);  // completes and checks it against the graphs
      ++c.accepted;
      if (ran.insert(text).second && ran.size() <= 2000)
        report_run(c, [&] {
          llm::Session s(model);
          std::vector<std::int64_t> prompt{1, 2, 3, 4, 5};
          s.prefill(prompt);
          s.step(6);
          s.step(7);
        }, "kv mapping " + text, text, ".json");
    } catch (const Error& e) {
      ++c.rejected, ++c.reject_reasons[reason(e)];
    } catch (const std::exception& e) {
      if (c.escaped++ < 20) std::fprintf(stderr, "escaped: %s: %s\n  mapping: %s\n", typeid(e).name(), e.what(), text.c_str());
    }
  }
  std::printf("kv: %llu executions: %llu rejected, %llu accepted (%zu distinct; %llu run, %llu failed when run), %llu non-npusim exceptions\n",
              static_cast<unsigned long long>(c.executions), static_cast<unsigned long long>(c.rejected), static_cast<unsigned long long>(c.accepted),
              ran.size(), static_cast<unsigned long long>(c.run), static_cast<unsigned long long>(c.failed_when_run), static_cast<unsigned long long>(c.escaped));
  std::vector<std::pair<std::uint64_t, std::string>> top;
  for (const auto& [r, n] : c.reject_reasons) top.push_back({n, r});
  std::sort(top.rbegin(), top.rend());
  for (std::size_t i = 0; i < std::min<std::size_t>(top.size(), 25); ++i) std::printf("  %10llu  %s\n", static_cast<unsigned long long>(top[i].first), top[i].second.c_str());
  return c.failed_when_run || c.escaped ? 1 : 0;
}

}  // namespace

// npusim_mutation_fuzz replay FILE...: reads and runs each program as the fuzzer does (under
// valgrind or a sanitizer, to find which one corrupted memory).
int replay(int argc, char** argv) {
  int bad = 0;
  for (int i = 2; i < argc; ++i) {
    try {
      program::CompiledProgram q = program::deserialize(read_file(argv[i]), argv[i]);
      try {
        run_program(q);
        std::printf("%s: ran\n", argv[i]);
      } catch (const RefusedWhenLoaded& r) {
        std::printf("%s: refused when loaded: %s\n", argv[i], r.error.what());
      }
    } catch (const Error& e) {
      std::printf("%s: %s\n", argv[i], e.what());
    } catch (const std::exception& e) {
      std::printf("%s: ESCAPED %s\n", argv[i], e.what());
      bad = 1;
    }
  }
  return bad;
}

int main(int argc, char** argv) try {
  if (argc >= 3 && std::string(argv[1]) == "replay") {
    allocation_limit() = std::uint64_t{256} << 20;
    cpu::set_threads(1);
    return replay(argc, argv);
  }
  if (argc < 4 || (std::string(argv[1]) != "npubin" && std::string(argv[1]) != "kv")) {
    std::fprintf(stderr, "usage: npusim_mutation_fuzz npubin|kv DATA_DIR EXECUTIONS [SEED [SECONDS]]\n");
    return 2;
  }
  const std::uint64_t executions = std::strtoull(argv[3], nullptr, 10), seed = argc > 4 ? std::strtoull(argv[4], nullptr, 10) : 1;
  rng.seed(seed);
  if (argc > 5) deadline = std::chrono::steady_clock::now() + std::chrono::seconds(std::strtoull(argv[5], nullptr, 10));
  allocation_limit() = std::uint64_t{256} << 20;  // as the libFuzzer targets: a claimed 10 GB is refused like 1 TB
  cpu::set_threads(1);
  const auto t0 = std::chrono::steady_clock::now();
  const int rc = std::string(argv[1]) == "npubin" ? fuzz_npubin(argv[2], executions, seed) : fuzz_kv(argv[2], executions, seed);
  std::printf("%.1f s\n", std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  return rc;
} catch (const std::exception& e) {
  std::fprintf(stderr, "npusim_mutation_fuzz: %s\n", e.what());
  return 2;
}
