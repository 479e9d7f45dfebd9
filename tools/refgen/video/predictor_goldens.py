#!/usr/bin/python3
"""Goldens of Meta's official SAM2VideoPredictor (CPU, float32) on the clips of tests/video/clips.

usage: predictor_goldens.py --sam2 /path/to/sam2 [--out tests/video/goldens]
                            [--configs micro tiny] [--cases NAME ...] [--time-1024]

For every case and config it writes <out>/<config>_<case>.safetensors and .json; plus
<out>/frames_<config>.safetensors (the predictor's preprocessed frames, decimated). The JSON
lists the exact calls (with their prompts), what every call returned or yielded, a trace of
the official internals (track_step calls, memory sizes at the memory attention, memory-encoder
runs, hole-filling events) and every stored tensor's shape and statistics. Key names:
tests/video/README.md.

--time-1024: times propagate_in_video of the Tiny model on the pan clip upscaled to 1024x1024
(2 threads) instead of writing goldens.
"""
import argparse
import json
import math
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import sam2_reference as ref  # noqa: E402

CLIPS = os.path.join(ref.REPO, "tests", "video", "clips")

# Prompts are in pixels of the clip's frames (normalize_coords=True) unless said otherwise.
# pan: the cat's left eye is at about (125, 85) on frame 0 and moves by (-12, -2) per frame;
# its right eye at about (228, 95).
EYE = lambda k: [125 - 12 * k, 85 - 2 * k]  # noqa: E731
CASES = {
    "point": ("pan", [
        {"op": "add_new_points_or_box", "frame_idx": 0, "obj_id": 1, "points": [EYE(0)], "labels": [1]},
        {"op": "propagate_in_video"},
    ]),
    "box": ("pan", [
        {"op": "add_new_points_or_box", "frame_idx": 0, "obj_id": 1, "box": [95, 62, 160, 110]},
        {"op": "propagate_in_video"},
    ]),
    "mask": ("pan", [
        {"op": "add_new_mask", "frame_idx": 0, "obj_id": 1, "mask": "ellipse(125,85,32,22)"},
        {"op": "propagate_in_video"},
    ]),
    "two_objects": ("pan", [
        {"op": "add_new_points_or_box", "frame_idx": 0, "obj_id": 1, "points": [EYE(0)], "labels": [1]},
        # the right eye, as a box in normalised coordinates (normalize_coords=False): [x/W, y/H]
        {"op": "add_new_points_or_box", "frame_idx": 0, "obj_id": 7, "box": [205 / 240, 70 / 160, 1.0, 120 / 160],
         "normalize_coords": False},
        {"op": "propagate_in_video"},
    ]),
    "correction": ("pan", [
        {"op": "add_new_points_or_box", "frame_idx": 0, "obj_id": 1, "points": [EYE(0)], "labels": [1]},
        {"op": "propagate_in_video"},
        # a correction on an already tracked frame: appended to frame 4's (empty) points, fed with
        # the tracked mask logits; stored as a NON-conditioning output
        {"op": "add_new_points_or_box", "frame_idx": 4, "obj_id": 1, "points": [EYE(4), [200, 20]],
         "labels": [1, 0], "clear_old_points": False},
        {"op": "add_new_points_or_box", "frame_idx": 4, "obj_id": 1, "points": [[60, 110]], "labels": [1],
         "clear_old_points": False},
        # frame 4 stays a non-conditioning frame: a propagation over it would re-track it and drop
        # the correction, so this one starts after it (frames 5-7 then use the corrected memory)
        {"op": "propagate_in_video", "start_frame_idx": 5},
    ]),
    "second_cond": ("pan", [
        {"op": "add_new_points_or_box", "frame_idx": 0, "obj_id": 1, "points": [EYE(0)], "labels": [1]},
        {"op": "propagate_in_video", "max_frame_num_to_track": 3},
        # frame 5 was never tracked: a new initial conditioning frame
        {"op": "add_new_points_or_box", "frame_idx": 5, "obj_id": 1, "points": [EYE(5)], "labels": [1]},
        {"op": "propagate_in_video"},
    ]),
    "reverse": ("pan", [
        {"op": "add_new_points_or_box", "frame_idx": 7, "obj_id": 1, "points": [EYE(7)], "labels": [1]},
        {"op": "propagate_in_video", "reverse": True},
    ]),
    "occlusion": ("occlusion", [
        {"op": "add_new_points_or_box", "frame_idx": 0, "obj_id": 1, "points": [[145, 62]], "labels": [1]},
        {"op": "propagate_in_video"},
    ]),
    "leave": ("leave", [
        {"op": "add_new_points_or_box", "frame_idx": 0, "obj_id": 1, "points": [[49, 41]], "labels": [1]},
        {"op": "propagate_in_video"},
    ]),
}


