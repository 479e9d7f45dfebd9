#!/usr/bin/python3
"""Builds Meta's official SAM 2.1 video predictor on this machine (no hydra, torch 1.13 CPU).

Shared by module_goldens.py and predictor_goldens.py. The official code (facebookresearch/sam2,
commit 2b90b9f5) is imported at runtime from the folder given on the command line; nothing of it
is copied here.

What this module does, and why (every change to the official behaviour is listed here and in
tests/video/README.md):

* hydra / iopath stand-ins: Debian has neither. `sam2/__init__.py` only uses hydra to register
  its config module, `hieradet.py` only uses iopath to open pretrained trunk weights (unused).
  The model is built from the YAML with omegaconf + importlib (`instantiate` below), with the
  same overrides `build_sam2_video_predictor(..., apply_postprocessing=True)` applies.
* shim 1, `torch.nn.functional.scaled_dot_product_attention` (torch 2.0 API, absent in 1.13):
  softmax(q k^T * (1/sqrt(d))) v in plain float32 operations. Only called with dropout_p = 0
  (eval), no mask, not causal; anything else raises.
* patch 2, bf16 memory at the memory attention input: the predictor stores every frame's
  memory features as bfloat16 (kept: the rounding is part of the reference). On CUDA, autocast
  makes the mixed bf16/float32 memory attention work; on a CPU without autocast the bf16
  memory would meet float32 weights. MemoryAttention.forward is wrapped to widen `memory` and
  `memory_pos` to float32 (exact) before the official forward runs.
* patch 3, `sam2.utils.misc.get_connected_components`: the official op is the CUDA extension
  `sam2._C`; without it `fill_holes_in_mask_scores` warns and skips the hole filling. It is
  replaced by an exact CPU equivalent (8-connectivity labels + per-pixel component area, int32,
  same (N,1,H,W) contract; labels are scipy's 1..K numbering instead of the CUDA op's arbitrary
  ids, and the caller only tests `labels > 0`), so hole filling IS part of the reference.

Run with Debian's /usr/bin/python3 (python3-torch 1.13.1, numpy 1.24, Pillow 9.4, scipy 1.10,
omegaconf 2.2) and OpenBLAS (libopenblas0-pthread).
"""
import importlib
import json
import os
import struct
import sys
import types

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.abspath(os.path.join(HERE, "..", "..", ".."))
SHARED = os.path.abspath(os.path.join(REPO, "..", "shared"))
FIXTURES = os.path.join(SHARED, "fixtures")

# The overrides build_sam2_video_predictor(apply_postprocessing=True) passes to hydra.
VIDEO_OVERRIDES = {
    "sam_mask_decoder_extra_args": {
        "dynamic_multimask_via_stability": True,
        "dynamic_multimask_stability_delta": 0.05,
        "dynamic_multimask_stability_thresh": 0.98,
    },
    "binarize_mask_from_pts_for_mem_enc": True,
    "fill_hole_area": 8,
}

_installed = False


# ----------------------------------------------------------------------------------------------
# weights: ../shared/spec/fixture-weights.md
# ----------------------------------------------------------------------------------------------

def fnv1a64(data):
    h = 0xCBF29CE484222325
    for b in data:
        h = ((h ^ b) * 0x100000001B3) & 0xFFFFFFFFFFFFFFFF
    return h


