// Weights embedded in .npubin files: a program saved with its weights runs on its own and gives
// bit for bit what the original weights source gives; the section follows the documented layout
// (rebuilt here from docs/npubin.md alone); version 1 files still load; every kind of damage
// (truncation, flipped bytes, forged offsets, overlaps, wrong dtype or shape) is an npusim::Error
// naming the file and tensor.
#include <msgpack.hpp>

#include "../../common/compile_util.hpp"
#include "../../common/test_util.hpp"
#include "npusim/core/hash.hpp"
#include "npusim/core/quant.hpp"
#include "npusim/pipeline.hpp"
#include "npusim/program/inspect.hpp"

using namespace npusim;
using npusim::test::data;

namespace {

using RefPipeline = Pipeline<ReferenceTarget, F32>;

program::CompiledProgram compile_case(const runtime::ModelDir& c) {
  auto o = test::reference_options();
  o.verify = false;  // the e2e tests verify compilation; here only the weights matter
  return test::compile_reference(c.graph, o);
}

std::vector<Tensor> run_program(const program::CompiledProgram& p, const weights::WeightSource* w, const std::vector<Tensor>& in) {
  runtime::ProgramRunner r(p, w, runtime::factories_for<ReferenceTarget>());
  return r.run(in);
}

void expect_bit_identical(const std::vector<Tensor>& a, const std::vector<Tensor>& b) {
  ASSERT_EQ(a.size(), b.size());
  for (std::size_t i = 0; i < a.size(); ++i) {
    ASSERT_EQ(a[i].dtype(), b[i].dtype()) << "output " << i;
    ASSERT_EQ(a[i].shape(), b[i].shape()) << "output " << i;
    EXPECT_EQ(std::memcmp(a[i].raw(), b[i].raw(), a[i].nbytes()), 0) << "output " << i << " differs";
  }
}

// ---- the documented layout, written independently of the library --------------------------------

std::uint64_t le64(const std::string& s, std::uint64_t at) {
  std::uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = (v << 8) | static_cast<unsigned char>(s[at + static_cast<std::uint64_t>(i)]);
  return v;
}
std::string u64le(std::uint64_t v) {
  std::string s;
  for (int i = 0; i < 8; ++i) s.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
  return s;
}
std::uint64_t up64(std::uint64_t x) { return (x + 63) / 64 * 64; }

struct Entry {
  std::string key, dtype;
  Shape shape;
  std::uint64_t offset, nbytes;
  // A packed weight's descriptor (the sixth element): block format, logical shape and dtype.
  std::string format = {};
  Shape logical = {};
  std::string logical_dtype = {};
};
struct Section {
  std::string program;  // header, payload, checksum
  std::vector<Entry> tensors;
  std::vector<std::pair<std::string, std::string>> aliases;
  std::string data;
  std::uint64_t block = 0;
};

// Splits a file as docs/npubin.md describes it.
Section split(const std::string& f) {
  Section s;
  const std::uint64_t program_end = 20 + le64(f, 12) + 8, at = up64(program_end);
  s.program = f.substr(0, program_end);
  EXPECT_EQ(f.substr(at, 8), std::string("NPUWGT\r\n"));
  const std::uint64_t index_len = le64(f, at + 8), data_len = le64(f, at + 16);
  s.block = le64(f, at + 24);
  const std::uint64_t data_at = up64(at + 64 + index_len);
  msgpack::object_handle oh = msgpack::unpack(f.data() + at + 64, index_len);
  std::map<std::string, msgpack::object> m;
  oh.get().convert(m);
  EXPECT_EQ(m.at("format").as<std::string>(), "npubin-weights");
  for (const auto& t : m.at("tensors").as<std::vector<msgpack::object>>()) {
    auto v = t.as<std::vector<msgpack::object>>();
    s.tensors.push_back({v[0].as<std::string>(), v[1].as<std::string>(), v[2].as<Shape>(), v[3].as<std::uint64_t>(), v[4].as<std::uint64_t>()});
    if (v.size() == 6) {
      std::map<std::string, msgpack::object> d;
      v[5].convert(d);
      s.tensors.back().format = d.at("format").as<std::string>();
      s.tensors.back().logical = d.at("shape").as<Shape>();
      s.tensors.back().logical_dtype = d.at("dtype").as<std::string>();
    }
  }
  for (const auto& a : m.at("aliases").as<std::vector<std::vector<std::string>>>()) s.aliases.emplace_back(a.at(0), a.at(1));
  s.data = f.substr(data_at, data_len);
  return s;
}

std::string pack_index(const Section& s) {
  msgpack::sbuffer buf;
  msgpack::packer<msgpack::sbuffer> pk(buf);
  auto str = [&](const std::string& x) { pk.pack_str(static_cast<std::uint32_t>(x.size())), pk.pack_str_body(x.data(), static_cast<std::uint32_t>(x.size())); };
  pk.pack_map(3);
  str("format"), str("npubin-weights"), str("tensors");
  pk.pack_array(static_cast<std::uint32_t>(s.tensors.size()));
  for (const Entry& e : s.tensors) {
    pk.pack_array(e.format.empty() ? 5 : 6), str(e.key), str(e.dtype);
    pk.pack_array(static_cast<std::uint32_t>(e.shape.size()));
    for (auto d : e.shape) pk.pack_int64(d);
    pk.pack_uint64(e.offset), pk.pack_uint64(e.nbytes);
    if (!e.format.empty()) {
      pk.pack_map(3), str("format"), str(e.format), str("shape");
      pk.pack_array(static_cast<std::uint32_t>(e.logical.size()));
      for (auto d : e.logical) pk.pack_int64(d);
      str("dtype"), str(e.logical_dtype);
    }
  }
  str("aliases");
  pk.pack_array(static_cast<std::uint32_t>(s.aliases.size()));
  for (const auto& [k, v] : s.aliases) pk.pack_array(2), str(k), str(v);
  return std::string(buf.data(), buf.size());
}

// Lays a section out after its program, with every checksum the docs ask for.
std::string build(const Section& s) {
  std::string f = s.program;
  f.resize(up64(f.size()), '\0');
  const std::string index = pack_index(s);
  std::string table;
  for (std::uint64_t b = 0; b < s.data.size(); b += s.block) {
    const std::uint64_t n = std::min<std::uint64_t>(s.block, s.data.size() - b);
    table += u64le(xxh64(s.data.data() + b, n));
  }
  std::string head = "NPUWGT\r\n" + u64le(index.size()) + u64le(s.data.size()) + u64le(s.block) + u64le(xxh64(index.data(), index.size())) +
                     u64le(xxh64(table.data(), table.size())) + u64le(0);
  head += u64le(xxh64(head.data(), head.size()));
  f += head + index;
  f.resize(up64(f.size()), '\0');
  return f + s.data + table;
}

// A saved model: its case, program, and a file with its weights embedded.
struct Saved {
  runtime::ModelDir c;
  program::CompiledProgram p;
  test::TempDir dir;
  std::string file;
  program::EmbeddedWeightsInfo info;
};

std::unique_ptr<Saved> save_case(const std::string& rel, const std::string& weights = "auto", std::uint64_t block = std::uint64_t{1} << 20,
                                 const std::string& weight_format = {}) {
  auto s = std::make_unique<Saved>();
  s->c = runtime::ModelDir::open(data(rel), weights);
  auto co = test::reference_options();
  co.verify = false;
  co.weight_quant.format = weight_format;
  s->p = test::compile_reference(s->c.graph, co);
  s->file = s->dir.file("model.npubin");
  program::EmbedOptions o;
  o.block_bytes = block;
  s->info = program::save(s->p, s->file, s->c.weights.get(), o);
  return s;
}

// A copy of `bytes` at a fresh path in `dir`.
std::string put(const test::TempDir& dir, const std::string& bytes, const std::string& name = "forged.npubin") {
  test::write_text(dir.file(name), bytes);
  return dir.file(name);
}

}  // namespace

