"""What a worker process runs for a batch job: one task = a few images, one model per process.

The model is loaded on the first task of a job in each process and kept (keyed by
everything that shapes the outputs), so later tasks and retries on that process reuse
it. Each output is written by the engine to a temporary file that is renamed over the
target, so a task killed half-way leaves only complete outputs, and a retry rewrites
the same bytes.
"""

import glob
import os
import threading
import time
from dataclasses import dataclass, field
from typing import Optional

from . import _sam2rt


@dataclass(frozen=True)
class JobSpec:
    """A batch job's model and work, the same on every worker."""

    kind: str  # "encode" | "everything"
    checkpoint: str = ""
    synthetic_salt: str = ""
    variant: str = ""  # empty: detected from the checkpoint (tiny for synthetic weights), as the CLI does
    config_path: str = ""
    precision: str = "fp32"
    max_image_pixels: int = 100_000_000
    overwrite: bool = False
    # everything: official parameter names -> values, and the JSON's segmentation format.
    amg_params: tuple = ()
    output_mode: str = "coco_rle"
    # encode: how the features are stored and what besides the decoder-ready set (`sam2rt encode`'s
    # --feature-dtype, --all-features, --pos-enc).
    feature_dtype: str = "float32"
    all_features: bool = False
    pos_enc: bool = False
    # Compute threads per task; None: the cores of the worker's machine shared among
    # the Dask threads of all workers there (dask_threads_by_host).
    threads: Optional[int] = None
    dask_threads_by_host: tuple = field(default=(), compare=False)

    def engine_key(self):
        return (self.kind, self.checkpoint, self.synthetic_salt, self.variant, self.config_path, self.precision,
                self.max_image_pixels, self.amg_params, self.output_mode, self.feature_dtype, self.all_features,
                self.pos_enc)


class ModelLoadError(RuntimeError):
    """The worker could not load the job's model: every task would fail the same way."""


_engines = {}
_engines_lock = threading.Lock()


def _compute_threads(spec):
    if spec.threads is not None:
        return spec.threads
    cores = len(os.sched_getaffinity(0))
    dask_threads = 1
    try:
        from distributed import get_worker

        worker = get_worker()
        dask_threads = dict(spec.dask_threads_by_host).get(worker.ip, worker.state.nthreads)
    except (ImportError, ValueError):
        pass  # not on a Dask worker: this process alone
    return max(1, cores // max(1, dask_threads))


def _load_engine(spec):
    _sam2rt.keep_freed_memory_in_process()  # this process runs the job's images one after another
    try:
        model = _sam2rt.BatchModel.load(spec.checkpoint, spec.synthetic_salt, spec.variant, spec.config_path,
                                        spec.precision, spec.max_image_pixels)
        if spec.kind == "encode":
            return _sam2rt.BatchEncoder(model, spec.feature_dtype, spec.all_features, spec.pos_enc)
        return _sam2rt.BatchSegmenter(model, dict(spec.amg_params), spec.output_mode)
    except (RuntimeError, ValueError) as error:
        raise ModelLoadError(f"cannot load the model: {error}") from None


def engine_for(spec):
    """The process's engine for this job, loaded on first use."""
    key = spec.engine_key()
    with _engines_lock:
        _sam2rt.set_num_threads(_compute_threads(spec))  # per job: a warm worker may serve several
        if key not in _engines:
            _engines.clear()  # one model per process: a new job replaces the last one
            _engines[key] = _load_engine(spec)
        return _engines[key]


def process_batch(spec, items):
    """Runs the job on items ([(input, output), ...]); returns one manifest record per item.

    An input that fails (unreadable or corrupt image, too large, ...) is recorded with
    its error and the others go on. Without overwrite, an output that exists (a retry
    of a task whose worker died after writing it) is recorded as skipped, not redone.
    """
    engine = engine_for(spec)
    records = []
    for source, output in items:
        start = time.perf_counter()
        record = {"input": source, "output": output}
        if not spec.overwrite and os.path.exists(output):
            record["status"] = "skipped"
        else:
            try:
                engine.process(source, output)
                record["status"] = "ok"
            except (RuntimeError, ValueError, OSError, MemoryError) as error:
                record["status"] = "error"
                record["error"] = str(error)
        record["ms"] = (time.perf_counter() - start) * 1000.0
        records.append(record)
    return records


def remove_stale_temporaries(outputs):
    """Deletes the temporary files (OUTPUT.tmp.XXXXXX) that writers killed mid-write left beside outputs."""
    removed = 0
    for output in outputs:
        for stale in glob.glob(glob.escape(output) + ".tmp.??????"):
            try:
                os.remove(stale)
                removed += 1
            except FileNotFoundError:
                pass
    return removed
