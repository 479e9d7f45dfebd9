#!/usr/bin/python3
"""Runs `sam2rt everything` and Meta's official generator on cases the goldens do not cover, and compares them.

usage: differential_amg.py SAM2_SOURCE_DIR [--build build] [--only NAME ...] [--work /tmp/amg-differential]
                          [--random N [--seed S] [--random-model micro|tiny]]

For every case below: official_amg.py (the official SAM2AutomaticMaskGenerator in
float32, fixture weights), then `sam2rt everything` with the same parameters, then
compare_amg.py. Prints one block per case and a summary; exit 0 when every case
pairs every mask. The official runs take seconds for micro and about a minute for
Tiny on a 2-core machine; their results are kept in --work and reused.

--random N runs N cases drawn from --seed instead (micro, or Tiny kept small): every
parameter at random within the official ranges, on the fixture photos and on copies
resized to random sizes (made in --work); each seed is a fresh sweep.

Needs what time_official_amg.py needs (Debian's python3-torch, python3-torchvision,
python3-omegaconf, python3-pil, python3-numpy) and python3-scipy.
"""
import argparse
import json
import os
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "../.."))
SHARED = os.path.normpath(os.path.join(ROOT, "../shared"))
MICRO = "sam2.1_micro.yaml"
TINY = "sam2.1_hiera_t.yaml"

