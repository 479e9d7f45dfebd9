"""Corpus-scale batch jobs on Dask: `sam2rt encode` / `sam2rt everything` over many images.

    from distributed import Client
    from sam2rt.dask import everything
    with Client("tcp://scheduler:8786") as client:
        summary = everything(client, "out/", input_dir="photos/", synthetic_weights=0)

Each task is a batch of images; each worker process loads the model once (see
batch_worker); outputs are written by the workers, atomically, with the names and
bytes of the CLI's batch mode; OUT/manifest.jsonl is written at the end by the client.
Resumable: outputs that exist are skipped unless overwrite. A worker that dies has its
task retried by Dask; a batch that keeps killing workers is split into single images, so
only the culprit is recorded as an error. Paths must mean the same file on every machine
(a shared file system). Command line: `python3 -m sam2rt.dask --help`.
"""

import os
import sys
import time
from dataclasses import dataclass, replace

from . import _sam2rt
from .batch_inputs import batch_items
from .batch_manifest import check_writable, error_record, skipped_record, write_manifest
from .batch_worker import JobSpec, ModelLoadError, process_batch, remove_stale_temporaries
from .coco_dataset import check_coco_writable, write_coco_dataset

DEFAULT_BATCH_SIZE = 8
OUTPUT_EXTENSION = {"encode": ".safetensors", "everything": ".json"}


@dataclass
class BatchJob:
    """A checked job, ready to run on any cluster: what to run, on which items, where the manifest goes."""

    spec: JobSpec
    items: list
    out_dir: str
    coco_path: str = ""  # everything: also write the COCO dataset file of all outputs here


@dataclass
class JobSummary:
    """The records of a finished job (manifest order) and its counts."""

    records: list
    manifest: str
    done: int
    skipped: int
    failed: int
    seconds: float


def _dask_threads_by_host(client):
    threads = {}
    for worker in client.scheduler_info()["workers"].values():
        threads[worker["host"]] = threads.get(worker["host"], 0) + worker["nthreads"]
    return tuple(sorted(threads.items()))


def _tasks_in_flight(client):
    """How many tasks to keep submitted: enough to keep every Dask thread busy, not the whole corpus."""
    threads = sum(worker["nthreads"] for worker in client.scheduler_info()["workers"].values())
    return max(4, 2 * threads)


def run_job(client, job, batch_size=DEFAULT_BATCH_SIZE, progress=None):
    """Runs a prepared job (prepare_encode, prepare_everything) on client's workers; writes OUT/manifest.jsonl.

    progress(done, total, failed) is called once before any work (done = the outputs that
    exist) and after every finished task. Raises ModelLoadError when a worker cannot load
    the model (the remaining tasks are cancelled)."""
    from distributed import as_completed

    if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
        raise ValueError(f"batch_size must be a positive integer, got {batch_size!r}")
    spec, items = job.spec, job.items
    start = time.perf_counter()
    records = [None] * len(items)
    todo = []
    for index, item in enumerate(items):
        if not spec.overwrite and os.path.exists(item.output):
            records[index] = skipped_record(item)
        else:
            todo.append(index)
    spec = replace(spec, dask_threads_by_host=_dask_threads_by_host(client))
    waiting = [todo[i : i + batch_size] for i in range(0, len(todo), batch_size)]
    waiting.reverse()  # popped from the end: first batches first
    batch_of = {}
    finished = as_completed()

    def submit(indices):
        future = client.submit(process_batch, spec, [tuple(items[i]) for i in indices], pure=False)
        batch_of[future] = indices
        finished.add(future)

    def top_up():
        limit = _tasks_in_flight(client)
        while waiting and len(batch_of) < limit:
            submit(waiting.pop())

    done = len(items) - len(todo)
    failed = 0
    if progress:
        progress(done, len(items), failed)
    top_up()
    try:
        for future in finished:
            indices = batch_of.pop(future)
            try:
                results = future.result()
            except ModelLoadError:
                raise
            except Exception as error:  # the task itself failed: a worker died on it too often (KilledWorker)
                if len(indices) > 1:
                    waiting.extend([i] for i in indices)  # alone, each image finds out whether it is the culprit
                    top_up()
                    continue
                results = [error_record(items[indices[0]], f"{type(error).__name__}: {error}")]
            for index, record in zip(indices, results):
                records[index] = record
                failed += record["status"] == "error"
            done += len(indices)
            top_up()
            if progress:
                progress(done, len(items), failed)
    except BaseException:
        client.cancel(list(batch_of))
        raise
    remove_stale_temporaries(items[i].output for i in todo)
    manifest = write_manifest(job.out_dir, records)
    if job.coco_path:
        write_coco_dataset(job.coco_path, items)
    skipped = sum(record["status"] == "skipped" for record in records)
    return JobSummary(records, manifest, len(items) - skipped - failed, skipped, failed, time.perf_counter() - start)


