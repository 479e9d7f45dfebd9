#!/usr/bin/python3
"""Module-level goldens of the SAM 2.1 video modules (memory encoder, memory attention,
object-pointer path), from Meta's official code on CPU in float32.

usage: module_goldens.py --sam2 /path/to/sam2 [--out tests/video/goldens] [--configs micro tiny]

Writes <out>/modules_<config>.safetensors and <out>/modules_<config>.json (inputs' recipes,
shapes, stats of every tensor incl. the full tensors behind decimated keys). Key names and the
input recipes are documented in tests/video/README.md.

Inputs are deterministic without torch's RNG, so a C++ test can rebuild the large ones:
  recipe(NAME, shape, A) = float32(v * A), v = 2u-1 of ../shared/spec/fixture-weights.md for
  the key NAME with salt 0 (rule 5's formula with scale A instead of 0.1);
  recipe_bf16(...) = the same rounded to bfloat16 (round to nearest even), kept as float32.
Features come from the image fixtures (`neck.level2` of ../shared/fixtures/<cfg>/golden.safetensors,
the float64 golden stored as float32) or from the official float32 image encoder run here on the
image fixtures' `input` (PIL bilinear preprocessing of ../shared/fixtures/README.md).
"""
import argparse
import json
import math
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import sam2_reference as ref  # noqa: E402

IMAGES = {"micro": "chelsea_288x112_256.png", "tiny": "astronaut_1024.png"}