# Tiny's memory attention at 1024 costs 50-90 s per frame on the 2 shared cores used here, so
# Tiny propagations stop after 5 frames (max_frame_num_to_track=4 where a call gives none),
# except in these cases, which run the full clip. The JSON records the arguments passed.
TINY_FULL_LENGTH = {"point"}
TINY_MAX_FRAMES = 4
# The Tiny cases, in the order they were made (all of CASES); --cases overrides.
TINY_CASES = ["point", "occlusion", "two_objects", "mask", "correction", "reverse", "second_cond", "leave", "box"]


def ellipse(spec, H, W):
    """'ellipse(cx,cy,rx,ry)' -> bool [H,W]: pixel centres (x+0.5, y+0.5) inside, in double."""
    cx, cy, rx, ry = (float(v) for v in spec[len("ellipse("):-1].split(","))
    yy, xx = np.mgrid[0:H, 0:W].astype(np.float64)
    return ((xx + 0.5 - cx) / rx) ** 2 + ((yy + 0.5 - cy) / ry) ** 2 <= 1.0


class Recorder:
    def __init__(self, decimate_all, tiny):
        self.tiny = tiny
        self.decimate_all = decimate_all
        self.tensors, self.stats = {}, {}

    def put(self, key, t, limit=None):
        """limit: decimate when tiny (or always, for video-res masks) to <= limit per side."""
        a = np.ascontiguousarray(t.detach().float().cpu().numpy(), dtype=np.float32)
        d = a.astype(np.float64).ravel()
        entry = {"shape": list(a.shape), "sum": math.fsum(d), "l2": math.sqrt(math.fsum(d * d)),
                 "min": float(a.min()), "max": float(a.max()), "positive": int((a > 0).sum())}
        stored = key
        if limit is not None and a.ndim >= 3 and (self.tiny or self.decimate_all.get(key.rsplit(".", 1)[-1])):
            s = ref.decimation_step(a.shape[-2], a.shape[-1], limit)
            if s > 1:
                stored = f"{key}.dec{s}"
                a = np.ascontiguousarray(a[..., ::s, ::s])
        entry["stored_as"] = stored
        self.tensors[stored] = a
        self.stats[key] = entry


def instrument(model, trace):
    """Read-only wrappers that log what the official code does (they return its results unchanged)."""
    import sam2.modeling.memory_attention as ma
    import sam2.sam2_video_predictor as vp

    def wrap_method(name, log):
        orig = getattr(type(model), name)

        def wrapper(self, *a, **k):
            entry = log(*a, **k)
            trace.append(entry)
            return orig(self, *a, **k)

        setattr(model, name, wrapper.__get__(model))

    wrap_method("track_step", lambda *a, **k: {
        "event": "track_step", "frame_idx": k["frame_idx"], "is_init_cond_frame": k["is_init_cond_frame"],
        "reverse": k.get("track_in_reverse", False), "run_mem_encoder": k.get("run_mem_encoder", True),
        "num_points": None if k["point_inputs"] is None else int(k["point_inputs"]["point_labels"].shape[1]),
        "mask_input": k["mask_inputs"] is not None, "prev_sam_mask_logits": k.get("prev_sam_mask_logits") is not None})
    wrap_method("_run_memory_encoder", lambda *a, **k: {
        "event": "preflight_memory_encoder", "frame_idx": k["frame_idx"], "is_mask_from_pts": k["is_mask_from_pts"]})

    orig_ma = ma.MemoryAttention.forward

    def ma_forward(self, curr, memory, curr_pos=None, memory_pos=None, num_obj_ptr_tokens=0):
        trace.append({"event": "memory_attention", "memory_rows": int(memory.shape[0]),
                      "memory_dtype": str(memory.dtype).replace("torch.", ""),
                      "num_obj_ptr_tokens": int(num_obj_ptr_tokens)})
        return orig_ma(self, curr, memory, curr_pos, memory_pos, num_obj_ptr_tokens)

    ma.MemoryAttention.forward = ma_forward

    orig_fill = vp.fill_holes_in_mask_scores

    def fill(mask, max_area):
        out = orig_fill(mask, max_area)
        changed = int((out != mask).sum())
        trace.append({"event": "fill_holes", "pixels_filled": changed})
        return out

    vp.fill_holes_in_mask_scores = fill
    return lambda: (setattr(ma.MemoryAttention, "forward", orig_ma), setattr(vp, "fill_holes_in_mask_scores", orig_fill))


