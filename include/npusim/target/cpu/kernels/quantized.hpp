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

// Whether qconv_candidates[i] runs a problem (why: the reason it declines, when asked).
bool qconv_applies(std::size_t i, std::string* why);

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
