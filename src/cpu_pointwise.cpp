// npusim::compiled: the CPU target's pointwise chains (every unary and binary op) and its
// normalisations, softmax and pooling.
// Every impl/*_inl.hpp is compiled in exactly one of src/*.cpp (ctest layers.compiled_units).
#include "npusim/target/cpu/kernels/impl/nn_inl.hpp"
#include "npusim/target/cpu/kernels/impl/pointwise_inl.hpp"
