#!/usr/bin/env python3
"""Segment an object from clicks with the sam2rt Python package (the official SAM2ImagePredictor API).

    python3 examples/predictor.py --checkpoint models/sam2.1_hiera_tiny.pt \
        --image photo.jpg --point 390,440 --out mask.png

Writes the highest-scoring mask as an 8-bit PNG (255 = object) and prints the scores.
"""

import argparse
import os
import sys

import numpy as np
from PIL import Image

import sam2rt


def parse_point(text):
    parts = text.split(",")
    if len(parts) not in (2, 3):
        raise argparse.ArgumentTypeError(f"point {text!r} is not X,Y[,LABEL]")
    try:
        return float(parts[0]), float(parts[1]), int(parts[2]) if len(parts) == 3 else 1
    except ValueError:
        raise argparse.ArgumentTypeError(f"point {text!r} is not X,Y[,LABEL]") from None


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--config", default="configs/sam2.1/sam2.1_hiera_t.yaml",
                        help="official config name or YAML file (default: SAM 2.1 Tiny)")
    weights = parser.add_mutually_exclusive_group(required=True)
    weights.add_argument("--checkpoint", help="official .pt checkpoint or .safetensors")
    weights.add_argument("--synthetic-weights", type=int, metavar="SALT",
                         help="generated test weights instead of a checkpoint (meaningless masks)")
    parser.add_argument("--image", required=True, help="RGB photo (PNG, JPEG, ...)")
    parser.add_argument("--point", type=parse_point, action="append", required=True,
                        help="click X,Y[,LABEL] in image pixels, label 1 = object (default), 0 = background")
    parser.add_argument("--out", required=True, help="PNG to write the best mask to")
    args = parser.parse_args()

    try:
        model = sam2rt.build_sam2(args.config, ckpt_path=args.checkpoint, synthetic_weights=args.synthetic_weights)
        predictor = sam2rt.SAM2ImagePredictor(model)
        predictor.set_image(Image.open(args.image))
        points = np.array([p[:2] for p in args.point], dtype=np.float32)
        labels = np.array([p[2] for p in args.point], dtype=np.int32)
        masks, scores, _ = predictor.predict(point_coords=points, point_labels=labels, multimask_output=True)
        best = int(np.argmax(scores))
        # Written beside the target, then renamed: a failed run leaves no partial file.
        partial = f"{args.out}.partial"
        Image.fromarray((masks[best] * 255).astype(np.uint8), mode="L").save(partial, format="PNG")
        os.replace(partial, args.out)
    except (ValueError, RuntimeError, OSError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    print(f"{len(masks)} masks, scores {np.round(scores, 3).tolist()}; best {best} -> {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
