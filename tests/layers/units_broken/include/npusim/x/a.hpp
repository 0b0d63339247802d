// Fixture of layers.detects_broken_units: a header that forgets its definitions.
#pragma once
void a();
