// NumPy .npy files: read (format 1.0, 2.0 and 3.0 headers) and write (1.0, or 2.0 when the header
// needs it), so users can hand tensors to npusim and take results back without Python glue.
// Only what maps onto a DType without reinterpretation is accepted: little-endian (or one-byte)
// f2/f4/f8, i1/i2/i4/i8, u1 and b1, C order. Everything else (big-endian, Fortran order, object,
// structured or void types, uint16+) is an error that says what to do in NumPy instead. The header
// is parsed as the restricted Python literal NumPy writes, and every field is checked against the
// file's size before anything is allocated: a hostile file gives an npusim::Error, never a crash.
#pragma once

#include <bit>
#include <cstdint>
#include <cstring>
#include <limits>
#include <optional>
#include <string>
#include <string_view>

#include "npusim/core/file.hpp"
#include "npusim/core/tensor.hpp"

namespace npusim::inline NPUSIM_ABI {

static_assert(std::endian::native == std::endian::little, "NPUSIM: .npy support assumes a little-endian host");

namespace npy_detail {

inline constexpr std::string_view magic = "\x93NUMPY";
// NumPy itself refuses headers over 10,000 bytes unless told otherwise; we allow more, not unbounded.
inline constexpr std::size_t max_header_bytes = 1u << 16;

// '<f4' etc. for the dtypes .npy can hold; nullopt for bfloat16 (NumPy has no such type).
inline std::optional<std::string_view> descr(DType t) {
  switch (t) {
    case DType::f32: return "<f4";
    case DType::f16: return "<f2";
    case DType::f64: return "<f8";
    case DType::i64: return "<i8";
    case DType::i32: return "<i4";
    case DType::i16: return "<i2";
    case DType::i8: return "|i1";
    case DType::u8: return "|u1";
    case DType::boolean: return "|b1";
    case DType::bf16: return std::nullopt;
  }
  return std::nullopt;
}

// The header dict, parsed from exactly the literal syntax np.save writes (plus Python 2's 'L'
// suffix on shape integers, which NumPy still reads).
class HeaderParser {
 public:
  HeaderParser(std::string_view text, std::uint64_t base, const std::string& file) : s_(text), base_(base), file_(file) {}

  struct Fields {
    std::string descr;
    bool fortran_order = false;
    Shape shape;
  };

  Fields parse() {
    Fields f;
    bool seen_descr = false, seen_fortran = false, seen_shape = false;
    skip_ws();
    expect('{');
    while (true) {
      skip_ws();
      if (peek() == '}') break;
      const std::size_t key_at = i_;
      std::string key = string_literal();
      skip_ws();
      expect(':');
      skip_ws();
      auto once = [&](bool& seen) {
        if (seen) fail("key '" + key + "' appears twice", key_at);
        seen = true;
      };
      if (key == "descr") {
        once(seen_descr);
        if (peek() == '[') fail("structured dtypes (a list as 'descr') are not supported", i_, "a plain dtype such as '<f4'");
        f.descr = string_literal();
      } else if (key == "fortran_order") {
        once(seen_fortran);
        f.fortran_order = boolean();
      } else if (key == "shape") {
        once(seen_shape);
        f.shape = tuple();
      } else {
        fail("unexpected key '" + key + "' in the header", key_at, "only 'descr', 'fortran_order' and 'shape'");
      }
      skip_ws();
      if (peek() == ',') {
        ++i_;
        continue;
      }
      if (peek() != '}') fail("expected ',' or '}' in the header dict", i_);
    }
    ++i_;
    skip_ws();
    if (i_ != s_.size()) fail("unexpected text after the header dict", i_);
    if (!seen_descr || !seen_fortran || !seen_shape)
      fail("header lacks a key", 0, "'descr', 'fortran_order' and 'shape'",
           std::string(seen_descr ? "" : "no 'descr' ") + (seen_fortran ? "" : "no 'fortran_order' ") + (seen_shape ? "" : "no 'shape'"));
    return f;
  }