# name, model config, image (fixtures/images), parameters (official names; unlisted = official defaults).
# The fixture weights make near-whole-image masks at low mask_threshold and predicted IoUs of 0.3-0.8,
# so most cases raise mask_threshold and lower the filters to keep masks that NMS and the crops can act on.
CASES = [
    ("coffee_crops_nofilter", MICRO, "coffee_1500x1100.png",
     {"points_per_side": 8, "points_per_batch": 16, "pred_iou_thresh": 0.0, "stability_score_thresh": 0.0,
      "mask_threshold": 3.0, "box_nms_thresh": 0.7, "crop_n_layers": 1, "crop_nms_thresh": 0.7}),
    ("coffee_two_crop_layers", MICRO, "coffee_1500x1100.png",
     {"points_per_side": 8, "points_per_batch": 30, "pred_iou_thresh": 0.3, "stability_score_thresh": 0.2,
      "stability_score_offset": 0.1, "mask_threshold": 2.5, "box_nms_thresh": 0.8, "crop_n_layers": 2,
      "crop_n_points_downscale_factor": 2, "crop_overlap_ratio": 0.5}),
    ("coffee_two_crop_layers_nofilter", MICRO, "coffee_1500x1100.png",
     {"points_per_side": 6, "points_per_batch": 64, "pred_iou_thresh": 0.0, "stability_score_thresh": 0.0,
      "mask_threshold": 4.0, "box_nms_thresh": 0.5, "crop_n_layers": 2, "crop_nms_thresh": 0.5}),
    ("chelsea_m2m_single_mask", MICRO, "chelsea.png",
     {"points_per_side": 6, "points_per_batch": 10, "pred_iou_thresh": 0.3, "stability_score_thresh": 0.2,
      "stability_score_offset": 0.3, "mask_threshold": 1.0, "box_nms_thresh": 0.5, "use_m2m": True,
      "multimask_output": False}),
    ("astronaut_holes_crops", MICRO, "astronaut.png",
     {"points_per_side": 6, "points_per_batch": 64, "pred_iou_thresh": 0.4, "stability_score_thresh": 0.3,
      "stability_score_offset": 0.2, "mask_threshold": 1.5, "box_nms_thresh": 0.9, "crop_n_layers": 1,
      "min_mask_region_area": 30}),
    ("astronaut_point_grids", MICRO, "astronaut.png",
     {"point_grids": [[[0.1, 0.2], [0.5, 0.5], [0.9, 0.33], [0.25, 0.75]], [[0.5, 0.5], [0.2, 0.8]]],
      "points_per_side": None, "points_per_batch": 3, "pred_iou_thresh": 0.3, "stability_score_thresh": 0.2,
      "stability_score_offset": 0.2, "mask_threshold": 2.0, "box_nms_thresh": 0.7, "crop_n_layers": 1}),
    ("chelsea_defaults", MICRO, "chelsea_288x112.png", {}),
    ("coffee_single_mask", MICRO, "coffee_1500x1100.png",
     {"points_per_side": 10, "pred_iou_thresh": 0.3, "stability_score_thresh": 0.1, "stability_score_offset": 0.3,
      "mask_threshold": 2.0, "box_nms_thresh": 0.6, "multimask_output": False}),
    ("chelsea_m2m_holes_crops", MICRO, "chelsea.png",
     {"points_per_side": 5, "points_per_batch": 7, "pred_iou_thresh": 0.3, "stability_score_thresh": 0.2,
      "stability_score_offset": 0.3, "mask_threshold": 1.0, "box_nms_thresh": 0.7, "use_m2m": True,
      "min_mask_region_area": 12, "crop_n_layers": 1, "crop_n_points_downscale_factor": 2}),
    ("chelsea_m2m_holes_nofilter", MICRO, "chelsea.png",
     {"points_per_side": 7, "points_per_batch": 16, "pred_iou_thresh": 0.0, "stability_score_thresh": 0.0,
      "mask_threshold": 1.5, "box_nms_thresh": 1.0, "use_m2m": True, "min_mask_region_area": 25,
      "crop_n_layers": 1, "crop_n_points_downscale_factor": 3}),
    ("chelsea_crops_single_mask_m2m_holes", MICRO, "chelsea.png",
     {"points_per_side": 8, "points_per_batch": 40, "pred_iou_thresh": 0.3, "stability_score_thresh": 0.15,
      "stability_score_offset": 0.3, "mask_threshold": 1.0, "box_nms_thresh": 0.8, "crop_n_layers": 1,
      "multimask_output": False, "use_m2m": True, "min_mask_region_area": 50, "crop_nms_thresh": 0.5}),
    ("one_point_offset0_negative_threshold", MICRO, "chelsea_288x112.png",
     {"points_per_side": 1, "pred_iou_thresh": 0.0, "stability_score_thresh": 0.5, "stability_score_offset": 0.0,
      "mask_threshold": -1.0, "box_nms_thresh": 0.0}),
    ("coffee_no_overlap", MICRO, "coffee.png",
     {"points_per_side": 7, "points_per_batch": 5, "pred_iou_thresh": 0.35, "stability_score_thresh": 0.3,
      "stability_score_offset": 0.4, "mask_threshold": -2.0, "box_nms_thresh": 0.3, "crop_n_layers": 1,
      "crop_overlap_ratio": 0.0, "crop_nms_thresh": 0.3}),
    ("coffee_big_holes", MICRO, "coffee_1500x1100.png",
     {"points_per_side": 6, "pred_iou_thresh": 0.0, "stability_score_thresh": 0.0, "mask_threshold": 0.5,
      "box_nms_thresh": 0.7, "min_mask_region_area": 400}),
    ("astronaut_single_mask_nofilter", MICRO, "astronaut.png",
     {"points_per_side": 9, "points_per_batch": 81, "pred_iou_thresh": 0.0, "stability_score_thresh": 0.0,
      "mask_threshold": 2.5, "box_nms_thresh": 1.0, "multimask_output": False}),
    ("over_1000_boxes_nms", MICRO, "chelsea_288x112.png",
     {"points_per_side": 32, "pred_iou_thresh": 0.0, "stability_score_thresh": 0.0, "mask_threshold": 3.0,
      "box_nms_thresh": 0.7}),
    ("tiny_crops", TINY, "astronaut.png",
     {"points_per_side": 8, "points_per_batch": 32, "pred_iou_thresh": 0.6, "stability_score_thresh": 0.8,
      "stability_score_offset": 0.5, "mask_threshold": 2.0, "box_nms_thresh": 0.7, "crop_n_layers": 1,
      "crop_n_points_downscale_factor": 2}),
    ("tiny_m2m_holes", TINY, "astronaut.png",
     {"points_per_side": 4, "points_per_batch": 8, "pred_iou_thresh": 0.5, "stability_score_thresh": 0.5,
      "stability_score_offset": 0.5, "mask_threshold": 2.0, "box_nms_thresh": 1.0, "use_m2m": True,
      "min_mask_region_area": 20}),
    ("tiny_coffee_single_mask_nofilter", TINY, "coffee_1500x1100.png",
     {"points_per_side": 6, "pred_iou_thresh": 0.0, "stability_score_thresh": 0.0, "mask_threshold": 2.0,
      "box_nms_thresh": 0.7, "multimask_output": False}),
    ("tiny_chelsea_nofilter", TINY, "chelsea.png",
     {"points_per_side": 6, "pred_iou_thresh": 0.0, "stability_score_thresh": 0.0, "mask_threshold": 3.0,
      "box_nms_thresh": 0.9}),
]


