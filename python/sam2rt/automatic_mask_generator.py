"""SAM2AutomaticMaskGenerator as in sam2/automatic_mask_generator.py, on the sam2rt engine."""

import numpy as np

from . import _sam2rt
from .build_sam import SAM2Model, build_sam2_hf
from .sam2_image_predictor import image_array

_MODEL_ARGUMENTS = ("device", "mode", "hydra_overrides_extra", "apply_postprocessing")


class SAM2AutomaticMaskGenerator:
    """Segments everything: a grid of point prompts over the image (and its crops), then the
    official filters (predicted IoU, stability, crop edges) and non-maximum suppression.

    Parameters, defaults and output records are the official ones. ``min_mask_region_area``
    fills holes and removes sprinkles of at most that many low-res pixels, as the official
    predictor does with its CUDA extension (which a CPU install of ``sam2`` skips).
    ``output_mode="coco_rle"`` needs no pycocotools.
    """

    def __init__(
        self,
        model,
        points_per_side=32,
        points_per_batch=64,
        pred_iou_thresh=0.8,
        stability_score_thresh=0.95,
        stability_score_offset=1.0,
        mask_threshold=0.0,
        box_nms_thresh=0.7,
        crop_n_layers=0,
        crop_nms_thresh=0.7,
        crop_overlap_ratio=512 / 1500,
        crop_n_points_downscale_factor=1,
        point_grids=None,
        min_mask_region_area=0,
        output_mode="binary_mask",
        use_m2m=False,
        multimask_output=True,
    ):
        if not isinstance(model, SAM2Model):
            raise TypeError(f"model must come from sam2rt.build_sam2, got {type(model).__name__}")
        if (points_per_side is None) == (point_grids is None):
            raise ValueError("Exactly one of points_per_side or point_grid must be provided.")
        self.model = model
        self.points_per_side = points_per_side
        self.points_per_batch = points_per_batch
        self.pred_iou_thresh = pred_iou_thresh
        self.stability_score_thresh = stability_score_thresh
        self.stability_score_offset = stability_score_offset
        self.mask_threshold = mask_threshold
        self.box_nms_thresh = box_nms_thresh
        self.crop_n_layers = crop_n_layers
        self.crop_nms_thresh = crop_nms_thresh
        self.crop_overlap_ratio = crop_overlap_ratio
        self.crop_n_points_downscale_factor = crop_n_points_downscale_factor
        self.point_grids = None if point_grids is None else [np.asarray(grid, dtype=np.float64) for grid in point_grids]
        self.min_mask_region_area = min_mask_region_area
        self.output_mode = output_mode
        self.use_m2m = use_m2m
        self.multimask_output = multimask_output
        try:
            self._core = _sam2rt.AutomaticMaskGeneratorCore(
                model._core,
                points_per_side,
                points_per_batch,
                pred_iou_thresh,
                stability_score_thresh,
                stability_score_offset,
                mask_threshold,
                box_nms_thresh,
                crop_n_layers,
                crop_nms_thresh,
                crop_overlap_ratio,
                crop_n_points_downscale_factor,
                self.point_grids,
                min_mask_region_area,
                output_mode,
                bool(use_m2m),
                bool(multimask_output),
            )
        except TypeError as error:  # a parameter of the wrong type, e.g. a string for a number
            raise ValueError(f"invalid SAM2AutomaticMaskGenerator parameter: {error}") from None

    @classmethod
    def from_pretrained(cls, model_id, **kwargs):
        """A generator on ``facebook/sam2.1-hiera-*`` from the local Hugging Face cache."""
        model_kwargs = {key: kwargs.pop(key) for key in _MODEL_ARGUMENTS if key in kwargs}
        return cls(build_sam2_hf(model_id, **model_kwargs), **kwargs)

    def generate(self, image):
        """Mask records of an HxWx3 uint8 RGB image (or PIL image), in the official order.

        Each record: segmentation (HxW bool array, or an RLE dict {"size": [H, W], "counts": ...}
        for the RLE output modes), area (int), bbox (XYWH floats), predicted_iou (float),
        point_coords ([[x, y]]), stability_score (float), crop_box (XYWH floats).
        """
        return self._core.generate(image_array(image))
