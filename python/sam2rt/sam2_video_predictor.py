"""SAM2VideoPredictor as in sam2/sam2_video_predictor.py, on the sam2rt engine.

Masks are float32 numpy arrays of the official tensors' shapes ([objects, 1, H, W]
logits): sam2rt has no PyTorch.
"""

import operator
import os
from collections.abc import Mapping

import numpy as np

from . import _sam2rt
from .build_sam import SAM2Model, build_sam2_video_predictor_hf


class InferenceState(Mapping):
    """What init_state returns: the official dict's video keys, read-only, over the engine's state.

    Keys: num_frames, video_height, video_width, obj_ids, obj_id_to_idx, obj_idx_to_id, device,
    offload_video_to_cpu, offload_state_to_cpu. The frames, features and per-object outputs
    stay in the engine.
    """

    def __init__(self, core, device, offload_video_to_cpu, offload_state_to_cpu):
        self._core = core
        self._fixed = {
            "num_frames": core.num_frames,
            "video_height": core.video_height,
            "video_width": core.video_width,
            "device": device,
            "offload_video_to_cpu": offload_video_to_cpu,
            "offload_state_to_cpu": offload_state_to_cpu,
        }

    def _object_keys(self):
        obj_ids = self._core.obj_ids
        return {
            "obj_ids": obj_ids,
            "obj_id_to_idx": {obj_id: idx for idx, obj_id in enumerate(obj_ids)},
            "obj_idx_to_id": dict(enumerate(obj_ids)),
        }

    def __getitem__(self, key):
        if key in self._fixed:
            return self._fixed[key]
        return self._object_keys()[key]

    def __iter__(self):
        return iter([*self._fixed, "obj_ids", "obj_id_to_idx", "obj_idx_to_id"])

    def __len__(self):
        return len(self._fixed) + 3

    def __repr__(self):
        return (
            f"InferenceState(num_frames={self['num_frames']}, video_height={self['video_height']}, "
            f"video_width={self['video_width']}, obj_ids={self['obj_ids']})"
        )


def _finite_float32(value, name):
    try:
        array = np.asarray(value, dtype=np.float32)
    except (TypeError, ValueError) as error:
        raise ValueError(f"{name} must be numeric: {error}") from None
    if not np.all(np.isfinite(array)):
        raise ValueError(f"{name} holds a value that is not a finite number")
    return array


def _integer(value, name):
    try:
        return operator.index(value)
    except TypeError:
        raise ValueError(f"{name} must be an integer, got {value!r}") from None


def _point_arrays(points, labels):
    """points [N, 2] (or [1, N, 2]) and labels [N] (or [1, N]) as lists for the engine."""
    if points is None:
        return [], []
    coords = _finite_float32(points, "points")
    if coords.ndim == 3 and coords.shape[0] == 1:
        coords = coords[0]
    if coords.ndim != 2 or coords.shape[1] != 2:
        raise ValueError(f"points must have shape [N, 2] (or [1, N, 2]), got {list(np.shape(points))}")
    label_array = np.asarray(labels)
    if label_array.ndim == 2 and label_array.shape[0] == 1:
        label_array = label_array[0]
    if label_array.ndim != 1 or label_array.shape[0] != coords.shape[0]:
        raise ValueError(f"labels must have shape [{coords.shape[0]}] (one per point), got {list(label_array.shape)}")
    if label_array.size and not np.issubdtype(label_array.dtype, np.integer):
        if not np.issubdtype(label_array.dtype, np.number) or np.any(label_array != np.round(label_array)):
            raise ValueError("labels must be integers (1 positive, 0 negative)")
    return coords.tolist(), [int(label) for label in label_array]


