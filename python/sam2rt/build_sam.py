"""build_sam2 as in sam2/build_sam.py: official config names or YAML files, checkpoints from disk."""

import os
import re
from pathlib import Path

from . import _sam2rt

# Official config names -> the engine's built-in architectures. SAM 2 and SAM 2.1
# share the image path (they differ only in the video memory modules).
OFFICIAL_CONFIGS = {
    "configs/sam2.1/sam2.1_hiera_t.yaml": "tiny",
    "configs/sam2.1/sam2.1_hiera_s.yaml": "small",
    "configs/sam2.1/sam2.1_hiera_b+.yaml": "base_plus",
    "configs/sam2.1/sam2.1_hiera_l.yaml": "large",
    "configs/sam2/sam2_hiera_t.yaml": "tiny",
    "configs/sam2/sam2_hiera_s.yaml": "small",
    "configs/sam2/sam2_hiera_b+.yaml": "base_plus",
    "configs/sam2/sam2_hiera_l.yaml": "large",
}

HF_MODEL_ID_TO_FILENAMES = {
    "facebook/sam2-hiera-tiny": ("configs/sam2/sam2_hiera_t.yaml", "sam2_hiera_tiny.pt"),
    "facebook/sam2-hiera-small": ("configs/sam2/sam2_hiera_s.yaml", "sam2_hiera_small.pt"),
    "facebook/sam2-hiera-base-plus": ("configs/sam2/sam2_hiera_b+.yaml", "sam2_hiera_base_plus.pt"),
    "facebook/sam2-hiera-large": ("configs/sam2/sam2_hiera_l.yaml", "sam2_hiera_large.pt"),
    "facebook/sam2.1-hiera-tiny": ("configs/sam2.1/sam2.1_hiera_t.yaml", "sam2.1_hiera_tiny.pt"),
    "facebook/sam2.1-hiera-small": ("configs/sam2.1/sam2.1_hiera_s.yaml", "sam2.1_hiera_small.pt"),
    "facebook/sam2.1-hiera-base-plus": ("configs/sam2.1/sam2.1_hiera_b+.yaml", "sam2.1_hiera_base_plus.pt"),
    "facebook/sam2.1-hiera-large": ("configs/sam2.1/sam2.1_hiera_l.yaml", "sam2.1_hiera_large.pt"),
}

# The hydra overrides sam2rt honours (under "model."), with their defaults. The
# image path reads only the mask decoder's choice between token 0 and the best
# multimask token when multimask_output=False; video tracking also reads the
# memory encoder's binarization and SAM2VideoPredictor's options.
_DECODER_ARGS = "sam_mask_decoder_extra_args."
_DECODER_DEFAULTS = {
    _DECODER_ARGS + "dynamic_multimask_via_stability": False,
    _DECODER_ARGS + "dynamic_multimask_stability_delta": 0.05,
    _DECODER_ARGS + "dynamic_multimask_stability_thresh": 0.98,
}
_VIDEO_DEFAULTS = {
    **_DECODER_DEFAULTS,
    "binarize_mask_from_pts_for_mem_enc": False,
    "fill_hole_area": 0,
    "non_overlap_masks": False,
    "clear_non_cond_mem_around_input": False,
    "add_all_frames_to_correct_as_cond": False,
}
_POSTPROCESSING_OVERRIDES = [
    "++model.sam_mask_decoder_extra_args.dynamic_multimask_via_stability=true",
    "++model.sam_mask_decoder_extra_args.dynamic_multimask_stability_delta=0.05",
    "++model.sam_mask_decoder_extra_args.dynamic_multimask_stability_thresh=0.98",
]
# What build_sam2_video_predictor's apply_postprocessing adds to the above.
_VIDEO_POSTPROCESSING_OVERRIDES = [
    "++model.binarize_mask_from_pts_for_mem_enc=true",
    "++model.fill_hole_area=8",
]


class SAM2Model:
    """What build_sam2 returns: a loaded, immutable model to hand to the predictors."""

    def __init__(self, core, config_file, device="cpu"):
        self._core = core
        self.config_file = config_file
        self._device = device

    @property
    def image_size(self):
        return self._core.image_size

    @property
    def device(self):
        """Where the image encoder runs: "cpu" or "vulkan:N" (the decoder runs on the CPU)."""
        return self._device

    def __repr__(self):
        return f"SAM2Model({self.config_file!r}, {self._core.description}, image_size={self.image_size})"


def _resolve_config(config_file):
    """(built-in variant, YAML path): exactly one of the two is non-empty."""
    try:
        name = os.fspath(config_file)
    except TypeError:
        raise ValueError(f"config_file must be a config name or a path, got {type(config_file).__name__}") from None
    key = name if name.endswith(".yaml") else name + ".yaml"
    if key in OFFICIAL_CONFIGS:
        return OFFICIAL_CONFIGS[key], ""
    if Path(name).is_file():
        return "", name
    if "/" not in key:  # a bare official file name, e.g. "sam2.1_hiera_t.yaml"
        for official, variant in OFFICIAL_CONFIGS.items():
            if Path(official).name == key:
                return variant, ""
    raise ValueError(
        f"config_file {name!r} is neither an official config name ({', '.join(OFFICIAL_CONFIGS)}) "
        "nor an existing YAML file"
    )


