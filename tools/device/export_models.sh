#!/usr/bin/env bash
# Exports a small model zoo with npusim_export and checks every model with the npusim CLI; for the
# GPU machine (torch, torchvision, transformers installed; no network). Random weights throughout.
#
#   tools/device/export_models.sh [OUT_DIR]      (default: $OUT_DIR, else ./out)
#
# torch_ir comes from .devdeps/pyir, npusim_export from python/, the CLI from $NPUSIM (default
# build/npusim). Writes $OUT_DIR/zoo/<model>/ (LLMs: prefill/ and decode/), one log per step in
# $OUT_DIR/zoo/logs/, and $OUT_DIR/zoo/summary.txt: one line per model. A failure is reported and
# the next model goes on; the exit status is 1 when anything failed.
set -u
cd "$(dirname "$0")/../.."
OUT_DIR=${1:-${OUT_DIR:-out}}
ZOO=$OUT_DIR/zoo
LOGS=$ZOO/logs
NPUSIM=${NPUSIM:-build/npusim}
export PYTHONPATH=python:.devdeps/pyir${PYTHONPATH:+:$PYTHONPATH}
mkdir -p "$LOGS"
SUMMARY=$ZOO/summary.txt
: >"$SUMMARY"
failed=0

now() { date +%s.%N; }
since() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.1f", b - a }'; }

# rel_l2 of every checked output in an `npusim run` log, comma separated
run_rel() { grep -o 'rel_l2 [^ ]*' "$1" | awk '{ printf "%s%s", (NR > 1 ? "," : ""), $2 }'; }

# "prefill rel_l2 X, steps max rel_l2 Y, tokens a/b" from an `npusim generate --check` log
gen_rel() {
  awk '/^prefill / { for (i = 1; i < NF; i++) if ($i == "rel_l2") p = $(i + 1) }
       /^step / { for (i = 1; i < NF; i++) if ($i == "rel_l2" && $(i + 1) + 0 > m) m = $(i + 1) + 0 }
       /^greedy tokens:/ { t = $3 }
       END { printf "prefill rel_l2 %s, steps max rel_l2 %g, tokens %s", (p == "" ? "?" : p), m, (t == "" ? "?" : t) }' "$1"
}

line() { printf '%-20s | %s\n' "$1" "$2" | tee -a "$SUMMARY"; }

# export_one NAME SPEC ARGS...: runs the exporter, sets EXPORT_RESULT
export_one() {
  local name=$1 spec=$2
  shift 2
  local t0
  t0=$(now)
  echo "== $name: python3 -m npusim_export $spec $ZOO/$name $*"
  if python3 -m npusim_export "$spec" "$ZOO/$name" "$@" >"$LOGS/$name.export.log" 2>&1; then
    EXPORT_RESULT="export ok $(since "$t0") s"
    return 0
  fi
  EXPORT_RESULT="export FAIL $(since "$t0") s ($(tail -n 1 "$LOGS/$name.export.log" | cut -c1-120))"
  failed=1
  return 1
}

# check LOGNAME RELFN CMD...: runs an npusim command, returns "TAG PASS|FAIL (rel) s"
check() {
  local log=$LOGS/$1.log relfn=$2
  shift 2
  local t0 rc
  t0=$(now)
  "$@" >"$log" 2>&1
  rc=$?
  local res=PASS
  [ $rc -eq 0 ] || { res="FAIL(rc $rc)"; failed=1; }
  echo "$res $(since "$t0") s ($($relfn "$log"))"
}

have_npusim=1
if [ ! -x "$NPUSIM" ]; then
  echo "warning: $NPUSIM is missing: exporting only (build npusim, or set NPUSIM=path)" >&2
  have_npusim=0
  failed=1
fi

for m in resnet50 mobilenet_v2 mobilenet_v3_small; do
  if export_one "$m" "torchvision:$m" --weights random; then
    if [ $have_npusim -eq 1 ]; then
      cpu=$(check "$m.cpu" run_rel "$NPUSIM" run "$ZOO/$m" --target cpu)
      ref=$(check "$m.reference" run_rel "$NPUSIM" run "$ZOO/$m" --target reference)
      line "$m" "$EXPORT_RESULT | cpu $cpu | reference $ref"
    else
      line "$m" "$EXPORT_RESULT | npusim not run"
    fi
  else
    line "$m" "$EXPORT_RESULT"
  fi
done

# freshly initialised small causal LMs: 2 layers, hidden 256, 4 heads (2 KV), vocab 2048, bf16
for m in qwen2-tiny llama-tiny; do
  if export_one "$m" "hf:$m" --weights random --dtype bf16 --prefill-len 16 --cache-len 64; then
    if [ $have_npusim -eq 1 ]; then
      gen=$(check "$m.generate" gen_rel "$NPUSIM" generate "$ZOO/$m/prefill" "$ZOO/$m/decode" --check --target cpu)
      line "$m" "$EXPORT_RESULT | generate --check cpu $gen"
    else
      line "$m" "$EXPORT_RESULT | npusim not run"
    fi
  else
    line "$m" "$EXPORT_RESULT"
  fi
done

echo "summary: $SUMMARY; logs: $LOGS"
exit $failed
