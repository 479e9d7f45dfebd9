"""The COCO dataset file of a segment-everything batch (`sam2rt everything --coco FILE`).

Written by the engine's own writer (src/api/coco_dataset.cpp), the one the CLI uses, so
the Dask driver's file has the CLI's bytes: one image entry per input that has an output
(id = its 1-based position among the inputs), its masks as annotations with COCO
compressed RLE segmentation and score = predicted IoU.
"""

import os
import tempfile

from . import _sam2rt


def check_coco_writable(path):
    """ValueError in one line when path's folder does not exist or is not writable (before any work)."""
    folder = os.path.dirname(os.path.abspath(path))
    try:
        with tempfile.NamedTemporaryFile(prefix=os.path.basename(path) + ".tmp.", dir=folder):
            pass
    except OSError as error:
        raise ValueError(f"--coco '{path}': cannot write there ({error.strerror})") from None


def write_coco_dataset(path, items):
    """Writes the dataset of items' outputs ([(input, output), ...] in input order) to path atomically."""
    _sam2rt.write_coco_dataset(os.fspath(path), [(item.input, item.output) for item in items])