def _parse_bool(text, item):
    lowered = text.strip().lower()
    if lowered in ("true", "false"):
        return lowered == "true"
    raise ValueError(f"hydra override {item!r}: expected true or false")


def _parse_float(text, item):
    try:
        return float(text)
    except ValueError:
        raise ValueError(f"hydra override {item!r}: expected a number") from None


def _parse_int(text, item):
    try:
        return int(text)
    except ValueError:
        raise ValueError(f"hydra override {item!r}: expected an integer") from None


def _override_settings(overrides, defaults):
    """The settings of `defaults` (keys under "model.") with the hydra overrides applied."""
    settings = dict(defaults)
    if isinstance(overrides, str):
        raise ValueError("hydra_overrides_extra must be a list of strings, not a string")
    for item in overrides:
        if not isinstance(item, str) or "=" not in item:
            raise ValueError(f"hydra override {item!r} is not of the form key=value")
        key, value = item.split("=", 1)
        key = key.lstrip("+")
        field = key[len("model."):] if key.startswith("model.") else None
        if field not in settings:
            supported = ", ".join("model." + f for f in settings)
            raise ValueError(f"hydra override {item!r} is not supported by sam2rt (supported: {supported})")
        default = defaults[field]
        if isinstance(default, bool):
            settings[field] = _parse_bool(value, item)
        elif isinstance(default, int):
            settings[field] = _parse_int(value, item)
        else:
            settings[field] = _parse_float(value, item)
    return settings


_DEVICE = re.compile(r"(cpu|vulkan)(?::([0-9]{1,3}))?")
_MAX_GPU_INDEX = 255


def _check_device(device):
    """The device's canonical name, "cpu" or "vulkan:N"; ValueError naming the supported ones otherwise."""
    text = str(device)
    match = _DEVICE.fullmatch(text)
    index = int(match.group(2)) if match and match.group(2) is not None else 0
    if match is None or (match.group(1) == "cpu" and match.group(2) is not None) or index > _MAX_GPU_INDEX:
        raise ValueError(
            f"device {text!r} is not supported: sam2rt runs its image encoder on 'cpu' or on a GPU through "
            f"Vulkan, 'vulkan' or 'vulkan:N' (N = 0..{_MAX_GPU_INDEX}); the decoder runs on the CPU"
        )
    return "cpu" if match.group(1) == "cpu" else f"vulkan:{index}"


def build_sam2(
    config_file,
    ckpt_path=None,
    device="cpu",
    mode="eval",
    hydra_overrides_extra=[],
    apply_postprocessing=True,
    synthetic_weights=None,
):
    """Loads a SAM 2 / 2.1 image model.

    config_file: an official config name (``configs/sam2.1/sam2.1_hiera_t.yaml``, ``_s``,
    ``_b+``, ``_l``, or the SAM 2 ``configs/sam2/sam2_hiera_*.yaml``) or the path of a
    YAML file in the official format. ckpt_path: the official ``.pt`` checkpoint or a
    ``.safetensors`` of the same state dict. synthetic_weights=SALT instead runs the
    deterministic generated weights of the test fixtures (meaningless masks).
    device: "cpu", or "vulkan" / "vulkan:N" for the image encoder and the mask decoder (every
    prompt, mask inputs included) on a GPU through Vulkan (the prompt encoder and the upscaling
    of the masks to the image stay on the CPU).
    """
    overrides = list(hydra_overrides_extra)
    if apply_postprocessing:
        overrides += _POSTPROCESSING_OVERRIDES
    settings = _override_settings(overrides, _DECODER_DEFAULTS)
    return _load_model(config_file, ckpt_path, device, mode, settings, synthetic_weights)


def _load_model(config_file, ckpt_path, device, mode, settings, synthetic_weights):
    """The SAM2Model of build_sam2 and build_sam2_video_predictor, with the mask decoder's settings."""
    device = _check_device(device)
    if mode != "eval":
        raise ValueError(f"mode {mode!r} is not supported: sam2rt is inference-only (mode='eval')")
    variant, config_path = _resolve_config(config_file)
    if ckpt_path is None and synthetic_weights is None:
        raise ValueError(
            "ckpt_path is required: sam2rt needs trained weights (e.g. sam2.1_hiera_tiny.pt from "
            "https://dl.fbaipublicfiles.com/segment_anything_2/092824/sam2.1_hiera_tiny.pt), "
            "or synthetic_weights=SALT for tests"
        )
    if ckpt_path is not None and synthetic_weights is not None:
        raise ValueError("give ckpt_path or synthetic_weights, not both")
    salt = None
    if synthetic_weights is not None:
        if isinstance(synthetic_weights, bool) or not isinstance(synthetic_weights, int):
            raise ValueError(f"synthetic_weights must be an integer salt, got {synthetic_weights!r}")
        if not 0 <= synthetic_weights < 2**64:
            raise ValueError(f"synthetic_weights must be in 0..2**64-1, got {synthetic_weights}")
        salt = synthetic_weights
    checkpoint = os.fspath(ckpt_path) if ckpt_path is not None else ""
    core = _sam2rt.Model.load(
        variant,
        config_path,
        checkpoint,
        salt,
        settings[_DECODER_ARGS + "dynamic_multimask_via_stability"],
        settings[_DECODER_ARGS + "dynamic_multimask_stability_delta"],
        settings[_DECODER_ARGS + "dynamic_multimask_stability_thresh"],
        device,
    )
    return SAM2Model(core, os.fspath(config_file), device)


