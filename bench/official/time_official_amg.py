#!/usr/bin/python3
"""Times Meta's official SAM2AutomaticMaskGenerator.generate() on a fixture case.

usage: time_official_amg.py SAM2_SOURCE_DIR [--case ../shared/fixtures/amg/tiny_g16.json]
                            [--threads 2] [--runs 1]

SAM2_SOURCE_DIR is a checkout of facebookresearch/sam2 (the folder holding the
`sam2` package; the fixtures' commit 2b90b9f). Needs Debian's python3-torch,
python3-torchvision, python3-omegaconf, python3-pil, python3-numpy. Hydra is not
in Debian: the model is built from the official YAML by a small instantiate()
below, and `import sam2` gets a stand-in hydra module (its __init__ only
registers the config module), and so does iopath; torch 1.13 gets scaled_dot_product_attention as softmax(q k^T / sqrt(d)) v. Weights: generated(salt) of
../shared/spec/fixture-weights.md, so the filters keep what the golden keeps.
Prints the generate() time of each run and the number of masks; the model
build and the weights are not timed. Debian's torch 1.13 runs every Linear and
matmul through libblas.so.3, which is netlib's scalar single-threaded reference
BLAS unless the package's recommended fast one is installed (`apt-get install
libopenblas0-pthread`, ~10x here): the BLAS in use is printed, and the reference
one is refused (--allow-reference-blas to time it anyway).
"""
import argparse
import importlib
import json
import os
import sys
import time
import types

import numpy as np


def stub_hydra():
    hydra = types.ModuleType("hydra")
    hydra.initialize_config_module = lambda *a, **k: None
    core = types.ModuleType("hydra.core")
    global_hydra = types.ModuleType("hydra.core.global_hydra")

    class GlobalHydra:
        @staticmethod
        def instance():
            return types.SimpleNamespace(is_initialized=lambda: True)

    global_hydra.GlobalHydra = GlobalHydra
    sys.modules.update({"hydra": hydra, "hydra.core": core, "hydra.core.global_hydra": global_hydra})
    # iopath (not in Debian either) only opens pretrained trunk weights, which are not used here.
    iopath = types.ModuleType("iopath")
    common = types.ModuleType("iopath.common")
    file_io = types.ModuleType("iopath.common.file_io")
    file_io.g_pathmgr = None
    sys.modules.update({"iopath": iopath, "iopath.common": common, "iopath.common.file_io": file_io})


def instantiate(node):
    from omegaconf import DictConfig, ListConfig

    if isinstance(node, DictConfig):
        items = {k: instantiate(v) for k, v in node.items() if k != "_target_"}
        if "_target_" not in node:
            return items
        module, _, name = node["_target_"].rpartition(".")
        return getattr(importlib.import_module(module), name)(**items)
    if isinstance(node, ListConfig):
        return [instantiate(v) for v in node]
    return node


