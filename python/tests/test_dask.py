"""sam2rt.dask on a loopback LocalCluster (2 worker processes x 1 thread) against the one-process CLI.

A folder of generated images (mixed sizes and formats, a subfolder, one corrupt file)
goes through the micro model; every output (and the COCO dataset file) must have the
bytes the CLI writes, a worker killed mid-run must not cost or duplicate any output,
and a rerun after an interrupted job must do only the missing work.
"""

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import distributed
import numpy as np
import pytest

import goldens
import sam2rt
from sam2rt import dask as jobs
from sam2rt.batch_inputs import batch_items
from sam2rt.batch_worker import ModelLoadError

CHECKPOINT = goldens.MICRO / "micro.pt"
# About 0.4 s per image on one core, and no filter, so that the micro model's masks reach the JSON.
AMG = dict(points_per_side=24, points_per_batch=48, pred_iou_thresh=0.0, stability_score_thresh=0.0)
AMG_FLAGS = ["--points-per-side", "24", "--points-per-batch", "48", "--pred-iou-thresh", "0",
             "--stability-score-thresh", "0"]
MODEL_FLAGS = ["--model", str(CHECKPOINT), "--config", str(goldens.MICRO_CONFIG), "--threads", "1"]
SIZES = [(64, 48), (300, 200), (128, 128), (97, 211), (256, 160), (40, 300), (180, 90), (211, 97), (150, 150),
         (320, 240), (72, 72)]


def _cli_path():
    candidates = [Path(sam2rt.__file__).resolve().parents[2] / "sam2rt", goldens.REPO / "build" / "sam2rt"]
    for candidate in candidates:
        if candidate.is_file():
            return candidate
    pytest.fail(f"the CLI is needed as the reference: build it (cmake --build build --target sam2rt); "
                f"looked at {', '.join(map(str, candidates))}")


def _photo(width, height, seed):
    rng = np.random.default_rng(seed)
    y, x = np.mgrid[0:height, 0:width]
    image = np.stack([x * 255 // max(width - 1, 1), y * 255 // max(height - 1, 1),
                      np.full_like(x, 40 * seed % 256)], axis=-1).astype(np.uint8)
    for _ in range(3):  # a few flat discs, so there is something to segment
        cx, cy, r = rng.integers(0, width), rng.integers(0, height), rng.integers(5, max(6, min(width, height) // 2))
        image[(x - cx) ** 2 + (y - cy) ** 2 < r * r] = rng.integers(0, 256, 3)
    return image


@pytest.fixture(scope="module")
def images(tmp_path_factory):
    from PIL import Image

    folder = tmp_path_factory.mktemp("photos")
    (folder / "sub").mkdir()
    for index, (width, height) in enumerate(SIZES):
        name = f"sub/photo_{index:02d}" if index % 4 == 3 else f"photo_{index:02d}"
        extension = [".png", ".jpg", ".PNG"][index % 3]
        Image.fromarray(_photo(width, height, index)).save(folder / (name + extension),
                                                           format="PNG" if extension != ".jpg" else "JPEG")
    (folder / "broken.png").write_bytes(b"\x89PNG\r\n\x1a\nthis is not an image")
    (folder / "notes.txt").write_text("not an image: ignored")
    return folder


@pytest.fixture(scope="module")
def cli_everything(images, tmp_path_factory):
    """The one-process CLI's batch run: OUT/*.json and its manifest."""
    out = tmp_path_factory.mktemp("cli_everything")
    result = subprocess.run([str(_cli_path()), "everything", *MODEL_FLAGS, *AMG_FLAGS, "--input-dir", str(images),
                             "--out-dir", str(out), "--coco", str(out.parent / "cli_coco.json")],
                            capture_output=True, text=True, timeout=300)
    assert result.returncode == 1, result.stderr  # the corrupt image fails
    return out


@pytest.fixture(scope="module")
def client():
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, host="127.0.0.1",
                                  dashboard_address="127.0.0.1:0") as cluster, distributed.Client(cluster) as client:
        yield client


def _outputs(folder):
    """Relative path -> bytes of every file under folder except the manifest."""
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*"))
            if p.is_file() and p.name != "manifest.jsonl"}


def _manifest(folder):
    return [json.loads(line) for line in (folder / "manifest.jsonl").read_text().splitlines()]


def _same_bytes(ours, theirs):
    return ours.read_bytes() == theirs.read_bytes()


def _relative_records(folder):
    """The manifest's records with outputs relative to folder and without the timings."""
    records = _manifest(folder)
    for record in records:
        assert record.pop("ms") >= 0
        record["output"] = os.path.relpath(record["output"], folder)
    return records


def _run_everything(client, images, out, **options):
    return jobs.everything(client, out, input_dir=images, checkpoint=CHECKPOINT, config=goldens.MICRO_CONFIG,
                           threads=1, batch_size=2, **AMG, **options)


