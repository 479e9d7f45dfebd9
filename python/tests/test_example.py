"""The example script runs as documented."""

import os
import subprocess
import sys

import goldens


def test_example_predictor_script(tmp_path):
    script = goldens.REPO / "examples" / "predictor.py"
    out = tmp_path / "mask.png"
    result = subprocess.run(
        [sys.executable, str(script), "--config", str(goldens.MICRO_CONFIG), "--checkpoint",
         str(goldens.MICRO / "micro.pt"), "--image", str(goldens.IMAGES / "chelsea_288x112.png"),
         "--point", "110,41", "--out", str(out)],
        capture_output=True, text=True, env=dict(os.environ), timeout=300,
    )
    assert result.returncode == 0, result.stderr
    assert "3 masks" in result.stdout
    from PIL import Image

    mask = Image.open(out)
    assert mask.size == (288, 112) and mask.mode == "L"


def test_example_fails_with_one_line(tmp_path):
    script = goldens.REPO / "examples" / "predictor.py"
    result = subprocess.run(
        [sys.executable, str(script), "--config", str(goldens.MICRO_CONFIG), "--synthetic-weights", "0",
         "--image", str(goldens.IMAGES / "chelsea_288x112.png"), "--point", "5000,41", "--out",
         str(tmp_path / "m.png")],
        capture_output=True, text=True, env=dict(os.environ), timeout=300,
    )
    assert result.returncode == 1
    assert result.stderr.count("\n") == 1 and "point 0" in result.stderr
    assert not (tmp_path / "m.png").exists()