def obj_output(state, obj_idx, frame_idx, temp):
    d = state["temp_output_dict_per_obj" if temp else "output_dict_per_obj"][obj_idx]
    for key in ("cond_frame_outputs", "non_cond_frame_outputs"):
        if frame_idx in d[key]:
            return key, d[key][frame_idx]
    return None, None


def run_case(model, config, case, clip, calls, out_dir):
    import torch
    from PIL import Image

    tiny = config == "tiny"
    rec = Recorder({"video_res_masks": True}, tiny)
    trace = []
    restore = instrument(model, trace)
    clip_dir = os.path.join(CLIPS, clip)
    state = model.init_state(clip_dir)  # offload options default (False), synchronous loading
    H, W = state["video_height"], state["video_width"]
    log = []
    for n, call in enumerate(calls):
        c = dict(call)
        op = c.pop("op")
        trace.append({"event": "call", "index": n, "op": op})
        entry = {"index": n, "op": op}
        if op == "add_new_points_or_box":
            kw = {"frame_idx": c["frame_idx"], "obj_id": c["obj_id"],
                  "clear_old_points": c.get("clear_old_points", True),
                  "normalize_coords": c.get("normalize_coords", True)}
            if "points" in c:
                kw["points"] = np.array(c["points"], dtype=np.float32)
                kw["labels"] = np.array(c["labels"], dtype=np.int32)
            if "box" in c:
                kw["box"] = np.array(c["box"], dtype=np.float32)
            entry.update({k: (v.tolist() if isinstance(v, np.ndarray) else v) for k, v in kw.items()})
            frame_idx, obj_ids, masks = model.add_new_points_or_box(state, **kw)
        elif op == "add_new_mask":
            m = ellipse(c["mask"], H, W)
            png = f"{config}_{case}.call{n}.mask.png"
            Image.fromarray((m * 255).astype(np.uint8)).save(os.path.join(out_dir, png))
            entry.update({"frame_idx": c["frame_idx"], "obj_id": c["obj_id"], "mask": png, "mask_spec": c["mask"],
                          "mask_passed_as": f"bool numpy array [{H},{W}] (PNG value 255 -> True)"})
            frame_idx, obj_ids, masks = model.add_new_mask(state, c["frame_idx"], c["obj_id"], m)
        if op.startswith("add_new"):
            entry["returned"] = {"frame_idx": frame_idx, "obj_ids": list(obj_ids), "video_res_masks": list(masks.shape)}
            rec.put(f"call{n}.video_res_masks", masks, limit=64)
            obj_idx = state["obj_id_to_idx"][c["obj_id"]]
            where, out = obj_output(state, obj_idx, frame_idx, temp=True)
            entry["stored_in"] = "temp_output_dict_per_obj." + where
            p = f"call{n}.obj{c['obj_id']}"
            rec.put(p + ".pred_masks", out["pred_masks"], limit=64)
            rec.put(p + ".object_score_logits", out["object_score_logits"])
            rec.put(p + ".obj_ptr", out["obj_ptr"])
        else:  # propagate_in_video
            kw = {k: c[k] for k in ("start_frame_idx", "max_frame_num_to_track", "reverse") if k in c}
            if tiny and case not in TINY_FULL_LENGTH and "max_frame_num_to_track" not in kw:
                kw["max_frame_num_to_track"] = TINY_MAX_FRAMES
            entry["kwargs"] = kw
            entry["yielded"] = []
            stamps = [time.perf_counter()]  # timing goes to stdout only (the files stay deterministic)
            for frame_idx, obj_ids, masks in model.propagate_in_video(state, **kw):
                stamps.append(time.perf_counter())
                entry["yielded"].append({"frame_idx": frame_idx, "obj_ids": list(obj_ids)})
                p = f"call{n}.f{frame_idx}"
                rec.put(p + ".video_res_masks", masks, limit=64)
                for obj_idx, obj_id in enumerate(obj_ids):
                    where, out = obj_output(state, obj_idx, frame_idx, temp=False)
                    q = f"{p}.obj{obj_id}"
                    entry["yielded"][-1].setdefault("stored_in", []).append(where)
                    rec.put(q + ".pred_masks", out["pred_masks"], limit=64)
                    rec.put(q + ".object_score_logits", out["object_score_logits"])
                    rec.put(q + ".obj_ptr", out["obj_ptr"])
                    # the bf16 memory the predictor keeps (exactly widened to float32)
                    rec.put(q + ".maskmem_features", out["maskmem_features"].float(), limit=16)
                    entry["yielded"][-1].setdefault("object_score_logits", []).append(
                        float(out["object_score_logits"].item()))
            # time between yields (the small recording time of the previous frame included)
            per = [f"f{y['frame_idx']}:{t:.2f}" for y, t in zip(entry["yielded"], np.diff(stamps))]
            print(f"  {config}_{case} call{n} propagate s/frame:", " ".join(per), flush=True)
        log.append(entry)
    restore()

    meta = {"format": "sam2rt-video-predictor-1", "case": case, "config": config, "clip": clip,
            "weights": "micro.pt" if config == "micro" else
            f"generated(salt=0) with {ref.OBJ_SCORE_BIAS_KEY} := {ref.TINY_VIDEO_OBJ_SCORE_BIAS}",
            "values": "official SAM2VideoPredictor, float32, CPU", "sam2_commit": "2b90b9f5"}
    base = os.path.join(out_dir, f"{config}_{case}")
    ref.write_safetensors(base + ".safetensors", rec.tensors, meta)
    doc = {"metadata": meta, "clip": {"folder": f"tests/video/clips/{clip}", "num_frames": state["num_frames"],
                                      "video_height": H, "video_width": W},
           "calls": log, "trace": trace, "tensors": rec.stats}
    with open(base + ".json", "w") as f:
        json.dump(doc, f, indent=1)
        f.write("\n")
    return state


