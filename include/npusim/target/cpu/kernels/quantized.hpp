// Affine int8 kernels (ops/quantized.hpp): quantize / dequantize at a float island's edges,
// qconv2d and qlinear by the indirect int8 GEMM (compute/qconv.hpp: AVX-512 VNNI, else plain
// integer code; candidates qconv_vnni, qconv_int32), qadd as TFLite's integer add. Every result is
// the reference target's, bit for bit.
#pragma once

#include "npusim/ops/quantized.hpp"
#include "npusim/target/cpu/candidates.hpp"
#include "npusim/target/cpu/compute/qconv.hpp"
#include "npusim/target/cpu/context.hpp"
#include "npusim/target/kernel.hpp"

namespace npusim::inline NPUSIM_ABI::cpu {

Fn bind_quantize(Ctx& c, const ops::QuantizePerTensor::Attrs& a);
Fn bind_dequantize(Ctx& c, const ops::DequantizePerTensor::Attrs& a);
Fn bind_qconv2d(Ctx& c, const ops::QConv2d::Attrs& a);
Fn bind_qlinear(Ctx& c, const ops::QLinear::Attrs& a);
Fn bind_qadd(Ctx& c, const ops::QAdd::Attrs& a);
Fn bind_qmax_pool2d(Ctx& c, const ops::QMaxPool2d::Attrs& a);
Fn bind_qcat(Ctx& c, const ops::QCat::Attrs& a);

// The int8 indirect GEMM's candidates (qconv2d, qlinear; compute/qconv.hpp), best first. Both run
// the same packed weights; the choice picks the inner product (qconv::vnni_available holds the ISA
// `#if`), so a candidate here is its rule and the flag the binder passes on.
struct QconvProblem {};
struct QconvVnni {
  static constexpr std::string_view name = "qconv_vnni",
                                    what = "int8 indirect GEMM on AVX-512 VNNI dot products (vpdpbusd), 12 pixels x 32 channels per tile";
  static constexpr bool generic = false, vnni = true;
  static bool applies(const QconvProblem&, std::string* why) {
    return qconv::vnni_available() || decline(why, "this build has no AVX-512 VNNI (-march=native on a CPU with avx512_vnni)");
  }
};
struct QconvInt32 {
  static constexpr std::string_view name = "qconv_int32", what = "int8 indirect GEMM in plain int32 arithmetic (any CPU)";
  static constexpr bool generic = true, vnni = false;
  static bool applies(const QconvProblem&, std::string*) { return true; }
};
using qconv_candidates = meta::list<QconvVnni, QconvInt32>;
static_assert(check_candidate_list<QconvProblem>(qconv_candidates{}), "NPUSIM: qconv_candidates: names must be unique, the last and only the last generic");

}  // namespace npusim::inline NPUSIM_ABI::cpu

namespace npusim::inline NPUSIM_ABI {

template <>
struct kernel<ops::QuantizePerTensor, CpuTarget> {
  static constexpr bool provided = true;
  static cpu::Fns bind(cpu::Ctx& c) { return {cpu::bind_quantize(c, c.attrs<ops::QuantizePerTensor>())}; }
};
template <>
struct kernel<ops::DequantizePerTensor, CpuTarget> {
  static constexpr bool provided = true;
  static cpu::Fns bind(cpu::Ctx& c) { return {cpu::bind_dequantize(c, c.attrs<ops::DequantizePerTensor>())}; }
};
template <>
struct kernel<ops::QConv2d, CpuTarget> {
  static constexpr bool provided = true;
  static cpu::Fns bind(cpu::Ctx& c) { return {cpu::bind_qconv2d(c, c.attrs<ops::QConv2d>())}; }
};
template <>
struct kernel<ops::QLinear, CpuTarget> {
  static constexpr bool provided = true;
  static cpu::Fns bind(cpu::Ctx& c) { return {cpu::bind_qlinear(c, c.attrs<ops::QLinear>())}; }
};
template <>
struct kernel<ops::QAdd, CpuTarget> {
  static constexpr bool provided = true;
  static cpu::Fns bind(cpu::Ctx& c) { return {cpu::bind_qadd(c, c.attrs<ops::QAdd>())}; }
};

template <>
struct kernel<ops::QMaxPool2d, CpuTarget> {
  static constexpr bool provided = true;
  static cpu::Fns bind(cpu::Ctx& c) { return {cpu::bind_qmax_pool2d(c, c.attrs<ops::QMaxPool2d>())}; }
};

template <>
struct kernel<ops::QCat, CpuTarget> {
  static constexpr bool provided = true;
  static cpu::Fns bind(cpu::Ctx& c) { return {cpu::bind_qcat(c, c.attrs<ops::QCat>())}; }
};

}  // namespace npusim::inline NPUSIM_ABI

#ifndef NPUSIM_COMPILED_LIB
#include "npusim/target/cpu/kernels/impl/quantized_inl.hpp"
#endif
