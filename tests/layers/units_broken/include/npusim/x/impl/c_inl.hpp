// Fixture of layers.detects_broken_units.
#pragma once
#include "npusim/x/c.hpp"
#include "npusim/x/d.hpp"
void c() {}
