#!/usr/bin/env bash
# Build times on the GPU machine (issue 35): the CLI target from clean with -j$(nproc), for this tree
# and, when given, an older one (a `git archive` tarball), every TU timed; a consumer TU
# (examples/minimal) header-only and against npusim::compiled; then, with STEPS containing `check`,
# tools/device/compiler_check.sh (the whole tree with -Werror and every test, GCC 13 there).
#   source .devdeps/device-env.sh && tools/device/build_time.sh [OLD_TREE.tar.gz] [STEPS]    carry: [".devdeps"]
# STEPS: any of cli,consumer,check (default all). Logs and per-TU times in $OUT; a summary on stdout.
set -uo pipefail
cd "$(dirname "$0")/../.."
root=$(pwd)
RESULTS=${OUT:-}       # the device run's $OUT: everything comes back in one tarball there
OUT=/tmp/npusim-build-time
OLD=${1:-}
STEPS=${2:-cli,consumer,check}
has() { [[ ",$STEPS," == *",$1,"* ]]; }
mkdir -p "$OUT"
J=$(nproc)
echo "compiler: $(g++ --version | head -1); cmake $(cmake --version | head -1 | awk '{print $3}'); $J cores;$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2)"
now() { date +%s.%N; }
secs() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.1f", b - a }'; }

# A compiler launcher that logs each TU's wall time.
cat > /tmp/timecc <<'EOF'
#!/usr/bin/env bash
t0=$(date +%s.%N)
"$@"
rc=$?
out=""
prev=""
for a in "$@"; do [ "$prev" = "-o" ] && out=$a; prev=$a; done
awk -v a="$t0" -v b="$(date +%s.%N)" -v o="$out" 'BEGIN { printf "%7.1f %s\n", b - a, o }' >> "${TU_LOG:-/dev/null}"
exit $rc
EOF
chmod +x /tmp/timecc

cli_build() {  # SOURCE_DIR LABEL
  local dir=$1 label=$2
  rm -rf "/tmp/build-cli-$label"
  cmake -S "$dir" -B "/tmp/build-cli-$label" -DCMAKE_BUILD_TYPE=Release -DNPUSIM_BUILD_TESTS=OFF -DNPUSIM_BUILD_EXAMPLES=OFF \
        -DNPUSIM_BUILD_BENCH=OFF -DNPUSIM_BUILD_DOC_SNIPPETS=OFF -DCMAKE_CXX_COMPILER_LAUNCHER=/tmp/timecc > "$OUT/configure-$label.log" 2>&1 ||
    { tail -20 "$OUT/configure-$label.log"; return 1; }
  export TU_LOG="$OUT/tu-$label.log"
  : > "$TU_LOG"
  local t0 t1
  t0=$(now)
  cmake --build "/tmp/build-cli-$label" --target npusim_cli -j"$J" > "$OUT/build-$label.log" 2>&1 || { tail -30 "$OUT/build-$label.log"; return 1; }
  t1=$(now)
  echo "cli build ($label): $(secs "$t0" "$t1") s with -j$J, $(wc -l < "$TU_LOG") TUs; slowest:"
  sort -rn "$TU_LOG" | head -4 | sed 's|^|    |'
}

if has cli; then
  if [ -n "$OLD" ]; then
    rm -rf /tmp/old-tree && mkdir -p /tmp/old-tree && tar -xzf "$OLD" -C /tmp/old-tree
    cli_build /tmp/old-tree before
  fi
  cli_build "$root" after
fi

if has consumer; then
  # examples/minimal as a consumer compiles it: the CMake target's flags, -O2 -march=native.
  flags="-std=gnu++20 -O2 -march=native -fopenmp -DMSGPACK_NO_BOOST -I$root/include -isystem $DEVDEPS_PREFIX/include/eigen3"
  for mode in header-only compiled; do
    extra=""
    [ $mode = compiled ] && extra="-DNPUSIM_COMPILED_LIB"
    t0=$(now)
    echo 0 > "$OUT/minimal-$mode.mem"
    if [ -x /usr/bin/time ]; then
      /usr/bin/time -f "%M" -o "$OUT/minimal-$mode.mem" g++ $flags $extra -c examples/minimal/main.cpp -o /tmp/minimal-$mode.o 2> "$OUT/minimal-$mode.log"
    else
      g++ $flags $extra -c examples/minimal/main.cpp -o /tmp/minimal-$mode.o 2> "$OUT/minimal-$mode.log"
    fi || { tail -20 "$OUT/minimal-$mode.log"; continue; }
    t1=$(now)
    echo "examples/minimal $mode: $(secs "$t0" "$t1") s, $(( $(tail -1 "$OUT/minimal-$mode.mem") / 1024 )) MB peak (0: not measured)"
  done
fi

if has check; then
  OUT="$OUT/check" tools/device/compiler_check.sh build,test
fi

if [ -n "$RESULTS" ]; then
  tar -czf "$RESULTS/build_time.tgz" -C "$OUT" .
fi