def generated(name, shape, salt):
    """fixture-weights.md, vectorised over the flat index."""
    mask = (1 << 64) - 1
    h = 0xCBF29CE484222325
    for b in name.encode():
        h = ((h ^ b) * 0x100000001B3) & mask
    seed = np.uint64(h ^ salt)
    n = int(np.prod(shape)) if shape else 1
    with np.errstate(over="ignore"):
        x = seed + np.arange(n, dtype=np.uint64) + np.uint64(0x9E3779B97F4A7C15)
        z = (x ^ (x >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        z = z ^ (z >> np.uint64(31))
    v = 2.0 * ((z >> np.uint64(11)).astype(np.float64) * 2.0**-53) - 1.0
    if name.endswith("positional_encoding_gaussian_matrix"):
        w = v * np.sqrt(3.0)
    elif name.endswith(".weight") and len(shape) >= 2:
        w = v * np.sqrt(3.0 / int(np.prod(shape[1:])))
    elif name.endswith(".weight"):
        w = 1.0 + 0.1 * v
    elif name.endswith(".bias"):
        w = v * 0.02
    else:
        w = v * 0.1
    return w.astype(np.float32).reshape(shape)


def build_model(sam2_source, fixtures, config, salt, threads, apply_postprocessing=True):
    """The official SAM 2.1 model of `config` (the fixtures' "sam2.1_micro.yaml" or an official sam2.1
    config name) on fixture weights generated(salt), float32, eval mode. apply_postprocessing:
    build_sam2's overrides (the dynamic multimask selection via stability)."""
    import torch
    from omegaconf import OmegaConf

    torch.set_num_threads(threads)
    if not hasattr(torch.nn.functional, "scaled_dot_product_attention"):
        # torch < 2.0 (Debian 12 has 1.13): the same product in plain operations.
        def scaled_dot_product_attention(q, k, v, attn_mask=None, dropout_p=0.0, is_causal=False):
            weights = torch.softmax(q @ k.transpose(-2, -1) / (q.shape[-1] ** 0.5), dim=-1)
            return weights @ v

        torch.nn.functional.scaled_dot_product_attention = scaled_dot_product_attention
    sys.path.insert(0, os.path.abspath(sam2_source))
    stub_hydra()
    if config == "sam2.1_micro.yaml":
        config_path = os.path.join(fixtures, "micro", "sam2.1_micro.yaml")
    else:
        config_path = os.path.join(sam2_source, "sam2", "configs", "sam2.1", config)
    cfg = OmegaConf.load(config_path)
    if apply_postprocessing:
        cfg.model.sam_mask_decoder_extra_args = {"dynamic_multimask_via_stability": True,
                                                 "dynamic_multimask_stability_delta": 0.05,
                                                 "dynamic_multimask_stability_thresh": 0.98}
    OmegaConf.resolve(cfg)
    model = instantiate(cfg.model)
    state = {k: torch.from_numpy(generated(k, tuple(v.shape), salt)) for k, v in model.state_dict().items()}
    model.load_state_dict(state, strict=True)
    model.eval()
    return model


def set_feature_sizes(predictor, model):
    """SAM2ImagePredictor's feature sizes are written for 1024: set them for the model's image size."""
    size = model.image_size
    predictor._bb_feat_sizes = [(size // 4, size // 4), (size // 8, size // 8), (size // 16, size // 16)]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("sam2_source")
    ap.add_argument("--case", default=os.path.join(os.path.dirname(__file__), "../../../shared/fixtures/amg/tiny_g16.json"))
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--runs", type=int, default=1)
    ap.add_argument("--allow-reference-blas", action="store_true")
    args = ap.parse_args()

    import torch
    from PIL import Image

    torch.set_num_threads(args.threads)
    blas = sorted({line.split()[-1] for line in open("/proc/self/maps") if "blas" in line.rsplit("/", 1)[-1]})
    print("BLAS loaded:", ", ".join(blas) or "none found", flush=True)
    if any("/blas/libblas" in path for path in blas) and not args.allow_reference_blas:
        sys.exit("the netlib reference BLAS is in use (slow, one thread): apt-get install libopenblas0-pthread, "
                 "or --allow-reference-blas")
    case = json.load(open(args.case))
    fixtures = os.path.dirname(os.path.dirname(os.path.abspath(args.case)))
    salt = int(case["model"]["weights"].split("=")[1].rstrip(")"), 16)
    model = build_model(args.sam2_source, fixtures, case["model"]["config"], salt, args.threads)
    from sam2.automatic_mask_generator import SAM2AutomaticMaskGenerator

    image = np.asarray(Image.open(os.path.join(fixtures, "images", case["image"])).convert("RGB"))
    params = {k: v for k, v in case["params"].items() if k != "output_mode"}
    amg = SAM2AutomaticMaskGenerator(model, output_mode="uncompressed_rle", **params)
    set_feature_sizes(amg.predictor, model)
    print(f"official generate(): {case['case']}, {image.shape[1]}x{image.shape[0]}, torch {torch.__version__}, "
          f"{torch.get_num_threads()} threads", flush=True)
    for run in range(args.runs):
        start = time.perf_counter()
        masks = amg.generate(image)
        print(f"run {run + 1}: {time.perf_counter() - start:.2f} s, {len(masks)} masks", flush=True)


if __name__ == "__main__":
    main()