def write_frames(model, config, out_dir):
    """The preprocessed frames of every clip as init_state builds them ([N,3,S,S] float32), decimated."""
    rec = Recorder({}, True)
    info = {}
    for clip in sorted(os.listdir(CLIPS)):
        state = model.init_state(os.path.join(CLIPS, clip))
        rec.put(f"{clip}.images", state["images"], limit=32)
        info[clip] = {"num_frames": state["num_frames"], "video_height": state["video_height"],
                      "video_width": state["video_width"]}
    meta = {"format": "sam2rt-video-frames-1", "config": config, "image_size": str(model.image_size)}
    base = os.path.join(out_dir, f"frames_{config}")
    ref.write_safetensors(base + ".safetensors", rec.tensors, meta)
    with open(base + ".json", "w") as f:
        json.dump({"metadata": meta, "clips": info, "tensors": rec.stats}, f, indent=1)
        f.write("\n")


def time_1024(sam2_path, threads):
    """Times the Tiny propagation on the pan clip upscaled to 1024x1024 (image encoder included)."""
    import tempfile

    import torch
    from PIL import Image

    model = ref.build_video_predictor(sam2_path, "tiny", threads, obj_score_bias=ref.TINY_VIDEO_OBJ_SCORE_BIAS)
    with tempfile.TemporaryDirectory() as d:
        for p in sorted(os.listdir(os.path.join(CLIPS, "pan"))):
            Image.open(os.path.join(CLIPS, "pan", p)).resize((1024, 1024), Image.BICUBIC).save(
                os.path.join(d, p), quality=95)
        state = model.init_state(d)
        t0 = time.perf_counter()
        model.add_new_points_or_box(state, 0, 1, points=np.array([[533, 544]], np.float32),
                                    labels=np.array([1], np.int32))
        t1 = time.perf_counter()
        stamps = [time.perf_counter()]
        for _ in model.propagate_in_video(state):
            stamps.append(time.perf_counter())
    per = np.diff(stamps)
    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads; add_new_points_or_box {t1 - t0:.2f} s; "
          f"propagate_in_video per yielded frame: " + ", ".join(f"{x:.2f}" for x in per) + " s")
    print(f"tracked frames (1..7): mean {per[1:].mean():.2f} s (frame 0 = cond frame: preflight memory encode)")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sam2", required=True, help="facebookresearch/sam2 checkout (folder holding sam2/)")
    ap.add_argument("--out", default=os.path.join(ref.REPO, "tests", "video", "goldens"))
    ap.add_argument("--configs", nargs="+", default=["micro", "tiny"])
    ap.add_argument("--cases", nargs="+", help="default: every case for micro, TINY_CASES for tiny")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--time-1024", action="store_true")
    args = ap.parse_args()
    if args.time_1024:
        return time_1024(args.sam2, args.threads)
    os.makedirs(args.out, exist_ok=True)
    for config in args.configs:
        bias = ref.TINY_VIDEO_OBJ_SCORE_BIAS if config == "tiny" else None
        model = ref.build_video_predictor(args.sam2, config, args.threads, obj_score_bias=bias)
        write_frames(model, config, args.out)
        for case in args.cases or (TINY_CASES if config == "tiny" else list(CASES)):
            t0 = time.perf_counter()
            clip, calls = CASES[case]
            run_case(model, config, case, clip, calls, args.out)
            print(f"{config}_{case}: {time.perf_counter() - t0:.1f} s", flush=True)


if __name__ == "__main__":
    main()