def generated(name, shape, salt=0):
    """The generated(salt) value of state-dict key `name`, as a float32 array of `shape`."""
    seed = np.uint64(fnv1a64(name.encode("utf-8")) ^ salt)
    n = int(np.prod(shape)) if len(shape) else 1
    with np.errstate(over="ignore"):  # uint64 arithmetic wraps modulo 2^64 on purpose
        x = seed + np.arange(n, dtype=np.uint64) + np.uint64(0x9E3779B97F4A7C15)
        z = (x ^ (x >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        z = z ^ (z >> np.uint64(31))
    u = (z >> np.uint64(11)).astype(np.float64) * 2.0**-53  # exact: 53-bit integer times 2^-53
    v = 2.0 * u - 1.0
    if name.endswith("positional_encoding_gaussian_matrix"):
        w = v * np.sqrt(3.0)
    elif name.endswith(".weight") and len(shape) >= 2:
        w = v * np.sqrt(3.0 / float(np.prod(shape[1:])))
    elif name.endswith(".weight"):
        w = 1.0 + 0.1 * v  # two separate double ops (numpy does not fuse)
    elif name.endswith(".bias"):
        w = v * 0.02
    else:
        w = v * 0.1
    return w.astype(np.float32).reshape(shape)


def check_generator():
    """Checks generated() against weights-check.json (bits + fsum) and the Tiny manifest (fsum)."""
    import math

    check = json.load(open(os.path.join(FIXTURES, "weights-check.json")))
    salt = int(check["salt"], 16)
    for e in check["entries"]:
        w = generated(e["key"], tuple(e["shape"]), salt).ravel()
        bits = ["0x%08x" % b for b in w[:8].view(np.uint32)]
        assert bits == e["first8_bits"], e["key"]
        assert math.fsum(w.astype(np.float64)) == e["sum_f64"], e["key"]
    manifest = json.load(open(os.path.join(FIXTURES, "tiny", "state_dict_manifest.json")))
    for e in manifest["keys"]:
        w = generated(e["key"], tuple(e["shape"]), salt)
        assert math.fsum(w.ravel().astype(np.float64)) == e["sum_f64"], e["key"]
    return len(check["entries"]), len(manifest["keys"])


# ----------------------------------------------------------------------------------------------
# stand-ins, shims and patches (see the module docstring)
# ----------------------------------------------------------------------------------------------

def _stub_modules():
    hydra = types.ModuleType("hydra")
    hydra.initialize_config_module = lambda *a, **k: None
    core = types.ModuleType("hydra.core")
    global_hydra = types.ModuleType("hydra.core.global_hydra")

    class GlobalHydra:
        @staticmethod
        def instance():
            return types.SimpleNamespace(is_initialized=lambda: True)

    global_hydra.GlobalHydra = GlobalHydra
    iopath = types.ModuleType("iopath")
    common = types.ModuleType("iopath.common")
    file_io = types.ModuleType("iopath.common.file_io")
    file_io.g_pathmgr = None
    for name, mod in [("hydra", hydra), ("hydra.core", core), ("hydra.core.global_hydra", global_hydra),
                      ("iopath", iopath), ("iopath.common", common), ("iopath.common.file_io", file_io)]:
        sys.modules.setdefault(name, mod)


def _sdpa_shim(q, k, v, attn_mask=None, dropout_p=0.0, is_causal=False):
    """torch 2's F.scaled_dot_product_attention, math form, for the calls sam2 makes in eval."""
    import torch

    if attn_mask is not None or is_causal or dropout_p != 0.0:
        raise NotImplementedError("sdpa shim: only the eval form (no mask, no dropout) is needed")
    scale = 1.0 / (q.size(-1) ** 0.5)
    attn = torch.softmax((q @ k.transpose(-2, -1)) * scale, dim=-1)
    return attn @ v


def connected_components_cpu(mask):
    """CPU equivalent of sam2._C.get_connected_componnets: (N,1,H,W) -> (labels, areas), int32.

    8-connectivity; labels 0 on background, > 0 on foreground; areas = pixel count of the pixel's
    component (0 on background)."""
    import torch
    from scipy import ndimage

    m = mask.to(torch.uint8).cpu().numpy()
    labels = np.zeros(m.shape, np.int32)
    areas = np.zeros(m.shape, np.int32)
    structure = np.ones((3, 3), np.int32)  # 8-connectivity
    for n in range(m.shape[0]):
        lab, _ = ndimage.label(m[n, 0] > 0, structure=structure)
        counts = np.bincount(lab.ravel())
        counts[0] = 0
        labels[n, 0] = lab
        areas[n, 0] = counts[lab]
    return torch.from_numpy(labels).to(mask.device), torch.from_numpy(areas).to(mask.device)


def install(sam2_path, threads=2):
    """Makes `import sam2` work from `sam2_path` and applies the shim and the two patches."""
    global _installed
    import torch

    torch.set_num_threads(threads)
    if _installed:
        return
    sam2_path = os.path.abspath(sam2_path)
    if not os.path.isfile(os.path.join(sam2_path, "sam2", "sam2_video_predictor.py")):
        raise SystemExit(f"{sam2_path}: not a facebookresearch/sam2 checkout (no sam2/sam2_video_predictor.py)")
    if hasattr(torch.nn.functional, "scaled_dot_product_attention"):
        raise SystemExit("this torch already has scaled_dot_product_attention: the goldens were made with the "
                         "1.13 shim; check the numbers before using another torch")
    torch.nn.functional.scaled_dot_product_attention = _sdpa_shim  # shim 1
    _stub_modules()
    sys.path.insert(0, sam2_path)

    import sam2.modeling.memory_attention as ma
    import sam2.utils.misc as misc

    official_forward = ma.MemoryAttention.forward

    def forward_widening_memory(self, curr, memory, curr_pos=None, memory_pos=None, num_obj_ptr_tokens=0):
        # patch 2: bf16 memory (exactly) widened to float32 before the official forward
        return official_forward(self, curr, memory.float(), curr_pos,
                                None if memory_pos is None else memory_pos.float(), num_obj_ptr_tokens)

    ma.MemoryAttention.forward = forward_widening_memory
    misc.get_connected_components = connected_components_cpu  # patch 3
    _installed = True


# ----------------------------------------------------------------------------------------------
# model building (build_sam2_video_predictor without hydra)
# ----------------------------------------------------------------------------------------------

def instantiate(node):
    """hydra.utils.instantiate(node, _recursive_=True) for the plain nodes of the sam2 configs."""
    from omegaconf import DictConfig, ListConfig

    if isinstance(node, DictConfig):
        kwargs = {k: instantiate(v) for k, v in node.items() if k != "_target_"}
        if "_target_" not in node:
            return kwargs
        module, _, name = node["_target_"].rpartition(".")
        return getattr(importlib.import_module(module), name)(**kwargs)
    if isinstance(node, ListConfig):
        return [instantiate(v) for v in node]
    return node


def config_path(sam2_path, config):
    """'micro' -> the fixture YAML, 'tiny' -> the official sam2.1_hiera_t.yaml."""
    if config == "micro":
        return os.path.join(FIXTURES, "micro", "sam2.1_micro.yaml")
    if config == "tiny":
        return os.path.join(os.path.abspath(sam2_path), "sam2", "configs", "sam2.1", "sam2.1_hiera_t.yaml")
    raise ValueError(config)


# Tiny's predictor goldens only: with generated(salt 0) the object score of Tiny is negative on
# every frame (about -0.5; the image fixtures' scores are all negative too), so every mask would
# be the constant NO_OBJ_SCORE. Setting this one scalar makes the scores positive (about +0.2 to
# +0.9 on prompted frames) and the goldens informative. Nothing in modules_tiny uses it.
OBJ_SCORE_BIAS_KEY = "sam_mask_decoder.pred_obj_score_head.layers.2.bias"
TINY_VIDEO_OBJ_SCORE_BIAS = 1.0


def build_video_predictor(sam2_path, config, threads=2, obj_score_bias=None):
    """The official SAM2VideoPredictor of config 'micro' (weights micro.pt) or 'tiny' (weights
    generated(salt 0)), float32, CPU, eval mode, loaded with load_state_dict(strict=True).
    obj_score_bias: if given, OBJ_SCORE_BIAS_KEY (shape [1]) is set to this value after loading."""
    import torch
    from omegaconf import OmegaConf

    install(sam2_path, threads)
    cfg = OmegaConf.load(config_path(sam2_path, config))
    cfg.model._target_ = "sam2.sam2_video_predictor.SAM2VideoPredictor"
    for k, v in VIDEO_OVERRIDES.items():
        cfg.model[k] = v
    OmegaConf.resolve(cfg)
    model = instantiate(cfg.model)
    if config == "micro":
        state = torch.load(os.path.join(FIXTURES, "micro", "micro.pt"), map_location="cpu")["model"]
    else:
        state = {k: torch.from_numpy(generated(k, tuple(v.shape), 0)) for k, v in model.state_dict().items()}
    if obj_score_bias is not None:
        state[OBJ_SCORE_BIAS_KEY] = torch.full_like(state[OBJ_SCORE_BIAS_KEY], obj_score_bias)
    model.load_state_dict(state, strict=True)
    model = model.float().eval()
    return model


# ----------------------------------------------------------------------------------------------
# safetensors (format of ../shared/fixtures/README.md)
# ----------------------------------------------------------------------------------------------

_DTYPES = {np.dtype(np.float32): "F32", np.dtype(np.int32): "I32", np.dtype(np.uint8): "U8"}


def write_safetensors(path, tensors, metadata):
    """tensors: {name: array} (float32 unless said otherwise), written in sorted key order; the
    header is space-padded so the data starts 8-byte aligned. Deterministic byte for byte."""
    header, blobs, offset = {}, [], 0
    for name in sorted(tensors):
        a = np.ascontiguousarray(tensors[name])
        if a.dtype == np.float64:
            raise TypeError(f"{name}: float64, convert explicitly")
        raw = a.astype(a.dtype.newbyteorder("<"), copy=False).tobytes()
        header[name] = {"dtype": _DTYPES[a.dtype], "shape": list(a.shape), "data_offsets": [offset, offset + len(raw)]}
        blobs.append(raw)
        offset += len(raw)
    header["__metadata__"] = {k: str(v) for k, v in metadata.items()}
    text = json.dumps(header, separators=(",", ":"), sort_keys=False).encode()
    text += b" " * ((8 - (8 + len(text)) % 8) % 8)
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)))
        f.write(text)
        for raw in blobs:
            f.write(raw)


