#!/usr/bin/python3
"""Compares sam2rt.SAM2ImagePredictor with Meta's official SAM2ImagePredictor on prompts the goldens do not cover.

usage: PYTHONPATH=build/python differential_predictor.py SAM2_SOURCE_DIR [--model micro|tiny]
       [--preprocess pillow|torchvision] [--max-hole-area A] [--max-sprinkle-area A] [--no-postprocessing]
       [--random N [--seed S]]

Both predictors get the same model (fixture weights generated(0), float32), photo and
predict() arguments: points with background clicks, boxes alone and with points, B x 4
box batches, mask inputs fed back from a previous prediction, normalize_coords=False,
return_logits, multimask_output True and False, points on the photo's edges, set_image_batch
with predict_batch; with --random N, N calls of these forms per photo with random prompts.
The official predictor preprocesses as the goldens do (the model
card's Pillow resize: official_amg.pil_preprocess). Prints, per call, the largest
differences of the low-res logits, the scores and the masks (logits with return_logits,
else pixels that differ), and exits 1 if a difference is beyond float32 rounding. With hole or
sprinkle filling, a low-res logit within rounding of 0 can be filled (set to +-10) in one run
only, which moves the mask by more than rounding; such a call passes when that explains every
plane that differs, and says so. (Left out:
points outside the photo and labels other than 0 and 1, which the official predictor
encodes and sam2rt refuses with an error naming the point.)
"""
import argparse
import os
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import official_amg  # noqa: E402
import time_official_amg  # noqa: E402

SHARED = os.path.normpath(os.path.join(HERE, "../../../shared"))
IMAGES = os.path.join(SHARED, "fixtures", "images")
# Float32 runs of the same model in a different order of operations: logits agree to
# ~1e-5 relative here (the fixtures' float32-vs-float64 table shows the same scale).
LOGIT_TOLERANCE = 1e-4
SCORE_TOLERANCE = 1e-5


def calls(width, height, rng):
    """(name, predict kwargs) pairs; mask_input "previous" is the last call's best low-res logits."""
    w, h = float(width), float(height)
    point = [[0.37 * w, 0.61 * h]]
    return [
        ("one point", dict(point_coords=point, point_labels=[1])),
        ("one point, single mask", dict(point_coords=point, point_labels=[1], multimask_output=False)),
        ("object + background clicks", dict(point_coords=[[0.2 * w, 0.3 * h], [0.7 * w, 0.5 * h], [0.5 * w, 0.9 * h]],
                                            point_labels=[1, 0, 1])),
        ("box", dict(box=[0.1 * w, 0.2 * h, 0.6 * w, 0.8 * h])),
        ("box + point, single mask", dict(box=[0.1 * w, 0.2 * h, 0.6 * w, 0.8 * h], point_coords=[[0.3 * w, 0.5 * h]],
                                          point_labels=[0], multimask_output=False)),
        ("B x 4 boxes", dict(box=[[0, 0, 0.5 * w, 0.5 * h], [0.25 * w, 0.1 * h, w, 0.9 * h], [5, 7, 30, 40]])),
        ("B x N points", dict(point_coords=rng.uniform([0, 0], [w, h], size=(2, 3, 2)).astype(np.float32),
                              point_labels=np.array([[1, 1, 0], [1, 0, 0]]))),
        ("mask input fed back", dict(point_coords=point, point_labels=[1], mask_input="previous",
                                     multimask_output=False)),
        ("normalized coordinates", dict(point_coords=[[0.37, 0.61]], point_labels=[1], normalize_coords=False)),
        ("normalized box", dict(box=[0.1, 0.2, 0.6, 0.8], normalize_coords=False, multimask_output=False)),
        ("logits", dict(point_coords=point, point_labels=[1], return_logits=True)),
        ("points on the photo's edges", dict(point_coords=[[0.0, 0.5 * h], [w, h]], point_labels=[1, 1])),
    ]


