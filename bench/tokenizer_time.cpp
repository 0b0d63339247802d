// Times npusim::text::Tokenizer encoding a text file (median of 11 runs after the first), without
// Google Benchmark (the GPU machine has no usable one), next to bench/tokenizer_peer.py there:
//   g++ -std=c++20 -O2 -march=native -Iinclude bench/tokenizer_time.cpp -o /tmp/tokenizer_time
//   /tmp/tokenizer_time TOKENIZER.json TEXT
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <vector>
#include "npusim/text/tokenizer.hpp"
int main(int argc, char** argv) {
  std::ifstream f(argv[2], std::ios::binary);
  std::stringstream ss; ss << f.rdbuf();
  const std::string text = ss.str();
  auto tok = npusim::text::Tokenizer::from_file(argv[1]);
  std::vector<double> ms; std::size_t n = 0;
  for (int i = 0; i < 12; ++i) {
    auto t0 = std::chrono::steady_clock::now();
    n = tok.encode(text).size();
    ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
  }
  std::sort(ms.begin() + 1, ms.end());
  std::printf("npusim: %zu bytes, %zu tokens; first %.1f ms, median of the rest %.1f ms = %.2f MB/s\n", text.size(), n, ms[0], ms[6], text.size() / ms[6] / 1e3);
}
