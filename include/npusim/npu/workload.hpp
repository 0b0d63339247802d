// What one kernel of a compiled program asks of an NPU, read from its member nodes, their shapes
// and dtypes: a matrix product (GEMM), a convolution (implicit GEMM), attention (two products and
// a softmax per query row), or vector work (pointwise, reductions, normalisation, pooling, data
// movement, gathers). Byte counts use the estimate's operand dtype for float tensors (an int8
// estimate moves one byte per float value) and the tensor's own dtype for integers (indices).
// Description-independent: the tiler (npu/tiling.hpp) turns a workload into tiles, bytes and cycles.
#pragma once

#include <initializer_list>
#include <string>
#include <string_view>
#include <vector>

#include "npusim/config.hpp"
#include "npusim/fusion/kernel.hpp"
#include "npusim/ops/op_base.hpp"

namespace npusim::inline NPUSIM_ABI::npu {

enum class Model : std::uint8_t { view, gemm, conv, attention, vector };

const char* model_name(Model m);

// Vector-unit work: simple operations (add, max, copy, ...) and transcendental ones (exp, rsqrt,
// tanh, ...), which cost Description::transcendental_ops each.
struct VectorOps {
  double simple = 0, transcendental = 0;
  VectorOps& operator+=(const VectorOps& o);
  double total(double transcendental_cost) const { return simple + transcendental * transcendental_cost; }
};

// A tensor crossing the kernel's boundary.
struct Operand {
  std::string name;
  std::int64_t bytes = 0;     // bytes this kernel moves for it (a gather moves only the rows it reads)
  std::int64_t elements = 0;  // elements of the tensor
  bool weight = false;        // a weight or constant (a parameter-cache candidate)
};

// C[batch][m, n] = A[batch][m, k] * B[batch][k, n]; B is an operand (a weight for linear layers).
struct GemmWork {
  std::int64_t batch = 1, m = 0, k = 0, n = 0;
  std::int64_t a_elem = 4, b_elem = 4, c_elem = 4;
  int a = -1, b = -1, bias = -1;  // indices into Workload::inputs
};

// NCHW convolution as an implicit GEMM per group: M = N*OH*OW, K = Cin/g*KH*KW, N = Cout/g.
struct ConvWork {
  std::int64_t batch = 1, cin = 0, h = 0, w = 0, cout = 0, kh = 1, kw = 1, oh = 0, ow = 0, groups = 1;
  std::int64_t sh = 1, sw = 1, ph = 0, pw = 0, dh = 1, dw = 1;
  std::int64_t x_elem = 4, w_elem = 4;
  int x = -1, weight = -1, bias = -1;
};

// softmax(Q K^T [* scale] [+ mask]) V with Q [B, H, Sq, D], K, V [B, Hkv, Skv, D]: each KV head
// serves H / Hkv query heads (grouped-query attention).
struct AttentionWork {
  std::int64_t batch = 1, heads = 1, kv_heads = 1, sq = 0, skv = 0, d = 0;
  std::int64_t elem = 4, mask_elem = 0, mask_heads = 1;  // mask_elem 0: no mask
  int q = -1, k = -1, v = -1, mask = -1;
};

struct Workload {
  Model model = Model::vector;
  std::vector<Operand> inputs, outputs;  // in the kernel's order
  std::vector<ops::OpClass> classes;     // of the member nodes (views and no-ops left out)
  std::int64_t macs = 0;
  VectorOps vector;                      // pointwise work, epilogues, softmax
  std::int64_t elements = 0;             // vector kernels: elements streamed (the largest boundary tensor)
  std::int64_t row_elements = 0;         // vector kernels with a reduction over the last dim: its length
  std::int64_t gathers = 0, scatters = 0;  // rows gathered (scattered): one DMA transfer each
  GemmWork gemm;
  ConvWork conv;
  AttentionWork attention;

  std::int64_t input_bytes() const;
  std::int64_t output_bytes() const;
};

// Bytes per element of a tensor of type `t` in an estimate whose operands are `estimate`.
std::int64_t element_bytes(DType t, DType estimate);

// Estimates count MACs, bytes and cycles in int64: a kernel past 2^52 MACs (a hostile or
// absurd program) is refused rather than overflowing.
inline constexpr std::int64_t max_kernel_macs = std::int64_t{1} << 52;

namespace detail {

std::int64_t checked_macs(std::initializer_list<std::int64_t> dims, const ir::Graph& g, const Kernel& k);

inline std::int64_t tensor_bytes(const ir::TensorInfo& t, DType estimate) { return numel(t.shape) * element_bytes(t.dtype, estimate); }

bool transcendental(std::string_view id);

// The vector work of one member node of a kernel (none for the matrix products, which the MAC
// array does, and none for views and for moves the kernel absorbs into its addressing).
VectorOps node_vector_ops(const ir::Graph& g, const ir::Node& n, bool absorb_movement);

}  // namespace detail

// The workload of kernel `k` of partition graph `g`, with float operands in `estimate`.
Workload analyze_kernel(const ir::Graph& g, const Kernel& k, DType estimate);

}  // namespace npusim::inline NPUSIM_ABI::npu

#ifndef NPUSIM_COMPILED_LIB
#include "npusim/npu/impl/workload_inl.hpp"
#endif
