// npusim::compiled: the CPU target's convolutions (every candidate: AMX, Winograd, AVX-512 BF16,
// the blocked f32 kernels, im2col + GEMM) and the int8 ones.
// Every impl/*_inl.hpp is compiled in exactly one of src/*.cpp (ctest layers.compiled_units).
#include "npusim/target/cpu/kernels/impl/conv_inl.hpp"
#include "npusim/target/cpu/kernels/impl/quantized_inl.hpp"
