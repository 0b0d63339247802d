#!/usr/bin/env bash
# Issue 36 on the GPU machine, in one call: build the CLI and the OpenCL tests (GCC 13), run the
# int8 OpenCL tests on the GPU, quantize ResNet-18/50 for the OpenCL target (synthetic
# calibration), then bench the int8 programs next to the f16 ones, alternating, and PyTorch's f16
# ResNet on CUDA (eager) in the same call.
#   source .devdeps/device-env.sh && tools/device/int8_bench.sh     carry: [".devdeps"]
# Results in $OUT/int8.tar.gz; a summary on stdout.
set -uo pipefail
cd "$(dirname "$0")/../.."
OUT=${OUT:-/tmp/npusim-int8}
R=$OUT/int8
mkdir -p "$R"
t0=$(date +%s)
{ nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader; date -u; g++ --version | head -1; } > "$R/machine.txt"
cat "$R/machine.txt"
cmake -S . -B build-i -G "Unix Makefiles" -DCMAKE_BUILD_TYPE=Release -DNPUSIM_WERROR=ON > "$R/configure.log" 2>&1 || { tail -30 "$R/configure.log"; exit 1; }
if ! cmake --build build-i -j"$(nproc)" --target npusim_cli npusim_opencl_tests > "$R/build.log" 2>&1; then
  grep -E 'error|warning' "$R/build.log" | head -30
  exit 1
fi
echo "build: $(( $(date +%s) - t0 )) s"
build-i/tests/npusim_opencl_tests --gtest_filter='OpenCLInt8.*' > "$R/tests.log" 2>&1
grep -E '^\[  (PASSED|FAILED)|FAILED  \]' "$R/tests.log"
M=tests/data/models
for m in resnet18 resnet50; do
  build-i/npusim quantize $M/$m --calib synthetic:8 --no-report --target opencl -o "$R/$m.int8.npubin" > "$R/quantize_$m.log" 2>&1
  tail -2 "$R/quantize_$m.log"
done
for round in 1 2; do
  for m in resnet18 resnet50; do
    f16=$(build-i/npusim bench $M/$m --target opencl --dtype f16 --repeats 50 2>&1 | grep latency)
    i8=$(build-i/npusim bench "$R/$m.int8.npubin" --weights $M/$m/synth.json --input x=$M/$m/io.safetensors --repeats 50 2>&1 | grep latency)
    echo "round $round $m opencl f16: $f16" | tee -a "$R/bench.txt"
    echo "round $round $m opencl int8: $i8" | tee -a "$R/bench.txt"
  done
done
build-i/npusim run "$R/resnet50.int8.npubin" --weights $M/resnet50/synth.json --input x=$M/resnet50/io.safetensors --profile --runs 20 > "$R/profile_r50.log" 2>&1
sed -n '/profile:/,/total kernels/p' "$R/profile_r50.log"
python3 - <<'PY' 2>&1 | tee -a "$R/bench.txt"
import time, torch, torchvision
torch.backends.cudnn.benchmark = True
for name in ["resnet18", "resnet50"]:
    m = getattr(torchvision.models, name)(weights=None).eval().half().cuda()
    x = torch.randn(1, 3, 224, 224, device="cuda").half()
    with torch.no_grad():
        for _ in range(20): m(x)
        torch.cuda.synchronize(); ts = []
        for _ in range(100):
            t = time.perf_counter(); m(x); torch.cuda.synchronize(); ts.append((time.perf_counter() - t) * 1e3)
    ts.sort(); print(f"PEER torch {name} f16 eager cuda {ts[len(ts)//2]:.3f} ms")
PY
tar -czf "$OUT/int8.tar.gz" -C "$OUT" int8
echo "total: $(( $(date +%s) - t0 )) s"
