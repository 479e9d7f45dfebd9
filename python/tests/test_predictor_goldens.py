"""Every predictor method against the micro goldens (Meta's code on generated weights), one tiny run."""

import numpy as np
import pytest

import goldens
import sam2rt
from conftest import golden_runs


def max_error(actual, expected):
    assert actual.size == expected.size, f"{actual.shape} vs {expected.shape}"
    return float(np.max(np.abs(actual.astype(np.float64).ravel() - expected.astype(np.float64).ravel())))


def expect_run_matches(prediction, golden, run, score_tolerance):
    masks, ious, low_res = prediction
    prefix = run["key_prefix"]
    assert masks.shape == golden[prefix + ".masks"].shape
    assert max_error(masks, golden[prefix + ".masks"]) <= goldens.LOGIT_TOLERANCE
    assert max_error(low_res, golden[prefix + ".low_res_masks"]) <= goldens.LOGIT_TOLERANCE
    assert max_error(ious, golden[prefix + ".iou_predictions"]) <= score_tolerance
    assert int(np.argmax(ious)) == run["best_index"]


def test_image_embedding_and_features_match_golden(micro_predictor, micro_case):
    golden, _ = micro_case
    embedding = micro_predictor.get_image_embedding()
    assert embedding.dtype == np.float32 and embedding.shape == (1, 32, 16, 16)
    assert max_error(embedding, golden["image_embed"]) <= goldens.LOGIT_TOLERANCE
    assert not embedding.flags.writeable
    features = micro_predictor._features
    assert max_error(features["high_res_feats"][0], golden["feat_s0"]) <= goldens.LOGIT_TOLERANCE
    assert max_error(features["high_res_feats"][1], golden["feat_s1"]) <= goldens.LOGIT_TOLERANCE
    assert micro_predictor._orig_hw == [(112, 288)]


def test_every_golden_run_from_the_photo(micro_predictor, micro_case):
    golden, prompts = micro_case
    for prompt, run in golden_runs(prompts):
        prediction = micro_predictor.predict(
            **goldens.prompt_arguments(prompt, golden), multimask_output=run["multimask_output"], return_logits=True
        )
        expect_run_matches(prediction, golden, run, goldens.PHOTO_SCORE_TOLERANCE)


def test_every_golden_run_from_golden_features(micro_model, micro_case, micro_features_file):
    golden, prompts = micro_case
    predictor = sam2rt.SAM2ImagePredictor(micro_model)
    predictor.set_features(micro_features_file, force=True)  # the reference's own features, no sam2rt record
    assert predictor._orig_hw == [(112, 288)]
    assert max_error(predictor.get_image_embedding(), golden["image_embed"]) == 0.0
    for prompt, run in golden_runs(prompts):
        prediction = predictor.predict(
            **goldens.prompt_arguments(prompt, golden), multimask_output=run["multimask_output"], return_logits=True
        )
        expect_run_matches(prediction, golden, run, goldens.SCORE_TOLERANCE)


def test_mask_input_from_an_earlier_prediction(micro_predictor, micro_case):
    golden, _ = micro_case
    _, ious, low_res = micro_predictor.predict(
        point_coords=[[110, 41]], point_labels=[1], multimask_output=True, return_logits=True
    )
    masks, _, _ = micro_predictor.predict(
        point_coords=[[203, 55]],
        point_labels=[1],
        mask_input=low_res[np.argmax(ious)][None],
        multimask_output=True,
        return_logits=True,
    )
    assert max_error(masks, golden["p5_point_mask.mm.masks"]) <= goldens.LOGIT_TOLERANCE


def test_binary_masks_are_float_ones_and_zeros_above_the_threshold(micro_predictor, micro_case):
    golden, _ = micro_case
    masks, ious, low_res = micro_predictor.predict(point_coords=np.array([[110.0, 41.0]]), point_labels=np.array([1]))
    logits = golden["p1_point.mm.masks"]
    assert masks.dtype == np.float32 and masks.shape == (3, 112, 288)
    assert set(np.unique(masks)) <= {0.0, 1.0}
    clear = np.abs(logits) > goldens.LOGIT_TOLERANCE
    assert np.array_equal(masks[clear] == 1.0, logits[clear] > 0)
    assert ious.dtype == np.float32 and ious.shape == (3,)
    assert low_res.dtype == np.float32 and low_res.shape == (3, 64, 64)


