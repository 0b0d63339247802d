#!/usr/bin/env bash
# Regenerates the fixture seeds of the committed corpora in tests/fuzz/corpus/ from tests/data/
# (small cases only, so the fuzzers start fast); handmade_* seeds and fuzzer finds (found_*) are
# kept. Needs a built CLI: scripts/build.sh first.
# Usage: tests/fuzz/make_corpus.sh [BUILD_DIR]   (default: build)
set -euo pipefail
cd "$(dirname "$0")/../.."
cli="${1:-build}/npusim"
out=tests/fuzz/corpus
mkdir -p "$out"/{ir_json,safetensors,synth_manifest,npubin,npy,image}
cp tests/data/npy/*.npy "$out/npy/"
for d in tests/data/ops/*/; do
  n=$(basename "$d")
  cp "$d/ir.json" "$out/ir_json/$n.json"
  [ -f "$d/synth.json" ] && cp "$d/synth.json" "$out/synth_manifest/$n.json"
  for f in weights io; do
    if [ -f "$d/$f.safetensors" ] && [ "$(stat -c %s "$d/$f.safetensors")" -le 1024 ]; then
      cp "$d/$f.safetensors" "$out/safetensors/${n}_$f.safetensors"
    fi
  done
done
cp tests/data/models/qwen2_tiny_prefill/synth.json "$out/synth_manifest/qwen2_tiny.json"
for n in relu conv_bn_relu conv_bn_relu_fp16 rmsnorm_bf16 silu_gate_mlp sdpa_causal index_copy_kv embedding cat_slice \
         unflatten_split arange_full rope_rotate_half masked_softmax; do
  "$cli" compile "tests/data/ops/$n/ir.json" -o "$out/npubin/$n.npubin" > /dev/null
done
"$cli" compile tests/data/ops/silu_gate_mlp/ir.json --force-fallback silu -o "$out/npubin/silu_gate_mlp_fallback.npubin" > /dev/null
"$cli" compile tests/data/ops/rmsnorm_bf16/ir.json --dtype bf16 -o "$out/npubin/rmsnorm_bf16_bf16.npubin" > /dev/null
# Images: the smallest PNG fixture, the JPEG variants the CLI tests write (make_test_files, run by
# ctest -R cli.make_test_files), and small BMPs of every layout the reader takes.
mkdir -p "$out/image"
cp tests/data/images/pattern_80x60.png "$out/image/"
for j in ok_baseline ok_progressive ok_grey ok_arithmetic; do cp "${1:-build}/tests/cli/own/images/$j.jpg" "$out/image/"; done
python3 - "$out/image/" <<'PY'
import struct, sys
out = sys.argv[1]
def bmp(name, w, h, bpp, pixels, palette=b'', compression=0, masks=b'', dib=40):
    off = 14 + dib + len(masks) + len(palette)
    info = struct.pack('<IiiHHIIiiII', dib, w, h, 1, bpp, compression, len(pixels), 2835, 2835, len(palette) // 4, 0) + b'\0' * (dib - 40)
    open(out + name, 'wb').write(b'BM' + struct.pack('<IHHI', off + len(pixels), 0, 0, off) + info + masks + palette + pixels)
def rows(w, h, bpp, f):
    stride = ((w * bpp + 31) // 32) * 4
    return b''.join(f(y) + b'\0' * (stride - len(f(y))) for y in range(abs(h)))
pal = b''.join(bytes([i * 60 % 256, i * 90 % 256, i * 120 % 256, 0]) for i in range(4))
bmp('rgb24_4x3.bmp', 4, 3, 24, rows(4, 3, 24, lambda y: bytes([(y * 40 + x * 9) % 256 for x in range(12)])))
bmp('bgra32_topdown_3x2.bmp', 3, -2, 32, rows(3, 2, 32, lambda y: bytes([(y * 7 + x * 31) % 256 for x in range(12)])))
bmp('pal8_5x3.bmp', 5, 3, 8, rows(5, 3, 8, lambda y: bytes([(x + y) % 4 for x in range(5)])), palette=pal)
bmp('pal1_9x2.bmp', 9, 2, 1, rows(9, 2, 1, lambda y: bytes([0b10110010 ^ y, 0x80])), palette=pal[:8])
bmp('pal4_5x2.bmp', 5, 2, 4, rows(5, 2, 4, lambda y: bytes([0x12, 0x30 | y, 0x20])), palette=pal)
bmp('rgb565_bitfields_3x3.bmp', 3, 3, 16, rows(3, 3, 16, lambda y: struct.pack('<3H', 0xF800 >> y, 0x07E0, 0x001F + y)), compression=3,
    masks=struct.pack('<III', 0xF800, 0x07E0, 0x001F))
bmp('rgb24_v4_2x2.bmp', 2, 2, 24, rows(2, 2, 24, lambda y: bytes([1, 2, 3, 4, 5, 6])), dib=108)
PY
du -sh "$out"/*
