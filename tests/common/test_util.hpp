// Helpers shared by npusim's tests: fixture paths, temporary directories, and error assertions
// that check the message, not only the type.
#pragma once

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "npusim/core/dtype.hpp"
#include "npusim/core/error.hpp"

#ifndef NPUSIM_TEST_DATA
#error "NPUSIM_TEST_DATA must point at tests/data"
#endif

namespace npusim::test {

// n values uniform in [-1, 1), each exactly representable in bf16 (so in f16 and f32 too).
inline std::vector<float> bf16_exact(std::size_t n, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> d(-1.0f, 1.0f);
  std::vector<float> v(n);
  for (auto& x : v) x = bf16_bits_to_f32(f32_to_bf16_bits(d(rng)));
  return v;
}

// Built by appending: GCC 13 warns (-Warray-bounds, a false positive) on the same concatenation
// of temporaries once inlined.
inline std::string data(const std::string& rel) {
  std::string path(NPUSIM_TEST_DATA);
  path += '/';
  path += rel;
  return path;
}

// A fresh directory under the system temp dir, removed at scope exit.
class TempDir {
 public:
  TempDir() {
    std::random_device rd;
    path_ = std::filesystem::temp_directory_path() / ("npusim-test-" + std::to_string(rd()) + std::to_string(rd()));
    std::filesystem::create_directories(path_);
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  std::string file(const std::string& name) const { return (path_ / name).string(); }
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

inline void write_text(const std::string& path, const std::string& text) {
  std::ofstream f(path, std::ios::binary);
  f << text;
}

inline std::string read_text(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(f), {});
}

}  // namespace npusim::test

// Expects `stmt` to throw npusim::Error whose message contains every listed fragment.
#define NPUSIM_EXPECT_ERROR(stmt, ...)                                                          \
  do {                                                                                          \
    try {                                                                                       \
      stmt;                                                                                     \
      ADD_FAILURE() << "expected npusim::Error from: " #stmt;                                  \
    } catch (const npusim::Error& e_) {                                                         \
      const std::string msg_ = e_.what();                                                       \
      for (const char* frag_ : {__VA_ARGS__})                                                   \
        EXPECT_NE(msg_.find(frag_), std::string::npos) << "message lacks '" << frag_ << "': " << msg_; \
    } catch (const std::exception& e_) {                                                        \
      ADD_FAILURE() << "expected npusim::Error, got std::exception: " << e_.what();             \
    }                                                                                           \
  } while (0)
