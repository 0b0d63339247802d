// Fixture of layers.detects_broken_units: a header whose definitions no library TU compiles.
#pragma once
void b();

#ifndef NPUSIM_COMPILED_LIB
#include "npusim/x/impl/b_inl.hpp"
#endif