def recipe(name, shape, scale, bf16=False):
    import torch

    # generated() gives float32(v*0.1) for such names; recompute v*scale in double instead.
    seed = np.uint64(ref.fnv1a64(name.encode()) ^ 0)
    n = int(np.prod(shape))
    with np.errstate(over="ignore"):
        x = seed + np.arange(n, dtype=np.uint64) + np.uint64(0x9E3779B97F4A7C15)
        z = (x ^ (x >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        z = z ^ (z >> np.uint64(31))
    v = 2.0 * ((z >> np.uint64(11)).astype(np.float64) * 2.0**-53) - 1.0
    t = torch.from_numpy((v * scale).astype(np.float32).reshape(shape))
    if bf16:
        t = t.to(torch.bfloat16).float()  # torch's float->bf16 conversion rounds to nearest even
    return t


def preprocess(png):
    """The image fixtures' `input`: PIL image already at S x S, ((x/255)-mean)/std in float32."""
    import torch
    from PIL import Image

    x = np.asarray(Image.open(png).convert("RGB"), dtype=np.float32) / np.float32(255)
    mean = np.array([0.485, 0.456, 0.406], np.float32)
    std = np.array([0.229, 0.224, 0.225], np.float32)
    x = (x - mean) / std
    return torch.from_numpy(np.ascontiguousarray(x.transpose(2, 0, 1)))[None]


def ellipse_mask(S):
    """Binary mask [1,1,S,S]: pixel centres inside an ellipse (in units of S, computed in double)."""
    yy, xx = np.mgrid[0:S, 0:S].astype(np.float64)
    cx, cy, a, b = 0.45 * S, 0.55 * S, 0.22 * S, 0.3 * S
    m = ((xx + 0.5 - cx) / a) ** 2 + ((yy + 0.5 - cy) / b) ** 2 <= 1.0
    return m.astype(np.float32)[None, None]


class Store:
    """Collects tensors; large spatial ones of Tiny are stored decimated (key X.dec{s})."""

    def __init__(self, decimate):
        self.decimate = decimate
        self.tensors, self.stats = {}, {}

    def put(self, key, t, full=False, limit=32):
        a = t.detach().float().cpu().numpy() if hasattr(t, "detach") else np.asarray(t, np.float32)
        a = np.ascontiguousarray(a, dtype=np.float32)
        d = a.astype(np.float64)
        entry = {"shape": list(a.shape), "sum": math.fsum(d.ravel()), "l2": math.sqrt(math.fsum((d * d).ravel())),
                 "min": float(a.min()), "max": float(a.max()), "first8": ["%.9g" % x for x in a.ravel()[:8]]}
        stored = key
        if self.decimate and not full and a.ndim >= 3:
            s = ref.decimation_step(a.shape[-2], a.shape[-1], limit)
            if s > 1:
                stored = f"{key}.dec{s}"
                a = np.ascontiguousarray(a[..., ::s, ::s])
        entry["stored_as"] = stored
        self.tensors[stored] = a
        self.stats[key] = entry


def tokens_to_nchw(t, H, W):
    """[HW,1,C] (official token layout) -> [1,C,H,W] view, for storing/decimating Tiny tensors."""
    return t.permute(1, 2, 0).reshape(1, t.shape[2], H, W)


def make(config, sam2_path, out_dir):
    import torch

    model = ref.build_video_predictor(sam2_path, config)
    tiny = config == "tiny"
    st = Store(decimate=tiny)
    C, D, S = model.hidden_dim, model.mem_dim, model.image_size
    E = S // 16
    golden, _ = ref.read_safetensors(os.path.join(ref.FIXTURES, config, "golden.safetensors"))
    level2 = torch.from_numpy(golden["neck.level2"].copy())  # [1,C,E,E]
    recipes = {}

    with torch.inference_mode():
        # ---------------- (a) memory encoder ----------------
        me = model.memory_encoder
        mask_for_mem = recipe("video.me.mask_for_mem", (1, 1, S, S), 10.0)
        recipes["me.mask_for_mem"] = "recipe('video.me.mask_for_mem', [1,1,S,S], 10.0): uniform in [-10,10)"
        recipes["me.pix_feat"] = f"neck.level2 of ../shared/fixtures/{config}/golden.safetensors"
        down = me.mask_downsampler(mask_for_mem)
        x = me.pix_feat_proj(level2) + down
        fused = me.fuser(x)
        out = me(level2, mask_for_mem, skip_mask_sigmoid=True)
        assert torch.equal(out["vision_features"], me.out_proj(fused))
        st.put("me.mask_for_mem", mask_for_mem, full=not tiny)
        if not tiny:  # Tiny: it is the image fixture's neck.level2, stored there in full
            st.put("me.pix_feat", level2)
        st.put("me.mask_downsampled", down, limit=16)
        st.put("me.pix_feat_proj_add", x, limit=16)
        st.put("me.fused", fused, limit=16)
        st.put("me.vision_features", out["vision_features"])
        st.put("me.vision_pos_enc", out["vision_pos_enc"][0], limit=16)

        # SAM2Base._encode_new_memory on top (sigmoid/binarize, scale 20, bias -10, the
        # no_obj_embed_spatial for an absent object); high-res logits from a recipe
        feats = [level2.flatten(2).permute(2, 0, 1)]
        logits = recipe("video.me.high_res_logits", (1, 1, S, S), 20.0)
        recipes["enc.high_res_logits"] = "recipe('video.me.high_res_logits', [1,1,S,S], 20.0)"
        st.put("enc.high_res_logits", logits, full=not tiny)
        for tag, score, from_pts in [("pts_present", 1.0, True), ("track_absent", -1.0, False)]:
            mf, mp = model._encode_new_memory(feats, [(E, E)], logits, torch.tensor([[score]]), from_pts)
            st.put(f"enc.{tag}.maskmem_features", mf)  # the predictor keeps bf16(this)
        recipes["enc.<tag>"] = ("_encode_new_memory(current_vision_feats=[me.pix_feat as tokens], "
                                "pred_masks_high_res=enc.high_res_logits, object_score_logits=[[+1]] with "
                                "is_mask_from_pts=True (pts_present: binarized) / [[-1]] with False "
                                "(track_absent: sigmoid, + no_obj_embed_spatial))")

        # ---------------- (b) memory attention ----------------
        ma = model.memory_attention
        curr = level2.flatten(2).permute(2, 0, 1)  # [HW,1,C]
        curr_pos = model.image_encoder.neck.position_encoding(level2).to(level2.dtype)
        curr_pos = curr_pos.flatten(2).permute(2, 0, 1)
        recipes["ma.curr"] = "me.pix_feat (neck.level2) as tokens [HW,1,C] = x.flatten(2).permute(2,0,1)"
        recipes["ma.curr_pos"] = "the neck's PositionEmbeddingSine of an [1,C,E,E] map (= neck.pos2) as tokens"
        # two spatial memory frames (bf16 like the predictor stores them) + 3 object pointers
        frames, frame_pos = [], []
        maskmem_pos = me.position_encoding(torch.zeros(1, D, E, E)).flatten(2).permute(2, 0, 1)
        for k, t_pos in enumerate([0, model.num_maskmem - 1]):  # a cond frame (t_pos 0), the previous frame
            frames.append(recipe(f"video.ma.memory_frame{k}", (1, D, E, E), 2.0, bf16=True).flatten(2).permute(2, 0, 1))
            frame_pos.append(maskmem_pos + model.maskmem_tpos_enc[model.num_maskmem - t_pos - 1])
        recipes["ma.memory frames"] = ("frame k in {0,1}: recipe_bf16('video.ma.memory_frame{k}', [1,D,E,E], 2.0) "
                                       "as tokens; pos = memory encoder sine PE + maskmem_tpos_enc[num_maskmem-t_pos-1], "
                                       "t_pos 0 (frame 0), num_maskmem-1 (frame 1)")
        ptrs = recipe("video.ma.obj_ptrs", (3, 1, C), 1.0)
        ptr_tpos = torch.tensor([5, 1, 2])  # signed frame distances of the 3 pointers
        t_diff_max = 15
        from sam2.modeling.sam2_utils import get_1d_sine_pe

        ptr_pos = model.obj_ptr_tpos_proj(get_1d_sine_pe(ptr_tpos / t_diff_max, dim=C))
        ptr_pos = ptr_pos.unsqueeze(1).expand(-1, 1, D)
        split = C // D
        ptr_tokens = ptrs.reshape(-1, 1, split, D).permute(0, 2, 1, 3).flatten(0, 1)
        ptr_pos_tokens = ptr_pos.repeat_interleave(split, dim=0)
        recipes["ma.obj_ptrs"] = ("recipe('video.ma.obj_ptrs', [3,1,C], 1.0), split into C/D tokens each "
                                  "(row-major), pos = obj_ptr_tpos_proj(get_1d_sine_pe([5,1,2]/15, C)) repeated per token")
        memory = torch.cat(frames + [ptr_tokens], 0)
        memory_pos = torch.cat(frame_pos + [ptr_pos_tokens], 0)
        n_ptr = ptr_tokens.shape[0]

        layer0 = {}
        h = ma.layers[0].register_forward_hook(lambda m, i, o: layer0.__setitem__("out", o.clone()))
        out_a = ma(curr=curr, curr_pos=curr_pos, memory=memory, memory_pos=memory_pos, num_obj_ptr_tokens=n_ptr)
        h.remove()
        # variant: one memory frame (frame 1 of the above, rows HW..2HW), no pointers
        HW = E * E
        mem_b, pos_b = memory[HW:2 * HW], memory_pos[HW:2 * HW]
        layer0_b = {}
        h = ma.layers[0].register_forward_hook(lambda m, i, o: layer0_b.__setitem__("out", o.clone()))
        out_b = ma(curr=curr, curr_pos=curr_pos, memory=mem_b, memory_pos=pos_b, num_obj_ptr_tokens=0)
        h.remove()

        if tiny:
            # token tensors stored as their NCHW view [1,C,E,E] (decimated); memory/memory_pos whole
            # Tiny: the spatial rows are rebuilt from their recipes (decimated copies as checks);
            # the pointer rows are stored whole
            st.put("ma.curr_pos.nchw", tokens_to_nchw(curr_pos, E, E), limit=16)
            for k in range(2):
                st.put(f"ma.memory.frame{k}.nchw", tokens_to_nchw(frames[k], E, E), limit=16)
                st.put(f"ma.memory_pos.frame{k}.nchw", tokens_to_nchw(frame_pos[k], E, E), limit=16)
            st.put("ma.memory.ptr_rows", ptr_tokens, full=True)
            st.put("ma.memory_pos.ptr_rows", ptr_pos_tokens, full=True)
            st.put("ma.ptrs.out.nchw", tokens_to_nchw(out_a, E, E), limit=16)
            st.put("ma.ptrs.layer0.nchw", tokens_to_nchw(layer0["out"].transpose(0, 1), E, E), limit=16)
            st.put("ma.one_frame.out.nchw", tokens_to_nchw(out_b, E, E), limit=16)
            st.put("ma.one_frame.layer0.nchw", tokens_to_nchw(layer0_b["out"].transpose(0, 1), E, E), limit=16)
        else:
            st.put("ma.curr", curr)
            st.put("ma.curr_pos", curr_pos)
            st.put("ma.memory", memory)
            st.put("ma.memory_pos", memory_pos)
            st.put("ma.ptrs.out", out_a)
            st.put("ma.ptrs.layer0", layer0["out"].transpose(0, 1))
            st.put("ma.one_frame.out", out_b)
            st.put("ma.one_frame.layer0", layer0_b["out"].transpose(0, 1))
        st.put("ma.obj_ptrs", ptrs, full=True)
        meta_ma = {"num_obj_ptr_tokens": n_ptr, "ptr_tpos": ptr_tpos.tolist(), "t_diff_max": t_diff_max,
                   "memory_rows": [HW, HW, n_ptr], "one_frame_rows": [HW, 2 * HW]}

        # ---------------- (c) object-pointer path ----------------
        tok = recipe("video.ptr.token", (1, C), 1.0)
        st.put("ptr.token", tok, full=True)
        st.put("ptr.obj_ptr_proj", model.obj_ptr_proj(tok), full=True)
        signed = torch.tensor([-15, -7, -3, -1, 0, 1, 2, 3, 6, 7, 15])
        for tdm in (15, 7):  # t_diff_max = min(num_frames, max_obj_ptrs_in_encoder=16) - 1
            pe = get_1d_sine_pe(signed / tdm, dim=C)
            st.put(f"tpos.tdm{tdm}.sine", pe, full=True)
            st.put(f"tpos.tdm{tdm}.proj", model.obj_ptr_tpos_proj(pe), full=True)
        st.put("ptr.no_obj_ptr", model.no_obj_ptr, full=True)

        img = preprocess(os.path.join(ref.FIXTURES, "images", IMAGES[config]))
        bb = model.forward_image(img)
        _, vis, _, sizes = model._prepare_backbone_features(bb)
        pix = vis[-1].permute(1, 2, 0).view(1, C, E, E)  # _track_step's pix_feat for mask input
        high = [x.permute(1, 2, 0).view(1, x.size(2), *s) for x, s in zip(vis[:-1], sizes[:-1])]
        st.put("mao.features.level2", pix, limit=16)
        st.put("mao.features.feat_s1", high[1])
        st.put("mao.features.feat_s0", high[0])
        for tag, m in [("ellipse", ellipse_mask(S)), ("empty", np.zeros((1, 1, S, S), np.float32))]:
            mt = torch.from_numpy(m)
            lo, hi, ious, _, _, ptr, score = model._use_mask_as_output(pix, high, mt)
            st.put(f"mao.{tag}.low_res_masks", lo, limit=64)
            st.put(f"mao.{tag}.high_res_masks", hi, limit=64)
            st.put(f"mao.{tag}.obj_ptr", ptr, full=True)
            st.put(f"mao.{tag}.object_score_logits", score, full=True)
            st.put(f"mao.{tag}.ious", ious, full=True)
            if tag == "ellipse":
                st.put("mao.ellipse.mask_inputs", mt, limit=64)

    recipes["mao.features"] = (f"official float32 forward_image + _prepare_backbone_features on the image "
                               f"fixtures' input ({IMAGES[config]}, PIL path); level2 WITHOUT no_mem_embed "
                               "(as _track_step passes it for mask inputs); feat_s0/s1 after conv_s0/conv_s1")
    recipes["mao.<tag>.mask_inputs"] = ("ellipse: pixel (x,y) of the SxS grid is 1 where ((x+0.5-0.45S)/(0.22S))^2 + "
                                        "((y+0.5-0.55S)/(0.3S))^2 <= 1 in double, else 0; empty: all 0")
    meta = {"format": "sam2rt-video-modules-1", "config": config, "weights": "micro.pt" if config == "micro"
            else "generated(salt=0)", "values": "official PyTorch, float32, CPU", "sam2_commit": "2b90b9f5"}
    base = os.path.join(out_dir, f"modules_{config}")
    ref.write_safetensors(base + ".safetensors", st.tensors, meta)
    doc = {"metadata": meta, "runtime": ref.runtime_versions(), "dims": {"C": C, "mem_dim": D, "S": S, "E": E},
           "memory_attention": meta_ma, "recipes": recipes, "tensors": st.stats}
    with open(base + ".json", "w") as f:
        json.dump(doc, f, indent=1, sort_keys=True)
        f.write("\n")
    print(base, os.path.getsize(base + ".safetensors"), "bytes,", len(st.tensors), "tensors")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sam2", required=True, help="facebookresearch/sam2 checkout (folder holding sam2/)")
    ap.add_argument("--out", default=os.path.join(ref.REPO, "tests", "video", "goldens"))
    ap.add_argument("--configs", nargs="+", default=["micro", "tiny"])
    args = ap.parse_args()
    ref.install(args.sam2)
    for c in args.configs:
        make(c, args.sam2, args.out)


if __name__ == "__main__":
    main()
