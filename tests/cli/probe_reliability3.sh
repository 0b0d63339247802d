#!/usr/bin/env bash
# A probe of the command line for issue 39's classes 1, 3 and 7, on files it makes (and those of
# make_test_files): hostile images, output paths that are not regular files or are the inputs,
# and names holding terminal escapes. Each case must end with the exit code and message given, in
# 20 s (a hang fails), print no raw escape character, and leave no temporary file behind.
#   usage: probe_reliability3.sh NPUSIM DATA_DIR OWN_DIR WORK_DIR
set -u
npusim=$1 data=$2 own=$3 work=$4
rm -rf "$work" && mkdir -p "$work"
cases=0 fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }

# expect RC REGEX CMD...: exit code RC, combined output matching the extended regex REGEX.
expect() {
  local rc=$1 re=$2 out got
  shift 2
  cases=$((cases + 1))
  out=$(timeout 20 "$@" 2>&1 </dev/null)
  got=$?
  if [ "$got" -ne "$rc" ] || ! grep -Eq -- "$re" <<<"$out"; then
    fail "exit $got (expected $rc), output matching /$re/ expected: $*"
    tail -n 3 <<<"$out" | sed 's/^/    /'
  fi
  if grep -q $'\x1b' <<<"$out" || grep -q $'\x07' <<<"$out"; then fail "a raw control character reached the terminal: $*"; fi
}

# ---- class 1: images -----------------------------------------------------------------------------
bare=$own/resnet18_bare
codecs=1
$npusim run "$bare" --image "$own/images/ok_rgb.png" 2>&1 | grep -q "built without image support" && codecs=0
for f in "$own"/images/bad_*; do
  name=$(basename "$f")
  case $name in
    bad_pgm16_*) re="PGM is not supported" ;;
    bad_ppm_*) re="PPM is not supported" ;;
    bad_gif_*) re="GIF is not supported" ;;
    bad_webp*) re="WebP is not supported" ;;
    bad_tiff*) re="TIFF is not supported" ;;
    bad_tga_* | bad_empty*) re="unknown image type" ;;
    bad_png_half* | bad_png_no_iend* | bad_png_header_only*) re="truncated PNG" ;;
    bad_png_ihdr_crc*) re="PNG CRC error \(IHDR: CRC error\)" ;;
    bad_png_idat_crc*) re="PNG CRC error \(IDAT: CRC error\)" ;;
    bad_png_huge* | bad_jpg_huge*) re="image too large .*64 Mpixel" ;;
    bad_png_zero*) re="PNG has no pixels" ;;
    bad_bmp_truncated* | bad_bmp_huge*) re="truncated BMP" ;;
    bad_bmp_rle*) re="BMP with RLE8 compression is not supported" ;;
    bad_jpg_half* | bad_jpg_no_eoi*) re="truncated JPEG" ;;
    bad_jpg_12bit*) re="JPEG of 12-bit precision is not supported" ;;
    bad_jpg_zero*) re="corrupt or unsupported JPEG" ;;
    bad_jpg_*_components*) re="component\(s\) in this colour space is not supported" ;;
    *) re="no rule for this file" ;;
  esac
  [ $codecs = 0 ] && case $name in *.png | *.jpg) re="built without image support|not supported|unknown image type" ;; esac
  expect 2 "npusim [a-z]+ error: .*$name: .*$re" "$npusim" run "$bare" --image "$f"
done
for f in ok_rgb.png ok_grey16.png ok_palette.png ok_top_down32.bmp ok_progressive.jpg ok_cmyk.jpg; do
  [ -e "$own/images/$f" ] || continue
  [ $codecs = 0 ] && [ "${f##*.}" != bmp ] && continue
  expect 0 "top-5: " "$npusim" run "$bare" --image "$own/images/$f"
done

# ---- class 3: output paths ---------------------------------------------------------------------
relu=$data/ops/relu
expect 0 "arena" "$npusim" compile "$relu" -o /dev/null
[ -c /dev/null ] || fail "/dev/null is no longer a character device"
ln -s /dev/null "$work/null_link"
expect 0 "arena" "$npusim" compile "$relu" -o "$work/null_link"
[ -L "$work/null_link" ] || fail "the symlink to /dev/null was replaced"
ln -s /dev/null "$work/null.npy"
expect 0 "outputs written to .*null.npy" "$npusim" run "$relu" --output "$work/null.npy"
[ -L "$work/null.npy" ] && [ -c /dev/null ] || fail "run --output replaced a symlink to /dev/null"
mkfifo "$work/out.fifo"
expect 2 "out.fifo: the output is a FIFO that no process is reading" "$npusim" compile "$relu" -o "$work/out.fifo"
cat "$work/out.fifo" >"$work/from_fifo" &
reader=$!
# On a loaded machine the reader may not have opened the FIFO yet: wait until it has (npusim
# refuses a FIFO that no process reads; Linux shows the reader blocked in open as wait_for_partner),
# then check the write.
for _ in $(seq 200); do
  [ "$(cat "/proc/$reader/wchan" 2>/dev/null)" = wait_for_partner ] && break
  sleep 0.05
