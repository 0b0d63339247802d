// Where things lie in a .npubin file (npubin.hpp describes the format): the header and weights
// section constants and the Layout a reader derives from a file's header and weights-section head.
// Shared by the program reader/writer and the weights section.
#pragma once

#include <cstdint>

#include "npusim/program/program.hpp"

namespace npusim::inline NPUSIM_ABI::program {

namespace npubin_detail {

inline constexpr std::uint64_t header_bytes = sizeof npubin_magic + 4 + 8;
inline constexpr std::uint64_t align = 64;  // weights section and every tensor in it
inline constexpr std::uint64_t head_bytes = 64;
inline constexpr char weights_magic[8] = {'N', 'P', 'U', 'W', 'G', 'T', '\r', '\n'};
inline constexpr std::uint64_t min_block_bytes = 4096, max_block_bytes = std::uint64_t{1} << 30;

// Where everything lies in a file, from its header and (version 2) its weights section's head.
struct Layout {
  std::uint32_t version = 0;
  std::uint64_t payload_bytes = 0;  // at header_bytes
  std::uint64_t program_end = 0;    // after the payload checksum
  bool has_weights = false;
  // Weights section (absolute file offsets): head at `section`; msgpack index; 64-aligned data;
  // one XXH64 per block of the data; end of file.
  std::uint64_t section = 0, index = 0, index_bytes = 0, data = 0, data_bytes = 0, block_bytes = 0, blocks = 0, table = 0, end = 0;
  std::uint64_t index_hash = 0, table_hash = 0;
};

}  // namespace npubin_detail

}  // namespace npusim::inline NPUSIM_ABI::program
