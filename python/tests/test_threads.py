"""Several Python threads on one predictor: the GIL is released, results do not change."""

import threading

import numpy as np

import sam2rt


def prompts():
    rng = np.random.default_rng(3)
    for _ in range(12):
        x0, x1 = np.sort(rng.uniform(0, 288, 2))
        y0, y1 = np.sort(rng.uniform(0, 112, 2))
        yield dict(point_coords=[[(x0 + x1) / 2, (y0 + y1) / 2]], point_labels=[1], box=[x0, y0, x1, y1])


def test_four_threads_equal_one(micro_predictor):
    cases = list(prompts())
    expected = [micro_predictor.predict(**case, return_logits=True) for case in cases]
    results = {}
    errors = []

    def worker(offset):
        try:
            for repeat in range(3):
                for i in range(offset, len(cases), 2):
                    results[(offset, repeat, i)] = micro_predictor.predict(**cases[i], return_logits=True)
        except Exception as error:  # reported below: an exception in a thread would otherwise vanish
            errors.append(error)

    threads = [threading.Thread(target=worker, args=(t % 2,)) for t in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not errors
    assert len(results) == 3 * len(cases)
    for (_, _, i), got in results.items():
        for a, b in zip(got, expected[i]):
            assert np.array_equal(a, b)


def test_set_image_on_one_thread_while_another_predicts(micro_model, micro_image):
    predictor = sam2rt.SAM2ImagePredictor(micro_model)
    predictor.set_image(micro_image)
    flipped = np.ascontiguousarray(micro_image[::-1])
    errors = []

    def predict_many():
        try:
            for _ in range(20):
                masks, _, _ = predictor.predict(box=[80, 15, 140, 65])
                assert masks.shape == (3, 112, 288)
        except Exception as error:
            errors.append(error)

    worker = threading.Thread(target=predict_many)
    worker.start()
    for _ in range(3):
        predictor.set_image(flipped)
        predictor.set_image(micro_image)
    worker.join()
    assert not errors
