"""Issue 12's speed figures from Python, next to the CLI's own on the same machine.

    PYTHONPATH=build/python /usr/bin/python3 bench/python_speed.py [--runs N]

Tiny with synthetic weights, astronaut_1024.png:
  - set_image vs `sam2rt bench` encoder median (2 compute threads both);
  - predict (one click, multimask) from Python vs the same decode timed inside the
    extension (`ImagePredictorCore.time_predict`), the difference being the binding's overhead;
  - with compute threads 1, the throughput of predict from 1 and from 2 Python threads
    on one predictor.
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time

import numpy as np
from PIL import Image

import sam2rt

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
IMAGE = os.path.join(ROOT, "..", "shared", "fixtures", "images", "astronaut_1024.png")
CLI = os.path.join(ROOT, "build", "sam2rt")


def summary(samples_ms):
    return "median %.2f ms (min %.2f, max %.2f, %d runs)" % (
        statistics.median(samples_ms), min(samples_ms), max(samples_ms), len(samples_ms))


def timed(fn, runs, warmup):
    for _ in range(warmup):
        fn()
    samples = []
    for _ in range(runs):
        start = time.perf_counter()
        fn()
        samples.append((time.perf_counter() - start) * 1e3)
    return samples


def cli_encoder_report(runs):
    with tempfile.TemporaryDirectory() as scratch:
        out = os.path.join(scratch, "bench.json")
        subprocess.run([CLI, "bench", "--variant", "tiny", "--synthetic-weights", "0", "--threads", "2",
                        "--image", IMAGE, "--warmup", "2", "--runs", str(runs), "--encoder-only", "--json", out],
                       check=True, stdout=subprocess.DEVNULL)
        with open(out) as f:
            report = json.load(f)
    return report


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=7)
    args = parser.parse_args()

    image = np.asarray(Image.open(IMAGE).convert("RGB"))
    model = sam2rt.build_sam2("configs/sam2.1/sam2.1_hiera_t.yaml", synthetic_weights=0)
    predictor = sam2rt.SAM2ImagePredictor(model)

    sam2rt.set_num_threads(2)
    set_image = timed(lambda: predictor.set_image(image), args.runs, 2)
    report = cli_encoder_report(args.runs)
    print("set_image, 2 threads:          ", summary(set_image))
    print("CLI bench encoder, 2 threads:   median %.2f ms (%s)" % (report["encoder_ms"]["median"],
                                                                   json.dumps(report["encoder_ms"])))
    print("set_image / CLI encoder:        %.3f" % (statistics.median(set_image) / report["encoder_ms"]["median"]))

    point = dict(point_coords=np.array([[500.0, 375.0]]), point_labels=np.array([1]))
    python_predict = timed(lambda: predictor.predict(**point), 30, 5)
    inner = predictor._core.time_predict(np.array([[[500.0, 375.0]]], dtype=np.float32), np.array([[1]], dtype=np.int32),
                                         30, 5)
    print("predict from Python, 2 threads:", summary(python_predict))
    print("same decode inside the binding: ", summary(inner))
    print("overhead (medians):             %.3f ms" % (statistics.median(python_predict) - statistics.median(inner)))

    sam2rt.set_num_threads(1)
    per_thread = 24

    def throughput(thread_count):
        barrier = threading.Barrier(thread_count + 1)

        def work():
            barrier.wait()
            for _ in range(per_thread):
                predictor.predict(**point)

        threads = [threading.Thread(target=work) for _ in range(thread_count)]
        for t in threads:
            t.start()
        barrier.wait()
        start = time.perf_counter()
        for t in threads:
            t.join()
        return thread_count * per_thread / (time.perf_counter() - start)

    throughput(1)
    one = [throughput(1) for _ in range(3)]
    two = [throughput(2) for _ in range(3)]
    print("compute threads 1: 1 Python thread %.1f predicts/s, 2 Python threads %.1f predicts/s: %.2fx" % (
        statistics.median(one), statistics.median(two), statistics.median(two) / statistics.median(one)))


if __name__ == "__main__":
    sys.exit(main())