TEST(NpubinWeights, Xxh64MatchesTheReferenceVectors) {
  EXPECT_EQ(xxh64("", 0), 0xEF46DB3751D8E999ull);
  EXPECT_EQ(xxh64("abc", 3), 0x44BC2CF5AD770999ull);
  EXPECT_EQ(xxh64("Nobody inspects the spammish repetition", 39), 0xFBCEA83C8A378BF1ull);  // 4 lanes + 4-byte + 1-byte tails
}

TEST(NpubinWeights, ConvWithEmbeddedWeightsRunsBitExactly) {
  auto s = save_case("ops/conv2d_3x3_bias");
  ASSERT_TRUE(s->c.weights);
  EXPECT_TRUE(s->info.present);
  EXPECT_EQ(s->info.tensors, 2);  // weight and bias
  EXPECT_TRUE(program::has_embedded_weights(s->file));
  program::CompiledProgram q = program::load(s->file);
  EXPECT_EQ(program::serialize(q), program::serialize(s->p));
  auto w = program::embedded_weights(s->file, q);
  ASSERT_TRUE(w);
  const auto in = test::any_inputs(s->c);
  expect_bit_identical(run_program(q, w.get(), in), run_program(s->p, s->c.weights.get(), in));
  // The file alone: the original weights source is gone.
  std::vector<Tensor> again;
  {
    auto pipe = RefPipeline::load(s->file);
    ASSERT_NE(pipe.embedded_weights(), nullptr);
    again = pipe.run(in);
  }
  expect_bit_identical(again, run_program(s->p, s->c.weights.get(), in));
}