def read_safetensors(path):
    """-> ({name: array}, metadata)."""
    inv = {v: k for k, v in _DTYPES.items()}
    with open(path, "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        header = json.loads(f.read(n))
        data = f.read()
    meta = header.pop("__metadata__", {})
    out = {}
    for name, e in header.items():
        b, end = e["data_offsets"]
        out[name] = np.frombuffer(data[b:end], dtype=inv[e["dtype"]]).reshape(e["shape"])
    return out, meta


def decimation_step(h, w, t):
    """Smallest s with ceil(h/s) <= t and ceil(w/s) <= t (the fixtures' rule)."""
    s = 1
    while -(-h // s) > t or -(-w // s) > t:
        s += 1
    return s


def runtime_versions():
    import PIL
    import scipy
    import torch

    return {"python": sys.version.split()[0], "torch": torch.__version__, "numpy": np.__version__,
            "Pillow": PIL.__version__, "scipy": scipy.__version__, "threads": torch.get_num_threads()}


if __name__ == "__main__":
    import argparse

    ap = argparse.ArgumentParser(description="self-check: weight generator + model build")
    ap.add_argument("--sam2", required=True, help="facebookresearch/sam2 checkout (folder holding sam2/)")
    args = ap.parse_args()
    print("generator: %d check entries, %d manifest keys agree" % check_generator())
    install(args.sam2)
    import torch
    from sam2.utils.misc import fill_holes_in_mask_scores

    # patch 3 through the official caller: an 8-pixel hole is filled, a 9-pixel one is not, and
    # two diagonal neighbours form one component (8-connectivity)
    m = torch.ones(1, 1, 12, 12)
    m[0, 0, 1:3, 1:5] = -1
    m[0, 0, 5:8, 1:4] = -1
    m[0, 0, 9, 9] = m[0, 0, 10, 10] = -1
    filled = fill_holes_in_mask_scores(m, 8)[0, 0] == 0.1
    assert filled.sum() == 10 and filled[1:3, 1:5].all() and filled[9, 9] and filled[10, 10]
    print("hole filling: CPU connected components ok")
    for c in ("micro", "tiny"):
        m = build_video_predictor(args.sam2, c)
        print(c, type(m).__name__, "params", sum(p.numel() for p in m.state_dict().values()),
              "num_maskmem", m.num_maskmem, "mem_dim", m.mem_dim, "hidden_dim", m.hidden_dim,
              "fill_hole_area", m.fill_hole_area, "max_obj_ptrs", m.max_obj_ptrs_in_encoder)
