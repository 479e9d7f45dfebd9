"""SAM2VideoPredictor against the official predictor's goldens (tests/video/goldens, micro model).

Each case's calls are replayed through the Python API; every returned or yielded
video_res_masks is compared with the golden's `call{n}[.f{f}].video_res_masks.dec{s}`
(the official masks at every s-th row and column, s = 4 on the 240x160 clips).
"""

import ctypes
import json
import subprocess
from pathlib import Path

import numpy as np
import pytest

import goldens
import sam2rt

VIDEO_GOLDENS = goldens.REPO / "tests" / "video" / "goldens"
PAN = goldens.REPO / "tests" / "video" / "clips" / "pan"
MICRO_WEIGHTS = goldens.MICRO / "micro.pt"
CASES = sorted(path.stem for path in VIDEO_GOLDENS.glob("micro_*.json"))

# Logits within 1e-4, or one float32 step of the logit where that is larger: an
# absent object's masks are about -1024 (NO_OBJ_SCORE), where a float32 step is 1.2e-4.
RELATIVE_TOLERANCE = 2.0**-22


@pytest.fixture(scope="module")
def video_predictor():
    return sam2rt.build_sam2_video_predictor(str(goldens.MICRO_CONFIG), str(MICRO_WEIGHTS))


def assert_matches_golden(masks, golden, key):
    """masks against the golden's `{key}.video_res_masks.dec{step}` = official[..., ::step, ::step]."""
    (name,) = [name for name in golden if name.startswith(key + ".video_res_masks.dec")]
    step = int(name.rsplit("dec", 1)[1])
    assert masks.dtype == np.float32
    np.testing.assert_allclose(
        masks[..., ::step, ::step], golden[name], rtol=RELATIVE_TOLERANCE, atol=goldens.LOGIT_TOLERANCE, err_msg=key
    )


def replay(predictor, state, case, golden):
    """Runs the case's calls; returns how many masks were compared."""
    compared = 0
    for call in case["calls"]:
        key = f"call{call['index']}"
        if call["op"] == "propagate_in_video":
            yielded = list(predictor.propagate_in_video(state, **call["kwargs"]))
            assert [frame_idx for frame_idx, _, _ in yielded] == [frame["frame_idx"] for frame in call["yielded"]]
            for (frame_idx, obj_ids, masks), want in zip(yielded, call["yielded"]):
                assert obj_ids == want["obj_ids"]
                assert masks.shape == (len(obj_ids), 1, state["video_height"], state["video_width"])
                assert_matches_golden(masks, golden, f"{key}.f{frame_idx}")
                compared += 1
            continue
        if call["op"] == "add_new_points_or_box":
            result = predictor.add_new_points_or_box(
                state,
                call["frame_idx"],
                call["obj_id"],
                points=np.array(call["points"], dtype=np.float32) if "points" in call else None,
                labels=np.array(call["labels"], dtype=np.int32) if "labels" in call else None,
                clear_old_points=call["clear_old_points"],
                normalize_coords=call["normalize_coords"],
                box=np.array(call["box"], dtype=np.float32) if "box" in call else None,
            )
        elif call["op"] == "add_new_mask":
            mask = goldens.read_image(VIDEO_GOLDENS / call["mask"])[..., 0] == 255
            result = predictor.add_new_mask(state, call["frame_idx"], call["obj_id"], mask)
        else:
            raise AssertionError(f"{case['metadata']['case']}: no replay for {call['op']}")
        frame_idx, obj_ids, masks = result
        assert frame_idx == call["returned"]["frame_idx"]
        assert obj_ids == call["returned"]["obj_ids"]
        assert list(masks.shape) == call["returned"]["video_res_masks"]
        assert_matches_golden(masks, golden, key)
        compared += 1
    return compared


@pytest.mark.parametrize("name", CASES)
def test_replays_official_golden(video_predictor, name):
    case = json.loads((VIDEO_GOLDENS / f"{name}.json").read_text())
    golden, _ = goldens.read_safetensors(VIDEO_GOLDENS / f"{name}.safetensors")
    state = video_predictor.init_state(str(goldens.REPO / case["clip"]["folder"]))
    assert (state["num_frames"], state["video_height"], state["video_width"]) == (
        case["clip"]["num_frames"],
        case["clip"]["video_height"],
        case["clip"]["video_width"],
    )
    assert replay(video_predictor, state, case, golden) > 0


def test_replays_an_official_golden_on_vulkan():
    """device="vulkan": the encoder, the mask decoder and both memory modules on the GPU (lavapipe in CI)."""
    try:
        predictor = sam2rt.build_sam2_video_predictor(str(goldens.MICRO_CONFIG), str(MICRO_WEIGHTS), device="vulkan:0")
    except RuntimeError as error:
        if "built without Vulkan" in str(error):
            pytest.skip(str(error))
        raise
    assert predictor.device == "vulkan:0"
    case = json.loads((VIDEO_GOLDENS / "micro_two_objects.json").read_text())
    golden, _ = goldens.read_safetensors(VIDEO_GOLDENS / "micro_two_objects.safetensors")
    state = predictor.init_state(str(goldens.REPO / case["clip"]["folder"]))
    assert replay(predictor, state, case, golden) > 0


