"""build_sam2(device=...): "cpu", or the image encoder on a GPU through Vulkan ("vulkan", "vulkan:N")."""

import numpy as np
import pytest

import goldens
import sam2rt


@pytest.mark.parametrize("device", ["cuda", "cuda:0", "mps", "CPU", "cpu:0", "vulkan:", "vulkan:x", "vulkan:-1",
                                    "vulkan:256", "vulkan:0:1", ""])
def test_unsupported_devices_raise_value_error_naming_the_supported_ones(device):
    with pytest.raises(ValueError, match="is not supported: .*'cpu'.*'vulkan' or 'vulkan:N'"):
        sam2rt.build_sam2(str(goldens.MICRO_CONFIG), synthetic_weights=0, device=device)


def test_cpu_is_the_default_and_the_predictor_reports_it(micro_model):
    assert micro_model.device == "cpu"
    assert sam2rt.SAM2ImagePredictor(micro_model).device == "cpu"


def test_without_a_vulkan_driver_vulkan_raises_one_line(monkeypatch):
    monkeypatch.setenv("VK_ICD_FILENAMES", "/nonexistent/sam2rt_no_driver.json")
    monkeypatch.setenv("VK_DRIVER_FILES", "/nonexistent/sam2rt_no_driver.json")
    with pytest.raises(RuntimeError, match=r"^no Vulkan device: [^\n]*$"):
        sam2rt.build_sam2(str(goldens.MICRO_CONFIG), synthetic_weights=0, device="vulkan")


def _vulkan_micro_model():
    try:
        return sam2rt.build_sam2(str(goldens.MICRO_CONFIG), synthetic_weights=0, device="vulkan:0")
    except RuntimeError as error:
        if "built without Vulkan" in str(error):
            pytest.skip(str(error))
        raise


def test_the_encoder_on_vulkan_predicts_the_cpu_masks(micro_model, micro_image):
    on_vulkan = _vulkan_micro_model()
    assert on_vulkan.device == "vulkan:0"
    with pytest.raises(ValueError, match="bf16' runs on the CPU only"):
        sam2rt.SAM2ImagePredictor(on_vulkan, precision="bf16")
    results = []
    for model in (micro_model, on_vulkan):
        predictor = sam2rt.SAM2ImagePredictor(model)
        assert predictor.device == model.device
        predictor.set_image(micro_image)
        results.append(predictor.predict(point_coords=np.array([[110.0, 41.0]]), point_labels=np.array([1]),
                                         multimask_output=True, return_logits=True))
    (cpu_masks, cpu_iou, cpu_low_res), (vulkan_masks, vulkan_iou, vulkan_low_res) = results
    assert np.abs(vulkan_masks - cpu_masks).max() <= 1e-4
    assert np.abs(vulkan_low_res - cpu_low_res).max() <= 1e-4
    assert np.abs(vulkan_iou - cpu_iou).max() <= 1e-4
