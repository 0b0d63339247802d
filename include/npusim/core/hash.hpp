// XXH64 (Yann Collet's xxHash, 64-bit, seed 0 by default): the checksum of .npubin weights
// sections. FNV-1a goes a byte at a time through a multiply chain (about 1 GB/s); XXH64 runs four
// independent 64-bit lanes (about 10 GB/s on one core), so checking gigabytes of weights costs a
// fraction of reading them. Little-endian reads, as the formats that use it are little endian.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "npusim/version.hpp"

namespace npusim::inline NPUSIM_ABI {

namespace hash_detail {
inline constexpr std::uint64_t p1 = 0x9E3779B185EBCA87ull, p2 = 0xC2B2AE3D27D4EB4Full, p3 = 0x165667B19E3779F9ull,
                               p4 = 0x85EBCA77C2B2AE63ull, p5 = 0x27D4EB2F165667C5ull;
inline std::uint64_t rotl(std::uint64_t x, int r) { return (x << r) | (x >> (64 - r)); }
inline std::uint64_t read64(const unsigned char* p) {
  std::uint64_t v;
  std::memcpy(&v, p, 8);
  return v;
}
inline std::uint32_t read32(const unsigned char* p) {
  std::uint32_t v;
  std::memcpy(&v, p, 4);
  return v;
}
inline std::uint64_t round(std::uint64_t acc, std::uint64_t in) { return rotl(acc + in * p2, 31) * p1; }
inline std::uint64_t merge(std::uint64_t h, std::uint64_t v) { return (h ^ round(0, v)) * p1 + p4; }
}  // namespace hash_detail

inline std::uint64_t xxh64(const void* data, std::size_t len, std::uint64_t seed = 0) {
  using namespace hash_detail;
  const auto* p = static_cast<const unsigned char*>(data);
  const unsigned char* const end = p + len;
  std::uint64_t h;
  if (len >= 32) {
    std::uint64_t v1 = seed + p1 + p2, v2 = seed + p2, v3 = seed, v4 = seed - p1;
    for (const unsigned char* limit = end - 32; p <= limit; p += 32) {
      v1 = round(v1, read64(p)), v2 = round(v2, read64(p + 8)), v3 = round(v3, read64(p + 16)), v4 = round(v4, read64(p + 24));
    }
    h = rotl(v1, 1) + rotl(v2, 7) + rotl(v3, 12) + rotl(v4, 18);
    h = merge(merge(merge(merge(h, v1), v2), v3), v4);
  } else {
    h = seed + p5;
  }
  h += static_cast<std::uint64_t>(len);
  for (; p + 8 <= end; p += 8) h = rotl(h ^ round(0, read64(p)), 27) * p1 + p4;
  if (p + 4 <= end) h = rotl(h ^ (static_cast<std::uint64_t>(read32(p)) * p1), 23) * p2 + p3, p += 4;
  for (; p < end; ++p) h = rotl(h ^ (*p * p5), 11) * p1;
  h ^= h >> 33, h *= p2, h ^= h >> 29, h *= p3, h ^= h >> 32;
  return h;
}

}  // namespace npusim::inline NPUSIM_ABI
