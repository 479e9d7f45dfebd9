"""The COCO dataset file of a segment-everything batch (`sam2rt everything --coco FILE`).

Built from the per-image JSON files once the job is done, as the CLI builds it
(tools/cmd_everything.cpp): one image entry per input that has an output (id = its
1-based position among the inputs), its masks as annotations with COCO compressed RLE
segmentation and score = predicted IoU; keys sorted, no spaces, as the CLI writes it.
"""

import json
import os
import tempfile

from . import _sam2rt


def _compressed(segmentation):
    if isinstance(segmentation["counts"], list):
        height, width = segmentation["size"]
        return dict(segmentation, counts=_sam2rt.coco_rle_string(height, width, segmentation["counts"]))
    return segmentation


def coco_dataset(items):
    images, annotations = [], []
    for index, item in enumerate(items):
        if not os.path.exists(item.output):
            continue  # failed inputs have no output
        with open(item.output, encoding="utf-8") as file:
            report = json.load(file)
        image_id = index + 1
        images.append({"id": image_id, "file_name": item.input, "height": report["image_hw"][0],
                       "width": report["image_hw"][1]})
        for mask in report["masks"]:
            annotations.append({
                "id": len(annotations) + 1, "image_id": image_id, "category_id": 1,
                "segmentation": _compressed(mask["segmentation"]), "area": mask["area"], "bbox": mask["bbox"],
                "iscrowd": 0, "score": mask["predicted_iou"], "stability_score": mask["stability_score"],
                "point_coords": mask["point_coords"], "crop_box": mask["crop_box"],
            })
    return {
        "info": {"description": "sam2rt everything"},
        "images": images,
        "annotations": annotations,
        "categories": [{"id": 1, "name": "object", "supercategory": "object"}],
    }


def check_coco_writable(path):
    """ValueError in one line when path's folder does not exist or is not writable (before any work)."""
    folder = os.path.dirname(os.path.abspath(path))
    try:
        with tempfile.NamedTemporaryFile(prefix=os.path.basename(path) + ".tmp.", dir=folder):
            pass
    except OSError as error:
        raise ValueError(f"--coco '{path}': cannot write there ({error.strerror})") from None


def write_coco_dataset(path, items):
    """Writes the dataset of items' outputs to path atomically (a temporary file renamed over it)."""
    text = json.dumps(coco_dataset(items), sort_keys=True, separators=(",", ":"), ensure_ascii=False) + "\n"
    descriptor, temporary = tempfile.mkstemp(prefix=os.path.basename(path) + ".tmp.",
                                             dir=os.path.dirname(os.path.abspath(path)))
    try:
        with os.fdopen(descriptor, "w", encoding="utf-8") as out:
            out.write(text)
        os.replace(temporary, path)
    except BaseException:
        os.unlink(temporary)
        raise
