"""sam2rt: Meta's SAM 2.1 image predictor API on the sam2rt C++ engine (CPU, no PyTorch).

Mirrors the official ``sam2`` package: ``build_sam2``, ``SAM2ImagePredictor`` and
``SAM2AutomaticMaskGenerator`` take the same arguments and return numpy arrays of
the same shapes and dtypes.
"""

from ._sam2rt import EngineError, get_num_threads, set_num_threads
from .automatic_mask_generator import SAM2AutomaticMaskGenerator
from .build_sam import SAM2Model, build_sam2, build_sam2_hf
from .sam2_image_predictor import SAM2ImagePredictor

__version__ = "0.1.0"

__all__ = [
    "EngineError",
    "SAM2AutomaticMaskGenerator",
    "SAM2ImagePredictor",
    "SAM2Model",
    "build_sam2",
    "build_sam2_hf",
    "get_num_threads",
    "set_num_threads",
]
