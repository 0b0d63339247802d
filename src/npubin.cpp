// npusim::compiled: .npubin files (msgpack): programs, embedded weights, inspection.
// Every impl/*_inl.hpp is compiled in exactly one of src/*.cpp (ctest layers.compiled_units).
#include "npusim/program/impl/npubin_inl.hpp"
#include "npusim/program/impl/npubin_weights_inl.hpp"
#include "npusim/program/impl/inspect_inl.hpp"
