#!/usr/bin/python3
"""Runs `sam2rt everything` and Meta's official generator on cases the goldens do not cover, and compares them.

usage: differential_amg.py SAM2_SOURCE_DIR [--build build] [--only NAME ...] [--work /tmp/amg-differential]

For every case below: official_amg.py (the official SAM2AutomaticMaskGenerator in
float32, fixture weights), then `sam2rt everything` with the same parameters, then
compare_amg.py. Prints one block per case and a summary; exit 0 when every case
pairs every mask. The official runs take seconds for micro and about a minute for
Tiny on a 2-core machine; their results are kept in --work and reused.

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
    args = ap.parse_args()
    os.makedirs(args.work, exist_ok=True)
    failed = []
    for name, config, image_name, params in CASES:
        if args.only and name not in args.only:
            continue
        image = os.path.join(SHARED, "fixtures", "images", image_name)
        official = os.path.join(args.work, f"{name}_official.json")
        ours = os.path.join(args.work, f"{name}_ours.json")
        start = time.time()
        if not os.path.exists(official):
            subprocess.run([sys.executable, os.path.join(HERE, "official_amg.py"), args.sam2_source, "--config", config,
                            "--image", image, "--params", json.dumps(params), "--out", official],
                           check=True, capture_output=True, env=dict(os.environ, OMP_NUM_THREADS="2"))
        middle = time.time()
        run = subprocess.run(our_command(args.build, config, image, params, ours, args.work, name),
                             capture_output=True, text=True)
        end = time.time()
        if run.returncode != 0:
            print(f"== {name}: sam2rt failed: {run.stderr.strip()}")
            failed.append(name)
            continue
        result = subprocess.run([sys.executable, os.path.join(HERE, "compare_amg.py"), official, ours],
                                capture_output=True, text=True)
        print(f"== {name} ({config}, {image_name}): official {middle - start:.1f} s, sam2rt {end - middle:.1f} s")
        print(result.stdout.rstrip(), flush=True)
        if result.returncode != 0:
            failed.append(name)
    print("every mask paired in every case" if not failed else f"cases with unpaired masks: {', '.join(failed)}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