TEST(NpubinWeights, ResNet18SynthEmbeddedRunsBitExactlyWithRecipesReapplied) {
  auto s = save_case("models/resnet18");
  ASSERT_FALSE(s->p.recipes.empty());  // BatchNorms folded: the embedded values are the unfolded ones
  auto w = program::embedded_weights(s->file);
  ASSERT_TRUE(w);
  std::set<std::string> derived;
  for (const auto& r : s->p.recipes) derived.insert(r.outputs.begin(), r.outputs.end());
  for (const auto& e : w->entries()) {
    EXPECT_FALSE(derived.count(e.key)) << e.key << " is a recipe's output, embedded instead of its inputs";
    EXPECT_TRUE(s->c.weights->contains(e.key)) << e.key;
  }
  const auto in = test::any_inputs(s->c);
  auto pipe = RefPipeline::load(s->file);
  expect_bit_identical(pipe.run(in), run_program(s->p, s->c.weights.get(), in));
  EXPECT_GT(s->info.bytes, 40u << 20);  // 11.7M float32 parameters
}

TEST(NpubinWeights, TiedLmHeadIsStoredOnceAndAnLlmRunsBitExactly) {
  auto s = save_case("models/qwen2_tiny_prefill", "synth");
  auto w = program::embedded_weights(s->file);
  ASSERT_TRUE(w);
  std::set<std::string> canon;
  for (const auto& e : w->entries()) EXPECT_TRUE(canon.insert(s->c.weights->canonical(e.key)).second) << e.key << " stored twice";
  const auto in = test::any_inputs(s->c);
  expect_bit_identical(run_program(s->p, w.get(), in), run_program(s->p, s->c.weights.get(), in));
}

