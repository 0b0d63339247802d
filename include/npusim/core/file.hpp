// Small file helpers: whole-file reads with a size cap, and atomic writes (temp file + rename) so
// that a failure never leaves a partial output behind.
#pragma once

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <string_view>
#include <system_error>
#include <unistd.h>

#include "npusim/core/error.hpp"

namespace npusim::inline NPUSIM_ABI {

inline std::string read_file(const std::string& path, std::uint64_t max_bytes = std::uint64_t{1} << 32) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec))
    throw Error(ErrorCode::io, "is a directory, expected a file", {.file = path});
  std::ifstream f(path, std::ios::binary);
  if (!f) throw Error(ErrorCode::io, std::string("cannot open: ") + std::strerror(errno), {.file = path});
  f.seekg(0, std::ios::end);
  auto size = static_cast<std::uint64_t>(f.tellg());
  if (size > max_bytes)
    throw Error(ErrorCode::resource, "file too large", {.file = path, .expected = "<= " + std::to_string(max_bytes) + " bytes",
                                                         .found = std::to_string(size) + " bytes"});
  f.seekg(0);
  std::string s(static_cast<std::size_t>(size), '\0');
  if (size && !f.read(s.data(), static_cast<std::streamsize>(size)))
    throw Error(ErrorCode::io, "read failed", {.file = path});
  return s;
}

// Writes `bytes` to `path` through `path.tmp.<pid>` + rename: readers see the old file or the
// complete new one, never a prefix.
inline void write_file_atomic(const std::string& path, std::string_view bytes) {
  std::string tmp = path + ".tmp." + std::to_string(::getpid());
  {
    std::ofstream f(tmp, std::ios::binary | std::ios::trunc);
    if (!f) throw Error(ErrorCode::io, std::string("cannot create: ") + std::strerror(errno), {.file = tmp});
    f.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    f.flush();
    if (!f) {
      std::error_code ec;
      std::filesystem::remove(tmp, ec);
      throw Error(ErrorCode::io, "write failed", {.file = tmp});
    }
  }
  std::error_code ec;
  std::filesystem::rename(tmp, path, ec);
  if (ec) {
    std::filesystem::remove(tmp, ec);
    throw Error(ErrorCode::io, "cannot rename temporary file into place: " + ec.message(), {.file = path});
  }
}

}  // namespace npusim::inline NPUSIM_ABI
