"""python3 -m sam2rt.dask: the CLI's batch mode (`sam2rt encode|everything --input-dir ...`) on a Dask cluster.

    python3 -m sam2rt.dask --scheduler tcp://HOST:8786 everything --synthetic-weights 0 \\
        --input-dir photos/ --out-dir out/ --points-per-side 32
    python3 -m sam2rt.dask --local 2 encode --model sam2.1_hiera_tiny.pt --input-dir photos/ --out-dir emb/

Exit status: 0 when every input succeeded, 1 when any failed (see OUT/manifest.jsonl),
2 for a usage or setup error (one line on stderr).
"""

import argparse
import json
import os
import sys
import time

from . import dask as jobs
from .batch_worker import ModelLoadError

# The official generator parameters, their types and defaults (sam2/automatic_mask_generator.py).
AMG_PARAMETERS = [
    ("points_per_side", int, 32, "grid points per side of the image (crop layer 0)"),
    ("points_per_batch", int, 64, "points decoded together"),
    ("pred_iou_thresh", float, 0.8, "keep masks whose predicted IoU is above this ([0, 1])"),
    ("stability_score_thresh", float, 0.95, "keep masks whose stability score is at least this ([0, 1])"),
    ("stability_score_offset", float, 1.0, "logit offset of the two cut-offs of the stability score"),
    ("mask_threshold", float, 0.0, "logit threshold of the binary masks"),
    ("box_nms_thresh", float, 0.7, "box IoU above which a duplicate mask is dropped ([0, 1])"),
    ("crop_n_layers", int, 0, "crop layers: layer i adds 2^i x 2^i crops of the photo"),
    ("crop_nms_thresh", float, 0.7, "box IoU for duplicates between crops ([0, 1])"),
    ("crop_overlap_ratio", float, 512 / 1500, "overlap of neighbouring crops ([0, 1))"),
    ("crop_n_points_downscale_factor", int, 1, "crop layer i uses points-per-side / factor^i points per side"),
    ("min_mask_region_area", float, 0.0, "fill holes and remove islands of at most this many low-res pixels"),
]
AMG_SWITCHES = [
    ("use_m2m", False, "refine each mask once with its own logits as mask input (true|false)"),
    ("multimask_output", True, "3 masks per point (true) or 1 (false)"),
]


WAIT_FOR_WORKERS_S = 120


class UsageError(Exception):
    pass


def _boolean(text):
    if text.lower() in ("true", "1", "yes", "on"):
        return True
    if text.lower() in ("false", "0", "no", "off"):
        return False
    raise argparse.ArgumentTypeError(f"expected true or false, got {text!r}")


def _positive(text):
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be >= 1, got {value}")
    return value


def _add_model_options(command):
    weights = command.add_mutually_exclusive_group(required=True)
    weights.add_argument("--model", help="SAM 2.1 checkpoint: the official sam2.1_hiera_*.pt or a .safetensors")
    weights.add_argument("--synthetic-weights", metavar="SALT",
                         help="deterministic generated weights with this salt (decimal or 0x hex); meaningless masks")
    architecture = command.add_mutually_exclusive_group()
    architecture.add_argument("--variant", choices=["tiny", "small", "base_plus", "large"],
                              help="built-in architecture (default: detected from the checkpoint's tensor shapes; "
                                   "tiny for synthetic weights)")
    architecture.add_argument("--config", help="official-format SAM 2.1 YAML config (instead of --variant)")
    command.add_argument("--threads", type=_positive,
                         help="compute threads per task (default: the machine's cores divided by the Dask threads "
                              "of all workers on it)")
    command.add_argument("--max-image-pixels", type=_positive, default=100_000_000,
                         help="refuse larger images before decoding them")
    command.add_argument("--precision", choices=["fp32", "bf16"], default="fp32",
                         help="arithmetic of the image encoder (bf16: faster on AVX-512, not bit-faithful)")


def _add_batch_options(command):
    inputs = command.add_mutually_exclusive_group(required=True)
    inputs.add_argument("--input-dir", help="every PNG/JPEG under this folder (recursively)")
    inputs.add_argument("--input-list", help="a text file with one image path per line")
    command.add_argument("--out-dir", required=True, help="folder for one output per image and manifest.jsonl")
    command.add_argument("--overwrite", action="store_true",
                         help="redo every input, even those whose output exists")
    command.add_argument("--batch-size", type=_positive, default=jobs.DEFAULT_BATCH_SIZE,
                         help=f"images per Dask task (default {jobs.DEFAULT_BATCH_SIZE})")


