"""Bad arguments raise ValueError / RuntimeError with a clear message, never crash."""

import math

import numpy as np
import pytest

import goldens
import sam2rt


@pytest.mark.parametrize(
    "image, message",
    [
        (np.zeros((112, 288, 3), dtype=np.float32), "uint8"),
        (np.zeros((112, 288), dtype=np.uint8), "HxWx3"),
        (np.zeros((112, 288, 4), dtype=np.uint8), "HxWx3"),
        (np.zeros((0, 288, 3), dtype=np.uint8), "empty"),
        (np.zeros((3, 112, 288), dtype=np.uint8), "HxWx3"),
    ],
)
def test_bad_images(micro_model, image, message):
    predictor = sam2rt.SAM2ImagePredictor(micro_model)
    with pytest.raises(ValueError, match=message):
        predictor.set_image(image)
    assert not predictor._is_image_set


def test_unsupported_image_type(micro_model):
    with pytest.raises(NotImplementedError, match="not supported"):
        sam2rt.SAM2ImagePredictor(micro_model).set_image("photo.png")


@pytest.mark.parametrize(
    "arguments, message",
    [
        (dict(point_coords=[[math.nan, 41]], point_labels=[1]), "point 0"),
        (dict(point_coords=[[110, math.inf]], point_labels=[1]), "point 0"),
        (dict(point_coords=[[110, 41]], point_labels=[2]), "label"),
        (dict(point_coords=[[110, 41]], point_labels=[0.5]), "label"),
        (dict(point_coords=[[110, 41]]), "point_labels must be supplied"),
        (dict(point_labels=[1]), "without point_coords"),
        (dict(point_coords=[[110, 41, 3]], point_labels=[1]), "point_coords must have shape"),
        (dict(point_coords=[[110, 41], [5, 5]], point_labels=[1]), "one label per point"),
        (dict(point_coords=[["a", "b"]], point_labels=[1]), "point_coords must be numeric"),
        (dict(point_coords=[[1000, 41]], point_labels=[1]), "point 0"),
        (dict(box=[140, 15, 80, 65]), "x1 < x0"),
        (dict(box=[80, 15, 140]), "box must have shape"),
        (dict(box=[80, math.nan, 140, 65]), "box"),
        (dict(box=np.zeros((2, 4)), point_coords=np.zeros((3, 1, 2)), point_labels=np.ones((3, 1))), "3 prompts"),
        (dict(mask_input=np.zeros((1, 32, 32), dtype=np.float32)), "mask_input must have shape"),
        (dict(mask_input=np.full((1, 64, 64), np.nan, dtype=np.float32)), "non-finite"),
        (dict(), "no prompt"),
    ],
)
def test_bad_prompts(micro_predictor, arguments, message):
    with pytest.raises(ValueError, match=message):
        micro_predictor.predict(**arguments)


def test_a_bad_prompt_in_a_batch_is_named(micro_predictor):
    with pytest.raises(ValueError, match="prompt 1: box"):
        micro_predictor.predict(box=[[80, 15, 140, 65], [140, 15, 80, 65]])


def test_predict_before_set_image(micro_model):
    predictor = sam2rt.SAM2ImagePredictor(micro_model)
    with pytest.raises(RuntimeError, match=r"set_image\(\.\.\.\) before mask prediction"):
        predictor.predict(point_coords=[[1, 1]], point_labels=[1])
    with pytest.raises(RuntimeError, match="set_image"):
        predictor.get_image_embedding()
    with pytest.raises(RuntimeError, match="set_image"):
        predictor.save_features("unused.safetensors")
    with pytest.raises(RuntimeError, match="batched mode"):
        predictor.predict_batch([np.zeros((1, 2))], [np.ones(1)])


def test_predict_batch_needs_one_entry_per_image(micro_model, micro_image):
    predictor = sam2rt.SAM2ImagePredictor(micro_model)
    predictor.set_image_batch([micro_image, micro_image])
    with pytest.raises(ValueError, match="2 images"):
        predictor.predict_batch([np.array([[1, 1]])], [np.array([1])])
    with pytest.raises(ValueError, match="non-empty list"):
        predictor.set_image_batch([])


@pytest.mark.parametrize(
    "options, message",
    [
        (dict(mask_threshold=math.nan), "mask_threshold"),
        (dict(max_hole_area=-1), "max_hole_area"),
        (dict(max_sprinkle_area="many"), "max_sprinkle_area"),
        (dict(preprocess="opencv"), "preprocess"),
        (dict(precision="fp16"), "precision"),
    ],
)
def test_bad_predictor_options(micro_model, options, message):
    with pytest.raises(ValueError, match=message):
        sam2rt.SAM2ImagePredictor(micro_model, **options)


def test_predictor_needs_a_sam2rt_model():
    with pytest.raises(TypeError, match="build_sam2"):
        sam2rt.SAM2ImagePredictor(object())