class SAM2VideoPredictor:
    """Tracks objects prompted with points, boxes or masks through a video, as the official predictor.

    Build it with build_sam2_video_predictor. Each init_state(video_path) returns the state of
    one video (a folder of JPEG frames named by their index, as officially, or a video file
    FFmpeg reads); the other methods take that state.
    """

    def __init__(
        self,
        sam_model,
        fill_hole_area=0,
        non_overlap_masks=False,
        clear_non_cond_mem_around_input=False,
        add_all_frames_to_correct_as_cond=False,
        binarize_mask_from_pts_for_mem_enc=False,
    ):
        if not isinstance(sam_model, SAM2Model):
            raise TypeError(f"sam_model must come from sam2rt's builders, got {type(sam_model).__name__}")
        self.model = sam_model
        self.fill_hole_area = _integer(fill_hole_area, "fill_hole_area")
        self.non_overlap_masks = bool(non_overlap_masks)
        self.clear_non_cond_mem_around_input = bool(clear_non_cond_mem_around_input)
        self.add_all_frames_to_correct_as_cond = bool(add_all_frames_to_correct_as_cond)
        self.binarize_mask_from_pts_for_mem_enc = bool(binarize_mask_from_pts_for_mem_enc)

    @classmethod
    def from_pretrained(cls, model_id, **kwargs):
        """A video predictor on ``facebook/sam2.1-hiera-*`` (or ``sam2-hiera-*``) from the local Hugging Face cache."""
        return build_sam2_video_predictor_hf(model_id, **kwargs)

    @property
    def device(self):
        return self.model.device

    @property
    def image_size(self):
        return self.model.image_size

    def init_state(self, video_path, offload_video_to_cpu=False, offload_state_to_cpu=False, async_loading_frames=False):
        """The state of one video; frame 0 is encoded now, the others when tracking reaches them.

        The offload and async options of the official predictor place CUDA tensors; sam2rt reads
        each frame from disk when it needs it, so they change nothing.
        """
        core = _sam2rt.VideoPredictorCore(
            self.model._core,
            os.fspath(video_path),
            self.fill_hole_area,
            self.binarize_mask_from_pts_for_mem_enc,
            self.non_overlap_masks,
            self.clear_non_cond_mem_around_input,
            self.add_all_frames_to_correct_as_cond,
        )
        return InferenceState(core, self.device, bool(offload_video_to_cpu), bool(offload_state_to_cpu))

    @staticmethod
    def _core_of(inference_state):
        if not isinstance(inference_state, InferenceState):
            raise TypeError(f"inference_state must come from init_state, got {type(inference_state).__name__}")
        return inference_state._core

    @staticmethod
    def _frame_index(inference_state, frame_idx):
        index = _integer(frame_idx, "frame_idx")
        num_frames = inference_state["num_frames"]
        if not 0 <= index < num_frames:
            raise ValueError(f"frame_idx {index} is out of range: the video has {num_frames} frames")
        return index

    def add_new_points_or_box(
        self,
        inference_state,
        frame_idx,
        obj_id,
        points=None,
        labels=None,
        clear_old_points=True,
        normalize_coords=True,
        box=None,
    ):
        """Adds clicks and/or a box (x0, y0, x1, y1) for an object on a frame.

        Returns (frame_idx, obj_ids, video_res_masks): the masks of every object on that frame,
        float32 logits [objects, 1, video_height, video_width].
        """
        core = self._core_of(inference_state)
        frame_idx = self._frame_index(inference_state, frame_idx)
        obj_id = _integer(obj_id, "obj_id")
        if (points is not None) != (labels is not None):
            raise ValueError("points and labels must be provided together")
        if points is None and box is None:
            raise ValueError("at least one of points or box must be provided as input")
        point_list, label_list = _point_arrays(points, labels)
        box_list = None
        if box is not None:
            if not clear_old_points:
                raise ValueError(
                    "cannot add box without clearing old points, since box prompt must be provided before any "
                    "point prompt (please use clear_old_points=True instead)"
                )
            box_array = _finite_float32(box, "box")
            if box_array.size != 4:
                raise ValueError(f"box must hold 4 numbers (x0, y0, x1, y1), got shape {list(box_array.shape)}")
            box_list = box_array.reshape(4).tolist()
        return core.add_new_points_or_box(
            frame_idx, obj_id, point_list, label_list, bool(clear_old_points), bool(normalize_coords), box_list
        )

    def add_new_points(self, *args, **kwargs):
        """Deprecated; use add_new_points_or_box (as officially)."""
        return self.add_new_points_or_box(*args, **kwargs)

    def add_new_mask(self, inference_state, frame_idx, obj_id, mask):
        """Adds a mask [H, W] (nonzero = object; any size, resized to the model's input) for an object.

        Returns (frame_idx, obj_ids, video_res_masks) as add_new_points_or_box.
        """
        core = self._core_of(inference_state)
        frame_idx = self._frame_index(inference_state, frame_idx)
        obj_id = _integer(obj_id, "obj_id")
        mask_array = np.asarray(mask)
        if mask_array.ndim != 2:
            raise ValueError(f"mask must be 2-D [H, W], got shape {list(mask_array.shape)}")
        return core.add_new_mask(frame_idx, obj_id, (mask_array != 0).astype(np.float32))

    def propagate_in_video(self, inference_state, start_frame_idx=None, max_frame_num_to_track=None, reverse=False):
        """Yields (frame_idx, obj_ids, video_res_masks) for every tracked frame, as the official generator."""
        core = self._core_of(inference_state)
        start = None if start_frame_idx is None else self._frame_index(inference_state, start_frame_idx)
        count = None if max_frame_num_to_track is None else _integer(max_frame_num_to_track, "max_frame_num_to_track")
        propagation = _sam2rt.PropagationCore(core, start, count, bool(reverse))
        while (frame := propagation.next()) is not None:
            yield frame

    def clear_all_prompts_in_frame(self, inference_state, frame_idx, obj_id, need_output=True):
        """Removes an object's prompts on a frame; (frame_idx, obj_ids, video_res_masks) if need_output."""
        core = self._core_of(inference_state)
        frame_idx = self._frame_index(inference_state, frame_idx)
        result = core.clear_all_prompts_in_frame(frame_idx, _integer(obj_id, "obj_id"))
        return result if need_output else None

    def reset_state(self, inference_state):
        """Removes every object and prompt (the video stays loaded)."""
        self._core_of(inference_state).reset_state()

    def remove_object(self, inference_state, obj_id, strict=False, need_output=True):
        """Removes an object; (remaining obj_ids, [(frame_idx, video_res_masks)] of the frames it changed)."""
        core = self._core_of(inference_state)
        return core.remove_object(_integer(obj_id, "obj_id"), bool(strict), bool(need_output))
