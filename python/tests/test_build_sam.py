"""build_sam2's config names and options."""

import pytest

import goldens
import sam2rt
from sam2rt.build_sam import OFFICIAL_CONFIGS


@pytest.mark.parametrize("name", sorted(OFFICIAL_CONFIGS))
def test_official_config_names(name):
    from sam2rt.build_sam import _resolve_config

    variant, path = _resolve_config(name)
    assert variant == OFFICIAL_CONFIGS[name] and path == ""
    assert _resolve_config(name.rsplit("/", 1)[1])[0] == variant  # a bare file name
    assert _resolve_config(name[: -len(".yaml")])[0] == variant  # hydra's name without .yaml


def test_official_yaml_file_and_model_properties(micro_model):
    assert micro_model.image_size == 256
    assert micro_model.device == "cpu"
    assert "sam2.1_micro.yaml" in repr(micro_model)


def test_number_of_threads():
    before = sam2rt.get_num_threads()
    try:
        sam2rt.set_num_threads(1)
        assert sam2rt.get_num_threads() == 1
        sam2rt.set_num_threads(0)
        assert sam2rt.get_num_threads() >= 1
        with pytest.raises(ValueError):
            sam2rt.set_num_threads(-2)
    finally:
        sam2rt.set_num_threads(before)


def test_config_paths_accept_pathlib(micro_model):
    assert sam2rt.build_sam2(goldens.MICRO_CONFIG, synthetic_weights=0).image_size == micro_model.image_size
