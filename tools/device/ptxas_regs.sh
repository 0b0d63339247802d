#!/usr/bin/env bash
# Registers, stack and spills of every OpenCL kernel a command builds on NVIDIA's OpenCL (issue 38):
# runs CMD with NPUSIM_OPENCL_CACHE in a fresh directory, then `ptxas -arch=sm_90 -v` on each cached
# program (NVIDIA's program binary is PTX text with a trailing NUL, which ptxas refuses: stripped).
#   source .devdeps/device-env.sh && tools/device/ptxas_regs.sh build/npusim generate P D --target opencl ...
# Prints "## <program>-<hash>.bin" then "kernel: Used N registers, S bytes stack frame, ..." lines.
set -uo pipefail
dir=$(mktemp -d)
NPUSIM_OPENCL_CACHE=$dir NPUSIM_OPENCL_DEVICE=${NPUSIM_OPENCL_DEVICE:-NVIDIA} "$@" > "$dir/run.log" 2>&1 || { tail -5 "$dir/run.log"; exit 1; }
P=$(command -v ptxas || echo /usr/local/cuda/bin/ptxas)
[[ -x $P ]] || { echo "ptxas_regs.sh: no ptxas (PATH, /usr/local/cuda/bin)" >&2; exit 2; }
for f in "$dir"/*.bin; do
  [[ -f $f ]] || { echo "ptxas_regs.sh: the command built no OpenCL program" >&2; exit 1; }
  tr -d '\000' < "$f" > "$dir/k.ptx"
  echo "## ${f##*/}"
  "$P" -arch=sm_90 -v "$dir/k.ptx" -o /dev/null 2>&1 | awk '
    /Compiling entry function/ { split($0, q, "'"'"'"); fn = q[2] }
    /spill stores/ { sp = $0; sub(/^ +/, "", sp) }
    /Used [0-9]+ registers/ { match($0, /Used [0-9]+ registers/); print fn ": " substr($0, RSTART, RLENGTH) ", " sp }
    /error|fatal/ { print }'
done
rm -rf "$dir"
