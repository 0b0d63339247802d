#!/usr/bin/env bash
# A user's own model, end to end, on the GPU machine (torch, torchvision, transformers; no network):
#   1. a torchvision ResNet-18 exported with npusim_export, fed a PNG and a JPEG through --image,
#      against torchvision's own preprocessing (weights.transforms()) and the model in PyTorch;
#   2. the same as a .npubin with embedded weights, run on its own;
#   3. a freshly initialised Hugging Face Qwen2 saved with save_pretrained in 3+ safetensors shards
#      (model.safetensors.index.json), exported from that directory, then checked with the weights
#      read from the HF directory itself (--weights DIR) rather than the export's file.
#   tools/device/own_models.sh OUT_DIR     (the CLI from $NPUSIM, default build/npusim)
set -u
cd "$(dirname "$0")/../.."
OUT=${1:-out}/own
mkdir -p "$OUT"
NPUSIM=${NPUSIM:-build/npusim}
export PYTHONPATH=python:.devdeps/pyir${PYTHONPATH:+:$PYTHONPATH}
failed=0
step() {
  local name=$1
  shift
  echo "== $name: $*"
  if "$@" >"$OUT/$name.log" 2>&1; then echo "   ok"; else echo "   FAIL (rc $?)"; failed=1; fi
  tail -n 12 "$OUT/$name.log" | sed 's/^/   | /'
}

python3 - "$OUT" <<'PY' >"$OUT/prepare.log" 2>&1 || { echo "prepare FAIL"; tail -20 "$OUT/prepare.log"; exit 1; }
import json, sys, numpy as np, torch, torchvision
from PIL import Image
from safetensors.torch import save_file
out = sys.argv[1]
torch.manual_seed(0)
# a picture: smooth colour fields and shapes, 320 x 240
y, x = np.mgrid[0:240, 0:320]
img = np.stack([(x * 255 // 319), (y * 255 // 239), ((x + y) % 256)], -1).astype(np.uint8)
img[60:180, 100:220] = [200, 30, 40]
Image.fromarray(img).save(f"{out}/picture.png")
Image.fromarray(img).save(f"{out}/picture.jpg", quality=92)
# ResNet-18 with random weights: export it, and compute PyTorch's logits on both pictures
from npusim_export import export_module
model = torchvision.models.resnet18(weights=None).eval()
export_module(model, (torch.randn(1, 3, 224, 224),), f"{out}/r18", kind="vision", name="resnet18")
ir = json.load(open(f"{out}/r18/ir.json"))
oname = ir["graph_outputs"][0]["name"]
tf = torchvision.models.ResNet18_Weights.IMAGENET1K_V1.transforms()
for ext in ["png", "jpg"]:
    with torch.no_grad():
        logits = model(tf(Image.open(f"{out}/picture.{ext}").convert("RGB")).unsqueeze(0))
    save_file({oname: logits.contiguous()}, f"{out}/expected_{ext}.safetensors")
    print(ext, "top-5", logits[0].topk(5).indices.tolist())
# a Hugging Face directory: a fresh Qwen2, saved in shards
from transformers import Qwen2Config, Qwen2ForCausalLM
cfg = Qwen2Config(vocab_size=2048, hidden_size=256, intermediate_size=512, num_hidden_layers=2, num_attention_heads=4,
                  num_key_value_heads=2, max_position_embeddings=256, rope_theta=500000.0, tie_word_embeddings=False)
lm = Qwen2ForCausalLM(cfg).to(torch.bfloat16)
lm.save_pretrained(f"{out}/hf_qwen2", max_shard_size="1MB", safe_serialization=True)
print("shards:", sorted(p for p in __import__("os").listdir(f"{out}/hf_qwen2")))
PY
cat "$OUT/prepare.log"

step r18_png "$NPUSIM" run "$OUT/r18" --image "$OUT/picture.png" --expected "$OUT/expected_png.safetensors"
step r18_jpg "$NPUSIM" run "$OUT/r18" --image "$OUT/picture.jpg" --expected "$OUT/expected_jpg.safetensors" --tol 0.01
step r18_summary "$NPUSIM" run "$OUT/r18" --image "$OUT/picture.png" --output "$OUT/r18_logits.npy"
step r18_compile "$NPUSIM" compile "$OUT/r18" -o "$OUT/r18.npubin" --embed-weights
step r18_npubin "$NPUSIM" run "$OUT/r18.npubin" --image "$OUT/picture.png" --expected "$OUT/expected_png.safetensors"
step r18_npubin_bench "$NPUSIM" bench "$OUT/r18.npubin" --repeats 20
step hf_export python3 -m npusim_export "hf:$OUT/hf_qwen2" "$OUT/qwen2" --dtype bf16 --prefill-len 16 --cache-len 64
step hf_generate_own_weights "$NPUSIM" generate "$OUT/qwen2/prefill" "$OUT/qwen2/decode" --check --weights "$OUT/hf_qwen2"
step hf_generate_bf16 "$NPUSIM" generate "$OUT/qwen2/prefill" "$OUT/qwen2/decode" --check --weights "$OUT/hf_qwen2" --dtype bf16
step hf_free "$NPUSIM" generate "$OUT/qwen2/prefill" "$OUT/qwen2/decode" --weights "$OUT/hf_qwen2" --max-new-tokens 100
exit $failed