def test_the_two_required_cases_are_present():
    assert {"micro_point", "micro_two_objects"} <= set(CASES)


def test_state_reads_like_the_official_dict(video_predictor):
    state = video_predictor.init_state(PAN)
    assert state["obj_ids"] == []
    video_predictor.add_new_points_or_box(state, 0, 5, points=[[125, 85]], labels=[1])
    video_predictor.add_new_points_or_box(state, 0, 2, box=[95, 62, 160, 110])
    assert state["obj_ids"] == [5, 2]
    assert state["obj_id_to_idx"] == {5: 0, 2: 1}
    obj_ids, updated = video_predictor.remove_object(state, 5)
    assert obj_ids == [2] and [frame_idx for frame_idx, _ in updated] == [0]
    assert updated[0][1].shape == (1, 1, 160, 240)
    assert video_predictor.clear_all_prompts_in_frame(state, 0, 2, need_output=False) is None
    video_predictor.reset_state(state)
    assert state["obj_ids"] == []


def test_add_new_points_is_the_deprecated_alias(video_predictor):
    state = video_predictor.init_state(PAN)
    frame_idx, obj_ids, masks = video_predictor.add_new_points(state, 3, 1, points=[[125, 85]], labels=[1])
    assert (frame_idx, obj_ids, masks.shape) == (3, [1], (1, 1, 160, 240))


def test_frame_index_out_of_range_raises(video_predictor):
    state = video_predictor.init_state(PAN)
    with pytest.raises(ValueError, match="out of range"):
        video_predictor.add_new_points_or_box(state, 8, 1, points=[[125, 85]], labels=[1])
    with pytest.raises(ValueError, match="out of range"):
        video_predictor.add_new_mask(state, -1, 1, np.ones((160, 240), dtype=bool))


def test_box_without_clearing_old_points_is_a_value_error(video_predictor):
    state = video_predictor.init_state(PAN)
    with pytest.raises(ValueError, match="cannot add box without clearing old points"):
        video_predictor.add_new_points_or_box(state, 0, 1, box=[95, 62, 160, 110], clear_old_points=False)


def test_mask_of_wrong_rank_raises(video_predictor):
    state = video_predictor.init_state(PAN)
    with pytest.raises(ValueError, match="2-D"):
        video_predictor.add_new_mask(state, 0, 1, np.ones((1, 160, 240), dtype=bool))


def test_points_without_labels_raise(video_predictor):
    state = video_predictor.init_state(PAN)
    with pytest.raises(ValueError, match="together"):
        video_predictor.add_new_points_or_box(state, 0, 1, points=[[125, 85]])
    with pytest.raises(ValueError, match="at least one"):
        video_predictor.add_new_points_or_box(state, 0, 1)


def test_propagating_without_prompts_is_a_runtime_error(video_predictor):
    state = video_predictor.init_state(PAN)
    with pytest.raises(RuntimeError, match="No input points or masks"):
        next(video_predictor.propagate_in_video(state))


def test_unreadable_video_is_a_runtime_error(video_predictor, tmp_path):
    with pytest.raises(RuntimeError):
        video_predictor.init_state(tmp_path / "missing.mp4")


def _shared_library():
    """The C API built beside the extension (build/libsam2rt.so), or None."""
    build = Path(sam2rt.__file__).resolve().parents[2]
    candidates = sorted(build.glob("libsam2rt.so*"))
    return ctypes.CDLL(str(candidates[0])) if candidates else None


class _VideoMasks(ctypes.Structure):
    _fields_ = [
        ("frame_idx", ctypes.c_int64),
        ("num_objects", ctypes.c_int32),
        ("width", ctypes.c_int32),
        ("height", ctypes.c_int32),
        ("obj_ids", ctypes.POINTER(ctypes.c_int64)),
        ("logits", ctypes.POINTER(ctypes.c_float)),
    ]


_FRAME_CALLBACK = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.POINTER(_VideoMasks), ctypes.c_void_p)


