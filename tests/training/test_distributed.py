"""Data-parallel training: the ranks' slices of a batch are the one-process batch, and two
gloo processes follow the loss curve of one process with the same global batch."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch

from thermocrop.core.crops import CROP_CLASSES
from thermocrop.core.model.bundle import InputScaling
from thermocrop.core.pixel_sets import PixelSets, open_dataset, save_dataset
from thermocrop.training.data_parallel import launch
from thermocrop.training.sampling import BatchSampler
from thermocrop.training.train import TrainingConfig, train_model


def _pixel_sets(n: int, t: int, s: int, seed: int) -> PixelSets:
    """Random parcels whose band levels follow the label (learnable), with masked pixels,
    masked dates and parcels of fewer pixels than slots."""
    rng = np.random.default_rng(seed)
    labels = rng.integers(0, 3, n).astype(np.int16)
    level = 1500 + 900 * labels[:, None, None, None] * np.linspace(0.2, 1, 10)[None, None, :, None]
    pixels = (level + rng.normal(0, 200, (n, t, 10, s))).clip(1, 65535)
    n_slots = rng.integers(2, s + 1, n)
    pixel_mask = (np.arange(s)[None, None, :] < n_slots[:, None, None]) & \
        (rng.random((n, t, s)) > 0.1)
    date_mask = rng.random((n, t)) > 0.25
    date_mask[:, 0] = True
    dates = np.datetime64("2018-03-01") + np.arange(t) * 10
    return PixelSets(
        pixels=(pixels * pixel_mask[:, :, None, :]).astype(np.uint16), pixel_mask=pixel_mask,
        date_mask=date_mask, gdd=np.cumsum(rng.uniform(40, 160, (n, t)), axis=1).astype(np.float32),
        dates=dates, day_of_season=(dates - np.datetime64("2018-01-01")).astype(np.float32),
        parcel_ids=np.array([f"p{i}" for i in range(n)]), status=np.array(["ok"] * n),
        labels=labels, blocks=(np.arange(n) % 10).astype(np.int32), classes=CROP_CLASSES)


def _rows(batch) -> list[tuple]:
    """Each parcel of a batch as a hashable row, for comparing batches up to row order."""
    return sorted(
        (int(batch.labels[i]), batch.pixels[i].round(5).tobytes(), batch.pixel_mask[i].tobytes(),
         batch.date_mask[i].tobytes(), batch.day_of_season[i].tobytes(), batch.gdd[i].tobytes())
        for i in range(len(batch.labels)))


def test_ranks_slices_together_are_the_one_process_batch():
    sets = [_pixel_sets(40, 9, 7, seed=1), _pixel_sets(30, 12, 5, seed=2)]
    rows = [np.arange(40), np.arange(3, 30)]
    scaling = InputScaling.from_pixel_sets(sets[0])
    sampler = BatchSampler(sets, rows, scaling, n_pixels=4, n_dates=6, max_shift=20)
    for step in range(3):
        whole = sampler.sample(24, np.random.default_rng([7, step]))
        parts = [sampler.sample(24, np.random.default_rng([7, step]), rank, 3)
                 for rank in range(3)]
        assert [len(p.labels) for p in parts] == [8, 8, 8]
        assert _rows(whole) == sorted(r for p in parts for r in _rows(p))
    with pytest.raises(ValueError, match="multiple of the 5 processes"):
        sampler.sample(24, np.random.default_rng(0), 0, 5)


def _train(data: str, out: str, settings: dict) -> None:
    train_model([open_dataset(data)], out, TrainingConfig(**settings), show_progress=False)


@pytest.mark.slow
def test_two_gloo_processes_follow_the_one_process_loss_curve(tmp_path):
    data = tmp_path / "region"
    save_dataset(_pixel_sets(120, 10, 12, seed=0), data)
    # Dropout off: its masks are drawn per process, so they differ between one process and two
    # even for the same parcels; everything else about the batch is the same.
    settings = dict(variant="tpe_recurrent", epochs=3, steps_per_epoch=4, batch_size=16,
                    sample_pixels=8, sample_dates=6, lr=3e-3, device="cpu", seed=4,
                    model_settings={"dropout": 0.0, "attn_dropout": 0.0})
    _train(str(data), str(tmp_path / "one.tcm"), settings)
    launch(_train, 2, "cpu", str(data), str(tmp_path / "two.tcm"), settings)
    one = json.loads((tmp_path / "one.metrics.json").read_text())["history"]
    two = json.loads((tmp_path / "two.metrics.json").read_text())["history"]
    curve_one, curve_two = [h["loss"] for h in one], [h["loss"] for h in two]
    assert len(curve_two) == 3
    assert curve_one[-1] < curve_one[0]  # it learns, so the curves say something
    assert curve_two == pytest.approx(curve_one, rel=1e-4)
    # The weights after the last step agree too (checkpoints hold the last state). Adam moves
    # a weight by up to lr = 3e-3 a step whatever the gradient's size, so the rounding of
    # gradients near zero (summed in another order over two processes) shows as up to ~7e-4
    # after 12 steps: allow 1.5e-3, a twentieth of the 0.036 Adam can move a weight in 12 steps.
    w_one = torch.load(tmp_path / "one.ckpt", weights_only=True)["model"]
    w_two = torch.load(tmp_path / "two.ckpt", weights_only=True)["model"]
    worst = max((w_two[name] - value).abs().max().item()
                for name, value in w_one.items() if value.is_floating_point())
    assert worst < 1.5e-3
