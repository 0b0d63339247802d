# What the one-build device scripts share (prefill_ab.sh, resnet_bench.sh): sourced after `cd` to
# the repository root and with $R (the results folder) set.
#   device_env: the NVIDIA device and a program cache for npusim's OpenCL programs
#   device_machine: the GPU, driver, date, compiler and commit into $R/machine.txt (and stdout)
#   device_build TARGET...: this tree's GCC Release build in build-g with warnings as errors
#     (logs in $R); on failure the build log's tail, status 1
device_env() {
  export NPUSIM_OPENCL_DEVICE=${NPUSIM_OPENCL_DEVICE:-NVIDIA}
  export NPUSIM_OPENCL_CACHE=/tmp/npusim-cl-cache
}
device_machine() {
  { nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader; date -u; g++ --version | head -1
    git log -1 --format='%h %s' 2>/dev/null | cut -c1-100; } > "$R/machine.txt"
  cat "$R/machine.txt"
}
device_build() {
  cmake -S . -B build-g -G "Unix Makefiles" -DCMAKE_BUILD_TYPE=Release -DNPUSIM_BUILD_EXAMPLES=OFF -DNPUSIM_BUILD_BENCH=OFF -DNPUSIM_WERROR=ON \
    -DNPUSIM_BUILD_DOC_SNIPPETS=OFF > "$R/configure.log" 2>&1 &&
    cmake --build build-g -j"$(nproc)" --target "$@" > "$R/build.log" 2>&1 || { tail -30 "$R/build.log"; return 1; }
}