def build_sam2_video_predictor(
    config_file,
    ckpt_path=None,
    device="cpu",
    mode="eval",
    hydra_overrides_extra=[],
    apply_postprocessing=True,
    vos_optimized=False,
    synthetic_weights=None,
    **kwargs,
):
    """Loads a SAM 2.1 model as a SAM2VideoPredictor, as the official build_sam2_video_predictor.

    The arguments are build_sam2's; on device="vulkan" the memory attention and the memory
    encoder run on the GPU too. apply_postprocessing also binarizes the memory of
    frames prompted with points and fills mask holes of up to 8 low-res pixels, as the
    official one does; the hydra overrides ``model.binarize_mask_from_pts_for_mem_enc``,
    ``model.fill_hole_area``, ``model.non_overlap_masks``, ``model.clear_non_cond_mem_around_input``
    and ``model.add_all_frames_to_correct_as_cond`` set the tracking options.
    vos_optimized=True (the official SAM2VideoPredictorVOS, which compiles the model with
    torch.compile) tracks the same way. Other keyword arguments are ignored, as officially.
    """
    from .sam2_video_predictor import SAM2VideoPredictor

    overrides = list(hydra_overrides_extra)
    if apply_postprocessing:
        overrides += _POSTPROCESSING_OVERRIDES + _VIDEO_POSTPROCESSING_OVERRIDES
    settings = _override_settings(overrides, _VIDEO_DEFAULTS)
    model = _load_model(config_file, ckpt_path, device, mode, settings, synthetic_weights)
    return SAM2VideoPredictor(
        model,
        fill_hole_area=settings["fill_hole_area"],
        non_overlap_masks=settings["non_overlap_masks"],
        clear_non_cond_mem_around_input=settings["clear_non_cond_mem_around_input"],
        add_all_frames_to_correct_as_cond=settings["add_all_frames_to_correct_as_cond"],
        binarize_mask_from_pts_for_mem_enc=settings["binarize_mask_from_pts_for_mem_enc"],
    )


def _hugging_face_cache():
    if os.environ.get("HF_HUB_CACHE"):
        return Path(os.environ["HF_HUB_CACHE"])
    if os.environ.get("HUGGINGFACE_HUB_CACHE"):
        return Path(os.environ["HUGGINGFACE_HUB_CACHE"])
    if os.environ.get("HF_HOME"):
        return Path(os.environ["HF_HOME"]) / "hub"
    return Path.home() / ".cache" / "huggingface" / "hub"


def find_in_hugging_face_cache(model_id):
    """(config name, checkpoint path) of a model already in the local Hugging Face cache.

    Nothing is downloaded: FileNotFoundError says how to get the checkpoint.
    """
    if model_id not in HF_MODEL_ID_TO_FILENAMES:
        raise ValueError(f"unknown model id {model_id!r}; known: {', '.join(HF_MODEL_ID_TO_FILENAMES)}")
    config_name, filename = HF_MODEL_ID_TO_FILENAMES[model_id]
    repo = _hugging_face_cache() / ("models--" + model_id.replace("/", "--"))
    candidates = []
    main_ref = repo / "refs" / "main"
    if main_ref.is_file():
        candidates.append(repo / "snapshots" / main_ref.read_text().strip() / filename)
    snapshots = repo / "snapshots"
    if snapshots.is_dir():
        candidates += sorted(snapshots.glob("*/" + filename), key=lambda p: p.stat().st_mtime, reverse=True)
    for candidate in candidates:
        if candidate.is_file():
            return config_name, str(candidate)
    raise FileNotFoundError(
        f"{model_id}: {filename} is not in the local Hugging Face cache ({repo}); sam2rt never downloads. "
        f"Fetch it where there is internet with `huggingface-cli download {model_id} {filename}`, or download "
        f"https://huggingface.co/{model_id}/resolve/main/{filename} and call "
        f"build_sam2({config_name!r}, ckpt_path=...)"
    )


def build_sam2_hf(model_id, **kwargs):
    """build_sam2 on a checkpoint from the local Hugging Face cache (see find_in_hugging_face_cache)."""
    config_name, ckpt_path = find_in_hugging_face_cache(model_id)
    return build_sam2(config_file=config_name, ckpt_path=ckpt_path, **kwargs)


def build_sam2_video_predictor_hf(model_id, **kwargs):
    """build_sam2_video_predictor on a checkpoint from the local Hugging Face cache."""
    config_name, ckpt_path = find_in_hugging_face_cache(model_id)
    return build_sam2_video_predictor(config_file=config_name, ckpt_path=ckpt_path, **kwargs)
