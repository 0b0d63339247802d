// Makes the files the command-line tests of users' own models read, from the bundled fixtures:
//   OUT/hf_qwen2_tiny/   the tiny Qwen2 as a Hugging Face model directory: config.json, two
//                        safetensors shards under HF's names (no `model.` wrapper prefix, no
//                        lm_head: tied to embed_tokens, no rotary inv_freq: from rope_theta) and
//                        model.safetensors.index.json; tokenizer.json and tokenizer_config.json
//                        of tests/data/text_gen
//   OUT/resnet18_bare/   ResNet-18 as a user's export without reference values: ir.json and
//                        synth.json only
//   OUT/image.png        a 96 x 80 RGB picture (a colour gradient with a disc)
//   OUT/images/          the same picture in every variant --image takes, and hostile image files
//                        made from it (tests/cli/probe_reliability3.sh)
//   OUT/relu_nan.npy     expected outputs of ops/relu that are all NaN (a check that must fail)
//   OUT/huge_ir.json     a relu over a [2^62, 1] float32 tensor: 2^64 bytes (compile must refuse it)
//   OUT/unknown_ops.json a chain with two op types npusim has no definition for (one on two nodes)
//   OUT/tiny_decode_*/   copies of qwen2_tiny_decode whose kv_mapping.json is broken one way each
//   OUT/hf_*/            variants of hf_qwen2_tiny (issue 39): float32 shards (the IR is bf16),
//                        an int32 norm weight, an infinite norm weight (NaN logits), rotary
//                        figures out of range, a wrong-shaped embedding, a directory as config.json
//   OUT/npu_*.json       the ideal NPU description with one absurd figure each
//   usage: make_test_files DATA_DIR OUT_DIR
#include <cmath>
#include <cstdio>
#include <cstring>
#include <functional>
#include <string_view>
#include <tuple>
#include <filesystem>

#include "../common/image_files.hpp"
#include "npusim/core/file.hpp"
#include "npusim/core/npy.hpp"
#include "npusim/ir/json.hpp"
#include "npusim/weights/safetensors.hpp"

namespace fs = std::filesystem;
using namespace npusim;