TEST(NpubinWeights, AliasedWeightsAreStoredOnceAndShareABuffer) {
  // A source that says up.weight is gate.weight (as a synth manifest's aliases do).
  class Aliased final : public weights::WeightSource {
   public:
    explicit Aliased(const weights::WeightSource& b) : b_(b) {}
    const std::string& path() const override { return b_.path(); }
    bool contains(const std::string& k) const override { return b_.contains(k); }
    std::pair<Shape, DType> meta(const std::string& k) const override { return b_.meta(canonical(k)); }
    Tensor load(const std::string& k) const override { return b_.load(canonical(k)); }
    std::string canonical(const std::string& k) const override { return k == "up.weight" ? "gate.weight" : k; }

   private:
    const weights::WeightSource& b_;
  };
  runtime::ModelDir c = runtime::ModelDir::open(data("ops/silu_gate_mlp"));
  program::CompiledProgram p = compile_case(c);
  Aliased src(*c.weights);
  test::TempDir d;
  const auto info = program::save(p, d.file("m.npubin"), &src);
  EXPECT_EQ(info.tensors, 2);
  EXPECT_EQ(info.aliases, 1);
  auto w = program::embedded_weights(d.file("m.npubin"), p);
  ASSERT_TRUE(w);
  ASSERT_EQ(w->aliases().size(), 1u);
  const auto& [alias, target] = *w->aliases().begin();
  EXPECT_EQ(src.canonical(alias), src.canonical(target));
  EXPECT_EQ(w->load(alias).raw(), w->load(target).raw());
  const auto in = test::any_inputs(c);
  expect_bit_identical(run_program(p, w.get(), in), run_program(p, &src, in));
}

TEST(NpubinWeights, EveryTensorIs64ByteAlignedAndZeroCopy) {
  bool odd_before_another = false;  // a tensor whose size is no multiple of 64 followed by another: padding needed
  for (const auto& [rel, src] : {std::pair{"models/resnet18", "auto"}, std::pair{"models/qwen2_tiny_prefill", "synth"}}) {
    SCOPED_TRACE(rel);
    auto s = save_case(rel, src, 4096);
    auto w = program::embedded_weights(s->file);
    ASSERT_TRUE(w);
    const auto* first = static_cast<const char*>(w->load(w->entries().front().key).raw());
    for (std::size_t i = 0; i < w->entries().size(); ++i) {
      const auto& e = w->entries()[i];
      Tensor t = w->load(e.key);
      EXPECT_EQ(reinterpret_cast<std::uintptr_t>(t.raw()) % 64, 0u) << e.key;
      EXPECT_EQ(t.raw(), w->load(e.key).raw()) << e.key << " copied";
      EXPECT_EQ(static_cast<const char*>(t.raw()) - first, static_cast<std::ptrdiff_t>(e.offset - w->entries().front().offset)) << e.key << " not in the map";
      EXPECT_EQ(e.offset % 64, 0u);
      odd_before_another = odd_before_another || (e.nbytes % 64 != 0 && i + 1 < w->entries().size());
    }
  }
  EXPECT_TRUE(odd_before_another);
}

TEST(NpubinWeights, LayoutIsTheDocumentedOneAndDeterministic) {
  auto s = save_case("ops/conv2d_3x3_bias", "auto", 4096);
  const std::string bytes = test::read_text(s->file);
  EXPECT_EQ(build(split(bytes)), bytes);
  // The same bytes from memory (the fuzzer's way in) serve the same values.
  auto file = program::embedded_weights(s->file);
  auto mem = program::NpubinWeights::from_bytes(bytes, "mem.npubin");
  ASSERT_TRUE(file && mem);
  ASSERT_EQ(mem->entries().size(), file->entries().size());
  for (const auto& e : file->entries())
    EXPECT_EQ(std::memcmp(mem->load(e.key).raw(), file->load(e.key).raw(), e.nbytes), 0) << e.key;
  EXPECT_EQ(bytes.substr(0, program::serialize(s->p).size()), program::serialize(s->p));
  program::EmbedOptions o;
  o.block_bytes = 4096;
  program::save(s->p, s->dir.file("again.npubin"), s->c.weights.get(), o);
  EXPECT_EQ(test::read_text(s->dir.file("again.npubin")), bytes);
  // Without a source: the program alone, no section.
  program::save(s->p, s->dir.file("bare.npubin"), nullptr);
  EXPECT_EQ(test::read_text(s->dir.file("bare.npubin")), program::serialize(s->p));
  EXPECT_FALSE(program::has_embedded_weights(s->dir.file("bare.npubin")));
  EXPECT_EQ(program::embedded_weights(s->dir.file("bare.npubin")), nullptr);
}

