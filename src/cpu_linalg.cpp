// npusim::compiled: the CPU target's matrix products (linear, matmul, addmm, their fused forms) and
// attention.
// Every impl/*_inl.hpp is compiled in exactly one of src/*.cpp (ctest layers.compiled_units).
#include "npusim/target/cpu/kernels/impl/attention_inl.hpp"
#include "npusim/target/cpu/kernels/impl/linalg_inl.hpp"
