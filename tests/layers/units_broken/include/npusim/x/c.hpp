// Fixture of layers.detects_broken_units: a header whose impl includes a header that includes it.
#pragma once
void c();

#ifndef NPUSIM_COMPILED_LIB
#include "npusim/x/impl/c_inl.hpp"
#endif
