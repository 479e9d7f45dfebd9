"""SAM2AutomaticMaskGenerator against the official goldens (fixtures' own checker) and its output modes."""

import json
import subprocess
import sys

import numpy as np
import pytest

import goldens
import sam2rt

PARAMETERS = (
    "points_per_side", "points_per_batch", "pred_iou_thresh", "stability_score_thresh", "stability_score_offset",
    "mask_threshold", "box_nms_thresh", "crop_n_layers", "crop_nms_thresh", "crop_overlap_ratio",
    "crop_n_points_downscale_factor", "min_mask_region_area", "output_mode", "use_m2m", "multimask_output",
)


@pytest.mark.parametrize("case", ["micro_mm_g8", "micro_nms_mt3", "micro_crops_sm", "micro_m2m_holes"])
def test_micro_goldens_pass_the_fixtures_checker(case, micro_model, micro_image, tmp_path):
    golden_path = goldens.AMG / f"{case}.json"
    golden = json.loads(golden_path.read_text())
    generator = sam2rt.SAM2AutomaticMaskGenerator(micro_model, **golden["params"])
    masks = generator.generate(micro_image)
    candidate = {
        "format": "sam2-amg-1",
        "case": case,
        "image": "chelsea_288x112.png",
        "image_hw": list(micro_image.shape[:2]),
        "params": {name: getattr(generator, name) for name in PARAMETERS},
        "masks": masks,
    }
    candidate_path = tmp_path / "candidate.json"
    candidate_path.write_text(json.dumps(candidate))
    result = subprocess.run(
        [sys.executable, str(goldens.AMG / "check_amg.py"), str(golden_path), str(candidate_path), "-v"],
        capture_output=True, text=True, timeout=300,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert len(masks) >= len(golden["masks"]) - 1


def test_output_modes_and_record_types(micro_model, micro_image):
    options = dict(points_per_side=4, pred_iou_thresh=0.4, stability_score_thresh=0.3, stability_score_offset=0.05,
                   mask_threshold=3.0, box_nms_thresh=0.9)
    by_mode = {
        mode: sam2rt.SAM2AutomaticMaskGenerator(micro_model, output_mode=mode, **options).generate(micro_image)
        for mode in ("binary_mask", "uncompressed_rle", "coco_rle")
    }
    count = len(by_mode["binary_mask"])
    assert count > 0 and all(len(records) == count for records in by_mode.values())
    for binary, rle, coco in zip(*by_mode.values()):
        mask = binary["segmentation"]
        assert isinstance(mask, np.ndarray) and mask.dtype == bool and mask.shape == (112, 288)
        assert rle["segmentation"]["size"] == [112, 288]
        assert np.array_equal(goldens.rle_to_mask(rle["segmentation"]), mask)
        assert isinstance(coco["segmentation"]["counts"], str) and coco["segmentation"]["size"] == [112, 288]
        assert goldens.coco_counts_from_string(coco["segmentation"]["counts"]) == rle["segmentation"]["counts"]
        assert isinstance(binary["area"], int) and binary["area"] == int(mask.sum())
        rows, columns = np.nonzero(mask.any(1))[0], np.nonzero(mask.any(0))[0]
        assert binary["bbox"] == [float(columns[0]), float(rows[0]), float(columns[-1] - columns[0]),
                                  float(rows[-1] - rows[0])]
        assert binary["crop_box"] == [0.0, 0.0, 288.0, 112.0]
        assert isinstance(binary["predicted_iou"], float) and isinstance(binary["stability_score"], float)
        assert len(binary["point_coords"]) == 1 and len(binary["point_coords"][0]) == 2
        for key in ("area", "bbox", "predicted_iou", "point_coords", "stability_score", "crop_box"):
            assert binary[key] == rle[key] == coco[key]


def test_custom_point_grid(micro_model, micro_image):
    grid = np.array([[0.38, 0.37], [0.7, 0.49]])
    masks = sam2rt.SAM2AutomaticMaskGenerator(
        micro_model, points_per_side=None, point_grids=[grid], pred_iou_thresh=0, stability_score_thresh=0,
        box_nms_thresh=1.0, output_mode="uncompressed_rle",
    ).generate(micro_image)
    points = {tuple(np.round(m["point_coords"][0], 3)) for m in masks}
    assert points <= {(round(0.38 * 288, 3), round(0.37 * 112, 3)), (round(0.7 * 288, 3), round(0.49 * 112, 3))}
    assert len(masks) == 6  # 2 points x 3 masks, nothing filtered or suppressed


def test_no_survivor_with_crops_is_an_empty_list(micro_model, micro_image):
    # The official generate() raises IndexError here (box_area of an empty crop_boxes tensor).
    masks = sam2rt.SAM2AutomaticMaskGenerator(
        micro_model, points_per_side=4, crop_n_layers=1, pred_iou_thresh=1.0, stability_score_thresh=1.0,
    ).generate(micro_image)
    assert masks == []


@pytest.mark.parametrize(
    "options, message",
    [
        (dict(points_per_side=None), "Exactly one of points_per_side"),
        (dict(point_grids=[np.zeros((4, 2))]), "Exactly one of points_per_side"),
        (dict(pred_iou_thresh=1.5), "pred_iou_thresh"),
        (dict(points_per_side=0), "points_per_side"),
        (dict(points_per_batch=0), "points_per_batch"),
        (dict(crop_overlap_ratio=1.0), "crop_overlap_ratio"),
        (dict(output_mode="png"), "output_mode"),
        (dict(points_per_side="many"), "parameter"),
        (dict(points_per_side=None, point_grids=[np.zeros((4, 3))]), "point_grids"),
        (dict(points_per_side=None, point_grids=[np.full((4, 2), 2.0)]), "point_grids"),
    ],
)
def test_bad_parameters(micro_model, options, message):
    with pytest.raises(ValueError, match=message):
        sam2rt.SAM2AutomaticMaskGenerator(micro_model, **options)


def test_bad_image(micro_model):
    generator = sam2rt.SAM2AutomaticMaskGenerator(micro_model, points_per_side=2)
    with pytest.raises(ValueError, match="uint8"):
        generator.generate(np.zeros((10, 10, 3), dtype=np.float64))