 private:
  [[noreturn]] void fail(const std::string& msg, std::size_t at, std::string expected = {}, std::string found = {}) const {
    throw Error(ErrorCode::parse, ".npy header: " + msg, {.file = file_, .offset = base_ + at, .expected = std::move(expected), .found = std::move(found)});
  }
  char peek() const { return i_ < s_.size() ? s_[i_] : '\0'; }
  void skip_ws() {
    while (i_ < s_.size() && (s_[i_] == ' ' || s_[i_] == '\n' || s_[i_] == '\t' || s_[i_] == '\r')) ++i_;
  }
  void expect(char c) {
    if (peek() != c) fail(std::string("expected '") + c + "'", i_, std::string(1, c), i_ < s_.size() ? std::string(1, s_[i_]) : "end of header");
    ++i_;
  }
  std::string string_literal() {
    const char q = peek();
    if (q != '\'' && q != '"') fail("expected a quoted string", i_);
    const std::size_t start = ++i_;
    while (i_ < s_.size() && s_[i_] != q) {
      if (s_[i_] == '\\') fail("escapes in header strings are not supported", i_);
      ++i_;
    }
    if (i_ >= s_.size()) fail("unterminated string", start - 1);
    return std::string(s_.substr(start, i_++ - start));
  }
  bool boolean() {
    if (s_.substr(i_, 4) == "True") return i_ += 4, true;
    if (s_.substr(i_, 5) == "False") return i_ += 5, false;
    fail("'fortran_order' must be True or False", i_);
  }
  Shape tuple() {
    Shape shape;
    expect('(');
    skip_ws();
    while (peek() != ')') {
      const std::size_t at = i_;
      if (peek() < '0' || peek() > '9') fail("shape entries must be non-negative integers", at);
      std::int64_t v = 0;
      while (peek() >= '0' && peek() <= '9') {
        const int d = peek() - '0';
        if (v > (std::numeric_limits<std::int64_t>::max() - d) / 10)
          throw Error(ErrorCode::resource, ".npy header: shape entry overflows int64", {.file = file_, .offset = base_ + at});
        v = v * 10 + d;
        ++i_;
      }
      if (peek() == 'L') ++i_;
      shape.push_back(v);
      skip_ws();
      if (peek() == ',') {
        ++i_;
        skip_ws();
      } else if (peek() != ')') {
        fail("expected ',' or ')' in the shape tuple", i_);
      }
    }
    ++i_;
    return shape;
  }