namespace {

// Valid variants (ok_*) and hostile files (bad_*) for the image probe.
void write_image_variants(const fs::path& dir, int W, int H, const std::vector<unsigned char>& px) {
  fs::create_directories(dir);
  auto put = [&](const char* name, const std::string& bytes) { write_file_atomic((dir / name).string(), bytes); };
  const std::string png = test::png_rgb(W, H, px), bmp = test::bmp_bytes(W, H, 24, px);
  const std::string raw(px.begin(), px.end());
  std::string grey16, palette_idx, rgba;
  for (std::size_t i = 0; i < px.size(); i += 3) {
    grey16 += static_cast<char>(px[i + 1]), grey16 += static_cast<char>(px[i]);
    palette_idx += static_cast<char>(px[i] / 64);
    rgba += raw.substr(i, 3), rgba += '\x80';
  }
  std::string plte;
  for (int i = 0; i < 4; ++i) plte += static_cast<char>(i * 64), plte += static_cast<char>(255 - i * 64), plte += '\x40';
  put("ok_rgb.png", png);
  put("ok_grey16.png", test::png_bytes(static_cast<std::uint32_t>(W), static_cast<std::uint32_t>(H), 16, 0, grey16));
  put("ok_palette.png", test::png_bytes(static_cast<std::uint32_t>(W), static_cast<std::uint32_t>(H), 8, 3, palette_idx, test::png_chunk("PLTE", plte)));
  put("ok_rgba.png", test::png_bytes(static_cast<std::uint32_t>(W), static_cast<std::uint32_t>(H), 8, 6, rgba));
  put("ok_bottom_up.bmp", bmp);
  put("ok_top_down32.bmp", test::bmp_bytes(W, H, 32, px, true));
  // Not decoded: named. The 16-bit PGM header that crashed stb (issue 39), at two sizes.
  put("bad_pgm16_4000.pgm", "P5 4000 4000 65535\n");
  put("bad_pgm16_64.pgm", "P5 64 64 65535\n");
  put("bad_ppm_truncated.ppm", "P6\n96 80\n255\n" + raw.substr(0, 100));
  put("bad_gif_truncated.gif", std::string("GIF89a\x60\x00\x50\x00\xf0\x00\x00", 13));
  put("bad_webp.webp", std::string("RIFF\x1a\x00\x00\x00WEBPVP8 \x0e\x00\x00\x00", 20));
  put("bad_tiff.tif", std::string("II*\x00\x08\x00\x00\x00", 8));
  put("bad_tga_truncated.tga", std::string("\x00\x00\x02\x00\x00\x00\x00\x00\x00\x00\x00\x00\x60\x00\x50\x00\x18\x00", 18) + raw.substr(0, 64));
  put("bad_empty.png", "");
  // Broken PNGs: cut anywhere, a CRC that does not match, a size past the pixel budget, no pixels.
  put("bad_png_half.png", png.substr(0, png.size() / 2));
  put("bad_png_no_iend.png", png.substr(0, png.size() - 12));
  put("bad_png_header_only.png", png.substr(0, 33));
  std::string crc = png;
  crc[29] = static_cast<char>(crc[29] ^ 1);  // IHDR's CRC
  put("bad_png_ihdr_crc.png", crc);
  std::string idat_crc = png;
  idat_crc[idat_crc.size() - 13] = static_cast<char>(idat_crc[idat_crc.size() - 13] ^ 1);  // IDAT's CRC
  put("bad_png_idat_crc.png", idat_crc);
  put("bad_png_huge.png", test::png_bytes(100000, 100000, 8, 2, raw.substr(0, 300)));
  put("bad_png_zero.png", test::png_bytes(0, 80, 8, 2, ""));
  // Broken BMPs.
  put("bad_bmp_truncated.bmp", bmp.substr(0, bmp.size() - 1));
  std::string rle = bmp;
  rle[30] = 1;  // BI_RLE8
  put("bad_bmp_rle.bmp", rle);
  std::string huge = bmp;
  huge[18] = huge[19] = huge[20] = '\x7f';
  put("bad_bmp_huge.bmp", huge);
#if NPUSIM_WITH_IMAGE_CODECS
  put("ok_baseline.jpg", test::jpeg_bytes(W, H, px));
  put("ok_progressive.jpg", test::jpeg_bytes(W, H, px, {.progressive = true}));
  put("ok_arithmetic.jpg", test::jpeg_bytes(W, H, px, {.arithmetic = true}));
  std::vector<std::uint8_t> g(px.size() / 3), cmyk(px.size() / 3 * 4);
  for (std::size_t i = 0; i < g.size(); ++i) g[i] = px[i * 3 + 1], cmyk[i * 4] = px[i * 3], cmyk[i * 4 + 3] = 20;
  put("ok_grey.jpg", test::jpeg_bytes(W, H, g, {.components = 1, .in = JCS_GRAYSCALE}));
  put("ok_cmyk.jpg", test::jpeg_bytes(W, H, cmyk, {.components = 4, .in = JCS_CMYK}));
  const std::string jpg = test::jpeg_bytes(W, H, px);
  put("bad_jpg_half.jpg", jpg.substr(0, jpg.size() / 2));
  put("bad_jpg_no_eoi.jpg", jpg.substr(0, jpg.size() - 2));
  const std::size_t sof = jpg.find("\xff\xc0");
  std::string p12 = jpg, zero = jpg, big = jpg;
  p12[sof + 4] = 12;
  put("bad_jpg_12bit.jpg", p12);
  zero[sof + 5] = zero[sof + 6] = 0;
  put("bad_jpg_zero_height.jpg", zero);
  big[sof + 5] = big[sof + 7] = '\xff';
  put("bad_jpg_huge.jpg", big);
  std::vector<std::uint8_t> two(px.size() / 3 * 2, 77);
  put("bad_jpg_2_components.jpg", test::jpeg_bytes(W, H, two, {.components = 2, .in = JCS_UNKNOWN}));
#endif
}

}  // namespace

