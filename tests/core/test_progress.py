"""Progress moves with the work of a classification, and a cancel stops it at once: within one
scene window per reading thread, or one model call."""

from __future__ import annotations

import threading

import numpy as np
import pytest

from thermocrop.core.errors import CancelledError
from thermocrop.core.progress import Progress


def test_parts_are_as_wide_as_their_cost():
    seen: list[float] = []
    first, second, empty, last = Progress(seen.append, start=0.2, stop=0.6).parts([1.0, 3.0, 0.0, 4.0])
    assert [(p.start, p.stop) for p in (first, second, empty, last)] == pytest.approx(
        [(0.2, 0.25), (0.25, 0.4), (0.4, 0.4), (0.4, 0.6)])
    second(0.5)
    assert seen == pytest.approx([0.325])
    # Nothing has a cost: equal parts, still one after the other.
    assert [(p.start, p.stop) for p in Progress().parts([0.0, 0.0])] == [(0.0, 0.5), (0.5, 1.0)]


@pytest.fixture(scope="module")
def untrained_bundle():
    """A model of the shipped architecture with untrained weights: the same cost per parcel."""
    pytest.importorskip("torch")
    import torch

    from thermocrop.core.crops import CROP_CLASSES
    from thermocrop.core.model.bundle import BundleConfig, ModelBundle
    from thermocrop.core.model.networks import build_model

    torch.manual_seed(0)
    return ModelBundle(build_model("tpe_sinusoidal", len(CROP_CLASSES)).eval(), BundleConfig(classes=CROP_CLASSES))


@pytest.fixture
def counted_reads(monkeypatch):
    """Every scene window read, as ``(thread, cancel already asked)``; ``asked`` is set by the test."""
    from thermocrop.core.scenes.product import ProductReader

    asked = threading.Event()
    reads: list[tuple[str, bool]] = []
    lock = threading.Lock()
    read = ProductReader.read

    def counting(self, window):
        with lock:
            reads.append((threading.current_thread().name, asked.is_set()))
        return read(self, window)

    monkeypatch.setattr(ProductReader, "read", counting)
    return reads, asked


def test_a_cancel_during_extraction_waits_for_one_window_per_thread(tiny_region, untrained_bundle, counted_reads,
                                                                    monkeypatch):
    import dataclasses

    from thermocrop.core import classify
    from thermocrop.core.classify import classify_parcels
    from thermocrop.core.extract import scene_threads
    from thermocrop.core.scenes.local import find_scenes

    # Windows of 64 pixels: each of the tiny region's scenes is read in several, as a real
    # tile is in 1024-pixel ones.
    settings = classify.ExtractionSettings
    monkeypatch.setattr(classify, "ExtractionSettings", lambda **k: dataclasses.replace(settings(**k), block_size=64))
    reads, asked = counted_reads
    scenes = find_scenes(tiny_region / "scenes")
    reported: list[float] = []

    def report(fraction: float) -> None:
        reported.append(fraction)
        if len(reads) >= 100:  # some scenes read, most not yet
            asked.set()

    with pytest.raises(CancelledError):
        classify_parcels(tiny_region / "parcels.gpkg", scenes, tiny_region / "weather.nc", untrained_bundle,
                         progress=Progress(report, asked.is_set))
    before = sum(1 for _, late in reads if not late)
    after = [thread for thread, late in reads if late]
    assert before >= 100
    # Each thread may finish the window it was reading, and start none after it.
    assert len(after) <= scene_threads(scenes)
    assert len(set(after)) == len(after)
    # ... while the scenes were read: the bar had not reached the end of the reading.
    cost = classify.estimated_seconds(100, len(scenes))
    assert reported == sorted(reported) and reported[-1] < cost["extract"] / (cost["extract"] + cost["predict"])


def test_a_cancel_during_prediction_waits_for_one_model_call(tiny_region, untrained_bundle):
    from thermocrop.core.classify import CPU_BATCH_PIXEL_DATES, classify_parcels, estimated_seconds
    from thermocrop.core.scenes.local import find_scenes

    scenes = find_scenes(tiny_region / "scenes")
    cost = estimated_seconds(100, len(scenes))
    extraction_share = cost["extract"] / (cost["extract"] + cost["predict"])
    reported: list[float] = []
    asked_at: list[int] = []

    def report(fraction: float) -> None:
        reported.append(fraction)
        if fraction > extraction_share + 0.05 and not asked_at:  # a few model calls done
            asked_at.append(len(reported))

    with pytest.raises(CancelledError):
        classify_parcels(tiny_region / "parcels.gpkg", scenes, tiny_region / "weather.nc", untrained_bundle,
                         progress=Progress(report, lambda: bool(asked_at)))
    # The call that asked is the last: the model stops before its next batch.
    assert len(reported) == asked_at[0] and reported[-1] < 1.0
    # A model call holds at most 32 parcels of 39 dates x 64 pixels on a CPU.
    assert CPU_BATCH_PIXEL_DATES // (len(scenes) * 64) == 32


def test_progress_is_monotonic_and_spread_over_the_run(tiny_region, untrained_bundle, monkeypatch):
    from thermocrop.core import classify as classify_module

    calls: list[float] = []
    at_model: list[float] = []
    predict = classify_module.predict_chunk

    def recording(*args, **kwargs):
        at_model.append(calls[-1] if calls else 0.0)
        return predict(*args, **kwargs)

    monkeypatch.setattr(classify_module, "predict_chunk", recording)
    result = classify_module.classify_parcels(tiny_region / "parcels.gpkg", tiny_region / "scenes",
                                              tiny_region / "weather.nc", untrained_bundle,
                                              progress=Progress(calls.append))
    assert (result.status == "ok").sum() > 50
    assert calls == sorted(calls) and calls[-1] == 1.0
    # The bar moves while the scenes are read and leaves the model its part: when the model
    # first runs it is past the start but far from the end (the fault: 90 % within seconds,
    # then nothing for the whole prediction).
    assert at_model and 0.0 < at_model[0] <= 0.8, at_model
    assert sum(f <= at_model[0] for f in calls) > 10
    assert len(calls) > 20
    assert np.diff(calls).max() < 0.2  # no jump over a fifth of the run