TEST(NpubinWeights, Version1FilesStillLoadAndOtherVersionsAreRefused) {
  runtime::ModelDir c = runtime::ModelDir::open(data("ops/conv2d_3x3_bias"));
  program::CompiledProgram p = compile_case(c);
  test::TempDir d;
  std::string v1 = program::serialize(p);
  v1[8] = 1;
  const std::string f1 = put(d, v1, "v1.npubin");
  EXPECT_EQ(program::serialize(program::load(f1)), program::serialize(p));
  EXPECT_EQ(program::serialize(program::deserialize(v1, "v1.npubin")), program::serialize(p));
  EXPECT_FALSE(program::has_embedded_weights(f1));
  EXPECT_EQ(program::embedded_weights(f1), nullptr);
  EXPECT_EQ(RefPipeline::load(f1).embedded_weights(), nullptr);
  // Version 1 has no weights section: anything after its program is damage.
  NPUSIM_EXPECT_ERROR(program::load(put(d, v1 + std::string(64, '\0'), "v1pad.npubin")), "v1pad.npubin", "truncated or padded");
  std::string v3 = v1;
  v3[8] = 3;
  NPUSIM_EXPECT_ERROR(program::load(put(d, v3, "v3.npubin")), "v3.npubin", "unsupported .npubin format version", "expected 1 or 2, found 3");
}

TEST(NpubinWeights, FlippedDataByteIsAChecksumErrorOnlyForTheTensorsItTouches) {
  auto s = save_case("models/resnet18", "auto", 4096);
  std::string bytes = test::read_text(s->file);
  Section sec = split(bytes);
  // The largest tensor spans many blocks; flip a byte in its last one.
  const Entry* big = &sec.tensors.front();
  for (const Entry& e : sec.tensors)
    if (e.nbytes > big->nbytes) big = &e;
  const std::uint64_t data_at = bytes.size() - sec.data.size() - 8 * ((sec.data.size() + 4095) / 4096);
  bytes[data_at + big->offset + big->nbytes - 10] ^= 0x01;
  const std::string f = put(s->dir, bytes);
  program::CompiledProgram q = program::load(f);  // the program is intact
  auto w = program::embedded_weights(f, q);      // blocks are checked as tensors load
  ASSERT_TRUE(w);
  const std::string named = "tensor '" + big->key + "'";
  NPUSIM_EXPECT_ERROR(w->load(big->key), "npusim parse error", "forged.npubin", named.c_str(), "checksum mismatch in data block");
  NPUSIM_EXPECT_ERROR(w->verify(), "forged.npubin", "checksum mismatch");
  EXPECT_NO_THROW(w->load(sec.tensors.front().key == big->key ? sec.tensors.back().key : sec.tensors.front().key));
  NPUSIM_EXPECT_ERROR(RefPipeline::load(f).run(test::any_inputs(s->c)), "forged.npubin", "checksum mismatch");
  // The intact file verifies.
  EXPECT_NO_THROW(program::embedded_weights(s->file)->verify());
}

TEST(NpubinWeights, DamagedHeadIndexOrTableIsAnError) {
  auto s = save_case("ops/conv2d_3x3_bias");
  const std::string bytes = test::read_text(s->file);
  const std::uint64_t head = up64(20 + le64(bytes, 12) + 8), index_len = le64(bytes, head + 8);
  auto flipped = [&](std::uint64_t at) {
    std::string b = bytes;
    b[at] ^= 0x40;
    return put(s->dir, b);
  };
  NPUSIM_EXPECT_ERROR(program::load(flipped(head + 17)), "forged.npubin", "head checksum mismatch");
  NPUSIM_EXPECT_ERROR(program::embedded_weights(flipped(head + 64 + index_len / 2)), "forged.npubin", "index checksum mismatch");
  NPUSIM_EXPECT_ERROR(program::embedded_weights(flipped(bytes.size() - 3)), "forged.npubin", "checksum table mismatch");
  NPUSIM_EXPECT_ERROR(program::load(flipped(head - 1)), "forged.npubin", "padding before the section is not zero");
  NPUSIM_EXPECT_ERROR(program::load(flipped(head + 2)), "forged.npubin", "bad magic");
}