def random_calls(width, height, rng, count):
    """`count` calls with random prompts inside the photo (edges included), in the forms of calls()."""
    w, h = float(width), float(height)

    def points(n):
        xy = rng.uniform([0, 0], [w, h], size=(n, 2))
        # About one coordinate in ten on the photo's edges (0, or the width or height).
        on_edge = rng.random((n, 2)) < 0.1
        xy = np.where(on_edge, np.where(rng.random((n, 2)) < 0.5, 0.0, [w, h]), xy)
        return xy.astype(np.float32)

    def box():
        x = np.sort(rng.uniform(0, w, 2))
        y = np.sort(rng.uniform(0, h, 2))
        return [float(x[0]), float(y[0]), float(x[1]), float(y[1])]

    result = []
    for i in range(count):
        kind = rng.integers(0, 6)
        kwargs = dict(multimask_output=bool(rng.random() < 0.6), return_logits=bool(rng.random() < 0.3))
        n = int(rng.integers(1, 7))
        if kind == 0:
            kwargs.update(point_coords=points(n), point_labels=rng.integers(0, 2, n))
        elif kind == 1:
            kwargs.update(box=box())
        elif kind == 2:
            kwargs.update(box=box(), point_coords=points(n), point_labels=rng.integers(0, 2, n))
        elif kind == 3:
            kwargs.update(box=[box() for _ in range(int(rng.integers(1, 5)))])
        elif kind == 4:
            batch = int(rng.integers(1, 4))
            kwargs.update(point_coords=np.stack([points(n) for _ in range(batch)]),
                          point_labels=rng.integers(0, 2, (batch, n)))
        else:
            kwargs.update(point_coords=points(n), point_labels=rng.integers(0, 2, n), mask_input="previous")
        result.append((f"random call {i} ({kind})", kwargs))
    return result


def fill_flips(low_a, low_b, planes_differing):
    """With hole/sprinkle filling on, a low-res logit within rounding of 0 may land on the other side of it
    in the two runs; the filling then sets its component to +-10 in one run only, which moves the upsampled
    mask far more than rounding. The caller has checked that the low-res logits agree within rounding, so
    any logit on different sides of 0 is within rounding of it. Returns (explained, text): explained when
    every plane whose mask differs has such a logit."""
    a = low_a.reshape(-1, *low_a.shape[-2:])
    b = low_b.reshape(-1, *low_b.shape[-2:])
    flipped = (a > 0) != (b > 0)
    per_plane = flipped.reshape(len(a), -1).sum(1)
    if not all(per_plane[i] > 0 for i in planes_differing):
        return False, ""
    closest = float(np.abs(a[flipped]).max())
    return True, f" (filling decided differently at {int(per_plane.sum())} low-res logits at most {closest:.1e} from 0)"