def test_everything_matches_the_cli_byte_for_byte(client, images, cli_everything, tmp_path):
    summary = _run_everything(client, images, tmp_path / "out", coco=tmp_path / "coco.json")
    expected = _outputs(cli_everything)
    assert _same_bytes(tmp_path / "coco.json", cli_everything.parent / "cli_coco.json")
    assert len(expected) == len(SIZES) and all(name.endswith(".json") for name in expected)
    assert _outputs(tmp_path / "out") == expected
    assert (summary.done, summary.skipped, summary.failed) == (len(SIZES), 0, 1)
    # Same records as the CLI's manifest, with our output folder; only the timings differ.
    ours = _relative_records(tmp_path / "out")
    assert ours == _relative_records(cli_everything)
    broken = [r for r in ours if r["status"] == "error"]
    assert [Path(r["input"]).name for r in broken] == ["broken.png"] and broken[0]["error"]


def test_coco_dataset_from_uncompressed_outputs_is_the_same(client, images, cli_everything, tmp_path):
    _run_everything(client, images, tmp_path / "out", coco=tmp_path / "coco.json", output_mode="uncompressed_rle")
    assert all(b'"counts":[' in data for data in _outputs(tmp_path / "out").values())
    assert _same_bytes(tmp_path / "coco.json", cli_everything.parent / "cli_coco.json")


