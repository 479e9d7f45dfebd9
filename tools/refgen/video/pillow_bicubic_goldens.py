#!/usr/bin/env python3
"""Goldens of the official video loader's per-frame preprocessing (Pillow 9.4).

sam2/utils/misc.py `_load_img_as_tensor` does
    np.array(Image.open(path).convert("RGB").resize((S, S))) / 255.0
stores it in a float32 tensor, then `images -= img_mean; images /= img_std`.
`resize` without a filter is BICUBIC for RGB images in Pillow 9.4; the official
loader does not apply the EXIF orientation. This script writes, into
tests/video/frames/ (run from the repository root, with Debian's python3-pil and
python3-numpy; the source photo is ../shared/fixtures/images/chelsea.png):

  chelsea_320x180.jpg           the test frame (a JPEG, as the official loader reads)
  chelsea_320x180_bicubic_S.png Pillow's decode + default resize to S x S (S = 256, 64)
  chelsea_320x180_bicubic_1024.json  the same at S = 1024 (the model's size) as the
                                FNV-1a 64 hash and the sum of its RGB bytes (the PNG is 0.7 MB)
  noise_37x23.png               seeded black/white/random noise: bicubic overshoots clip
  noise_37x23_bicubic_WxH.png   its default resizes to 64x64, 8x8 and 37x5 (one pass only)
  exif_orientation_6.jpg        a 48x32 JPEG whose EXIF says "rotate 90"
  exif_orientation_6_decoded.png  Pillow's Image.open(...).convert("RGB"): not rotated
  normalized_values.safetensors F32 [3, 256]: the official normalisation of every
                                uint8 value x in channel c, as the loader computes it
"""
import json
import os
import struct
import sys

import numpy as np
import PIL
from PIL import Image

OUT = "tests/video/frames"
MEAN = (0.485, 0.456, 0.406)
STD = (0.229, 0.224, 0.225)


def official_resize(path, size):
    return Image.open(path).convert("RGB").resize((size, size))


def official_normalization_table():
    # Every uint8 value through the loader's arithmetic: numpy's uint8 / 255.0
    # (float64), stored into a float32 tensor, then in-place float32 -= mean, /= std.
    values = np.arange(256, dtype=np.uint8)
    table = np.empty((3, 256), dtype=np.float32)
    for c in range(3):
        table[c] = values / 255.0
    mean = np.array(MEAN, dtype=np.float32)[:, None]
    std = np.array(STD, dtype=np.float32)[:, None]
    table -= mean
    table /= std
    return table


def fnv1a64(data):
    h = 0xCBF29CE484222325
    for byte in data:
        h = ((h ^ byte) * 0x100000001B3) & 0xFFFFFFFFFFFFFFFF
    return f"{h:016x}"


def write_safetensors(path, name, array):
    data = np.ascontiguousarray(array, dtype="<f4").tobytes()
    header = {name: {"dtype": "F32", "shape": list(array.shape), "data_offsets": [0, len(data)]}}
    header_bytes = json.dumps(header, separators=(",", ":")).encode()
    header_bytes += b" " * (-len(header_bytes) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(header_bytes)) + header_bytes + data)


def main():
    if PIL.__version__ != "9.4.0":
        sys.exit(f"needs Debian 12's Pillow 9.4.0, found {PIL.__version__}")
    os.makedirs(OUT, exist_ok=True)
    photo = Image.open("../shared/fixtures/images/chelsea.png").convert("RGB")

    frame = f"{OUT}/chelsea_320x180.jpg"
    photo.resize((320, 180), Image.Resampling.LANCZOS).save(frame, quality=90)
    for size in (256, 64):
        official_resize(frame, size).save(f"{OUT}/chelsea_320x180_bicubic_{size}.png")
    model_size = np.asarray(official_resize(frame, 1024), dtype=np.uint8).tobytes()
    with open(f"{OUT}/chelsea_320x180_bicubic_1024.json", "w") as f:
        json.dump({"width": 1024, "height": 1024, "fnv1a64": fnv1a64(model_size),
                   "byte_sum": sum(model_size)}, f)
        f.write("\n")

    rng = np.random.default_rng(20261206)
    noise = rng.integers(0, 256, size=(23, 37, 3), dtype=np.uint8)
    extremes = rng.random((23, 37)) < 0.5
    noise[extremes] = rng.choice(np.array([0, 255], dtype=np.uint8), size=(extremes.sum(), 1))
    noise_path = f"{OUT}/noise_37x23.png"
    Image.fromarray(noise, "RGB").save(noise_path)
    for width, height in ((64, 64), (8, 8), (37, 5)):
        Image.open(noise_path).convert("RGB").resize((width, height)).save(
            f"{OUT}/noise_37x23_bicubic_{width}x{height}.png")

    rotated = f"{OUT}/exif_orientation_6.jpg"
    exif = Image.Exif()
    exif[0x0112] = 6
    photo.resize((48, 32), Image.Resampling.LANCZOS).save(rotated, quality=90, exif=exif)
    Image.open(rotated).convert("RGB").save(f"{OUT}/exif_orientation_6_decoded.png")

    write_safetensors(f"{OUT}/normalized_values.safetensors", "normalized_values",
                      official_normalization_table())


if __name__ == "__main__":
    main()