TEST(NpubinWeights, TruncatedOrPaddedFilesAreErrors) {
  auto s = save_case("models/resnet18");
  const std::string bytes = test::read_text(s->file);
  const std::uint64_t program_end = 20 + le64(bytes, 12) + 8, head = up64(program_end);
  for (std::uint64_t keep : {bytes.size() - 1, bytes.size() - 8 * 3, bytes.size() / 2, head + 70, head + 30, program_end + 1}) {
    SCOPED_TRACE(keep);
    const std::string f = put(s->dir, bytes.substr(0, keep));
    NPUSIM_EXPECT_ERROR(program::load(f), "forged.npubin", "truncated");
    NPUSIM_EXPECT_ERROR(program::embedded_weights(f), "forged.npubin", "truncated");
    NPUSIM_EXPECT_ERROR(program::deserialize(bytes.substr(0, keep), "mem.npubin"), "mem.npubin", "truncated");
    NPUSIM_EXPECT_ERROR(program::NpubinWeights::from_bytes(bytes.substr(0, keep), "mem.npubin"), "mem.npubin", "truncated");
  }
  NPUSIM_EXPECT_ERROR(program::load(put(s->dir, bytes + "x")), "forged.npubin", "goes on past the section's end");
  // Cut right after the program: a valid file without weights.
  EXPECT_FALSE(program::has_embedded_weights(put(s->dir, bytes.substr(0, program_end))));
}

TEST(NpubinWeights, ForgedIndexRangesAreErrorsNamingTheTensor) {
  auto s = save_case("ops/conv2d_3x3_bias");
  const Section good = split(test::read_text(s->file));
  ASSERT_EQ(good.tensors.size(), 2u);
  EXPECT_NO_THROW(program::embedded_weights(put(s->dir, build(good))));
  auto open_forged = [&](auto&& edit) {
    Section x = good;
    edit(x);
    return program::embedded_weights(put(s->dir, build(x)), s->p);
  };
  const std::string k0 = "tensor '" + good.tensors[0].key + "'", k1 = "tensor '" + good.tensors[1].key + "'";
  NPUSIM_EXPECT_ERROR(open_forged([](Section& x) { x.tensors[1].offset += 8; }), "forged.npubin", k1.c_str(), "not 64-byte aligned");
  NPUSIM_EXPECT_ERROR(open_forged([](Section& x) { x.tensors[1].offset = x.data.size(); }), "forged.npubin", k1.c_str(), "lies outside the data");
  NPUSIM_EXPECT_ERROR(open_forged([](Section& x) { x.tensors[1].offset = std::uint64_t{1} << 62; }), "lies outside the data");
  NPUSIM_EXPECT_ERROR(open_forged([](Section& x) { x.tensors[1].offset = x.tensors[0].offset; }), "forged.npubin", "tensors overlap");
  NPUSIM_EXPECT_ERROR(open_forged([](Section& x) { x.tensors[0].nbytes += 4; }), "forged.npubin", k0.c_str(), "size does not match its dtype and shape");
  NPUSIM_EXPECT_ERROR(open_forged([](Section& x) { x.tensors[1].key = x.tensors[0].key; }), "forged.npubin", "tensor listed twice");
  NPUSIM_EXPECT_ERROR(open_forged([](Section& x) { x.tensors[0].dtype = "complex64"; }), "forged.npubin", "unknown dtype");
  NPUSIM_EXPECT_ERROR(open_forged([](Section& x) { x.aliases.emplace_back("a", "nothing"); }), "forged.npubin", "alias points at no stored tensor");
  NPUSIM_EXPECT_ERROR(open_forged([&](Section& x) { x.aliases.emplace_back(x.tensors[0].key, x.tensors[1].key); }), "forged.npubin", "alias names a stored tensor");
  NPUSIM_EXPECT_ERROR(open_forged([](Section& x) { x.tensors.pop_back(); }), "forged.npubin", k1.c_str(), "missing from the embedded weights");
}

