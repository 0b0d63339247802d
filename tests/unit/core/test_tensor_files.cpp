// .npy reading and writing (against files NumPy wrote and hand-built hostile headers), the
// tensor-file loader for graph inputs (.npy, .safetensors, raw), the NAME=FILE parser, and
// save_outputs.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <numeric>
#include <sys/stat.h>
#include <unistd.h>

#include "../../common/test_util.hpp"
#include "npusim/core/file.hpp"
#include "npusim/core/npy.hpp"
#include "npusim/program/npubin.hpp"
#include "npusim/runtime/tensor_files.hpp"

using namespace npusim;
using namespace npusim::runtime;
using npusim::test::data;
using npusim::test::TempDir;

namespace {

// A tensor of `dtype` with distinct, exactly representable values (0/1 for bool).
Tensor sample(DType dtype, const Shape& shape) {
  Tensor f = Tensor::empty(DType::f32, shape);
  for (std::int64_t i = 0; i < f.numel(); ++i) f.data<float>()[i] = dtype == DType::boolean ? static_cast<float>(i % 2) : dtype == DType::u8 ? static_cast<float>(i % 50) : static_cast<float>(i % 50) - 20.0f;
  return f.to(dtype);
}

bool same_bytes(const Tensor& a, const Tensor& b) {
  return a.dtype() == b.dtype() && a.shape() == b.shape() && std::memcmp(a.raw(), b.raw(), a.nbytes()) == 0;
}

// A .npy file from parts: version, header text (padded here unless `pad` is false), data bytes.
std::string npy(int major, std::string header, std::string_view payload, bool pad = true) {
  const std::size_t prefix = major == 1 ? 10 : 12;
  if (pad) {
    header.append((64 - (prefix + header.size() + 1) % 64) % 64, ' ');
    header.push_back('\n');
  }
  std::string out = "\x93NUMPY";
  out.push_back(static_cast<char>(major));
  out.push_back('\0');
  for (std::size_t i = 0; i < (major == 1 ? 2u : 4u); ++i) out.push_back(static_cast<char>((header.size() >> (8 * i)) & 0xff));
  return out + header + std::string(payload);
}

std::string floats(std::initializer_list<float> v) {
  std::string s(v.size() * 4, '\0');
  std::memcpy(s.data(), std::data(v), s.size());
  return s;
}

}  // namespace

TEST(Npy, RoundTripsEveryDtypeNumpyHas) {
  TempDir dir;
  for (DType d : all_dtypes) {
    if (d == DType::bf16) continue;
    for (const Shape& shape : {Shape{}, Shape{5}, Shape{2, 3, 4}, Shape{0, 3}}) {
      SCOPED_TRACE(std::string(dtype_name(d)) + " " + to_string(shape));
      Tensor t = sample(d, shape);
      const std::string path = dir.file("t.npy");
      write_npy(path, t);
      const std::string bytes = test::read_text(path);
      const std::size_t header_len = static_cast<unsigned char>(bytes[8]) | static_cast<std::size_t>(static_cast<unsigned char>(bytes[9])) << 8;
      EXPECT_EQ((10 + header_len) % 64, 0u);  // data 64-byte aligned, as np.save writes it
      EXPECT_EQ(bytes[9 + header_len], '\n');
      EXPECT_TRUE(same_bytes(read_npy(path), t));
    }
  }
}

TEST(Npy, WritesTheHeaderNumpyWrites) {
  // Byte for byte what np.save(np.arange(6, dtype=np.float32).reshape(2, 3) / 4) wrote.
  Tensor t = read_npy(data("npy/f4_2x3.npy"));
  EXPECT_EQ(npy_bytes(t), test::read_text(data("npy/f4_2x3.npy")));
  for (const char* f : {"i8_ids", "b1_mask", "f2_scalar", "u1_empty"}) {
    SCOPED_TRACE(f);
    EXPECT_EQ(npy_bytes(read_npy(data(std::string("npy/") + f + ".npy"))), test::read_text(data(std::string("npy/") + f + ".npy")));
  }
}

