"""SAM2ImagePredictor as in sam2/sam2_image_predictor.py, on the sam2rt engine."""

import os

import numpy as np

from . import _sam2rt
from .build_sam import SAM2Model, build_sam2_hf

_MODEL_ARGUMENTS = ("device", "mode", "hydra_overrides_extra", "apply_postprocessing")


def image_array(image):
    """An HxWx3 uint8 RGB array from an ndarray (as given) or a PIL image (converted to RGB)."""
    if isinstance(image, np.ndarray):
        return image
    try:
        from PIL import Image
    except ImportError:
        Image = None
    if Image is not None and isinstance(image, Image.Image):
        return np.asarray(image.convert("RGB"))
    raise NotImplementedError(f"Image format not supported: {type(image).__name__} (give an HxWx3 uint8 ndarray or a PIL image)")


def _float32(value, name):
    try:
        return np.asarray(value, dtype=np.float32)
    except (TypeError, ValueError) as error:
        raise ValueError(f"{name} must be numeric: {error}") from None


def _finite_number(value, name, minimum=None):
    try:
        number = float(value)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be a number, got {value!r}") from None
    if not np.isfinite(number) or (minimum is not None and number < minimum):
        bound = f" >= {minimum}" if minimum is not None else ""
        raise ValueError(f"{name} must be a finite number{bound}, got {value!r}")
    return number