TEST(NpubinWeights, DtypeOrShapeDisagreeingWithTheProgramIsAnError) {
  auto s = save_case("ops/conv2d_3x3_bias");
  const Section good = split(test::read_text(s->file));
  const Entry& w = good.tensors[0];
  ASSERT_EQ(w.dtype, "float32");
  ASSERT_GE(w.shape.size(), 2u);
  const std::string named = "tensor '" + w.key + "'", expected = "expected " + to_string(w.shape);
  Section x = good;
  x.tensors[0].dtype = "float16", x.tensors[0].nbytes /= 2;
  NPUSIM_EXPECT_ERROR(program::embedded_weights(put(s->dir, build(x)), s->p), "npusim dtype error", "forged.npubin", named.c_str(),
                      "dtype differs from the program's graph", "expected float32, found float16");
  Section y = good;
  y.tensors[0].shape = {numel(w.shape)};
  NPUSIM_EXPECT_ERROR(program::embedded_weights(put(s->dir, build(y)), s->p), "npusim shape error", "forged.npubin", named.c_str(),
                      "shape differs from the program's graph", expected.c_str());
}

TEST(NpubinWeights, BoolTensorsHoldOnlyZeroOrOne) {
  auto s = save_case("ops/conv2d_3x3_bias");
  Section x = split(test::read_text(s->file));
  const std::uint64_t at = x.data.size();
  x.tensors.push_back({"flags", "bool", {3}, at, 3});
  x.data += std::string("\x01\x00\x02", 3) + std::string(61, '\0');
  auto w = program::embedded_weights(put(s->dir, build(x)), s->p);
  NPUSIM_EXPECT_ERROR(w->load("flags"), "forged.npubin", "tensor 'flags'", "BOOL tensor holds a byte that is not 0 or 1", "found 2");
}

TEST(NpubinWeights, MissingSourceWeightIsAnErrorAndLeavesNoFile) {
  runtime::ModelDir resnet = runtime::ModelDir::open(data("models/resnet18"));
  runtime::ModelDir conv = runtime::ModelDir::open(data("ops/conv2d_3x3_bias"));
  program::CompiledProgram p = compile_case(resnet);
  test::TempDir d;
  NPUSIM_EXPECT_ERROR(program::save(p, d.file("p.npubin"), conv.weights.get()), "npusim weights error", "weight missing from the weights source");
  EXPECT_TRUE(std::filesystem::is_empty(d.path()));
  std::filesystem::create_directory(d.file("dir.npubin"));
  NPUSIM_EXPECT_ERROR(program::save(p, d.file("dir.npubin"), resnet.weights.get()), "npusim io error", "the output path is a directory");
  std::vector<std::string> left;
  for (auto& e : std::filesystem::directory_iterator(d.path())) left.push_back(e.path().filename().string());
  EXPECT_EQ(left, std::vector<std::string>{"dir.npubin"});
}

TEST(NpubinWeights, InspectShowsEmbeddedWeights) {
  auto s = save_case("ops/conv2d_3x3_bias");
  program::InspectOptions o;
  o.embedded = program::embedded_info(s->file);
  EXPECT_NE(program::inspect_text(s->p, o).find("weights embedded: 2 tensors"), std::string::npos) << program::inspect_text(s->p, o);
  const ir::json j = ir::json::parse(program::inspect_json(s->p, o.embedded));
  EXPECT_EQ(j.at("embedded_weights").at("tensors"), 2);
  EXPECT_EQ(j.at("embedded_weights").at("bytes"), s->info.bytes);
  program::save(s->p, s->dir.file("bare.npubin"));
  o.embedded = program::embedded_info(s->dir.file("bare.npubin"));
  EXPECT_NE(program::inspect_text(s->p, o).find("weights not embedded (run with --weights)"), std::string::npos);
}

