#!/bin/sh
# Int8 on the CPU target next to f32 and next to PyTorch's own int8 (issue 36), alternating, one
# process at a time: npusim bench of the float case and of its int8 program (npusim quantize,
# synthetic calibration), then bench/torch_int8_peer.py (PyTorch eager int8, onednn engine).
# usage: bench/int8_ab.sh NPUSIM_BINARY DATA_DIR ROUNDS THREADS [OUT_DIR]
set -eu
NPUSIM=$1 DATA=$2 ROUNDS=$3 THREADS=$4 OUT=${5:-/tmp/npusim_int8_ab}
HERE=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$OUT"
for m in resnet18 resnet50; do
  "$NPUSIM" quantize "$DATA/models/$m" --calib synthetic:8 --no-report -o "$OUT/$m.int8.npubin" --threads "$THREADS" > "$OUT/$m.quantize.log"
done
r=1
while [ "$r" -le "$ROUNDS" ]; do
  for m in resnet18 resnet50; do
    f32=$("$NPUSIM" bench "$DATA/models/$m" --threads "$THREADS" --repeats 30 | grep -E "latency" | head -1)
    i8=$("$NPUSIM" bench "$OUT/$m.int8.npubin" --weights "$DATA/models/$m/synth.json" --input "x=$DATA/models/$m/io.safetensors" --threads "$THREADS" --repeats 30 | grep -E "latency" | head -1)
    torch=$(/usr/bin/python3 "$HERE/torch_int8_peer.py" "$m" "$THREADS")
    echo "round $r $m npusim f32: $f32"
    echo "round $r $m npusim int8: $i8"
    echo "round $r $m torch: $torch"
  done
  r=$((r + 1))
done