class SAM2ImagePredictor:
    """Computes an image's embedding once, then predicts masks for any number of prompts.

    As the official predictor, plus: ``preprocess="pillow"`` (default: the model card's
    Pillow bilinear resize, which the engine's goldens use) or ``"torchvision"`` (the
    official predictor's antialiased float resize), and ``precision="fp32"`` (exact) or
    ``"bf16"`` (faster encoder on AVX-512 CPUs, not bit-faithful). Thread-safe: several
    Python threads may predict on one predictor at once (the GIL is released while the
    engine runs).
    """

    def __init__(
        self,
        sam_model,
        mask_threshold=0.0,
        max_hole_area=0.0,
        max_sprinkle_area=0.0,
        preprocess="pillow",
        precision="fp32",
    ):
        if not isinstance(sam_model, SAM2Model):
            raise TypeError(f"sam_model must come from sam2rt.build_sam2, got {type(sam_model).__name__}")
        if precision == "bf16" and sam_model.device != "cpu":
            raise ValueError(f"precision 'bf16' runs on the CPU only; the model's encoder is on {sam_model.device!r}")
        self.model = sam_model
        self.mask_threshold = _finite_number(mask_threshold, "mask_threshold")
        self._core = _sam2rt.ImagePredictorCore(
            sam_model._core,
            self.mask_threshold,
            _finite_number(max_hole_area, "max_hole_area", 0.0),
            _finite_number(max_sprinkle_area, "max_sprinkle_area", 0.0),
            preprocess,
            precision,
        )
        self._is_batch = False

    @classmethod
    def from_pretrained(cls, model_id, **kwargs):
        """A predictor on ``facebook/sam2.1-hiera-*`` (or ``sam2-hiera-*``) from the local Hugging Face cache."""
        model_kwargs = {key: kwargs.pop(key) for key in _MODEL_ARGUMENTS if key in kwargs}
        return cls(build_sam2_hf(model_id, **model_kwargs), **kwargs)

    @property
    def device(self):
        return self.model.device

    @property
    def _is_image_set(self):
        return self._core.image_count() > 0

    @property
    def _orig_hw(self):
        sizes = self._core.orig_hw()
        return [tuple(size) for size in sizes] if sizes else None

    @property
    def _features(self):
        """The decoder's inputs, as the official dict (read-only arrays): image_embed, high_res_feats."""
        if not self._is_image_set:
            return None
        features = self._core.features()
        return {"image_embed": features["image_embed"], "high_res_feats": list(features["high_res_feats"])}

    def set_image(self, image):
        """Encodes an HxWx3 uint8 RGB ndarray or a PIL image for the following predict() calls."""
        # Replaced in one step (predictions running on other threads keep the old image);
        # a failure leaves no image set, as the official predictor's reset first does.
        self._is_batch = False
        try:
            self._core.set_images([image_array(image)])
        except BaseException:
            self.reset_predictor()
            raise

    def set_image_batch(self, image_list):
        """Encodes several images for predict_batch()."""
        self.reset_predictor()
        if not isinstance(image_list, list) or not image_list:
            raise ValueError("image_list must be a non-empty list of HxWx3 uint8 RGB arrays")
        self._core.set_images([image_array(image) for image in image_list])
        self._is_batch = True

    def set_features(self, path, force=False):
        """Uses features saved by save_features() or `sam2rt encode` instead of encoding.

        Features made by another model (config or weights), or files that do not record their
        model, raise RuntimeError naming both sides; force=True uses them anyway (like the CLI's
        --force-features)."""
        self.reset_predictor()
        self._core.set_features_file(os.fspath(path), bool(force))

    def save_features(self, path):
        """Writes the current image's features (the format of `sam2rt encode --decoder-ready`)."""
        if not self._is_image_set:
            raise RuntimeError("An image must be set with .set_image(...) before its features can be saved.")
        self._core.save_features_file(os.fspath(path))

    def get_image_embedding(self):
        """The image embedding, float32 [B, C, H, W] (B = 1 after set_image), read-only."""
        if not self._is_image_set:
            raise RuntimeError("An image must be set with .set_image(...) to generate an embedding.")
        return self._core.features()["image_embed"]

    def reset_predictor(self):
        self._core.reset()
        self._is_batch = False

    def predict(
        self,
        point_coords=None,
        point_labels=None,
        box=None,
        mask_input=None,
        multimask_output=True,
        return_logits=False,
        normalize_coords=True,
    ):
        """Masks for a prompt on the current image, as the official predict().

        Returns (masks, iou_predictions, low_res_masks), float32: masks C x H x W at the
        original size (logits with return_logits, else 1.0/0.0 above/below mask_threshold),
        C scores, C x 256 x 256 low-res logits (C = 3 with multimask_output, else 1).
        A B x 4 box array (or B x N x 2 points) gives B x C x H x W, B x C, B x C x 256 x 256.
        """
        if not self._is_image_set:
            raise RuntimeError("An image must be set with .set_image(...) before mask prediction.")
        return self._predict(
            -1, point_coords, point_labels, box, mask_input, multimask_output, return_logits, normalize_coords
        )

    def predict_batch(
        self,
        point_coords_batch=None,
        point_labels_batch=None,
        box_batch=None,
        mask_input_batch=None,
        multimask_output=True,
        return_logits=False,
        normalize_coords=True,
    ):
        """predict() for each image of set_image_batch(); lists of (masks, ious, low-res masks)."""
        if not self._is_batch:
            raise RuntimeError("predict_batch should only be used after set_image_batch(...) (batched mode)")
        if not self._is_image_set:
            raise RuntimeError("An image must be set with .set_image_batch(...) before mask prediction.")
        count = self._core.image_count()
        batches = (point_coords_batch, point_labels_batch, box_batch, mask_input_batch)
        for name, batch in zip(("point_coords_batch", "point_labels_batch", "box_batch", "mask_input_batch"), batches):
            if batch is not None and len(batch) != count:
                raise ValueError(f"{name} has {len(batch)} entries for {count} images")
        all_masks, all_ious, all_low_res_masks = [], [], []
        for index in range(count):
            masks, ious, low_res_masks = self._predict(
                index,
                *(batch[index] if batch is not None else None for batch in batches),
                multimask_output,
                return_logits,
                normalize_coords,
            )
            all_masks.append(masks)
            all_ious.append(ious)
            all_low_res_masks.append(low_res_masks)
        return all_masks, all_ious, all_low_res_masks

    def _predict(
        self, index, point_coords, point_labels, box, mask_input, multimask_output, return_logits, normalize_coords
    ):
        height, width = self._core.orig_hw()[index]
        points = labels = boxes = masks = None
        if point_coords is not None:
            if point_labels is None:
                raise ValueError("point_labels must be supplied if point_coords is supplied.")
            points = _float32(point_coords, "point_coords")
            labels = _float32(point_labels, "point_labels")
            if points.ndim == 2:
                points, labels = points[None], labels[None]
            if not normalize_coords:
                points = points * np.array([width, height], dtype=np.float32)
        elif point_labels is not None:
            raise ValueError("point_labels given without point_coords")
        if box is not None:
            boxes = _float32(box, "box")
            if boxes.size % 4 != 0 or boxes.size == 0:
                raise ValueError(f"box must have shape (4,) or (B, 4), got {boxes.shape}")
            boxes = boxes.reshape(-1, 4)
            if not normalize_coords:
                boxes = boxes * np.array([width, height, width, height], dtype=np.float32)
        if mask_input is not None:
            masks = _float32(mask_input, "mask_input")
            if masks.ndim == 3:
                masks = masks[None]
        image_index = index if index >= 0 else self._core.image_count() + index
        masks_out, ious, low_res = self._core.predict(
            image_index, points, labels, boxes, masks, bool(multimask_output), bool(return_logits)
        )
        if masks_out.shape[0] == 1:  # the official squeeze(0)
            return masks_out[0], ious[0], low_res[0]
        return masks_out, ious, low_res