TEST(Npy, ReadsFilesNumpyWrote) {
  Tensor a = read_npy(data("npy/f4_2x3.npy"));
  EXPECT_EQ(a.shape(), (Shape{2, 3}));
  EXPECT_EQ(a.data<float>()[5], 1.25f);
  Tensor ids = read_npy(data("npy/i8_ids.npy"));
  EXPECT_EQ(ids.dtype(), DType::i64);
  EXPECT_EQ(ids.data<std::int64_t>()[0], 151643);
  EXPECT_EQ(ids.data<std::int64_t>()[3], -1);
  Tensor m = read_npy(data("npy/b1_mask.npy"));
  EXPECT_EQ(m.dtype(), DType::boolean);
  EXPECT_FALSE(m.data<bool>()[1]);
  Tensor s = read_npy(data("npy/f2_scalar.npy"));
  EXPECT_EQ(s.shape(), Shape{});
  EXPECT_EQ(static_cast<float>(s.data<half_t>()[0]), 1.5f);
  EXPECT_EQ(read_npy(data("npy/u1_empty.npy")).shape(), (Shape{0, 3}));
  Tensor v2 = read_npy(data("npy/f8_v2.npy"));  // format 2.0: 4-byte header length
  EXPECT_EQ(v2.data<double>()[0], 0.1);
  EXPECT_EQ(v2.data<double>()[1], -2.5);
}

TEST(Npy, RejectsWhatNumpyWroteButNpusimCannotTake) {
  NPUSIM_EXPECT_ERROR(read_npy(data("npy/f4_fortran.npy")), "Fortran", "f4_fortran.npy");
  NPUSIM_EXPECT_ERROR(read_npy(data("npy/f4_bigendian.npy")), "big-endian", "'>f4'");
  NPUSIM_EXPECT_ERROR(read_npy(data("npy/void_v2.npy")), "bfloat16", "'|V2'");
}

TEST(Npy, ReadsHandBuiltVersion2And3Headers) {
  const std::string payload = floats({1.0f, 2.0f});
  for (int major : {1, 2, 3}) {
    Tensor t = parse_npy(npy(major, "{'descr': '<f4', 'fortran_order': False, 'shape': (2,), }", payload));
    EXPECT_EQ(t.data<float>()[1], 2.0f) << major;
  }
  // Key order, double quotes, no trailing comma, Python 2 longs: all still the same literal.
  Tensor t = parse_npy(npy(1, "{\"shape\": (1L, 2L), \"fortran_order\": False, \"descr\": \"<f4\"}", payload));
  EXPECT_EQ(t.shape(), (Shape{1, 2}));
}

