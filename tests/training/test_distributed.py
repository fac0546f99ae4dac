"""Data-parallel training: the ranks' slices of a batch are the one-process batch, two gloo
processes follow the loss curve of one process with the same global batch (dropout on), and an
experiment's run on two processes is its run on one."""

from __future__ import annotations

import json
import shutil

import numpy as np
import pytest
import torch

from thermocrop.cli.main import EXIT_USAGE, main
from thermocrop.core.crops import CROP_CLASSES
from thermocrop.core.errors import InputError
from thermocrop.core.model.bundle import InputScaling
from thermocrop.core.pixel_sets import PixelSets, open_dataset, save_dataset
from thermocrop.core.progress import Progress
from thermocrop.training.data_parallel import launch
from thermocrop.training.experiment import run_experiment
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
        # Each row knows its place in the global batch (its dropout key comes from it): a
        # rank's row is the whole batch's row of the same place.
        assert sorted(whole.draws.tolist()) == list(range(24))
        assert sorted(d for p in parts for d in p.draws.tolist()) == list(range(24))
        at = {int(d): j for j, d in enumerate(whole.draws)}
        for p in parts:
            same = [at[int(d)] for d in p.draws]
            assert np.array_equal(p.pixels, whole.pixels[same])
            assert np.array_equal(p.labels, whole.labels[same])
            assert np.array_equal(p.day_of_season, whole.day_of_season[same])
    with pytest.raises(ValueError, match="multiple of the 5 processes"):
        sampler.sample(24, np.random.default_rng(0), 0, 5)


# Adam scales a step by the gradient's own size, so a gradient that is zero in exact
# arithmetic (the attention's key bias: the softmax ignores a shift shared by every date) or
# nearly so, computed as rounding noise that differs between one process and two, would move
# its weight by up to lr either way and the curves would part by more than rounding. Weight
# decay adds decay x weight to every gradient, far above that noise.
WEIGHT_DECAY = 1e-2


def _train(data: str, out: str, settings: dict) -> None:
    train_model([open_dataset(data)], out, TrainingConfig(**settings), show_progress=False)


@pytest.mark.slow
def test_two_gloo_processes_follow_the_one_process_loss_curve_with_dropout(tmp_path):
    data = tmp_path / "region"
    save_dataset(_pixel_sets(120, 10, 12, seed=0), data)
    # One step per epoch, so the history holds the loss of every step. Dropout is on: each
    # parcel draw's masks come from its own key, whichever process trains it.
    steps, batch = 6, 16
    settings = dict(variant="tpe_recurrent", epochs=steps, steps_per_epoch=1, batch_size=batch,
                    sample_pixels=8, sample_dates=6, lr=3e-3, device="cpu", seed=4,
                    weight_decay=WEIGHT_DECAY, model_settings={"dropout": 0.3, "attn_dropout": 0.3})
    _train(str(data), str(tmp_path / "one.tcm"), settings)
    launch(_train, 2, "cpu", str(data), str(tmp_path / "two.tcm"), settings)
    one = json.loads((tmp_path / "one.metrics.json").read_text())["history"]
    two = json.loads((tmp_path / "two.metrics.json").read_text())["history"]
    curve_one, curve_two = [h["loss"] for h in one], [h["loss"] for h in two]
    assert len(curve_two) == steps
    assert curve_one[-1] < curve_one[0]  # it learns, so the curves say something
    # Both processes compute the same float32 function of the same batch; only the order of
    # sums differs (BatchNorm statistics and the loss over two halves, gradients reduced over
    # two processes). Summing n float32 terms in another order moves the result by up to about
    # n ulps, so the first step's loss agrees within batch x float32 epsilon, relative; each
    # step after it starts from weights that carry the earlier steps' rounding, so step k
    # gets k times that.
    rounding = batch * float(np.finfo(np.float32).eps)
    for step, (a, b) in enumerate(zip(curve_one, curve_two), start=1):
        assert abs(a - b) <= step * rounding * abs(a), f"step {step}: {a} against {b}"
    # The weights after the last step (checkpoints hold the last state) agree to rounding in
    # their bulk: at most one in a thousand differs by more than 8 ulps of 1. The few others
    # are weights whose gradient (weight decay included) is small beside its rounding: Adam
    # scales every step to about lr, so their rounding moves them by a share of lr; they stay
    # within a hundredth of what Adam can move a weight in these steps.
    w_one = torch.load(tmp_path / "one.ckpt", weights_only=True)["model"]
    w_two = torch.load(tmp_path / "two.ckpt", weights_only=True)["model"]
    diff = torch.cat([(w_two[name] - value).abs().flatten()
                      for name, value in w_one.items() if value.is_floating_point()])
    ulp_of_one = float(np.finfo(np.float32).eps)
    assert (diff > 8 * ulp_of_one).double().mean().item() < 1e-3
    assert diff.max().item() < 0.01 * steps * settings["lr"]


def _regions(root, n: int = 60) -> list:
    paths = []
    for i, name in enumerate(("R1", "R2")):
        save_dataset(_pixel_sets(n, 8, 6, seed=10 + i), root / name)
        paths.append(root / name)
    return paths


@pytest.mark.slow
def test_an_experiment_run_on_two_processes_is_the_one_process_run(tmp_path):
    regions = _regions(tmp_path)
    cfg = TrainingConfig(variant="no_pe", epochs=2, steps_per_epoch=2, batch_size=8, sample_pixels=4,
                         sample_dates=5, device="cpu", seed=1, weight_decay=WEIGHT_DECAY)  # dropout on
    one = run_experiment(regions, ["no_pe"], tmp_path / "one", cfg)
    # R1's run is taken over as finished, so only R2's trains on two processes.
    shutil.copytree(tmp_path / "one" / "no_pe" / "R1", tmp_path / "two" / "no_pe" / "R1")
    seen = []
    two = run_experiment(regions, ["no_pe"], tmp_path / "two", cfg, devices=2,
                         progress=Progress(report=seen.append))
    assert len(two) == 2
    # Progress came from rank 0 within the run, and the run ended.
    assert any(0 < f < 1 for f in seen) and seen[-1] == pytest.approx(1.0)
    run_one = next(r for r in one if r["held_out"] == "R2")
    run_two = next(r for r in two if r["held_out"] == "R2")
    history = [json.loads((tmp_path / out / "no_pe" / "R2" / "model.metrics.json").read_text())["history"]
               for out in ("one", "two")]
    rounding = cfg.batch_size * float(np.finfo(np.float32).eps)  # as in the test above
    for epoch, (a, b) in enumerate(zip(*([h["loss"] for h in hist] for hist in history)), start=1):
        assert abs(a - b) <= epoch * cfg.steps_per_epoch * rounding * abs(a)
    assert run_two["train_regions"] == ["R1"]
    assert run_two["confusion_matrix"] == run_one["confusion_matrix"]
    assert run_two["macro_f1"] == run_one["macro_f1"]


def test_experiment_devices_refuses_what_it_cannot_do(tmp_path):
    regions = _regions(tmp_path, n=20)
    args = ["experiment", "--regions", *map(str, regions), "--out", str(tmp_path / "exp")]
    for extra in (["--devices", "2", "--jobs", "2"], ["--devices", "2", "--protocol", "paper"]):
        with pytest.raises(SystemExit) as exc:
            main(args + extra)
        assert exc.value.code == EXIT_USAGE
    with pytest.raises(InputError, match="batch size 8 must be a multiple of the 3 devices"):
        run_experiment(regions, ["no_pe"], tmp_path / "exp", TrainingConfig(batch_size=8), devices=3)
    assert not (tmp_path / "exp").exists()