@pytest.mark.parametrize(
    "arguments, error, message",
    [
        (dict(config_file="configs/sam2.1/sam2.1_hiera_t.yaml"), ValueError, "ckpt_path is required"),
        (dict(config_file="configs/sam2.1/sam2.1_hiera_x.yaml", synthetic_weights=0), ValueError, "official config"),
        (dict(config_file="configs/sam2.1/sam2.1_hiera_t.yaml", synthetic_weights=0, device="cuda"), ValueError,
         "'cuda' is not supported: .* 'cpu' .* 'vulkan' or 'vulkan:N'"),
        (dict(config_file="configs/sam2.1/sam2.1_hiera_t.yaml", synthetic_weights=0, mode="train"), ValueError,
         "inference-only"),
        (dict(config_file="configs/sam2.1/sam2.1_hiera_t.yaml", synthetic_weights=-1), ValueError, "0..2"),
        (dict(config_file="configs/sam2.1/sam2.1_hiera_t.yaml", synthetic_weights=0, ckpt_path="x.pt"), ValueError,
         "not both"),
        (dict(config_file="configs/sam2.1/sam2.1_hiera_t.yaml", synthetic_weights=0,
              hydra_overrides_extra=["++model.image_size=512"]), ValueError, "not supported"),
        (dict(config_file="configs/sam2.1/sam2.1_hiera_t.yaml", synthetic_weights=0,
              hydra_overrides_extra=["model.sam_mask_decoder_extra_args.dynamic_multimask_stability_thresh=high"]),
         ValueError, "expected a number"),
        (dict(config_file="configs/sam2.1/sam2.1_hiera_t.yaml", ckpt_path="/nonexistent/sam2.1_hiera_tiny.pt"),
         RuntimeError, "sam2.1_hiera_tiny.pt"),
    ],
)
def test_bad_build_arguments(arguments, error, message):
    with pytest.raises(error, match=message):
        sam2rt.build_sam2(**arguments)


def test_bad_files(tmp_path, micro_model):
    not_a_checkpoint = tmp_path / "model.pt"
    not_a_checkpoint.write_text("not a checkpoint")
    with pytest.raises(RuntimeError):
        sam2rt.build_sam2(str(goldens.MICRO_CONFIG), ckpt_path=not_a_checkpoint)
    bad_yaml = tmp_path / "config.yaml"
    bad_yaml.write_text("model: [1, 2\n")
    with pytest.raises(RuntimeError, match="config"):
        sam2rt.build_sam2(str(bad_yaml), synthetic_weights=0)
    predictor = sam2rt.SAM2ImagePredictor(micro_model)
    with pytest.raises(RuntimeError):
        predictor.set_features(not_a_checkpoint)
    assert not predictor._is_image_set


def test_features_of_another_model_are_refused(micro_predictor, micro_features_file, tmp_path):
    micro_predictor.save_features(tmp_path / "f.safetensors")
    other_weights = sam2rt.build_sam2(str(goldens.MICRO_CONFIG), synthetic_weights=1)
    with pytest.raises(RuntimeError, match="weights"):
        sam2rt.SAM2ImagePredictor(other_weights).set_features(tmp_path / "f.safetensors")
    # A file without the record of its model (the golden features) needs force=True.
    with pytest.raises(RuntimeError, match="encode the image again"):
        sam2rt.SAM2ImagePredictor(other_weights).set_features(micro_features_file)


def test_from_pretrained_reads_only_the_local_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path))
    with pytest.raises(FileNotFoundError, match="huggingface-cli download facebook/sam2.1-hiera-tiny"):
        sam2rt.SAM2ImagePredictor.from_pretrained("facebook/sam2.1-hiera-tiny")
    with pytest.raises(ValueError, match="unknown model id"):
        sam2rt.SAM2ImagePredictor.from_pretrained("facebook/sam3")
    # A cached file is found through refs/main; this one is no checkpoint, so loading it fails clearly.
    repo = tmp_path / "models--facebook--sam2.1-hiera-tiny"
    (repo / "snapshots" / "abc123").mkdir(parents=True)
    (repo / "refs").mkdir()
    (repo / "refs" / "main").write_text("abc123")
    (repo / "snapshots" / "abc123" / "sam2.1_hiera_tiny.pt").write_bytes(b"\0" * 16)
    from sam2rt.build_sam import find_in_hugging_face_cache

    config, path = find_in_hugging_face_cache("facebook/sam2.1-hiera-tiny")
    assert config == "configs/sam2.1/sam2.1_hiera_t.yaml" and path.endswith("abc123/sam2.1_hiera_tiny.pt")
    with pytest.raises(RuntimeError, match="sam2.1_hiera_tiny.pt"):
        sam2rt.SAM2ImagePredictor.from_pretrained("facebook/sam2.1-hiera-tiny", mask_threshold=0.5)