// q8_0/q4_0 linears (docs/quantization.md): each weight only such linears read is stored as its
// rows of blocks, the program runs on them without quantizing again (bit-exactly what it computes
// from the float weights), and a block whose scale is not finite is refused when loaded.
TEST(NpubinWeights, PackedLinearWeightsRunBitExactlyWithoutRequantizing) {
  for (std::string fmt : {"q8_0", "q4_0"}) {
    SCOPED_TRACE(fmt);
    auto s = save_case("models/qwen2_tiny_decode", "auto", std::uint64_t{1} << 20, fmt);
    auto w = program::embedded_weights(s->file);
    ASSERT_TRUE(w);
    int packed = 0;
    for (const auto& e : w->entries())
      if (!e.format.empty()) {
        ++packed;
        EXPECT_EQ(e.format, fmt);
        EXPECT_EQ(e.dtype, DType::u8);
        EXPECT_EQ(e.shape, (Shape{e.logical_shape[0], static_cast<std::int64_t>(quant::row_bytes(*quant::parse_block_format(fmt), e.logical_shape[1]))}));
        EXPECT_EQ(w->meta(e.key).first, e.logical_shape);
      }
    // 15 quantized linears; the lm_head shares its weight with the embedding, which reads floats.
    EXPECT_EQ(packed, 14);
    ASSERT_EQ(w->info().notes.size(), 1u);
    EXPECT_NE(w->info().notes[0].find("stored as " + fmt + " blocks: 14"), std::string::npos);
    const auto in = test::any_inputs(s->c);
    expect_bit_identical(run_program(s->p, w.get(), in), run_program(s->p, s->c.weights.get(), in));
  }
}

TEST(NpubinWeights, PackedWeightWithABadScaleOrDescriptorIsRefused) {
  auto s = save_case("models/qwen2_tiny_decode", "auto", std::uint64_t{1} << 20, "q4_0");
  const Section good = split(test::read_text(s->file));
  const auto it = std::find_if(good.tensors.begin(), good.tensors.end(), [](const Entry& e) { return !e.format.empty(); });
  ASSERT_NE(it, good.tensors.end());
  const std::size_t i = static_cast<std::size_t>(it - good.tensors.begin());
  const std::string named = "tensor '" + it->key + "'";
  // A scale of +Inf in row 1, block 2, with every checksum right (a hand-made file).
  Section x = good;
  const std::uint64_t at = it->offset + static_cast<std::uint64_t>(it->shape[1]) + 2 * 18;
  x.data[at] = '\x00', x.data[at + 1] = '\x7c';
  auto w = program::embedded_weights(put(s->dir, build(x)), s->p);
  NPUSIM_EXPECT_ERROR(w->load(it->key), "npusim weights error", "forged.npubin", named.c_str(), "scale is not finite", "row 1, block 2");
  NPUSIM_EXPECT_ERROR(run_program(s->p, w.get(), test::any_inputs(s->c)), "forged.npubin", "scale is not finite");
  // Descriptors that do not describe the rows.
  Section y = good;
  y.tensors[i].format = "q5_1";
  NPUSIM_EXPECT_ERROR(program::embedded_weights(put(s->dir, build(y))), "forged.npubin", named.c_str(), "unknown block format");
  Section z = good;
  z.tensors[i].logical[1] += 32;
  NPUSIM_EXPECT_ERROR(program::embedded_weights(put(s->dir, build(z))), "forged.npubin", named.c_str(), "rows do not hold its tensor's blocks");
  Section v = good;
  v.tensors[i].format = "q8_0";
  NPUSIM_EXPECT_ERROR(program::embedded_weights(put(s->dir, build(v))), "forged.npubin", named.c_str(), "rows do not hold its tensor's blocks");
}
