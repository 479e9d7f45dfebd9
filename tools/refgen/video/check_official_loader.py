#!/usr/bin/env python3
"""Checks the goldens of pillow_bicubic_goldens.py against Meta's own loader.

Runs sam2.utils.misc.load_video_frames_from_jpg_images (from SAM2_SRC, the
official repository; needs torch, numpy, Pillow 9.4, tqdm) on a folder holding
tests/video/frames/chelsea_320x180.jpg as frame 0 and 1 and asserts that its
tensor is, bit for bit, the golden normalisation table looked up at Pillow's
BICUBIC resize of the frame: what tests/video_preprocess_test.cpp checks the
C++ preprocess_video_frame against. Also reports how the asynchronous loader
(async_loading_frames=True) differs. Usage, from the repository root:

    python3 tools/refgen/video/check_official_loader.py SAM2_SRC
"""
import importlib.util
import json
import os
import shutil
import struct
import sys
import tempfile

import numpy as np
import torch
from PIL import Image

FRAMES = "tests/video/frames"


def read_table():
    with open(f"{FRAMES}/normalized_values.safetensors", "rb") as f:
        (length,) = struct.unpack("<Q", f.read(8))
        header = json.loads(f.read(length))
        entry = header["normalized_values"]
        f.seek(8 + length + entry["data_offsets"][0])
        return np.frombuffer(f.read(3 * 256 * 4), dtype="<f4").reshape(3, 256)


def main():
    # misc.py alone: the package's __init__ needs hydra, which the loader does not.
    spec = importlib.util.spec_from_file_location(
        "sam2_misc", os.path.join(sys.argv[1], "sam2", "utils", "misc.py"))
    misc = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(misc)
    load_video_frames_from_jpg_images = misc.load_video_frames_from_jpg_images

    table = read_table()
    with tempfile.TemporaryDirectory() as folder:
        for name in ("0.jpg", "1.jpg"):
            shutil.copy(f"{FRAMES}/chelsea_320x180.jpg", os.path.join(folder, name))
        for size in (256, 1024):
            resized = np.asarray(
                Image.open(f"{FRAMES}/chelsea_320x180.jpg").convert("RGB").resize((size, size)))
            expected = np.stack([table[c][resized[..., c]] for c in range(3)])
            images, height, width = load_video_frames_from_jpg_images(
                folder, size, offload_video_to_cpu=True, compute_device=torch.device("cpu"))
            assert (height, width) == (180, 320), (height, width)
            official = images[0].numpy()
            assert official.dtype == np.float32
            mismatches = int((official.view(np.uint32) != expected.view(np.uint32)).sum())
            print(f"S={size}: official synchronous loader vs golden table[Pillow bicubic]: "
                  f"{mismatches} of {official.size} values differ")
            assert mismatches == 0
            lazy, _, _ = load_video_frames_from_jpg_images(
                folder, size, offload_video_to_cpu=True, async_loading_frames=True,
                compute_device=torch.device("cpu"))
            asynchronous = lazy[0].float().numpy()
            lazy.thread.join()
            differ = int((asynchronous != official).sum())
            print(f"S={size}: asynchronous loader (float64, rounded afterwards) differs in "
                  f"{differ} values, max {float(np.abs(asynchronous - official).max()):.3g}")


if __name__ == "__main__":
    main()
