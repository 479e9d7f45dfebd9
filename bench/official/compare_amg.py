#!/usr/bin/python3
"""Compares two "sam2-amg-1" results (official_amg.py's and `sam2rt everything`'s) mask by mask.

usage: compare_amg.py OFFICIAL.json OURS.json

For cases without a golden: pairs the masks by crop box, point (within 1e-3 px) and
closest predicted IoU, and prints the masks only one side has (with their IoU and
stability, to see how close to a threshold they were), the largest differences of the
paired ones (IoU, stability, pixels, box) and where the output order differs. Both runs
are float32 with different rounding, so masks decided within ~1e-5 of a threshold may
differ, and masks whose IoUs are within 2e-5 may swap places; anything else is a bug. Exit 0
when every mask pairs and the order holds, 1 otherwise.
"""
import json
import math
import sys

import numpy as np


def rle_mask(seg):
    h, w = seg["size"]
    vals = np.zeros(len(seg["counts"]), bool)
    vals[1::2] = True
    return np.repeat(vals, seg["counts"]).reshape(w, h).T


def score(value):
    """A score as a float: NaN for the 0/0 stability of an empty mask (the official NaN, JSON null)."""
    return float("nan") if value is None else float(value)


def score_difference(x, y):
    x, y = score(x), score(y)
    if math.isnan(x) or math.isnan(y):
        return 0.0 if math.isnan(x) and math.isnan(y) else float("inf")
    return abs(x - y)


def key(m):
    return (tuple(m["crop_box"]), tuple(round(c, 3) for c in m["point_coords"][0]))


def main(argv):
    official, ours = (json.load(open(path)) for path in argv[1:3])
    a, b = official["masks"], ours["masks"]
    print(f"official {len(a)} masks, ours {len(b)}")
    free = {}
    for j, m in enumerate(b):
        free.setdefault(key(m), []).append(j)
    pairs, only_official = [], []
    for i, m in enumerate(a):
        options = free.get(key(m), [])
        if not options:
            only_official.append(i)
            continue
        j = min(options, key=lambda j: abs(b[j]["predicted_iou"] - m["predicted_iou"]))
        options.remove(j)
        pairs.append((i, j))
    only_ours = sorted(j for js in free.values() for j in js)
    for name, masks, idx in (("official", a, only_official), ("ours", b, only_ours)):
        for i in idx:
            m = masks[i]
            print(f"only {name}: #{i} crop {m['crop_box']} point {m['point_coords'][0]} "
                  f"iou {score(m['predicted_iou']):.7f} stability {score(m['stability_score']):.7f} area {m['area']}")
    worst = {"iou": (0, None), "stability": (0, None), "pixels": (0, None), "bbox": (0, None)}
    for i, j in pairs:
        ma, mb = a[i], b[j]
        diffs = {
            "iou": score_difference(ma["predicted_iou"], mb["predicted_iou"]),
            "stability": score_difference(ma["stability_score"], mb["stability_score"]),
            "pixels": int((rle_mask(ma["segmentation"]) != rle_mask(mb["segmentation"])).sum()),
            "bbox": max(abs(p - q) for p, q in zip(ma["bbox"], mb["bbox"])),
        }
        for k, v in diffs.items():
            if v > worst[k][0]:
                worst[k] = (v, i)
    for k, (v, i) in worst.items():
        print(f"largest {k} difference: {v:g}" + (f" (official #{i})" if i is not None else ""))
    # As check_amg.py's rule 6: masks whose official IoUs are within 2e-5 may come out either way.
    ordered = sorted(pairs)
    swaps = ties = 0
    for (i, j), (k, l) in zip(ordered, ordered[1:]):
        if l < j:
            if score_difference(a[i]["predicted_iou"], a[k]["predicted_iou"]) <= 2e-5:
                ties += 1
            else:
                swaps += 1
    print(f"order: {swaps} places where ours runs backwards ({ties} more between near-equal IoUs, allowed)")
    return 0 if not only_official and not only_ours and swaps == 0 else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))