def _model_spec(kind, checkpoint, synthetic_weights, config, variant, precision, max_image_pixels, threads,
                overwrite, amg_params=(), output_mode="coco_rle"):
    if (checkpoint is None) == (synthetic_weights is None):
        raise ValueError("give exactly one of checkpoint (a .pt or .safetensors) and synthetic_weights (a salt)")
    if threads is not None and (isinstance(threads, bool) or not isinstance(threads, int) or threads < 1):
        raise ValueError(f"threads must be a positive integer, got {threads!r}")
    return JobSpec(
        kind=kind,
        checkpoint=os.fspath(checkpoint) if checkpoint is not None else "",
        synthetic_salt=str(synthetic_weights) if synthetic_weights is not None else "",
        variant=variant or "",
        config_path=os.fspath(config) if config is not None else "",
        precision=precision,
        max_image_pixels=max_image_pixels,
        overwrite=overwrite,
        amg_params=amg_params,
        output_mode=output_mode,
        threads=threads,
    )


def _frozen(value):
    return tuple(_frozen(v) for v in value) if isinstance(value, (list, tuple)) else value


def _prepared(spec, out_dir, input_dir, input_list):
    out_dir = os.fspath(out_dir)
    items = batch_items(out_dir, OUTPUT_EXTENSION[spec.kind], input_dir, input_list)
    check_writable(out_dir)
    return BatchJob(spec, items, out_dir)


FEATURE_DTYPES = ("float32", "bfloat16", "float16")


def prepare_encode(out_dir, input_dir=None, input_list=None, overwrite=False, checkpoint=None,
                   synthetic_weights=None, config=None, variant=None, precision="fp32",
                   max_image_pixels=100_000_000, threads=None, feature_dtype="float32", all_features=False,
                   pos_enc=False):
    """Checks an encode job (arguments, inputs, output folder) without a cluster; ValueError otherwise.

    feature_dtype, all_features, pos_enc: `sam2rt encode`'s --feature-dtype, --all-features, --pos-enc."""
    if feature_dtype not in FEATURE_DTYPES:
        raise ValueError(f"feature_dtype must be one of {', '.join(FEATURE_DTYPES)}, got {feature_dtype!r}")
    spec = replace(_model_spec("encode", checkpoint, synthetic_weights, config, variant, precision,
                               max_image_pixels, threads, overwrite),
                   feature_dtype=feature_dtype, all_features=bool(all_features), pos_enc=bool(pos_enc))
    return _prepared(spec, out_dir, input_dir, input_list)


def prepare_everything(out_dir, input_dir=None, input_list=None, overwrite=False, checkpoint=None,
                       synthetic_weights=None, config=None, variant=None, precision="fp32",
                       max_image_pixels=100_000_000, threads=None, output_mode="coco_rle", coco=None,
                       **amg_params):
    """Checks an everything job (arguments, generator parameters, inputs, output folder) without a cluster.

    coco: also write one COCO dataset file of all the outputs there at the end (`--coco`)."""
    params = {name: _frozen(value) for name, value in amg_params.items()}
    if params.get("point_grids") is not None and "points_per_side" not in params:
        params["points_per_side"] = None
    _sam2rt.validate_everything_options(params, output_mode)
    spec = _model_spec("everything", checkpoint, synthetic_weights, config, variant, precision, max_image_pixels,
                       threads, overwrite, tuple(sorted(params.items())), output_mode)
    job = _prepared(spec, out_dir, input_dir, input_list)
    if coco is not None:
        job.coco_path = os.fspath(coco)
        check_coco_writable(job.coco_path)
    return job


def encode(client, out_dir, batch_size=DEFAULT_BATCH_SIZE, progress=None, **options):
    """`sam2rt encode --input-dir/--input-list --out-dir` on every input: OUT/<name>.safetensors per image.

    options: those of prepare_encode (input_dir or input_list, checkpoint or
    synthetic_weights, config or variant (default: detected from the checkpoint), overwrite, precision,
    max_image_pixels, threads, feature_dtype, all_features, pos_enc)."""
    return run_job(client, prepare_encode(out_dir, **options), batch_size, progress)


def everything(client, out_dir, batch_size=DEFAULT_BATCH_SIZE, progress=None, **options):
    """`sam2rt everything --input-dir/--input-list --out-dir` on every input: OUT/<name>.json per image.

    options: those of prepare_encode but the feature ones, output_mode, coco, and SAM2AutomaticMaskGenerator's
    parameters under their official names (points_per_side, pred_iou_thresh, crop_n_layers,
    point_grids, ...)."""
    return run_job(client, prepare_everything(out_dir, **options), batch_size, progress)


if __name__ == "__main__":
    from sam2rt.dask_cli import main

    sys.exit(main())