  std::string_view s_;
  std::uint64_t base_;
  const std::string& file_;
  std::size_t i_ = 0;
};

// Maps a descr to a DType, or throws with advice for the NumPy side.
inline DType dtype_from_descr(const std::string& d, const std::string& file, std::uint64_t at) {
  auto err = [&](ErrorCode c, std::string msg) {
    return Error(c, std::move(msg), {.file = file, .offset = at, .expected = "one of <f4 <f2 <f8 <i8 <i4 <i2 |i1 |u1 |b1", .found = "'" + d + "'"});
  };
  if (d.size() < 2) throw err(ErrorCode::parse, ".npy dtype string is malformed");
  const char order = d[0];
  const std::string_view code = std::string_view(d).substr(1);
  if (order != '<' && order != '>' && order != '|' && order != '=')
    throw err(ErrorCode::parse, ".npy dtype string has no byte-order mark");
  static constexpr std::pair<std::string_view, DType> table[] = {
      {"f4", DType::f32}, {"f2", DType::f16}, {"f8", DType::f64}, {"i8", DType::i64}, {"i4", DType::i32},
      {"i2", DType::i16}, {"i1", DType::i8},  {"u1", DType::u8},  {"b1", DType::boolean}};
  for (auto [c, t] : table) {
    if (code != c) continue;
    if (dtype_size(t) > 1 && order == '>')
      throw err(ErrorCode::unsupported, ".npy array is big-endian; save it little-endian (arr.astype(arr.dtype.newbyteorder('<')))");
    if (dtype_size(t) > 1 && order == '|') throw err(ErrorCode::parse, ".npy dtype string marks a multi-byte type as byte-order-free");
    return t;
  }
  if (code.starts_with('V'))
    throw err(ErrorCode::unsupported, ".npy array has an opaque void type (this is how ml_dtypes' bfloat16 is saved); NumPy cannot describe bfloat16: save float32");
  if (code.starts_with('O')) throw err(ErrorCode::unsupported, ".npy array holds Python objects (pickles), which npusim never loads");
  if (code.starts_with('u')) throw err(ErrorCode::unsupported, ".npy array is an unsigned type wider than 8 bits, which npusim has no dtype for; convert it (astype(np.int64))");
  throw err(ErrorCode::unsupported, "unsupported .npy dtype");
}

}  // namespace npy_detail

// Parses .npy bytes; `name` stands for the file in messages. The data is copied into a fresh,
// aligned tensor (the bytes can be released afterwards).
inline Tensor parse_npy(std::string_view bytes, const std::string& name = "<memory>") {
  auto fail = [&](std::string msg, std::uint64_t at, std::string expected = {}, std::string found = {}) {
    return Error(ErrorCode::parse, std::move(msg), {.file = name, .offset = at, .expected = std::move(expected), .found = std::move(found)});
  };
  if (bytes.size() < 6 || bytes.substr(0, 6) != npy_detail::magic)
    throw fail("not a .npy file (no \\x93NUMPY magic)", 0, "\\x93NUMPY", bytes.size() < 6 ? "a " + std::to_string(bytes.size()) + "-byte file" : "other bytes");
  if (bytes.size() < 8) throw fail("file ends inside the format version", 6, ">= 8 bytes", std::to_string(bytes.size()) + " bytes");
  const int major = static_cast<unsigned char>(bytes[6]), minor = static_cast<unsigned char>(bytes[7]);
  if (major < 1 || major > 3 || minor != 0)
    throw Error(ErrorCode::unsupported, "unsupported .npy format version", {.file = name, .offset = 6, .expected = "1.0, 2.0 or 3.0",
                                                                            .found = std::to_string(major) + "." + std::to_string(minor)});
  const std::uint64_t len_bytes = major == 1 ? 2 : 4, header_at = 8 + len_bytes;
  if (bytes.size() < header_at) throw fail("file ends inside the header length", 8, std::to_string(header_at) + " bytes", std::to_string(bytes.size()) + " bytes");
  std::uint64_t header_len = 0;
  for (std::uint64_t i = len_bytes; i-- > 0;) header_len = (header_len << 8) | static_cast<unsigned char>(bytes[8 + i]);
  if (header_len > npy_detail::max_header_bytes)
    throw Error(ErrorCode::resource, ".npy header length is implausible", {.file = name, .offset = 8, .expected = "<= " + std::to_string(npy_detail::max_header_bytes),
                                                                            .found = std::to_string(header_len)});
  if (header_len > bytes.size() - header_at)
    throw fail("header length points past the end of the file (truncated file?)", 8, "<= " + std::to_string(bytes.size() - header_at), std::to_string(header_len));
  const auto fields = npy_detail::HeaderParser(bytes.substr(header_at, header_len), header_at, name).parse();
  const DType dtype = npy_detail::dtype_from_descr(fields.descr, name, header_at);
  if (fields.fortran_order)
    throw Error(ErrorCode::unsupported, ".npy array is in Fortran (column-major) order; save a C-order copy (np.ascontiguousarray(arr))",
                {.file = name, .offset = header_at, .expected = "'fortran_order': False", .found = "True"});
  const std::uint64_t data_at = header_at + header_len, data_size = bytes.size() - data_at;
  const std::int64_t n = checked_numel(fields.shape);
  const auto elem = static_cast<std::uint64_t>(dtype_size(dtype));
  // Compared as a count first: n * elem could overflow where no file can be that large.
  const auto count = static_cast<std::uint64_t>(n);
  const std::string what = "shape " + to_string(fields.shape) + " of " + std::string(dtype_name(dtype));
  if (count > data_size / elem)
    throw fail("data is shorter than " + what + " needs (truncated file?)", data_at,
               count <= std::numeric_limits<std::uint64_t>::max() / elem ? std::to_string(count * elem) + " data bytes" : "more than 2^64 data bytes",
               std::to_string(data_size) + " data bytes");
  if (count * elem != data_size)
    throw fail("file has bytes after the data of " + what, data_at + count * elem, std::to_string(count * elem) + " data bytes",
               std::to_string(data_size) + " data bytes");
  Tensor t = Tensor::empty(dtype, fields.shape);
  if (t.nbytes()) std::memcpy(t.raw(), bytes.data() + data_at, t.nbytes());
  if (dtype == DType::boolean) {
    const auto* b = static_cast<const std::uint8_t*>(t.raw());
    for (std::size_t i = 0; i < t.nbytes(); ++i)
      if (b[i] > 1) throw fail("bool array holds a byte that is not 0 or 1", data_at + i, "0 or 1", std::to_string(b[i]));
  }
  return t;
}

inline Tensor read_npy(const std::string& path) {
  try {
    return parse_npy(read_file(path), path);
  } catch (Error& e) {
    throw e.with_file(path);
  }
}

// The .npy bytes of `t` (format 1.0 unless the header needs 2.0; header padded so data starts on a
// 64-byte boundary, as np.save does). bfloat16 has no .npy form: convert to float32 first.
inline std::string npy_bytes(const Tensor& t) {
  const auto d = npy_detail::descr(t.dtype());
  if (!d)
    throw Error(ErrorCode::unsupported, "NumPy has no bfloat16, so a .npy file cannot hold this tensor; convert it to float32 (or write .safetensors)",
                {.found = std::string(dtype_name(t.dtype()))});
  std::string shape = "(";
  for (std::size_t i = 0; i < t.rank(); ++i) shape += (i ? ", " : "") + std::to_string(t.dim(i));
  shape += t.rank() == 1 ? ",)" : ")";
  std::string header = "{'descr': '" + std::string(*d) + "', 'fortran_order': False, 'shape': " + shape + ", }";
  const bool v2 = header.size() + 1 + 10 > 0xffff;
  const std::size_t prefix = v2 ? 12 : 10;
  header.append((64 - (prefix + header.size() + 1) % 64) % 64, ' ');
  header.push_back('\n');
  std::string out(npy_detail::magic);
  out.push_back(static_cast<char>(v2 ? 2 : 1));
  out.push_back('\0');
  for (std::size_t i = 0; i < (v2 ? 4u : 2u); ++i) out.push_back(static_cast<char>((header.size() >> (8 * i)) & 0xff));
  out += header;
  out.append(static_cast<const char*>(t.raw()), t.nbytes());
  return out;
}

// Writes `t` as .npy atomically (a failure leaves no partial file).
inline void write_npy(const std::string& path, const Tensor& t) {
  try {
    write_file_atomic(path, npy_bytes(t));
  } catch (Error& e) {
    throw e.with_file(path);
  }
}

}  // namespace npusim::inline NPUSIM_ABI
