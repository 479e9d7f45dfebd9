#!/usr/bin/python3
"""Makes the short test clips of tests/video/clips/ from the fixture photos.

usage: make_clips.py [--out tests/video/clips]

Each clip is a folder of JPEG frames 00000.jpg, 00001.jpg, ... as SAM2VideoPredictor.init_state
reads them (load_video_frames_from_jpg_images: frames sorted by int(stem)). Frames are written by
Pillow with quality=95 (Pillow's default 4:2:0 chroma subsampling, baseline, no optimize), so the
JPEG bytes are deterministic for a given Pillow/libjpeg build. Photos: ../shared/fixtures/images.

Clips (all 8 frames):
  pan       240x160  chelsea.png: the whole photo resized to 330x220 (LANCZOS), a 240x160 window
                     moving right 12 px and down 2 px per frame (camera pan; the cat translates).
  occlusion 300x200  coffee.png resized to 300x200 (LANCZOS); a flat grey (128,128,128) patch
                     slides in from the left and covers the cup completely on frames 3-5, then
                     leaves again.
  leave     256x144  astronaut.png resized to 144x144 (LANCZOS) pasted on a flat (40,60,90)
                     background at x = 40 + 32*k (frame k): it leaves the frame to the right
                     (partly outside from frame 4, completely gone on frame 7).
"""
import argparse
import os

from PIL import Image

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.abspath(os.path.join(HERE, "..", "..", ".."))
IMAGES = os.path.abspath(os.path.join(REPO, "..", "shared", "fixtures", "images"))
N = 8


def pan():
    src = Image.open(os.path.join(IMAGES, "chelsea.png")).convert("RGB").resize((330, 220), Image.LANCZOS)
    return [src.crop((12 * k, 2 * k, 12 * k + 240, 2 * k + 160)) for k in range(N)]


def occlusion():
    src = Image.open(os.path.join(IMAGES, "coffee.png")).convert("RGB").resize((300, 200), Image.LANCZOS)
    # patch x ranges per frame: enters, covers the cup (frames 3-5), leaves to the right
    x0s = [None, -160, -80, 60, 60, 60, 330, None]
    frames = []
    for k in range(N):
        f = src.copy()
        if x0s[k] is not None:
            f.paste((128, 128, 128), (max(x0s[k], 0), 20, min(x0s[k] + 200, 300), 190))
        frames.append(f)
    return frames


def leave():
    obj = Image.open(os.path.join(IMAGES, "astronaut.png")).convert("RGB").resize((144, 144), Image.LANCZOS)
    frames = []
    for k in range(N):
        f = Image.new("RGB", (256, 144), (40, 60, 90))
        f.paste(obj, (40 + 32 * k, 0))  # Pillow clips the paste at the frame border
        frames.append(f)
    return frames


CLIPS = {"pan": pan, "occlusion": occlusion, "leave": leave}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", default=os.path.join(REPO, "tests", "video", "clips"))
    args = ap.parse_args()
    for name, make in CLIPS.items():
        d = os.path.join(args.out, name)
        os.makedirs(d, exist_ok=True)
        for k, f in enumerate(make()):
            f.save(os.path.join(d, "%05d.jpg" % k), quality=95)
        print(name, sorted(os.listdir(d)), sum(os.path.getsize(os.path.join(d, p)) for p in os.listdir(d)), "bytes")


if __name__ == "__main__":
    main()
