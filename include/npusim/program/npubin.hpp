// .npubin: a CompiledProgram serialised with msgpack-cxx.
//   bytes 0-7   magic "NPUBIN\r\n"
//   bytes 8-11  format version (u32, little endian): 2 (1 is still read)
//   bytes 12-19 payload length (u64, little endian)
//   payload     msgpack map (fixed key order, so save(load(save(p))) is byte-identical)
//   next 8      FNV-1a 64 of the payload (truncation and corruption are detected before parsing)
//   (version 2) an optional weights section at the next 64-byte boundary: its 64-byte head is
//   checked here (the file must end where the head says); the rest is npubin_weights.hpp's.
// Reading checks every index against the sizes it refers to, then re-checks every node of every
// partition, so a damaged or hostile file is an error, never a crash.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "npusim/config.hpp"
#include "npusim/program/npubin_layout.hpp"
#include "npusim/program/program.hpp"

namespace npusim::inline NPUSIM_ABI::program {

// The program as .npubin bytes (no weights section).
std::string serialize(const CompiledProgram& p);

// A whole file in memory. A weights section's head is checked (the file must end where it says);
// its index and data are npubin_weights.hpp's to read.
CompiledProgram deserialize(std::string_view bytes, const std::string& file = "<memory>");

// Writes the program (no weights) atomically.
void save(const CompiledProgram& p, const std::string& path);

// The program of a file; a weights section (however large) is not read, only its head checked.
CompiledProgram load(const std::string& path);

// Whether the file carries its weights (reads only its header and the weights section's head).
bool has_embedded_weights(const std::string& path);

}  // namespace npusim::inline NPUSIM_ABI::program

#ifndef NPUSIM_COMPILED_LIB
#include "npusim/program/impl/npubin_inl.hpp"
#endif