def _c_api_propagation(library, points, labels):
    """[(frame_idx, obj_ids, masks)] of sam2rt_video_propagate after one click on frame 0."""
    library.sam2rt_model_load.restype = ctypes.c_void_p
    library.sam2rt_model_load.argtypes = [ctypes.c_char_p] * 3
    library.sam2rt_video_new.restype = ctypes.c_void_p
    library.sam2rt_video_new.argtypes = [ctypes.c_void_p, ctypes.c_char_p]
    library.sam2rt_last_error.restype = ctypes.c_char_p
    library.sam2rt_video_add_points_or_box.argtypes = [
        ctypes.c_void_p, ctypes.c_int64, ctypes.c_int64, ctypes.POINTER(ctypes.c_float), ctypes.POINTER(ctypes.c_int32),
        ctypes.c_int32, ctypes.POINTER(ctypes.c_float), ctypes.c_int32, ctypes.c_int32, ctypes.POINTER(_VideoMasks),
    ]
    library.sam2rt_video_propagate.argtypes = [
        ctypes.c_void_p, ctypes.c_int64, ctypes.c_int64, ctypes.c_int32, _FRAME_CALLBACK, ctypes.c_void_p,
    ]
    library.sam2rt_video_masks_free.argtypes = [ctypes.POINTER(_VideoMasks)]
    library.sam2rt_video_free.argtypes = [ctypes.c_void_p]
    library.sam2rt_model_free.argtypes = [ctypes.c_void_p]

    model = library.sam2rt_model_load(str(MICRO_WEIGHTS).encode(), None, str(goldens.MICRO_CONFIG).encode())
    assert model, library.sam2rt_last_error()
    video = library.sam2rt_video_new(model, str(PAN).encode())
    assert video, library.sam2rt_last_error()
    frames = []

    def on_frame(masks_pointer, _user_data):
        masks = masks_pointer.contents
        shape = (masks.num_objects, 1, masks.height, masks.width)
        logits = np.ctypeslib.as_array(masks.logits, shape=shape).copy()
        frames.append((masks.frame_idx, [masks.obj_ids[i] for i in range(masks.num_objects)], logits))
        return 0

    try:
        xy = np.ascontiguousarray(points, dtype=np.float32)
        point_labels = np.ascontiguousarray(labels, dtype=np.int32)
        returned = _VideoMasks()
        status = library.sam2rt_video_add_points_or_box(
            video, 0, 1, xy.ctypes.data_as(ctypes.POINTER(ctypes.c_float)),
            point_labels.ctypes.data_as(ctypes.POINTER(ctypes.c_int32)), len(point_labels), None, 1, 1,
            ctypes.byref(returned),
        )
        assert status == 0, library.sam2rt_last_error()
        library.sam2rt_video_masks_free(ctypes.byref(returned))
        callback = _FRAME_CALLBACK(on_frame)
        assert library.sam2rt_video_propagate(video, -1, -1, 0, callback, None) == 0, library.sam2rt_last_error()
    finally:
        library.sam2rt_video_free(video)
        library.sam2rt_model_free(model)
    return frames


def test_propagation_equals_the_c_api_bit_for_bit(video_predictor):
    library = _shared_library()
    assert library is not None, "libsam2rt.so is not built beside the extension (build/)"
    points, labels = [[125.0, 85.0]], [1]
    from_c = _c_api_propagation(library, points, labels)
    state = video_predictor.init_state(PAN)
    video_predictor.add_new_points_or_box(state, 0, 1, points=points, labels=labels)
    from_python = list(video_predictor.propagate_in_video(state))
    assert [(f, ids) for f, ids, _ in from_python] == [(f, ids) for f, ids, _ in from_c]
    for (_, _, got), (_, _, want) in zip(from_python, from_c):
        np.testing.assert_array_equal(got, want)


def test_propagation_equals_sam2rt_track(video_predictor, tmp_path):
    """The masks `sam2rt track` writes are the Python API's, pixel for pixel (micro_leave's click)."""
    cli = Path(sam2rt.__file__).resolve().parents[2] / "sam2rt"
    assert cli.exists(), f"{cli} is not built"
    clip = goldens.REPO / "tests" / "video" / "clips" / "leave"
    case = json.loads((VIDEO_GOLDENS / "micro_leave.json").read_text())
    first = case["calls"][0]
    (x, y), label = first["points"][0], first["labels"][0]
    subprocess.run(
        [str(cli), "track", "--model", str(MICRO_WEIGHTS), "--config", str(goldens.MICRO_CONFIG), "--video",
         str(clip), "--point", f"{first['frame_idx']}:{x},{y},{label}", "--out-dir", str(tmp_path), "--quiet"],
        check=True,
    )
    state = video_predictor.init_state(clip)
    video_predictor.add_new_points_or_box(state, first["frame_idx"], 1, points=[[x, y]], labels=[label])
    frames = list(video_predictor.propagate_in_video(state))
    assert len(frames) == state["num_frames"]
    for frame_idx, _, masks in frames:
        written = goldens.read_image(tmp_path / f"{frame_idx:05d}_obj1.png")
        written = written[..., 0] if written.ndim == 3 else written
        np.testing.assert_array_equal(written == 255, masks[0, 0] > 0, err_msg=f"frame {frame_idx}")
