#!/usr/bin/python3
"""Runs Meta's official SAM2AutomaticMaskGenerator on any photo and parameters, for differential checks.

usage: official_amg.py SAM2_SOURCE_DIR --config sam2.1_micro.yaml|sam2.1_hiera_t.yaml|...
                       --image PHOTO --params '{"points_per_side": 8, ...}' --out OFFICIAL.json [--salt 0]

Writes what generate() returns (output_mode "uncompressed_rle") in the "sam2-amg-1"
schema of ../shared/fixtures/amg/README.md, so that `sam2rt everything` can be compared
with it on cases the goldens do not cover (compare_amg.py). The model is built as
time_official_amg.py builds it (fixture weights generated(salt), float32), with the
two changes the goldens were made with (../shared/fixtures/README.md): the model
card's Pillow preprocessing instead of torchvision's float resize, and, for
min_mask_region_area, a CPU implementation of the CUDA kernel's contract
(8-connected components and their areas), without which the official code skips the
filling. Unlike the goldens (float64, with every decision near a threshold listed),
this is the official float32 run: differences next to a threshold are expected.
"""
import argparse
import json
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import time_official_amg as official  # noqa: E402  (this folder's model builder)

MEAN = (0.485, 0.456, 0.406)
STD = (0.229, 0.224, 0.225)


def pil_preprocess(image, size):
    """The model card's preprocessing: Pillow bilinear resize of the uint8 photo, then /255 and Normalize."""
    import torch
    from PIL import Image

    resized = np.asarray(Image.fromarray(image).convert("RGB").resize((size, size), Image.BILINEAR))
    t = torch.from_numpy(np.ascontiguousarray(resized.transpose(2, 0, 1))).to(torch.float32) / 255.0
    mean = torch.tensor(MEAN, dtype=torch.float32)[:, None, None]
    std = torch.tensor(STD, dtype=torch.float32)[:, None, None]
    return (t - mean) / std


def connected_components(mask):
    """sam2._C.get_connected_componnets' contract on the CPU: (labels, areas) of 8-connected components."""
    import torch
    from scipy import ndimage

    m = mask.to(torch.uint8).cpu().numpy()
    labels = np.zeros(m.shape, np.int32)
    areas = np.zeros(m.shape, np.int32)
    for n in range(m.shape[0]):
        lab, _ = ndimage.label(m[n, 0], structure=np.ones((3, 3), int))
        sizes = np.bincount(lab.ravel())
        sizes[0] = 0
        labels[n, 0] = lab
        areas[n, 0] = sizes[lab]
    return torch.from_numpy(labels), torch.from_numpy(areas)


def build_official_model(sam2_source, config, salt, threads, apply_postprocessing=True):
    """time_official_amg.build_model's model, with the model card's Pillow preprocessing (single images
    and batches) and the CPU connected-components stand-in installed."""
    import torch

    fixtures = os.path.join(os.path.dirname(os.path.abspath(__file__)), "../../../shared/fixtures")
    model = official.build_model(sam2_source, fixtures, config, salt, threads, apply_postprocessing)
    import sam2.utils.misc
    from sam2.utils.transforms import SAM2Transforms

    size = model.image_size
    SAM2Transforms.__call__ = lambda self, x: pil_preprocess(x, size)
    SAM2Transforms.forward_batch = lambda self, images: torch.stack([pil_preprocess(x, size) for x in images])
    sam2.utils.misc.get_connected_components = connected_components
    return model


def to_json(value):
    if isinstance(value, dict):
        return {k: to_json(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [to_json(v) for v in value]
    if isinstance(value, np.generic):
        return value.item()
    return value


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("sam2_source")
    ap.add_argument("--config", required=True, help="sam2.1_micro.yaml (the fixtures') or an official sam2.1 config")
    ap.add_argument("--image", required=True)
    ap.add_argument("--params", required=True, help="JSON object of generator parameters (official names)")
    ap.add_argument("--out", required=True)
    ap.add_argument("--salt", type=lambda s: int(s, 0), default=0)
    ap.add_argument("--threads", type=int, default=2)
    args = ap.parse_args()

    from PIL import Image
    import torch

    model = build_official_model(args.sam2_source, args.config, args.salt, args.threads)
    from sam2.automatic_mask_generator import SAM2AutomaticMaskGenerator

    params = json.loads(args.params)
    params.pop("output_mode", None)
    amg = SAM2AutomaticMaskGenerator(model, output_mode="uncompressed_rle", **params)
    official.set_feature_sizes(amg.predictor, model)
    image = np.asarray(Image.open(args.image).convert("RGB"))
    with torch.inference_mode():
        masks = amg.generate(image)
    result = {
        "format": "sam2-amg-1",
        "case": "official float32",
        "image": os.path.basename(args.image),
        "image_hw": [int(image.shape[0]), int(image.shape[1])],
        "params": params,
        "masks": to_json(masks),
    }
    with open(args.out, "w") as f:
        json.dump(result, f)
    print(f"{len(masks)} masks -> {args.out}")


if __name__ == "__main__":
    main()