done
expect 0 "arena" "$npusim" compile "$relu" -o "$work/out.fifo"
# Never hang the suite: a reader still waiting (npusim did not write) is failed and stopped.
( sleep 20; kill $reader 2>/dev/null ) >/dev/null 2>&1 &
watchdog=$!
wait $reader
kill $watchdog 2>/dev/null
[ -p "$work/out.fifo" ] || fail "the FIFO was replaced"
head -c 6 "$work/from_fifo" | grep -q NPUBIN || fail "the FIFO's reader did not get the .npubin"
expect 2 "the output path is a directory" "$npusim" compile "$relu" -o "$work"
mkdir "$work/dir" && ln -s "$work/dir" "$work/dir_link.npy"
expect 2 "dir_link.npy: the output path is a directory" "$npusim" run "$relu" --output "$work/dir_link.npy"
echo old >"$work/real.npubin" && ln -s "$work/real.npubin" "$work/link.npubin"
expect 0 "arena" "$npusim" compile "$relu" -o "$work/link.npubin"
[ -L "$work/link.npubin" ] && head -c 6 "$work/real.npubin" | grep -q NPUBIN || fail "a symlink to a regular file: the link must stay, its target replaced"
ln -s "$work/nothing" "$work/dangling.npubin"
expect 2 "dangling.npubin: the output path is a symlink to nothing" "$npusim" compile "$relu" -o "$work/dangling.npubin"
[ -e "$work/nothing" ] && fail "a dangling symlink's target was created"
blk=$(find /dev -maxdepth 1 -type b 2>/dev/null | head -n 1)
[ -n "$blk" ] && expect 2 "not a file npusim can write .*found a block device" "$npusim" compile "$relu" -o "$blk"
# Outputs onto inputs: the same path, a hard link, a symlink; every writing subcommand.
cp -r "$relu" "$work/relu"
cp "$work/relu/ir.json" "$work/ir.orig"
expect 2 "ir.json: the output would replace an input of this command" "$npusim" compile "$work/relu/ir.json" -o "$work/relu/ir.json"
expect 2 "would replace an input" "$npusim" compile "$work/relu" -o "$work/relu/ir.json"
ln "$work/relu/ir.json" "$work/hard.json" && ln -s "$work/relu/ir.json" "$work/soft.json"
expect 2 "hard.json: the output would replace an input of this command, read as .*ir.json" "$npusim" compile "$work/relu/ir.json" -o "$work/hard.json"
expect 2 "soft.json: the output would replace an input" "$npusim" compile "$work/relu" -o "$work/soft.json"
expect 0 "outputs written" "$npusim" run "$relu" --output "$work/y.npy"
expect 2 "y.npy: the output would replace an input" "$npusim" run "$relu" --input "$work/y.npy" --output "$work/y.npy"
expect 2 "y.npy: the output would replace an input" "$npusim" run "$relu" --input "$work/y.npy" --expected "$work/y.npy" --output "$work/y.npy"
expect 2 "io.safetensors: the output would replace an input" "$npusim" run "$work/relu" --output "$work/relu/io.safetensors"
expect 2 "ir.json: the output would replace an input" "$npusim" simulate "$work/relu" --npu ideal --json "$work/relu/ir.json"
expect 2 "ir.json: the output would replace an input" "$npusim" run "$work/relu" --profile --runs 1 --trace "$work/relu/ir.json"
expect 0 "arena" "$npusim" compile "$work/relu" -o "$work/relu.npubin"
expect 2 "relu.npubin: the output would replace an input" "$npusim" bench "$work/relu.npubin" --weights none --warmup 0 --repeats 1 --json "$work/relu.npubin"
cmp -s "$work/relu/ir.json" "$work/ir.orig" || fail "an input was overwritten"
ls "$work" "$work/relu" | grep -q '\.tmp\.' && fail "a temporary file was left behind"

# ---- class 7: names holding terminal escapes ------------------------------------------------------
mkdir "$work/esc"
sed -e 's/"model_name": "relu"/"model_name": "re\\u001b]0;owned\\u0007lu"/' -e 's/"name": "relu"/"name": "re\\u001b[2Jlu\\u009b"/' \
  "$relu/ir.json" >"$work/esc/ir.json"
expect 0 "arena" "$npusim" compile "$work/esc" -o "$work/esc.npubin"
expect 0 'model re\\x1b\]0;owned\\x07lu' "$npusim" inspect "$work/esc.npubin"
expect 0 're\\x1b\[2Jlu\\u009b' "$npusim" inspect "$work/esc.npubin" --buffers
expect 0 '\\u001b' "$npusim" inspect "$work/esc.npubin" --json
expect 0 "node\(s\) fall back" "$npusim" explain "$work/esc.npubin"
expect 0 "node\(s\) fall back" "$npusim" explain "$work/esc" --kernels
expect 0 'PASS|ran ' "$npusim" run "$work/esc.npubin" --weights none --input "$work/y.npy"
sed -e 's/aten.relu.default/aten.\\u001b[31mevil\\u001b[0m/' "$relu/ir.json" >"$work/esc/ir.json"
expect 2 'aten.\\x1b\[31mevil\\x1b\[0m' "$npusim" compile "$work/esc" -o "$work/esc2.npubin"
mkdir "$work/$(printf 'dir\033[1m')"
expect 2 'dir\\x1b\[1m' "$npusim" compile "$relu" -o "$work/$(printf 'dir\033[1m')"

echo "probe_reliability3: $cases cases, $fails failure(s)"
[ "$fails" -eq 0 ]
