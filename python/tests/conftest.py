import numpy as np
import pytest

import goldens
import sam2rt


def pytest_configure(config):
    if not goldens.FIXTURES.is_dir():
        raise pytest.UsageError(f"fixtures not found at {goldens.FIXTURES} (../shared beside the repository)")


@pytest.fixture(scope="session")
def micro_model():
    return sam2rt.build_sam2(str(goldens.MICRO_CONFIG), synthetic_weights=0)


@pytest.fixture(scope="session")
def micro_case():
    return goldens.load_case(goldens.MICRO)


@pytest.fixture(scope="session")
def micro_image():
    return goldens.read_image(goldens.IMAGES / "chelsea_288x112.png")


@pytest.fixture(scope="session")
def micro_predictor(micro_model, micro_image):
    """A predictor with the micro photo set; tests must not change its image."""
    predictor = sam2rt.SAM2ImagePredictor(micro_model)
    predictor.set_image(micro_image)
    return predictor


@pytest.fixture(scope="session")
def micro_features_file(tmp_path_factory, micro_case):
    """The golden decoder features of the micro case as a features file (format of `sam2rt encode`)."""
    golden, prompts = micro_case
    path = tmp_path_factory.mktemp("features") / "micro_golden.safetensors"
    height, width = prompts["orig_hw"]
    goldens.write_safetensors(
        path,
        {name: golden[name] for name in ("image_embed", "feat_s1", "feat_s0")},
        {
            "format": "sam2rt.features.v1",
            "variant": "micro",
            "weights": "generated(salt=0)",
            "precision": "fp32",
            "image_size": "256",
            "orig_width": str(width),
            "orig_height": str(height),
        },
    )
    return path


def golden_runs(prompts):
    """(prompt, run) of every golden run of a case."""
    return [(prompt, run) for prompt in prompts["prompts"] for run in prompt["runs"]]


@pytest.fixture
def rng():
    return np.random.default_rng(0)