def compare(name, official, ours, return_logits, filling):
    masks_a, scores_a, low_a = (np.asarray(x, np.float32) for x in official)
    masks_b, scores_b, low_b = (np.asarray(x, np.float32) for x in ours)
    if masks_a.shape != masks_b.shape or scores_a.shape != scores_b.shape or low_a.shape != low_b.shape:
        print(f"  {name}: SHAPES differ: official {masks_a.shape} {scores_a.shape} {low_a.shape}, "
              f"ours {masks_b.shape} {scores_b.shape} {low_b.shape}")
        return False
    scale = max(1.0, float(np.abs(low_a).max()))
    d_low = float(np.abs(low_a - low_b).max()) / scale
    d_score = float(np.abs(scores_a - scores_b).max())
    planes_a = masks_a.reshape(-1, *masks_a.shape[-2:])
    planes_b = masks_b.reshape(-1, *masks_b.shape[-2:])
    if return_logits:
        mask_scale = max(1.0, float(np.abs(masks_a).max()))
        d_mask = float(np.abs(masks_a - masks_b).max()) / mask_scale
        mask_text = f"mask logits {d_mask:.1e}"
        differing = [i for i in range(len(planes_a))
                     if np.abs(planes_a[i] - planes_b[i]).max() / mask_scale > LOGIT_TOLERANCE]
    else:
        differ = int((masks_a != masks_b).sum())
        mask_text = f"{differ} pixels of {masks_a.size}"
        differing = [] if differ <= max(3, masks_a.size // 100000) else \
            [i for i in range(len(planes_a)) if (planes_a[i] != planes_b[i]).any()]
    ok_mask = not differing
    if differing and filling and d_low <= LOGIT_TOLERANCE:
        ok_mask, explanation = fill_flips(low_a, low_b, differing)
        mask_text += explanation
    ok = d_low <= LOGIT_TOLERANCE and d_score <= SCORE_TOLERANCE and ok_mask
    print(f"  {name}: low-res logits {d_low:.1e} (relative), scores {d_score:.1e}, {mask_text}"
          + ("" if ok else "   <-- BEYOND ROUNDING"))
    return ok


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("sam2_source")
    ap.add_argument("--model", choices=("micro", "tiny"), default="micro")
    ap.add_argument("--images", nargs="*", default=["chelsea_288x112.png", "coffee_1500x1100.png", "astronaut.png"])
    ap.add_argument("--preprocess", choices=("pillow", "torchvision"), default="pillow",
                    help="torchvision: both predictors resize the float image with antialiasing (the official "
                         "predictor's own path, as torchvision >= 0.17 runs it; Debian's 0.14 is patched to match)")
    ap.add_argument("--no-postprocessing", action="store_true",
                    help="build both models with apply_postprocessing=False (no dynamic multimask selection)")
    ap.add_argument("--max-hole-area", type=float, default=0.0)
    ap.add_argument("--max-sprinkle-area", type=float, default=0.0)
    ap.add_argument("--random", type=int, default=0, metavar="N",
                    help="N calls with random prompts per photo instead of the fixed list")
    ap.add_argument("--seed", type=int, default=0, help="the random calls' seed")
    args = ap.parse_args()

    import torch
    from PIL import Image

    import sam2rt

    config = "sam2.1_micro.yaml" if args.model == "micro" else "sam2.1_hiera_t.yaml"
    postprocessing = not args.no_postprocessing
    model = official_amg.build_official_model(args.sam2_source, config, salt=0, threads=2,
                                              apply_postprocessing=postprocessing)
    from sam2.sam2_image_predictor import SAM2ImagePredictor

    size = model.image_size
    if args.preprocess == "torchvision":
        from sam2.utils.transforms import SAM2Transforms
        from torchvision.transforms import Normalize, Resize, ToTensor

        def torchvision_preprocess(image):
            resized = Resize((size, size), antialias=True)(ToTensor()(image))
            return Normalize(official_amg.MEAN, official_amg.STD)(resized)

        SAM2Transforms.__call__ = lambda self, x: torchvision_preprocess(x)
        SAM2Transforms.forward_batch = lambda self, images: torch.stack([torchvision_preprocess(x) for x in images])
    fill = dict(max_hole_area=args.max_hole_area, max_sprinkle_area=args.max_sprinkle_area)
    filling = args.max_hole_area > 0 or args.max_sprinkle_area > 0
    official = SAM2ImagePredictor(model, **fill)
    time_official_amg.set_feature_sizes(official, model)
    ours_config = os.path.join(SHARED, "fixtures", "micro", config) if args.model == "micro" else \
        "configs/sam2.1/sam2.1_hiera_t.yaml"
    ours_model = sam2rt.build_sam2(ours_config, synthetic_weights=0, apply_postprocessing=postprocessing)
    ours = sam2rt.SAM2ImagePredictor(ours_model, preprocess=args.preprocess, **fill)

    all_ok = True
    rng = np.random.default_rng(args.seed)
    photos = [np.asarray(Image.open(os.path.join(IMAGES, name)).convert("RGB")) for name in args.images]
    for name, photo in zip(args.images, photos):
        print(f"{args.model}, {name} ({photo.shape[1]}x{photo.shape[0]})")
        with torch.inference_mode():
            official.set_image(photo)
        ours.set_image(photo)
        previous = None
        chosen = random_calls(photo.shape[1], photo.shape[0], rng, args.random) if args.random > 0 else \
            calls(photo.shape[1], photo.shape[0], rng)
        for call, kwargs in chosen:
            if kwargs.get("mask_input") == "previous":
                kwargs = dict(kwargs, mask_input=previous)
            with torch.inference_mode():
                result_a = official.predict(**kwargs)
            result_b = ours.predict(**kwargs)
            all_ok &= compare(call, result_a, result_b, kwargs.get("return_logits", False), filling)
            # The official low-res logits of the call's best-scored mask, 1 x 256 x 256.
            planes = np.asarray(result_a[2]).reshape(-1, *np.asarray(result_a[2]).shape[-2:])
            scores = np.asarray(result_a[1]).reshape(-1)
            previous = planes[int(np.argmax(scores))][None]
    print("set_image_batch + predict_batch")
    with torch.inference_mode():
        official.set_image_batch(photos)
    ours.set_image_batch(photos)
    boxes = [np.array([[2.0, 3.0, p.shape[1] * 0.5, p.shape[0] * 0.7]], np.float32) for p in photos]
    with torch.inference_mode():
        result_a = official.predict_batch(box_batch=boxes, multimask_output=False)
    result_b = ours.predict_batch(box_batch=boxes, multimask_output=False)
    for i in range(len(photos)):
        all_ok &= compare(f"image {i}", [r[i] for r in result_a], [r[i] for r in result_b], False, filling)
    print("every output within float32 rounding" if all_ok else "DIFFERENCES beyond float32 rounding")
    return 0 if all_ok else 1


if __name__ == "__main__":
    sys.exit(main())