def test_single_mask_shapes(micro_predictor):
    masks, ious, low_res = micro_predictor.predict(box=[80, 15, 140, 65], multimask_output=False)
    assert (masks.shape, ious.shape, low_res.shape) == ((1, 112, 288), (1,), (1, 64, 64))
    assert masks.dtype == ious.dtype == low_res.dtype == np.float32


def test_box_array_gives_a_batch_equal_to_single_predictions(micro_predictor):
    boxes = np.array([[80, 15, 140, 65], [40, 5, 240, 108]], dtype=np.float32)
    masks, ious, low_res = micro_predictor.predict(box=boxes, return_logits=True)
    assert (masks.shape, ious.shape, low_res.shape) == ((2, 3, 112, 288), (2, 3), (2, 3, 64, 64))
    for i, box in enumerate(boxes):
        single = micro_predictor.predict(box=box, return_logits=True)
        assert max_error(masks[i], single[0]) <= goldens.LOGIT_TOLERANCE
        assert max_error(ious[i], single[1]) <= goldens.SCORE_TOLERANCE
        assert max_error(low_res[i], single[2]) <= goldens.LOGIT_TOLERANCE
    # A 1 x 4 array is squeezed like the official predictor's output.
    assert micro_predictor.predict(box=boxes[:1])[0].shape == (3, 112, 288)


def test_batched_points_with_boxes_and_one_shared_mask(micro_predictor):
    points = np.array([[[110, 41]], [[203, 55]]], dtype=np.float32)
    labels = np.ones((2, 1), dtype=np.int32)
    boxes = np.array([[80, 15, 140, 65], [40, 5, 240, 108]], dtype=np.float32)
    mask = np.zeros((1, 64, 64), dtype=np.float32)
    masks, ious, low_res = micro_predictor.predict(points, labels, boxes, mask, multimask_output=False)
    assert (masks.shape, ious.shape, low_res.shape) == ((2, 1, 112, 288), (2, 1), (2, 1, 64, 64))
    second = micro_predictor.predict(points[1], labels[1], boxes[1], mask, multimask_output=False, return_logits=True)
    _, second_iou, second_low = second
    assert max_error(low_res[1], second_low) <= goldens.LOGIT_TOLERANCE
    assert max_error(ious[1], second_iou) <= goldens.SCORE_TOLERANCE


def test_normalized_coordinates(micro_predictor):
    pixels = micro_predictor.predict(point_coords=[[110, 41]], point_labels=[1], return_logits=True)
    fractions = micro_predictor.predict(
        point_coords=[[110 / 288, 41 / 112]], point_labels=[1], return_logits=True, normalize_coords=False
    )
    for a, b in zip(pixels, fractions):
        assert max_error(a, b) <= goldens.LOGIT_TOLERANCE


def test_pil_image_equals_array(micro_model, micro_image, micro_predictor):
    from PIL import Image

    predictor = sam2rt.SAM2ImagePredictor(micro_model)
    predictor.set_image(Image.fromarray(micro_image))
    assert np.array_equal(predictor.get_image_embedding(), micro_predictor.get_image_embedding())
    # A non-contiguous view is the same image.
    predictor.set_image(np.ascontiguousarray(micro_image[:, ::-1])[:, ::-1])
    assert np.array_equal(predictor.get_image_embedding(), micro_predictor.get_image_embedding())