def random_cases(count, seed, work, config):
    """`count` cases of `config` drawn from `seed`: (name, config, image path, parameters). Tiny's are
    kept small (at most 6 points per side, one crop layer): the official code takes minutes on them."""
    import random

    from PIL import Image

    photos = ["astronaut.png", "chelsea.png", "chelsea_288x112.png", "coffee.png", "coffee_1500x1100.png"]
    cases = []
    for i in range(count):
        rng = random.Random(f"{seed}-{i}")
        name = f"random_{'tiny_' if config == TINY else ''}{seed}_{i}"
        image = os.path.join(SHARED, "fixtures", "images", rng.choice(photos))
        if rng.random() < 0.5:
            # The photo at a random size and aspect: odd sizes exercise the crop boxes and the uncropping.
            size = (rng.randint(40, 1700), rng.randint(40, 1300))
            resized = os.path.join(work, f"{name}_{size[0]}x{size[1]}.png")
            Image.open(image).convert("RGB").resize(size, Image.BILINEAR).save(resized)
            image = resized
        crop_n_layers = rng.choice([0, 0, 1, 1] if config == TINY else [0, 0, 1, 1, 2])
        downscale = rng.choice([1, 1, 2, 3])
        params = {
            # At least one point per side in the last crop layer (an empty grid is refused, not compared).
            "points_per_side": rng.randint(max(1, downscale ** crop_n_layers), 6 if config == TINY else 12),
            "points_per_batch": rng.randint(1, 100),
            "pred_iou_thresh": rng.choice([0.0, round(rng.uniform(0.0, 0.6), 3)]),
            "stability_score_thresh": rng.choice([0.0, round(rng.uniform(0.0, 0.6), 3)]),
            "stability_score_offset": round(rng.uniform(0.0, 1.0), 3),
            "mask_threshold": round(rng.uniform(-3.0, 4.0), 3),
            "box_nms_thresh": rng.choice([1.0, round(rng.uniform(0.0, 1.0), 3)]),
            "crop_n_layers": crop_n_layers,
            "crop_nms_thresh": round(rng.uniform(0.2, 1.0), 3),
            "crop_overlap_ratio": round(rng.uniform(0.0, 0.6), 3),
            "crop_n_points_downscale_factor": downscale,
            "min_mask_region_area": rng.choice([0, 0, rng.randint(1, 300)]),
            "use_m2m": rng.random() < 0.3,
            "multimask_output": rng.random() < 0.7,
        }
        if rng.random() < 0.15:
            # Custom grids instead: one per crop layer, random points in [0, 1].
            params["points_per_side"] = None
            params["point_grids"] = [[[round(rng.random(), 4), round(rng.random(), 4)]
                                      for _ in range(rng.randint(1, 30))] for _ in range(crop_n_layers + 1)]
        cases.append((name, config, image, params))
    return cases


def kept_official_run_matches(path, image, params):
    """Whether --work holds an official result of this photo and these parameters (a case's name alone
    does not say: the random cases of a seed change when their generator does)."""
    if not os.path.exists(path):
        return False
    with open(path) as f:
        kept = json.load(f)
    return kept.get("image") == os.path.basename(image) and all(
        kept.get("params", {}).get(key) == value for key, value in params.items()
        if value is not None and key != "point_grids")


