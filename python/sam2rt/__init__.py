"""sam2rt: Meta's SAM 2.1 predictor API on the sam2rt C++ engine (CPU, no PyTorch).

Mirrors the official ``sam2`` package: ``build_sam2``, ``SAM2ImagePredictor``,
``SAM2AutomaticMaskGenerator``, ``build_sam2_video_predictor`` and ``SAM2VideoPredictor``
take the same arguments and return numpy arrays of the same shapes and dtypes.
"""

import os

# libgomp spins up to milliseconds at every barrier by default, holding a core
# that a working thread needs when the machine is shared (Dask workers,
# servers); 10000 spins keep a quiet machine's speed. libgomp reads this once,
# when it is loaded: only if nothing loaded it before us and the user chose nothing.
if "OMP_WAIT_POLICY" not in os.environ and "GOMP_SPINCOUNT" not in os.environ:
    os.environ["GOMP_SPINCOUNT"] = "10000"

from ._sam2rt import EngineError, get_num_threads, set_num_threads  # noqa: E402
from .automatic_mask_generator import SAM2AutomaticMaskGenerator  # noqa: E402
from .build_sam import (  # noqa: E402
    SAM2Model,
    build_sam2,
    build_sam2_hf,
    build_sam2_video_predictor,
    build_sam2_video_predictor_hf,
)
from .sam2_image_predictor import SAM2ImagePredictor  # noqa: E402
from .sam2_video_predictor import SAM2VideoPredictor  # noqa: E402

__version__ = "0.1.0"

__all__ = [
    "EngineError",
    "SAM2AutomaticMaskGenerator",
    "SAM2ImagePredictor",
    "SAM2Model",
    "SAM2VideoPredictor",
    "build_sam2",
    "build_sam2_hf",
    "build_sam2_video_predictor",
    "build_sam2_video_predictor_hf",
    "get_num_threads",
    "set_num_threads",
]