def _parser():
    parser = argparse.ArgumentParser(
        prog="python3 -m sam2rt.dask",
        description="sam2rt's batch jobs (encode, everything) over a Dask cluster; outputs with the names and "
                    "bytes of `sam2rt encode|everything --input-dir ... --out-dir ...`.")
    cluster = parser.add_mutually_exclusive_group(required=True)
    cluster.add_argument("--scheduler", metavar="ADDRESS", help="a running Dask scheduler, e.g. tcp://HOST:8786")
    cluster.add_argument("--local", metavar="N", type=_positive,
                         help="start a LocalCluster of N worker processes on this machine (127.0.0.1)")
    parser.add_argument("--local-threads", metavar="K", type=_positive, default=1,
                        help="with --local: Dask threads per worker process (default 1)")
    commands = parser.add_subparsers(dest="command", required=True, metavar="encode|everything")
    encode = commands.add_parser("encode", help="one decoder-ready .safetensors per image")
    _add_model_options(encode)
    _add_batch_options(encode)
    encode.add_argument("--feature-dtype", choices=jobs.FEATURE_DTYPES, default="float32",
                        help="how the features are stored: float32 (exact), bfloat16 or float16 (half the size)")
    encode.add_argument("--all-features", action="store_true",
                        help="also write the neck's outputs neck.level0..2")
    encode.add_argument("--pos-enc", action="store_true", help="also write the sine position encodings neck.pos0..2")
    everything = commands.add_parser("everything", help="one annotations JSON per image (segment everything)")
    _add_model_options(everything)
    _add_batch_options(everything)
    everything.add_argument("--output-mode", default="coco_rle", choices=["coco_rle", "uncompressed_rle"],
                            help="segmentation in the JSON (default coco_rle)")
    everything.add_argument("--coco", metavar="FILE",
                            help="also write one COCO dataset file (images, annotations with RLE segmentation, "
                                 "bbox, area, score)")
    everything.add_argument("--point-grids", metavar="FILE",
                            help="JSON file of custom grids instead of --points-per-side: [[[x, y], ...], ...]")
    for name, kind, default, text in AMG_PARAMETERS:
        everything.add_argument("--" + name.replace("_", "-"), type=kind, default=None,
                                help=f"{text} (default {default:g})")
    for name, default, text in AMG_SWITCHES:
        everything.add_argument("--" + name.replace("_", "-"), type=_boolean, default=None,
                                help=f"{text} (default {str(default).lower()})")
    return parser


def _read_point_grids(path):
    try:
        with open(path, encoding="utf-8") as file:
            grids = json.load(file)
        if not isinstance(grids, list) or not all(
            isinstance(grid, list) and all(isinstance(p, list) and len(p) == 2 for p in grid) for grid in grids
        ):
            raise ValueError
        return grids
    except OSError:
        raise UsageError(f"--point-grids '{path}': cannot open the file") from None
    except ValueError:
        raise UsageError(f"--point-grids '{path}': expected JSON like [[[x, y], ...], ...] (one list of points per "
                         "crop layer, coordinates in [0, 1])") from None


def _amg_params(args):
    params = {name: getattr(args, name) for name, *_ in AMG_PARAMETERS + AMG_SWITCHES
              if getattr(args, name) is not None}
    if args.point_grids is not None:
        if "points_per_side" in params:
            raise UsageError("give exactly one of --points-per-side and --point-grids")
        params["point_grids"] = _read_point_grids(args.point_grids)
    return params


def _check_files(args):
    for flag, path in (("--model", args.model), ("--config", args.config)):
        if path is not None and not os.path.isfile(path):
            raise UsageError(f"{flag} '{path}': no such file")


class _ProgressLines:
    """`batch: done/total, images/s, ETA, failed` on stderr, at most every 2 s and at the end."""

    def __init__(self):
        self.start = time.perf_counter()
        self.last = 0.0
        self.first_done = None

    def __call__(self, done, total, failed):
        now = time.perf_counter()
        if self.first_done is None:  # the call before any work: done counts the outputs that exist
            self.first_done = done
            print(f"batch: {total} images, {total - done} to do, {done} already done (--overwrite redoes them)",
                  file=sys.stderr, flush=True)
            return
        if now - self.last < 2 and done < total:
            return
        self.last = now
        rate = (done - self.first_done) / max(now - self.start, 1e-9)
        eta = (total - done) / rate if rate > 0 else 0
        print(f"batch: {done}/{total} done, {rate:.2f} images/s, ETA {int(eta) // 60}m{int(eta) % 60:02d}s, "
              f"{failed} failed", file=sys.stderr, flush=True)


def _prepare(args):
    options = dict(
        out_dir=args.out_dir, input_dir=args.input_dir, input_list=args.input_list, overwrite=args.overwrite,
        checkpoint=args.model, synthetic_weights=args.synthetic_weights, config=args.config, variant=args.variant,
        precision=args.precision, max_image_pixels=args.max_image_pixels, threads=args.threads)
    if args.command == "encode":
        return jobs.prepare_encode(feature_dtype=args.feature_dtype, all_features=args.all_features,
                                   pos_enc=args.pos_enc, **options)
    return jobs.prepare_everything(output_mode=args.output_mode, coco=args.coco, **options, **_amg_params(args))


def _run_on_cluster(args, job):
    from distributed import Client, LocalCluster

    if args.scheduler:
        with Client(args.scheduler, timeout="30s") as client:
            client.wait_for_workers(1, timeout=WAIT_FOR_WORKERS_S)
            return jobs.run_job(client, job, args.batch_size, _ProgressLines())
    with LocalCluster(n_workers=args.local, threads_per_worker=args.local_threads, processes=True,
                      host="127.0.0.1", dashboard_address="127.0.0.1:0") as cluster, Client(cluster) as client:
        return jobs.run_job(client, job, args.batch_size, _ProgressLines())


def _one_line(message):
    return "".join(" " if ord(c) < 0x20 or c == "\x7f" else c for c in message)


def main(argv=None):
    args = _parser().parse_args(argv)
    try:
        _check_files(args)
        job = _prepare(args)  # everything that can be wrong with the arguments fails here, before any cluster
        summary = _run_on_cluster(args, job)
    except (UsageError, ValueError, ModelLoadError, OSError, TimeoutError) as error:
        print(f"sam2rt.dask: error: {_one_line(str(error))}", file=sys.stderr)
        return 2
    print(f"{len(summary.records)} images: {summary.done} done, {summary.skipped} skipped, {summary.failed} failed "
          f"-> {summary.manifest} ({summary.seconds:.1f} s)")
    return 1 if summary.failed else 0