def test_set_image_batch_and_predict_batch(micro_model, micro_image, micro_predictor):
    flipped = np.ascontiguousarray(micro_image[::-1])
    predictor = sam2rt.SAM2ImagePredictor(micro_model)
    predictor.set_image_batch([micro_image, flipped])
    assert predictor._orig_hw == [(112, 288), (112, 288)]
    assert predictor.get_image_embedding().shape == (2, 32, 16, 16)
    masks, ious, low_res = predictor.predict_batch(
        [np.array([[110, 41]]), np.array([[110, 70]])],
        [np.array([1]), np.array([1])],
        box_batch=None,
        multimask_output=True,
        return_logits=True,
    )
    assert len(masks) == len(ious) == len(low_res) == 2
    assert masks[0].shape == (3, 112, 288) and ious[0].shape == (3,) and low_res[0].shape == (3, 64, 64)
    single = micro_predictor.predict(point_coords=[[110, 41]], point_labels=[1], return_logits=True)
    assert np.array_equal(masks[0], single[0]) and np.array_equal(ious[0], single[1])
    flipped_predictor = sam2rt.SAM2ImagePredictor(micro_model)
    flipped_predictor.set_image(flipped)
    assert np.array_equal(
        masks[1], flipped_predictor.predict(point_coords=[[110, 70]], point_labels=[1], return_logits=True)[0]
    )
    # predict() after set_image_batch uses the last image, as the official predictor does.
    assert np.array_equal(predictor.predict(point_coords=[[110, 70]], point_labels=[1], return_logits=True)[0], masks[1])


def test_save_and_set_features_round_trip(micro_model, micro_predictor, tmp_path):
    path = tmp_path / "micro.safetensors"
    micro_predictor.save_features(path)
    tensors, metadata = goldens.read_safetensors(path)
    assert metadata["format"] == "sam2rt.features.v2"
    assert (metadata["orig_width"], metadata["orig_height"], metadata["image_size"]) == ("288", "112", "256")
    assert {"image_embed", "feat_s0", "feat_s1"} <= set(tensors)
    restored = sam2rt.SAM2ImagePredictor(micro_model)
    restored.set_features(str(path))
    prompt = dict(box=[80, 15, 140, 65], return_logits=True)
    for a, b in zip(restored.predict(**prompt), micro_predictor.predict(**prompt)):
        assert np.array_equal(a, b)


def test_reset_predictor(micro_model, micro_image):
    predictor = sam2rt.SAM2ImagePredictor(micro_model)
    predictor.set_image(micro_image)
    predictor.reset_predictor()
    assert not predictor._is_image_set and predictor._features is None
    with pytest.raises(RuntimeError, match="set_image"):
        predictor.predict(point_coords=[[1, 1]], point_labels=[1])


def test_checkpoint_file_equals_generated_weights(micro_predictor):
    model = sam2rt.build_sam2(str(goldens.MICRO_CONFIG), ckpt_path=goldens.MICRO / "micro.pt")
    predictor = sam2rt.SAM2ImagePredictor(model)
    predictor.set_image(goldens.read_image(goldens.IMAGES / "chelsea_288x112.png"))
    assert np.array_equal(predictor.get_image_embedding(), micro_predictor.get_image_embedding())


def test_without_postprocessing_single_mask_is_token_zero(micro_image, micro_case):
    golden, prompts = micro_case
    model = sam2rt.build_sam2(str(goldens.MICRO_CONFIG), synthetic_weights=0, apply_postprocessing=False)
    predictor = sam2rt.SAM2ImagePredictor(model)
    predictor.set_image(micro_image)
    for prompt in prompts["prompts"]:
        _, _, low_res = predictor.predict(**goldens.prompt_arguments(prompt, golden), multimask_output=False)
        token0 = np.clip(golden[prompt["name"] + ".all_low_res_logits"][0, 0], -32, 32)
        assert max_error(low_res[0], token0) <= goldens.LOGIT_TOLERANCE, prompt["name"]
    # The golden sm runs all fell back to a multimask token, so this path really differs.
    assert all(not run["single_mask_token_used"] for _, run in golden_runs(prompts) if not run["multimask_output"])


def test_hydra_override_turns_postprocessing_back_on(micro_image, micro_case):
    golden, _ = micro_case
    model = sam2rt.build_sam2(
        str(goldens.MICRO_CONFIG),
        synthetic_weights=0,
        apply_postprocessing=False,
        hydra_overrides_extra=["++model.sam_mask_decoder_extra_args.dynamic_multimask_via_stability=true"],
    )
    predictor = sam2rt.SAM2ImagePredictor(model)
    predictor.set_image(micro_image)
    masks, _, _ = predictor.predict(box=[80, 15, 140, 65], multimask_output=False, return_logits=True)
    assert max_error(masks, golden["p3_box.sm.masks"]) <= goldens.LOGIT_TOLERANCE