def test_encode_matches_the_cli_batch_and_single_image_encode(client, images, tmp_path):
    summary = jobs.encode(client, tmp_path / "out", input_dir=images, checkpoint=CHECKPOINT,
                          config=goldens.MICRO_CONFIG, batch_size=3)
    assert (summary.done, summary.failed) == (len(SIZES), 1)
    # Without threads, the machine's cores are shared among the 2 Dask threads of its workers.
    cores = len(os.sched_getaffinity(0))
    assert set(client.run(lambda: __import__("sam2rt").get_num_threads()).values()) == {max(1, cores // 2)}
    cli = subprocess.run([str(_cli_path()), "encode", *MODEL_FLAGS, "--input-dir", str(images), "--out-dir",
                          str(tmp_path / "cli")], capture_output=True, text=True, timeout=300)
    assert cli.returncode == 1, cli.stderr  # the corrupt image fails
    outputs = _outputs(tmp_path / "out")
    assert len(outputs) == len(SIZES) and all(name.endswith(".safetensors") for name in outputs)
    assert outputs == _outputs(tmp_path / "cli")
    assert _relative_records(tmp_path / "out") == _relative_records(tmp_path / "cli")
    # ... which are the bytes of a one-image `sam2rt encode`.
    single = tmp_path / "single.safetensors"
    subprocess.run([str(_cli_path()), "encode", *MODEL_FLAGS, "--image", str(images / "photo_01.jpg"), "--out",
                    str(single)], check=True, capture_output=True, timeout=120)
    assert single.read_bytes() == outputs["photo_01.safetensors"]


def test_encode_feature_options_match_the_cli(client, images, tmp_path):
    listing = tmp_path / "list.txt"
    listing.write_text(f"{images / 'photo_00.png'}\n{images / 'sub' / 'photo_03.png'}\n")
    summary = jobs.encode(client, tmp_path / "out", input_list=listing, checkpoint=CHECKPOINT,
                          config=goldens.MICRO_CONFIG, feature_dtype="bfloat16", all_features=True, pos_enc=True)
    assert (summary.done, summary.failed) == (2, 0)
    subprocess.run([str(_cli_path()), "encode", *MODEL_FLAGS, "--input-list", str(listing), "--out-dir",
                    str(tmp_path / "cli"), "--feature-dtype", "bfloat16", "--all-features", "--pos-enc"],
                   check=True, capture_output=True, timeout=120)
    outputs = _outputs(tmp_path / "out")
    assert sorted(outputs) == ["photo_00.safetensors", "photo_03.safetensors"]
    assert outputs == _outputs(tmp_path / "cli")
    assert all(b'"feature_dtype":"bfloat16"' in data and b"neck.pos2" in data and b"neck.level0" in data
               for data in outputs.values())
    with pytest.raises(ValueError, match="feature_dtype"):
        jobs.prepare_encode(tmp_path / "x", input_list=listing, synthetic_weights=0, feature_dtype="int8")


def test_a_worker_killed_mid_run_costs_no_output(client, images, cli_everything, tmp_path):
    client.wait_for_workers(2, timeout=60)
    pids = client.run(os.getpid)
    killed = []

    def kill_a_busy_worker(done, total, failed):
        if killed or done == 0:  # once, after a task has finished: mid-run
            return
        busy = [address for address, keys in client.processing().items() if keys and address in pids]
        if busy:
            os.kill(pids[busy[0]], signal.SIGKILL)
            killed.append(busy[0])

    out = tmp_path / "out"
    summary = _run_everything(client, images, out, progress=kill_a_busy_worker)
    assert killed, "no worker was busy to kill"
    records = _manifest(out)
    assert _outputs(out) == _outputs(cli_everything), records  # every output once, complete, no temporaries
    assert sorted(r["input"] for r in records) == sorted(
        str(p) for p in images.rglob("*") if p.suffix.lower() in (".png", ".jpg"))
    assert summary.failed == 1 and all(r["status"] in ("ok", "skipped") for r in records
                                       if not r["input"].endswith("broken.png")), records
    client.wait_for_workers(2, timeout=60)  # the nanny restarted it


def _cli(*arguments, **popen):
    return subprocess.Popen([sys.executable, "-m", "sam2rt.dask", *arguments], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=dict(os.environ), **popen)


def test_a_rerun_after_an_interruption_does_only_the_missing_work(images, cli_everything, tmp_path):
    out = tmp_path / "out"
    arguments = ["everything", *MODEL_FLAGS, *AMG_FLAGS, "--input-dir", str(images), "--out-dir", str(out),
                 "--batch-size", "1"]
    job = _cli("--local", "1", *arguments, start_new_session=True)
    deadline = time.monotonic() + 120
    while not list(out.rglob("*.json")) and job.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)
    os.killpg(job.pid, signal.SIGKILL)  # the client, its cluster and workers: the whole job stops
    job.communicate()
    before = {name for name in _outputs(out) if name.endswith(".json")}  # temporaries of killed writers aside
    assert 1 <= len(before) < len(SIZES), "interrupt the job part-way"
    rerun = _cli("--local", "2", *arguments)
    stdout, stderr = rerun.communicate(timeout=180)
    assert rerun.returncode == 1, stderr  # the corrupt image
    assert f"{len(SIZES) - len(before)} done, {len(before)} skipped, 1 failed" in stdout
    assert _outputs(out) == _outputs(cli_everything)
    done = {os.path.relpath(r["output"], out) for r in _manifest(out) if r["status"] == "ok"}
    assert done == set(_outputs(cli_everything)) - set(before)


def test_cli_errors_are_one_line_before_any_work(images, tmp_path):
    cases = [
        (["--local", "1", "everything", "--synthetic-weights", "0", "--input-dir", str(images), "--out-dir",
          str(tmp_path / "a"), "--pred-iou-thresh", "2"], "pred_iou_thresh"),
        (["--local", "1", "encode", "--synthetic-weights", "0", "--input-dir", str(tmp_path), "--out-dir",
          str(tmp_path / "b")], "no images"),
        (["--local", "1", "encode", "--model", str(tmp_path / "missing.pt"), "--input-dir", str(images),
          "--out-dir", str(tmp_path / "c")], "missing.pt"),
    ]
    for arguments, fragment in cases:
        process = _cli(*arguments)
        stdout, stderr = process.communicate(timeout=60)
        assert process.returncode == 2, (arguments, stderr)
        assert stderr.count("\n") == 1 and fragment in stderr, stderr
    assert not any((tmp_path / name).exists() for name in "abc")


def test_input_list_names_outputs_by_file_name(tmp_path):
    listing = tmp_path / "list.txt"
    listing.write_text("# comment\n/data/x/a.png  \r\n\n/data/y/b.jpeg\n")
    items = batch_items(str(tmp_path / "out"), ".json", input_list=str(listing))
    assert items == [("/data/x/a.png", str(tmp_path / "out" / "a.json")),
                     ("/data/y/b.jpeg", str(tmp_path / "out" / "b.json"))]
    listing.write_text("/data/x/a.png\n/data/y/a.jpg\n")
    with pytest.raises(ValueError, match="would both write"):
        batch_items(str(tmp_path / "out"), ".json", input_list=str(listing))


def test_bad_parameters_fail_without_a_cluster(tmp_path):
    with pytest.raises(ValueError, match="crop_overlap_ratio"):
        jobs.prepare_everything(tmp_path, input_dir=tmp_path, synthetic_weights=0, crop_overlap_ratio=1.5)
    with pytest.raises(ValueError, match="binary_mask"):
        jobs.prepare_everything(tmp_path, input_dir=tmp_path, synthetic_weights=0, output_mode="binary_mask")


def test_a_model_the_workers_cannot_load_stops_the_job(client, images, tmp_path):
    not_a_checkpoint = tmp_path / "model.pt"
    not_a_checkpoint.write_text("not a checkpoint")
    with pytest.raises(ModelLoadError, match="cannot load the model"):
        jobs.encode(client, tmp_path / "out", input_dir=images, checkpoint=not_a_checkpoint,
                    config=goldens.MICRO_CONFIG, batch_size=2)
    assert not list((tmp_path / "out").glob("*.safetensors"))