TEST(Npy, HostileHeadersAreErrorsNotCrashes) {
  const std::string two = floats({1.0f, 2.0f});
  auto hdr = [](const std::string& descr, const std::string& fortran, const std::string& shape) {
    return "{'descr': '" + descr + "', 'fortran_order': " + fortran + ", 'shape': " + shape + ", }";
  };
  NPUSIM_EXPECT_ERROR(parse_npy("PK\x03\x04 not numpy"), "not a .npy file");
  NPUSIM_EXPECT_ERROR(parse_npy("\x93NUM"), "not a .npy file");
  NPUSIM_EXPECT_ERROR(parse_npy(npy(4, hdr("<f4", "False", "(2,)"), two)), "format version", "4.0");
  NPUSIM_EXPECT_ERROR(parse_npy(npy(1, hdr("<f4", "True", "(2,)"), two)), "Fortran");
  NPUSIM_EXPECT_ERROR(parse_npy(npy(1, hdr(">f8", "False", "(2,)"), two)), "big-endian");
  NPUSIM_EXPECT_ERROR(parse_npy(npy(1, hdr("<f4", "False", "(3,)"), two)), "truncated", "12 data bytes", "found 8 data bytes");
  NPUSIM_EXPECT_ERROR(parse_npy(npy(1, hdr("<f4", "False", "(1,)"), two)), "bytes after the data");
  NPUSIM_EXPECT_ERROR(parse_npy(npy(1, hdr("<f4", "False", "(4611686018427387904, 4)"), two)), "overflows int64");
  NPUSIM_EXPECT_ERROR(parse_npy(npy(1, hdr("<f4", "False", "(99999999999999999999,)"), two)), "overflows int64");
  // Within int64 but far beyond the file: rejected before any allocation.
  NPUSIM_EXPECT_ERROR(parse_npy(npy(1, hdr("<f8", "False", "(1000000000000, 1000000)"), two)), "truncated");
  NPUSIM_EXPECT_ERROR(parse_npy(npy(1, hdr("<f4", "False", "(-2,)"), two)), "non-negative integers");
  NPUSIM_EXPECT_ERROR(parse_npy(npy(1, hdr("<u2", "False", "(4,)"), two)), "unsigned");
  NPUSIM_EXPECT_ERROR(parse_npy(npy(1, hdr("|O", "False", "(1,)"), two)), "Python objects");
  NPUSIM_EXPECT_ERROR(parse_npy(npy(1, hdr("<c8", "False", "(1,)"), two)), "unsupported .npy dtype");
  NPUSIM_EXPECT_ERROR(parse_npy(npy(1, "{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': (2,), }", two)), "structured");
  NPUSIM_EXPECT_ERROR(parse_npy(npy(1, "{'descr': '<f4', 'shape': (2,), }", two)), "lacks a key", "no 'fortran_order'");
  NPUSIM_EXPECT_ERROR(parse_npy(npy(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (2,), 'x': 1}", two)), "unexpected key 'x'");
  NPUSIM_EXPECT_ERROR(parse_npy(npy(1, "{'descr': '<f4', 'descr': '<f4', 'fortran_order': False, 'shape': (2,)}", two)), "appears twice");
  NPUSIM_EXPECT_ERROR(parse_npy(npy(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (2,)} junk", two)), "after the header dict");
  NPUSIM_EXPECT_ERROR(parse_npy(npy(1, "{'descr': '<f4, 'fortran_order': False", two)), ".npy header");
  NPUSIM_EXPECT_ERROR(parse_npy(npy(1, hdr("|b1", "False", "(2,)"), std::string("\x01\x02", 2))), "not 0 or 1");
  // A header length pointing past the end of the file, and a file cut inside the length field.
  std::string cut = npy(1, hdr("<f4", "False", "(2,)"), two).substr(0, 40);
  NPUSIM_EXPECT_ERROR(parse_npy(cut), "past the end of the file");
  NPUSIM_EXPECT_ERROR(parse_npy(std::string("\x93NUMPY\x02\x00\x10", 9)), "inside the header length");
  std::string huge = npy(2, hdr("<f4", "False", "(2,)"), two);
  huge[10] = '\x7f';  // header length 0x7f0000xx
  NPUSIM_EXPECT_ERROR(parse_npy(huge), "header length is implausible");
  // Every prefix of a valid file is an error, never a crash.
  const std::string good = npy(1, hdr("<f4", "False", "(2,)"), two);
  for (std::size_t n = 0; n < good.size(); ++n) EXPECT_THROW(parse_npy(good.substr(0, n)), Error) << n;
}

TEST(Npy, Bfloat16HasNoNpyForm) {
  NPUSIM_EXPECT_ERROR(npy_bytes(sample(DType::bf16, {2})), "bfloat16", "float32");
}

TEST(TensorArg, ParsesNameEqualsFile) {
  TensorArg a = parse_tensor_arg("input_ids=ids.npy");
  EXPECT_EQ(a.name, "input_ids");
  EXPECT_EQ(a.path, "ids.npy");
  a = parse_tensor_arg("dir/x.npy");
  EXPECT_EQ(a.name, "");
  EXPECT_EQ(a.path, "dir/x.npy");
  a = parse_tensor_arg("x=a=b.npy");  // split at the first '='
  EXPECT_EQ(a.name, "x");
  EXPECT_EQ(a.path, "a=b.npy");
  a = parse_tensor_arg("x=raw:f64:d.bin");
  EXPECT_EQ(a.path, "raw:f64:d.bin");
  NPUSIM_EXPECT_ERROR(parse_tensor_arg("=a.npy"), "--input '=a.npy'", "nothing before '='");
  NPUSIM_EXPECT_ERROR(parse_tensor_arg("x=", "--output"), "--output 'x='", "no file");
  NPUSIM_EXPECT_ERROR(parse_tensor_arg(""), "empty argument");
}

TEST(TensorArg, AssignsArgumentsToGraphInputs) {
  auto one = assign_input_args({{"", "a.npy"}}, {"x"});
  EXPECT_EQ(one[0].name, "x");
  auto two = assign_input_args({{"mask", "m.npy"}, {"ids", "i.npy"}}, {"ids", "mask"});
  EXPECT_EQ(two[1].name, "ids");
  NPUSIM_EXPECT_ERROR(assign_input_args({{"", "a.npy"}}, {"ids", "mask"}), "'a.npy'", "2 inputs", "one of ids, mask");
  NPUSIM_EXPECT_ERROR(assign_input_args({{"idz", "a.npy"}}, {"ids", "mask"}), "'idz=a.npy'", "no input named 'idz'", "one of ids, mask");
  NPUSIM_EXPECT_ERROR(assign_input_args({{"ids", "a.npy"}, {"ids", "b.npy"}}, {"ids", "mask"}), "'ids' is given twice", "a.npy and b.npy");
}

TEST(TensorFiles, LoadsNpyConvertingOnlyWithinAFamily) {
  TempDir dir;
  Tensor f64 = Tensor::from_values<double>({2, 2}, std::vector<double>{0.1, 1.5, -2.0, 1e-3});
  write_npy(dir.file("d.npy"), f64);
  Tensor got = load_tensor_file(dir.file("d.npy"), {"x", DType::f32, {2, 2}});
  EXPECT_EQ(got.dtype(), DType::f32);
  EXPECT_EQ(got.data<float>()[0], 0.1f);
  EXPECT_EQ(load_tensor_file(dir.file("d.npy"), {"x", DType::bf16, {2, 2}}).dtype(), DType::bf16);

  Tensor i32 = Tensor::from_values<std::int32_t>({1, 3}, std::vector<std::int32_t>{5, 151643, 0});
  write_npy(dir.file("i.npy"), i32);
  Tensor ids = load_tensor_file(dir.file("i.npy"), {"input_ids", DType::i64, {1, 3}});
  EXPECT_EQ(ids.dtype(), DType::i64);
  EXPECT_EQ(ids.data<std::int64_t>()[1], 151643);
  NPUSIM_EXPECT_ERROR(load_tensor_file(dir.file("i.npy"), {"x", DType::f32, {1, 3}}), "integer values", "'x' is floating-point",
                      "expected float32, found int32");
  NPUSIM_EXPECT_ERROR(load_tensor_file(dir.file("d.npy"), {"input_ids", DType::i64, {2, 2}}), "floating-point values", "expected int64, found float64");
  NPUSIM_EXPECT_ERROR(load_tensor_file(dir.file("i.npy"), {"x", DType::i16, {1, 3}}), "flat index 1", "does not fit", "found 151643");
  NPUSIM_EXPECT_ERROR(load_tensor_file(dir.file("d.npy"), {"x", DType::f32, {1, 3, 224, 224}}), "wrong shape", "expected [1, 3, 224, 224], found [2, 2]",
                      "d.npy");
  NPUSIM_EXPECT_ERROR(load_tensor_file(dir.file("none.npy"), {"x", DType::f32, {2, 2}}), "cannot open", "none.npy");
}

TEST(TensorFiles, LoadsSafetensorsByNameOrTheOnlyTensor) {
  TempDir dir;
  Tensor a = sample(DType::f32, {2, 3}), b = sample(DType::i64, {4});
  weights::write_safetensors(dir.file("two.safetensors"), {{"a", a}, {"b", b}});
  weights::write_safetensors(dir.file("one.safetensors"), {{"whatever", a}});
  EXPECT_TRUE(same_bytes(load_tensor_file(dir.file("two.safetensors"), {"b", DType::i64, {4}}), b));
  EXPECT_TRUE(same_bytes(load_tensor_file(dir.file("one.safetensors"), {"x", DType::f32, {2, 3}}), a));
  NPUSIM_EXPECT_ERROR(load_tensor_file(dir.file("two.safetensors"), {"x", DType::f32, {2, 3}}), "2 tensors and none is named 'x'", "found a, b");
  NPUSIM_EXPECT_ERROR(load_tensor_file(dir.file("two.safetensors"), {"a", DType::f32, {3, 2}}), "expected [3, 2], found [2, 3]");
}

TEST(TensorFiles, LoadsRawBytesWithTheGraphsShape) {
  TempDir dir;
  const std::vector<float> v{1, 2, 3, 4, 5, 6};
  test::write_text(dir.file("x.bin"), std::string(reinterpret_cast<const char*>(v.data()), v.size() * 4));
  Tensor t = load_tensor_file("raw:" + dir.file("x.bin"), {"x", DType::f32, {1, 2, 3}});
  EXPECT_EQ(t.shape(), (Shape{1, 2, 3}));
  EXPECT_EQ(t.data<float>()[5], 6.0f);
  NPUSIM_EXPECT_ERROR(load_tensor_file("raw:" + dir.file("x.bin"), {"x", DType::f32, {1, 3, 3}}), "size does not match", "expected 36 bytes, found 24 bytes");
  // raw:f64:PATH stores float64 and converts, like a .npy would.
  const std::vector<double> d{0.5, -1.25, 3.0};
  test::write_text(dir.file("d.bin"), std::string(reinterpret_cast<const char*>(d.data()), d.size() * 8));
  Tensor c = load_tensor_file("raw:f64:" + dir.file("d.bin"), {"x", DType::f32, {3}});
  EXPECT_EQ(c.data<float>()[1], -1.25f);
  NPUSIM_EXPECT_ERROR(load_tensor_file("raw:f64:" + dir.file("d.bin"), {"ids", DType::i64, {3}}), "floating-point values");
  NPUSIM_EXPECT_ERROR(load_tensor_file("raw:", {"x", DType::f32, {3}}), "names no file");
  // Another extension: read as .npy when the bytes say so, else refused.
  write_npy(dir.file("x.dat"), Tensor::from_values<float>({2}, std::vector<float>{7, 8}));
  EXPECT_EQ(load_tensor_file(dir.file("x.dat"), {"x", DType::f32, {2}}).data<float>()[1], 8.0f);
  NPUSIM_EXPECT_ERROR(load_tensor_file(dir.file("x.bin"), {"x", DType::f32, {6}}), "cannot tell the file's format", "raw:PATH");
}

TEST(TensorFiles, SavesOutputsAsSafetensorsOrOneNpy) {
  TempDir dir;
  Tensor logits = sample(DType::f32, {1, 10}), hidden = sample(DType::bf16, {1, 4});
  const std::vector<std::pair<std::string, Tensor>> outs{{"logits", logits}, {"hidden", hidden}};
  EXPECT_TRUE(save_outputs(dir.file("o.safetensors"), outs).empty());
  auto f = weights::SafetensorsFile::open(dir.file("o.safetensors"));
  EXPECT_TRUE(same_bytes(f.tensor("logits"), logits));
  EXPECT_TRUE(same_bytes(f.tensor("hidden"), hidden));  // bf16 stays bf16 in safetensors

  NPUSIM_EXPECT_ERROR(save_outputs(dir.file("o.npy"), outs), "holds one tensor", "2 outputs", ".safetensors", "NAME=FILE.npy", "logits, hidden");
  EXPECT_FALSE(std::filesystem::exists(dir.file("o.npy")));
  EXPECT_TRUE(save_outputs("logits=" + dir.file("l.npy"), outs).empty());
  EXPECT_TRUE(same_bytes(read_npy(dir.file("l.npy")), logits));
  auto notes = save_outputs("hidden=" + dir.file("h.npy"), outs);
  ASSERT_EQ(notes.size(), 1u);
  EXPECT_NE(notes[0].find("written as float32"), std::string::npos);
  EXPECT_TRUE(same_bytes(read_npy(dir.file("h.npy")), hidden.to(DType::f32)));
  EXPECT_TRUE(save_outputs(dir.file("only.npy"), {{"y", logits}}).empty());
  EXPECT_TRUE(same_bytes(read_npy(dir.file("only.npy")), logits));
  save_outputs("hidden=" + dir.file("h.safetensors"), outs);
  EXPECT_EQ(weights::SafetensorsFile::open(dir.file("h.safetensors")).entries().size(), 1u);
  NPUSIM_EXPECT_ERROR(save_outputs("nope=" + dir.file("n.npy"), outs), "no output named 'nope'", "one of logits, hidden");
  NPUSIM_EXPECT_ERROR(save_outputs(dir.file("o.txt"), outs), "unknown file type");
}

// Issue 39, class 2: every input is opened without blocking and must be a regular file. A FIFO
// (which would block open(2) until a writer came), a pipe, a character device and a directory are
// refused by name, through read_file, map_file and the .npubin reader alike, before any read.
TEST(InputFiles, SpecialFilesAreRefusedByNameNeverWaitedOn) {
  TempDir dir;
  const std::string fifo = dir.file("in.fifo");
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  NPUSIM_EXPECT_ERROR(read_file(fifo), "not a regular file", "a FIFO or pipe", "in.fifo");
  NPUSIM_EXPECT_ERROR(map_file(fifo), "not a regular file", "a FIFO or pipe");
  NPUSIM_EXPECT_ERROR(program::load(fifo), "not a regular file", "a FIFO or pipe");
  NPUSIM_EXPECT_ERROR(load_tensor_file(fifo, ExpectedTensor{"x", DType::f32, {2}}), "not a regular file");
  NPUSIM_EXPECT_ERROR(read_file("/dev/null"), "not a regular file", "a character device");
  NPUSIM_EXPECT_ERROR(read_file(dir.path().string()), "is a directory, expected a file");
  int fds[2];
  ASSERT_EQ(::pipe(fds), 0);
  NPUSIM_EXPECT_ERROR(read_file("/dev/fd/" + std::to_string(fds[0])), "not a regular file", "a FIFO or pipe");
  ::close(fds[0]), ::close(fds[1]);
  // A regular file still reads whole.
  write_file_atomic(dir.file("x.txt"), "hello");
  EXPECT_EQ(read_file(dir.file("x.txt")), "hello");
  EXPECT_EQ(map_file(dir.file("x.txt")).size, 5u);
}