def test_mask_threshold_and_hole_filling(micro_model, micro_image, micro_predictor):
    prompt = dict(point_coords=[[110, 41]], point_labels=[1])
    logits, _, low_res = micro_predictor.predict(**prompt, return_logits=True)

    def predictor(**options):
        p = sam2rt.SAM2ImagePredictor(micro_model, **options)
        p.set_image(micro_image)
        return p

    high = predictor(mask_threshold=2.0).predict(**prompt)[0]
    clear = np.abs(logits - 2.0) > goldens.LOGIT_TOLERANCE
    assert np.array_equal(high[clear] == 1.0, logits[clear] > 2.0)
    # Every component is at most the whole map: holes all become foreground,
    # sprinkles all background, both together invert the low-res mask (both are
    # found on the unfilled logits) before the upsampling.
    area = 64 * 64
    assert np.all(predictor(max_hole_area=area).predict(**prompt)[0] == 1.0)
    assert np.all(predictor(max_sprinkle_area=area).predict(**prompt)[0] == 0.0)
    both = predictor(max_hole_area=area, max_sprinkle_area=area)
    filled_logits, _, filled_low_res = both.predict(**prompt, return_logits=True)
    assert np.array_equal(filled_low_res, low_res)  # low_res_masks stay unfilled, as in the official predictor
    inverted = np.where(low_res > 0, -10.0, 10.0)
    assert max_error(filled_logits, goldens.upsample_bilinear(inverted, 112, 288)) <= goldens.LOGIT_TOLERANCE


def test_torchvision_preprocessing_matches_official_predictor():
    for image, golden_file, size in [
        ("chelsea_288x112.png", "chelsea_288x112_torchvision_256.safetensors", 256),
        ("coffee_1500x1100.png", "coffee_1500x1100_torchvision_1024.safetensors", 1024),
    ]:
        expected = goldens.read_safetensors(goldens.IMAGES / golden_file)[0]["input"]
        photo = goldens.read_image(goldens.IMAGES / image)
        ours = sam2rt._sam2rt.preprocess(photo, size, "torchvision")
        assert ours.shape == (1, 3, size, size) and ours.dtype == np.float32
        assert max_error(ours, expected) <= 1e-5, image
        assert max_error(sam2rt._sam2rt.preprocess(photo, size, "pillow"), expected) > 1e-3


def test_torchvision_predictor_encodes_the_torchvision_input(micro_model, micro_image, micro_predictor):
    predictor = sam2rt.SAM2ImagePredictor(micro_model, preprocess="torchvision")
    predictor.set_image(micro_image)
    embedding = predictor.get_image_embedding()
    assert embedding.shape == (1, 32, 16, 16)
    assert not np.array_equal(embedding, micro_predictor.get_image_embedding())


def test_tiny_golden_box_and_point():
    golden, prompts = goldens.load_case(goldens.TINY)
    model = sam2rt.build_sam2("configs/sam2.1/sam2.1_hiera_t.yaml", synthetic_weights=0)
    assert model.image_size == 1024
    predictor = sam2rt.SAM2ImagePredictor(model)
    predictor.set_image(goldens.read_image(goldens.IMAGES / "astronaut.png"))
    prompt = next(p for p in prompts["prompts"] if p["name"] == "p4_box_point")
    masks, ious, low_res = predictor.predict(**goldens.prompt_arguments(prompt, golden), multimask_output=False,
                                             return_logits=True)
    assert masks.shape == (1, 512, 512) and low_res.shape == (1, 256, 256)
    assert max_error(masks[:, ::8, ::8], golden["p4_box_point.sm.masks.dec8"]) <= goldens.LOGIT_TOLERANCE
    assert max_error(low_res[:, ::4, ::4], golden["p4_box_point.sm.low_res_masks.dec4"]) <= goldens.LOGIT_TOLERANCE
    assert max_error(ious, golden["p4_box_point.sm.iou_predictions"]) <= goldens.SCORE_TOLERANCE
