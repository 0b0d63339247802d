#!/usr/bin/env python3
"""Reference images and their preprocessed tensors for tests/unit/runtime/test_image.cpp.

For each case it writes, into this folder (or --out):
  NAME.png                 a deterministic RGB pattern (ramps, a fine checkerboard that only an
                           antialiasing resize gets right, a diagonal texture)
  NAME_resized.npy         uint8 [H, W, 3]: PIL's Image.resize(..., BILINEAR) to torchvision's
                           Resize(RESIZE) size (the step npusim must match bit for bit)
  NAME_preprocessed.npy    float32 [1, 3, CROP, CROP]: the classifier transform's output
and, for JPEG_CASES, NAME.jpg with NAME_jpg_decoded.npy (PIL's decode, uint8 [H, W, 3]) and
NAME_jpg_preprocessed.npy, which measure how far stb_image's JPEG decoder is from libjpeg's;
and reference.json naming the cases, the sizes and what produced the tensors.

With torchvision installed, the tensors come from torchvision.transforms._presets.
ImageClassification(crop_size=CROP, resize_size=RESIZE), the class that `weights.transforms()`
returns for ImageNet classifiers, applied to the PIL image. Without it, --pil-only uses a NumPy
replica of the same steps (Resize via PIL, CenterCrop's offsets, /255, Normalize in float32); the
producer recorded in reference.json says which. Sizes are scaled down from 256/224 to 64/56 to keep
the files small; the code path is the same.

Run: python3 make_reference.py [--pil-only] [--out DIR]
"""
import argparse
import json
from pathlib import Path

import numpy as np
import PIL
from PIL import Image

MEAN = [0.485, 0.456, 0.406]
STD = [0.229, 0.224, 0.225]
RESIZE, CROP = 64, 56
# width, height: upscaling (and a crop offset of 14.5 -> 14), downscaling by 3.125, a crop offset
# of 15.5 -> 16 (Python rounds halves to even), and a portrait image.
CASES = [("pattern_80x60", 80, 60), ("pattern_300x200", 300, 200), ("pattern_259x190", 259, 190), ("pattern_199x301", 199, 301)]

JPEG_CASES = ["pattern_300x200"]


def pattern(w, h):
    y, x = np.mgrid[0:h, 0:w]
    r = x * 255 // max(w - 1, 1)
    g = ((x // 3 + y // 2) % 2) * 200 + 30
    b = (x * 7 + y * 13) % 256
    return np.stack([r, g, b], -1).astype(np.uint8)


def resized_size(w, h):
    # torchvision.transforms.functional._compute_resized_output_size for an int size
    short, long = (w, h) if w <= h else (h, w)
    new_short, new_long = RESIZE, int(RESIZE * long / short)
    return (new_short, new_long) if w <= h else (new_long, new_short)


def pil_replica(img):
    nw, nh = resized_size(*img.size)
    r = img if (nw, nh) == img.size else img.resize((nw, nh), Image.BILINEAR)
    left, top = int(round((nw - CROP) / 2.0)), int(round((nh - CROP) / 2.0))
    c = np.asarray(r.crop((left, top, left + CROP, top + CROP)), dtype=np.uint8)
    x = c.astype(np.float32).transpose(2, 0, 1) / np.float32(255)
    x = (x - np.array(MEAN, np.float32)[:, None, None]) / np.array(STD, np.float32)[:, None, None]
    return x[None].astype(np.float32)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--pil-only", action="store_true", help="no torchvision: use the NumPy replica of its steps")
    ap.add_argument("--out", default=str(Path(__file__).resolve().parent))
    a = ap.parse_args()
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    if a.pil_only:
        transform, producer = pil_replica, f"NumPy replica of torchvision's steps, Pillow {PIL.__version__}, NumPy {np.__version__}"
    else:
        import torch
        import torchvision
        from torchvision.transforms._presets import ImageClassification

        t = ImageClassification(crop_size=CROP, resize_size=RESIZE)
        transform = lambda img: t(img).unsqueeze(0).numpy().astype(np.float32)  # noqa: E731
        producer = f"torchvision {torchvision.__version__} ImageClassification, torch {torch.__version__}, Pillow {PIL.__version__}"
    cases = []
    for name, w, h in CASES:
        Image.fromarray(pattern(w, h), "RGB").save(out / f"{name}.png")
        img = Image.open(out / f"{name}.png").convert("RGB")
        nw, nh = resized_size(w, h)
        np.save(out / f"{name}_resized.npy", np.asarray(img.resize((nw, nh), Image.BILINEAR), dtype=np.uint8))
        np.save(out / f"{name}_preprocessed.npy", np.ascontiguousarray(transform(img)))
        cases.append({"name": name, "width": w, "height": h, "resized_width": nw, "resized_height": nh})
        if name in JPEG_CASES:
            Image.fromarray(pattern(w, h), "RGB").save(out / f"{name}.jpg", quality=90)
            jpg = Image.open(out / f"{name}.jpg").convert("RGB")
            np.save(out / f"{name}_jpg_decoded.npy", np.asarray(jpg, dtype=np.uint8))
            np.save(out / f"{name}_jpg_preprocessed.npy", np.ascontiguousarray(transform(jpg)))
    (out / "reference.json").write_text(json.dumps({"producer": producer, "resize": RESIZE, "crop": CROP, "mean": MEAN, "std": STD,
                                                    "cases": cases, "jpeg_cases": JPEG_CASES}, indent=1) + "\n")
    print(f"wrote {len(cases)} cases to {out} ({producer})")


if __name__ == "__main__":
    main()
