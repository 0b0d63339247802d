// Fixture of layers.detects_broken_units.
#pragma once
void b() {}
