"""Readers for the fixtures in ../shared/fixtures (safetensors, prompts) and small numpy references."""

import json
import struct
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[2]
FIXTURES = REPO.parent / "shared" / "fixtures"
MICRO = FIXTURES / "micro"
TINY = FIXTURES / "tiny"
IMAGES = FIXTURES / "images"
MICRO_CONFIG = MICRO / "sam2.1_micro.yaml"

# The C++ golden tests' tolerances (tests/decoder_goldens.h, tests/mask_decoder_test.cpp, tests/cli_test.cpp).
LOGIT_TOLERANCE = 1e-4  # embeddings, mask logits
SCORE_TOLERANCE = 1e-5  # IoU predictions, from the golden features
PHOTO_SCORE_TOLERANCE = 1e-4  # IoU predictions of the micro case from the photo (Cli.MicroSegmentMatchesGolden)

_DTYPES = {"F32": np.float32, "F64": np.float64, "I64": np.int64, "I32": np.int32, "U8": np.uint8}


def read_safetensors(path):
    """(tensors by name, metadata) of a safetensors file."""
    data = Path(path).read_bytes()
    (header_size,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8 : 8 + header_size])
    metadata = header.pop("__metadata__", {})
    start = 8 + header_size
    tensors = {}
    for name, entry in header.items():
        begin, end = entry["data_offsets"]
        array = np.frombuffer(data[start + begin : start + end], dtype=_DTYPES[entry["dtype"]])
        tensors[name] = array.reshape(entry["shape"])
    return tensors, metadata


def write_safetensors(path, tensors, metadata):
    """A float32 safetensors file (for feature files made from the goldens)."""
    header = {"__metadata__": metadata}
    blobs, offset = [], 0
    for name, array in tensors.items():
        blob = np.ascontiguousarray(array, dtype=np.float32).tobytes()
        header[name] = {"dtype": "F32", "shape": list(array.shape), "data_offsets": [offset, offset + len(blob)]}
        blobs.append(blob)
        offset += len(blob)
    text = json.dumps(header).encode()
    text += b" " * (-len(text) % 8)
    Path(path).write_bytes(struct.pack("<Q", len(text)) + text + b"".join(blobs))


def load_case(directory):
    """(golden tensors, prompts.json) of a case."""
    tensors, _ = read_safetensors(Path(directory) / "golden.safetensors")
    prompts = json.loads((Path(directory) / "prompts.json").read_text())
    return tensors, prompts


def prompt_arguments(prompt, golden):
    """predict() keyword arguments of a prompts.json entry, as the official run passed them."""
    arguments = {}
    if "points" in prompt:
        arguments["point_coords"] = np.array(prompt["points"], dtype=np.float32)
        arguments["point_labels"] = np.array(prompt["labels"], dtype=np.int32)
    if "box" in prompt:
        arguments["box"] = np.array(prompt["box"], dtype=np.float32)
    if "mask_input_key" in prompt:
        arguments["mask_input"] = golden[prompt["mask_input_key"]]
    return arguments


def read_image(path):
    from PIL import Image

    return np.asarray(Image.open(path).convert("RGB"))


def upsample_bilinear(low_res, height, width):
    """torch.nn.functional.interpolate(..., mode="bilinear", align_corners=False) of [M, L, L], in float64."""
    size = low_res.shape[-1]

    def axis(out_size):
        source = (np.arange(out_size) + 0.5) * (size / out_size) - 0.5
        source = np.maximum(source, 0.0)
        first = np.minimum(np.floor(source).astype(int), size - 1)
        second = np.minimum(first + 1, size - 1)
        return first, second, source - first

    y0, y1, fy = axis(height)
    x0, x1, fx = axis(width)
    values = low_res.astype(np.float64)
    rows = values[:, y0, :] * (1 - fy)[None, :, None] + values[:, y1, :] * fy[None, :, None]
    return rows[:, :, x0] * (1 - fx)[None, None, :] + rows[:, :, x1] * fx[None, None, :]


AMG = FIXTURES / "amg"


def coco_counts_from_string(text):
    """pycocotools' rleFrString: the run lengths of a compressed COCO RLE counts string."""
    counts, position = [], 0
    while position < len(text):
        value, shift, more = 0, 0, True
        while more:
            chunk = ord(text[position]) - 48
            value |= (chunk & 0x1F) << (5 * shift)
            more = bool(chunk & 0x20)
            position += 1
            shift += 1
            if not more and chunk & 0x10:
                value |= -1 << (5 * shift)
        if len(counts) > 2:
            value += counts[-2]
        counts.append(value)
    return counts


def rle_to_mask(rle):
    """sam2.utils.amg.rle_to_mask: uncompressed RLE (column-major runs) -> bool [H, W]."""
    height, width = rle["size"]
    values = np.zeros(len(rle["counts"]), dtype=bool)
    values[1::2] = True
    return np.repeat(values, rle["counts"]).reshape(width, height).T
