// npusim::compiled: the reference target's pointwise kernels (every unary and binary op).
// Every impl/*_inl.hpp is compiled in exactly one of src/*.cpp (ctest layers.compiled_units).
#include "npusim/target/reference/kernels/impl/elementwise_inl.hpp"