int main(int argc, char** argv) try {
  if (argc != 3) return std::fprintf(stderr, "usage: make_test_files DATA_DIR OUT_DIR\n"), 2;
  const fs::path data = argv[1], out = argv[2];
  fs::create_directories(out);

  // The Hugging Face directory.
  const fs::path prefill = data / "models/qwen2_tiny_prefill", hf = out / "hf_qwen2_tiny";
  fs::remove_all(hf);
  fs::create_directories(hf);
  auto w = weights::SafetensorsFile::open((prefill / "weights.safetensors").string());
  std::vector<std::pair<std::string, Tensor>> shards[2];
  ir::json index = {{"metadata", {{"total_size", 0}}}, {"weight_map", ir::json::object()}};
  std::uint64_t total = 0;
  std::size_t i = 0;
  for (const auto& e : w.entries()) {
    if (e.name.find("rotary_emb") != std::string::npos) continue;
    std::string name = e.name.starts_with("model.") ? e.name.substr(6) : e.name;
    const int s = i++ % 2;
    shards[s].emplace_back(name, w.tensor(e));
    index["weight_map"][name] = s == 0 ? "model-00001-of-00002.safetensors" : "model-00002-of-00002.safetensors";
    total += e.end - e.begin;
  }
  index["metadata"]["total_size"] = total;
  weights::write_safetensors((hf / "model-00001-of-00002.safetensors").string(), shards[0], {{"format", "pt"}});
  weights::write_safetensors((hf / "model-00002-of-00002.safetensors").string(), shards[1], {{"format", "pt"}});
  write_file_atomic((hf / "model.safetensors.index.json").string(), index.dump(2));
  ir::json meta = ir::parse_json(read_file((prefill / "meta.json").string()), "meta.json");
  ir::json config = meta.at("config");
  config["architectures"] = {"Qwen2ForCausalLM"};
  config["model_type"] = "qwen2";
  config["eos_token_id"] = {2, 0};  // the text_gen tokenizer's <|im_end|>, <|endoftext|>
  write_file_atomic((hf / "config.json").string(), config.dump(2));
  // Its tokenizer (no generation_config.json: the stop ids come from config.json).
  for (const char* f : {"tokenizer.json", "tokenizer_config.json"}) fs::copy_file(data / "text_gen" / f, hf / f);

  // A user's export of ResNet-18: the IR and its weights, no io.safetensors.
  const fs::path bare = out / "resnet18_bare";
  fs::remove_all(bare);
  fs::create_directories(bare);
  for (const char* f : {"ir.json", "synth.json"}) fs::copy_file(data / "models/resnet18" / f, bare / f);

  // The picture.
  const int W = 96, H = 80;
  std::vector<unsigned char> px(static_cast<std::size_t>(W * H * 3));
  for (int y = 0; y < H; ++y)
    for (int x = 0; x < W; ++x) {
      unsigned char* p = &px[static_cast<std::size_t>((y * W + x) * 3)];
      const bool disc = std::hypot(x - 50.0, y - 38.0) < 22.0;
      p[0] = static_cast<unsigned char>(disc ? 230 : x * 255 / (W - 1));
      p[1] = static_cast<unsigned char>(disc ? 40 : y * 255 / (H - 1));
      p[2] = static_cast<unsigned char>(disc ? 60 : 128);
    }
  write_file_atomic((out / "image.png").string(), test::png_rgb(W, H, px));
  write_image_variants(out / "images", W, H, px);
  // Hostile files (docs/robustness.md, issue 26).
  Tensor nan = Tensor::empty(DType::f32, {3, 70});
  for (std::int64_t i = 0; i < nan.numel(); ++i) nan.data<float>()[i] = NAN;
  write_npy((out / "relu_nan.npy").string(), nan);
  const std::string huge = R"({"name": "T", "shape": [4611686018427387904, 1], "dtype": "float32"})";
  auto t = [&](const char* name) { return std::string(huge).replace(huge.find('T'), 1, name); };
  write_file_atomic((out / "huge_ir.json").string(), R"({"graph_inputs": [)" + t("x") + R"(], "graph_outputs": [)" + t("relu") +
                                                         R"(], "weights": [], "nodes": [{"name": "relu", "op_type": "aten.relu.default", "inputs": [)" +
                                                         t("x") + R"(], "outputs": [)" + t("relu") + "]}]}");
  // Two op types npusim has no definition for, one of them on two nodes (issue 27: one error lists them all).
  const std::string small = R"({"name": "T", "shape": [3, 70], "dtype": "float32"})";
  auto s = [&](const std::string& name) { return std::string(small).replace(small.find('T'), 1, name); };
  auto node = [&](const std::string& name, const std::string& op, const std::string& in) {
    return R"({"name": ")" + name + R"(", "op_type": ")" + op + R"(", "inputs": [)" + s(in) + R"(], "outputs": [)" + s(name) + "]}";
  };
  write_file_atomic((out / "unknown_ops.json").string(), R"({"graph_inputs": [)" + s("x") + R"(], "graph_outputs": [)" + s("d") +
                                                             R"(], "weights": [], "nodes": [)" + node("a", "aten.frob.default", "x") + ", " +
                                                             node("b", "aten.relu.default", "a") + ", " + node("c", "aten.frob.default", "b") + ", " +
                                                             node("d", "aten.twiddle.default", "c") + "]}");
  const std::string mapping = read_file((data / "models/qwen2_tiny_decode/kv_mapping.json").string());
  for (auto [name, from, to] : {std::tuple{"cache_1e12", "\"max_cache_len\": 64", "\"max_cache_len\": 1000000000000"},
                                std::tuple{"prefill_0", "\"prefill_seq_len\": 16", "\"prefill_seq_len\": 0"},
                                std::tuple{"num_layers_3", "\"num_layers\": 2", "\"num_layers\": 3"},
                                std::tuple{"layer_twice", "\"kv_2\"", "\"kv_0\""}}) {
    const fs::path d = out / (std::string("tiny_decode_") + name);
    fs::remove_all(d);
    fs::create_directories(d);
    for (const char* f : {"ir.json", "meta.json"})
      if (fs::exists(data / "models/qwen2_tiny_decode" / f)) fs::copy_file(data / "models/qwen2_tiny_decode" / f, d / f);
    std::string m = mapping;
    m.replace(m.find(from), std::string_view(from).size(), to);
    write_file_atomic((d / "kv_mapping.json").string(), m);
  }
  // Issue 39: hostile variants of the Hugging Face directory, one change each.
  auto variant = [&](const std::string& name, const std::function<Tensor(const std::string&, Tensor)>& edit, const std::function<void(ir::json&)>& cfg) {
    const fs::path v = out / ("hf_" + name);
    fs::remove_all(v);
    fs::create_directories(v);
    for (const auto& e : fs::directory_iterator(hf))
      if (e.path().extension() != ".safetensors") fs::copy_file(e.path(), v / e.path().filename());
    for (const char* shard : {"model-00001-of-00002.safetensors", "model-00002-of-00002.safetensors"}) {
      auto f = weights::SafetensorsFile::open((hf / shard).string());
      std::vector<std::pair<std::string, Tensor>> ts;
      for (const auto& e : f.entries()) ts.emplace_back(e.name, edit ? edit(e.name, f.tensor(e)) : f.tensor(e));
      weights::write_safetensors((v / shard).string(), ts, {{"format", "pt"}});
    }
    if (cfg) {
      ir::json c = ir::parse_json(read_file((v / "config.json").string()), "config.json");
      cfg(c);
      write_file_atomic((v / "config.json").string(), c.dump(2));
    }
  };
  variant("f32", [](const std::string&, Tensor t) { return t.to(DType::f32); }, {});
  variant("int_norm", [](const std::string& n, Tensor t) { return n == "model.norm.weight" ? t.to(DType::i32) : t; }, {});
  variant("inf_norm", [](const std::string& n, Tensor t) {
    if (n != "model.norm.weight") return t;
    Tensor f = t.to(DType::f32);
    for (auto& x : f.span<float>()) x = INFINITY;
    return f.to(t.dtype());
  }, {});
  variant("short_embedding", [](const std::string& n, Tensor t) {
    if (n != "model.embed_tokens.weight") return t;
    Tensor f = Tensor::empty(t.dtype(), {t.shape()[0] - 1, t.shape()[1]});
    std::memcpy(f.raw(), t.raw(), f.nbytes());
    return f;
  }, {});
  auto rope = [](ir::json p) { return [p](ir::json& c) { c.erase("rope_theta"), c.erase("rope_scaling"), c["rope_parameters"] = p; }; };
  variant("rope_theta_1e-45", {}, rope({{"rope_type", "default"}, {"rope_theta", 1e-45}}));
  variant("rope_theta_1e308", {}, rope({{"rope_type", "default"}, {"rope_theta", 1e308}}));
  variant("rope_linear_1e300", {}, rope({{"rope_type", "linear"}, {"rope_theta", 1e6}, {"factor", 1e300}}));
  variant("rope_llama3_zero_length", {}, rope({{"rope_type", "llama3"}, {"rope_theta", 1e6}, {"factor", 8}, {"low_freq_factor", 1},
                                               {"high_freq_factor", 4}, {"original_max_position_embeddings", 0}}));
  variant("head_dim_16_5", {}, [](ir::json& c) { c["head_dim"] = 16.5; });
  {
    const fs::path v = out / "hf_config_is_dir";
    fs::remove_all(v);
    fs::create_directories(v / "config.json");
    for (const char* shard : {"model-00001-of-00002.safetensors", "model-00002-of-00002.safetensors", "model.safetensors.index.json"})
      fs::copy_file(hf / shard, v / shard);
  }
  // The ideal NPU description with one absurd (finite) figure each.
  const std::string ideal = read_file((data / "../../data/npu/ideal.json").string());
  for (auto [name, from, to] : {std::tuple{"clock_1e30", "\"clock_mhz\": 1000", "\"clock_mhz\": 1e30"},
                                std::tuple{"bandwidth_1e-300", "\"bandwidth_gb_per_s\": 256", "\"bandwidth_gb_per_s\": 1e-300"},
                                std::tuple{"latency_1e300", "\"latency_ns\": 0", "\"latency_ns\": 1e300"}}) {
    std::string t = ideal;
    if (t.find(from) == std::string::npos) return std::fprintf(stderr, "ideal.json lacks %s\n", from), 1;
    t.replace(t.find(from), std::string_view(from).size(), to);
    write_file_atomic((out / (std::string("npu_") + name + ".json")).string(), t);
  }
  std::printf("wrote %s\n", out.c_str());
  return 0;
} catch (const std::exception& e) {
  std::fprintf(stderr, "%s\n", e.what());
  return 1;
}
