// Definitions for npusim/program/npubin.hpp (NPUSIM_FUNC: npusim/config.hpp).
#pragma once

#include "npusim/config.hpp"
#include "npusim/core/file.hpp"
#include "npusim/program/impl/npubin_format.hpp"
#include "npusim/program/npubin.hpp"
#include "npusim/program/validate.hpp"

namespace npusim::inline NPUSIM_ABI::program {

NPUSIM_FUNC std::string serialize(const CompiledProgram& p) {
  using namespace npubin_detail;
  msgpack::sbuffer buf;
  Packer pk(buf);
  pk.pack_map(p.npu ? 14 : 13);
  put(pk, "format"), put(pk, "npubin");
  put(pk, "npusim_version"), put(pk, p.npusim_version);
  put(pk, "model_name"), put(pk, p.model_name);
  put(pk, "source"), put(pk, p.source);
  put(pk, "target"), put(pk, p.target);
  put(pk, "compute"), put(pk, dtype_name(p.compute));
  put(pk, "limits"), pk.pack_map(1), put(pk, "channel_alignment_bytes"), pk.pack_int64(p.limits.channel_alignment_bytes);
  put(pk, "inputs"), put_io(pk, p.inputs);
  put(pk, "outputs"), put_io(pk, p.outputs);
  put(pk, "partitions");
  pk.pack_array(static_cast<std::uint32_t>(p.partitions.size()));
  for (const auto& part : p.partitions) {
    pk.pack_map(part.stage ? 6 : 5);
    put(pk, "target"), put(pk, part.target);
    if (part.stage) put(pk, "stage"), pk.pack_int64(part.stage);  // optional: absent means stage 0
    put(pk, "fallback"), part.fallback ? pk.pack_true() : pk.pack_false();
    put(pk, "graph"), put_graph(pk, part.graph);
    put(pk, "kernels");
    pk.pack_array(static_cast<std::uint32_t>(part.kernels.size()));
    for (const auto& k : part.kernels) put_kernel(pk, k);
    put(pk, "plan"), put_plan(pk, part.plan);
  }
  put(pk, "transfers");
  pk.pack_array(static_cast<std::uint32_t>(p.transfers.size()));
  for (const auto& t : p.transfers) pk.pack_array(4), put(pk, t.tensor), pk.pack_int64(t.from), pk.pack_int64(t.to), pk.pack_int64(t.bytes);
  put(pk, "recipes");
  pk.pack_array(static_cast<std::uint32_t>(p.recipes.size()));
  for (const auto& r : p.recipes) {
    pk.pack_array(4);
    put(pk, r.kind);
    pk.pack_array(static_cast<std::uint32_t>(r.inputs.size()));
    for (const auto& s : r.inputs) put(pk, s);
    pk.pack_array(static_cast<std::uint32_t>(r.outputs.size()));
    for (const auto& s : r.outputs) put(pk, s);
    put_attrs(pk, r.params);
  }
  put(pk, "stats");
  pk.pack_map(7);
  put(pk, "nodes_in"), pk.pack_int64(p.stats.nodes_in);
  put(pk, "kernels_unfused"), pk.pack_int64(p.stats.kernels_unfused);
  put(pk, "nodes_after_passes"), pk.pack_int64(p.stats.nodes_after_passes);
  put(pk, "kernels"), pk.pack_int64(p.stats.kernels);
  put(pk, "view_kernels"), pk.pack_int64(p.stats.view_kernels);
  put(pk, "fused_kernels"), pk.pack_int64(p.stats.fused_kernels);
  put(pk, "pass_counts"), put_attrs(pk, p.stats.pass_counts);
  if (p.npu) {  // optional: readers that predate it ignore the key
    put(pk, "npu"), pk.pack_map(2);
    put(pk, "description"), put(pk, p.npu->description);
    put(pk, "dtype"), put(pk, dtype_name(p.npu->dtype));
  }

  std::string out(npubin_magic, sizeof npubin_magic);
  put_u32(out, npubin_format_version);
  put_u64(out, buf.size());
  out.append(buf.data(), buf.size());
  put_u64(out, fnv1a(std::string_view(buf.data(), buf.size())));
  return out;
}

namespace npubin_detail {
inline CompiledProgram parse_program(std::string_view payload, std::uint64_t checksum, const std::string& file);
}

NPUSIM_FUNC CompiledProgram deserialize(std::string_view bytes, const std::string& file) {
  using namespace npubin_detail;
  Layout l = parse_frame(bytes.substr(0, std::min<std::size_t>(bytes.size(), header_bytes)), bytes.size(), file);
  if (l.has_weights) parse_weights_head(l, bytes.substr(l.program_end, std::min<std::uint64_t>(bytes.size(), l.section + head_bytes) - l.program_end), bytes.size(), file);
  return parse_program(bytes.substr(header_bytes, l.payload_bytes), get_u64(bytes.data() + header_bytes + l.payload_bytes, 8), file);
}

inline CompiledProgram npubin_detail::parse_program(std::string_view payload, std::uint64_t checksum, const std::string& file) {
  using namespace npubin_detail;
  // Where: the program payload, after the frame's header.
  const std::string where = " (the program payload, bytes " + std::to_string(header_bytes) + ".." + std::to_string(header_bytes + payload.size()) + ")";
  auto fail = [&](ErrorCode c, const std::string& msg) { return Error(c, msg, {.file = file}); };
  if (checksum != fnv1a(payload))
    throw fail(ErrorCode::parse, "corrupted .npubin file (checksum mismatch)" + where);

  msgpack::object_handle oh;
  try {
    // No container or string can hold more elements than the payload has bytes: without these
    // limits a 5-byte array header claiming 4G elements makes msgpack allocate ~100 GB up front.
    const std::size_t n = payload.size();
    oh = msgpack::unpack(payload.data(), n, nullptr, nullptr, msgpack::unpack_limit(n, n, n, n, n, 64));
  } catch (const std::exception& e) {
    throw fail(ErrorCode::parse, std::string("malformed .npubin payload: ") + e.what() + where);
  }
  const msgpack::object& o = oh.get();
  Reader r{file};
  CompiledProgram p;
  if (r.str(r.field(o, "format")) != "npubin") r.fail("format field is not \"npubin\"");
  p.npusim_version = r.str(r.field(o, "npusim_version"));
  p.model_name = r.str(r.field(o, "model_name"));
  p.source = r.str(r.field(o, "source"));
  p.target = r.str(r.field(o, "target"));
  p.compute = r.dtype(r.field(o, "compute"));
  p.limits.channel_alignment_bytes = r.i64(r.field(r.field(o, "limits"), "channel_alignment_bytes"));
  p.inputs = r.io(r.field(o, "inputs"));
  p.outputs = r.io(r.field(o, "outputs"));
  for (const auto& po : r.arr(r.field(o, "partitions"))) {
    Partition part;
    part.target = r.str(r.field(po, "target"));
    part.fallback = r.boolean(r.field(po, "fallback"));
    if (const msgpack::object* st = r.find(po, "stage")) {
      const std::int64_t v = r.i64(*st);
      if (v < 0 || v > (p.partitions.empty() ? 0 : p.partitions.back().stage + 1))
        r.fail("partition stage out of order (a stage follows the one before it: expected " +
               std::to_string(p.partitions.empty() ? 0 : p.partitions.back().stage) + " or one more, found " + std::to_string(v) + ")");
      part.stage = static_cast<std::int32_t>(v);
    } else if (!p.partitions.empty() && p.partitions.back().stage != 0) {
      r.fail("partition without a stage after one of stage " + std::to_string(p.partitions.back().stage));
    }
    part.graph = r.graph(r.field(po, "graph"));
    const auto N = static_cast<std::int64_t>(part.graph.nodes.size()), T = static_cast<std::int64_t>(part.graph.tensors.size());
    for (const auto& k : r.arr(r.field(po, "kernels"))) part.kernels.push_back(r.kernel(k, N, T));
    part.plan = r.buffer_plan(r.field(po, "plan"), T);
    try {
      ops::check_graph(part.graph);  // every node still means what it meant when compiled
    } catch (Error& e) {
      throw e.with_file(file);
    }
    p.partitions.push_back(std::move(part));
  }
  const auto P = static_cast<std::int64_t>(p.partitions.size());
  for (const auto& t : r.arr(r.field(o, "transfers"))) {
    auto f = r.arr(t, 4);
    partition::Transfer x{r.str(f[0]), static_cast<std::int32_t>(r.i64(f[1])), static_cast<std::int32_t>(r.i64(f[2])), r.i64(f[3])};
    if (x.from < -1 || x.from >= P || x.to < -1 || x.to >= P) r.fail("transfer partition index out of range");
    p.transfers.push_back(x);
  }
  for (const auto& ro : r.arr(r.field(o, "recipes"))) {
    auto f = r.arr(ro, 4);
    weights::Recipe rec;
    rec.kind = r.str(f[0]);
    for (const auto& s : r.arr(f[1])) rec.inputs.push_back(r.str(s));
    for (const auto& s : r.arr(f[2])) rec.outputs.push_back(r.str(s));
    rec.params = r.attrs(f[3]);
    p.recipes.push_back(std::move(rec));
  }
  const auto& st = r.field(o, "stats");
  p.stats.nodes_in = r.i64(r.field(st, "nodes_in"));
  p.stats.nodes_after_passes = r.i64(r.field(st, "nodes_after_passes"));
  p.stats.kernels = r.i64(r.field(st, "kernels"));
  p.stats.kernels_unfused = r.i64(r.field(st, "kernels_unfused"));
  p.stats.view_kernels = r.i64(r.field(st, "view_kernels"));
  p.stats.fused_kernels = r.i64(r.field(st, "fused_kernels"));
  p.stats.pass_counts = r.attrs(r.field(st, "pass_counts"));
  if (const msgpack::object* n = r.find(o, "npu")) p.npu = NpuRecord{r.str(r.field(*n, "description")), r.dtype(r.field(*n, "dtype"))};
  try {
    validate(p);
  } catch (Error& e) {
    throw e.with_file(file);
  }
  return p;
}

NPUSIM_FUNC void save(const CompiledProgram& p, const std::string& path) { write_file_atomic(path, serialize(p)); }

namespace npubin_detail {
// Reads `n` bytes at `offset` of an open file.
inline std::string read_at(std::ifstream& f, std::uint64_t offset, std::uint64_t n, const std::string& file) {
  std::string s(static_cast<std::size_t>(n), '\0');
  f.seekg(static_cast<std::streamoff>(offset));
  if (n && !f.read(s.data(), static_cast<std::streamsize>(n))) throw Error(ErrorCode::io, "read failed", {.file = file, .offset = offset});
  return s;
}
// The layout of a file on disk, reading only its header and weights-section head.
inline Layout read_layout(std::ifstream& f, const std::string& path) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) throw Error(ErrorCode::io, "is a directory, expected a file", {.file = path});
  if (!f) throw Error(ErrorCode::io, std::string("cannot open: ") + std::strerror(errno), {.file = path});
  f.seekg(0, std::ios::end);
  const auto size = static_cast<std::uint64_t>(f.tellg());
  Layout l = parse_frame(read_at(f, 0, std::min(size, header_bytes), path), size, path);
  if (l.has_weights) parse_weights_head(l, read_at(f, l.program_end, std::min(size, l.section + head_bytes) - l.program_end, path), size, path);
  return l;
}
}  // namespace npubin_detail

NPUSIM_FUNC CompiledProgram load(const std::string& path) {
  using namespace npubin_detail;
  require_regular_file(path);  // a FIFO would block the open
  std::ifstream f(path, std::ios::binary);
  Layout l = read_layout(f, path);
  constexpr std::uint64_t max_payload = std::uint64_t{1} << 32;
  if (l.payload_bytes > max_payload)
    throw Error(ErrorCode::resource, "program too large", {.file = path, .expected = "<= " + std::to_string(max_payload) + " bytes",
                                                           .found = std::to_string(l.payload_bytes) + " bytes"});
  std::string payload = read_at(f, header_bytes, l.payload_bytes + 8, path);
  const std::uint64_t sum = get_u64(payload.data() + l.payload_bytes, 8);
  payload.resize(static_cast<std::size_t>(l.payload_bytes));
  return parse_program(payload, sum, path);
}

NPUSIM_FUNC bool has_embedded_weights(const std::string& path) {
  require_regular_file(path);  // a FIFO would block the open
  std::ifstream f(path, std::ios::binary);
  return npubin_detail::read_layout(f, path).has_weights;
}

}  // namespace npusim::inline NPUSIM_ABI::program