def our_command(build, config, image, params, out, work, name):
    cmd = [os.path.join(build, "sam2rt"), "everything", "--quiet", "--synthetic-weights", "0", "--threads", "2",
           "--image", image, "--json", out, "--output-mode", "uncompressed_rle"]
    if config == MICRO:
        cmd += ["--config", os.path.join(SHARED, "fixtures", "micro", MICRO)]
    else:
        cmd += ["--variant", {TINY: "tiny"}[config]]
    for key, value in params.items():
        if value is None:
            continue
        if key == "point_grids":
            grids = os.path.join(work, f"{name}_point_grids.json")
            with open(grids, "w") as f:
                json.dump(value, f)
            cmd += ["--point-grids", grids]
            continue
        cmd += ["--" + key.replace("_", "-"), str(value).lower() if isinstance(value, bool) else str(value)]
    return cmd


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("sam2_source")
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--only", nargs="*", default=[])
    ap.add_argument("--work", default="/tmp/amg-differential")
    ap.add_argument("--random", type=int, default=0, metavar="N", help="N random cases instead of the list")
    ap.add_argument("--seed", type=int, default=0, help="the random cases' seed")
    ap.add_argument("--random-model", choices=["micro", "tiny"], default="micro", help="the random cases' model")
    args = ap.parse_args()
    os.makedirs(args.work, exist_ok=True)
    if args.random > 0:
        cases = random_cases(args.random, args.seed, args.work, TINY if args.random_model == "tiny" else MICRO)
    else:
        cases = [(name, config, os.path.join(SHARED, "fixtures", "images", image_name), params)
                 for name, config, image_name, params in CASES]
    failed, official_raised = [], []
    for name, config, image, params in cases:
        if args.only and name not in args.only:
            continue
        image_name = os.path.basename(image)
        official = os.path.join(args.work, f"{name}_official.json")
        ours = os.path.join(args.work, f"{name}_ours.json")
        start = time.time()
        official_error = None
        if not kept_official_run_matches(official, image, params):
            reference = subprocess.run([sys.executable, os.path.join(HERE, "official_amg.py"), args.sam2_source,
                                        "--config", config, "--image", image, "--params", json.dumps(params),
                                        "--out", official],
                                       capture_output=True, text=True, env=dict(os.environ, OMP_NUM_THREADS="2"))
            if reference.returncode != 0:
                official_error = (reference.stderr.strip().splitlines() or ["(no message)"])[-1]
        middle = time.time()
        run = subprocess.run(our_command(args.build, config, image, params, ours, args.work, name),
                             capture_output=True, text=True)
        end = time.time()
        if run.returncode != 0:
            print(f"== {name}: sam2rt failed: {run.stderr.strip()}")
            failed.append(name)
            continue
        if official_error is not None:
            # Nothing to compare with: say what the official code raised and what we returned.
            with open(ours) as f:
                count = len(json.load(f)["masks"])
            print(f"== {name} ({config}, {image_name}): the official generator raised {official_error}; "
                  f"sam2rt returned {count} masks")
            print(f"   parameters: {json.dumps(params)}", flush=True)
            official_raised.append(name)
            continue
        result = subprocess.run([sys.executable, os.path.join(HERE, "compare_amg.py"), official, ours],
                                capture_output=True, text=True)
        print(f"== {name} ({config}, {image_name}): official {middle - start:.1f} s, sam2rt {end - middle:.1f} s")
        if args.random > 0:
            print(f"   parameters: {json.dumps(params)}")
        print(result.stdout.rstrip(), flush=True)
        if result.returncode != 0:
            failed.append(name)
    if official_raised:
        print(f"cases where the official generator raised (not compared): {', '.join(official_raised)}")
    print("every mask paired in every case" if not failed else f"cases with unpaired masks: {', '.join(failed)}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
