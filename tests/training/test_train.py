"""Training: batched sampling, focal loss, a few steps lower the loss for every variant,
outputs, and resuming from a checkpoint gives the same model as an unbroken run."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import torch
from safetensors.torch import load_file

from thermocrop.core.crops import CROP_CLASSES
from thermocrop.core.errors import CancelledError, InputError
from thermocrop.core.model.bundle import InputScaling, load_bundle
from thermocrop.core.model.networks import VARIANTS, build_model
from thermocrop.core.pixel_sets import PixelSets, open_dataset, save_dataset
from thermocrop.core.progress import Progress
from thermocrop.training.losses import FocalLoss
from thermocrop.training.sampling import BatchSampler, sample_dates, sample_pixels
from thermocrop.training.train import TrainingConfig, train_model


def make_pixel_sets(n: int = 90, t: int = 14, s: int = 8, n_labels: int = 3, seed: int = 0,
                    blocks: int = 10) -> PixelSets:
    """Random pixel sets whose band levels depend on the label (learnable), real shapes."""
    rng = np.random.default_rng(seed)
    labels = rng.integers(0, n_labels, n).astype(np.int16)
    level = 1500 + 1200 * labels[:, None, None, None] * np.linspace(0.2, 1, 10)[None, None, :, None]
    odd = (labels % 2)[:, None, None, None]
    season = np.sin(np.linspace(0, np.pi, t))[None, :, None, None] * 800 * odd
    pixels = (level + season + rng.normal(0, 150, (n, t, 10, s))).clip(1, 65535).astype(np.uint16)
    n_slots = rng.integers(1, s + 1, n)
    pixel_mask = np.arange(s)[None, None, :] < n_slots[:, None, None]
    pixel_mask = np.broadcast_to(pixel_mask, (n, t, s)) & (rng.random((n, t, s)) > 0.1)
    date_mask = rng.random((n, t)) > 0.3
    date_mask[:, 0] = True
    pixels = pixels * pixel_mask[:, :, None, :]
    dates = np.datetime64("2017-03-01") + np.arange(t) * 12
    dos = (dates - np.datetime64("2017-01-01")).astype(np.float32)
    gdd = np.cumsum(rng.uniform(50, 150, (n, t)), axis=1).astype(np.float32)
    status = np.array(["ok"] * n, dtype=object)
    status[-2] = "no valid pixel"
    return PixelSets(pixels=pixels.astype(np.uint16), pixel_mask=pixel_mask, date_mask=date_mask,
                     gdd=gdd, dates=dates, day_of_season=dos,
                     parcel_ids=np.array([f"p{i}" for i in range(n)]), status=status.astype(str),
                     labels=labels, blocks=(np.arange(n) % blocks).astype(np.int32),
                     classes=CROP_CLASSES)


@pytest.fixture(scope="module")
def dataset_dir(tmp_path_factory):
    path = tmp_path_factory.mktemp("train") / "region"
    save_dataset(make_pixel_sets(), path)
    return path


def test_sample_dates_are_valid_chronological_and_masked_when_short():
    rng = np.random.default_rng(0)
    date_mask = rng.random((200, 20)) > 0.5
    index, mask = sample_dates(date_mask, 6, rng)
    assert (np.diff(index, axis=1) > 0).all()
    n_valid = date_mask.sum(axis=1)
    assert (mask.sum(axis=1) == np.minimum(n_valid, 6)).all()
    assert date_mask[np.arange(200)[:, None], index][mask].all()
    # Fewer dates in the dataset than asked: all dates once, the rest masked.
    index, mask = sample_dates(np.ones((3, 4), bool), 6, rng)
    assert index.shape == (3, 6) and (mask.sum(axis=1) == 4).all()


def test_sample_pixels_draws_only_valid_slots_and_repeats_when_few():
    rng = np.random.default_rng(1)
    valid = np.zeros((3, 10), bool)
    valid[0, [2, 5]] = True
    valid[1, :] = True
    valid[2, [0, 1, 2, 3, 4, 7]] = True
    idx = sample_pixels(valid, 4, rng)
    assert valid[np.arange(3)[:, None], idx].all()
    assert sorted(set(idx[0])) == [2, 5] and sorted(idx[0]) == [2, 2, 5, 5]
    assert len(set(idx[1])) == 4 and len(set(idx[2])) == 4


def test_batch_sampler_gathers_the_right_parcels_and_shifts_each_sample(dataset_dir):
    ps = open_dataset(dataset_dir)
    rows = np.arange(10, 30)
    scaling = InputScaling(mean=(0.2,) * 10, std=(0.1,) * 10)
    sampler = BatchSampler([ps], [rows], scaling, n_pixels=5, n_dates=6, max_shift=60)
    b = sampler.sample(32, np.random.default_rng(3))
    assert b.pixels.shape == (32, 6, 10, 5) and b.pixel_mask.shape == (32, 6, 5)
    assert set(b.labels) <= set(ps.labels[rows].astype(int))
    base = set(np.asarray(ps.day_of_season).tolist())
    # Each row is the dataset's positions (chronological) moved by one integer in [-60, 60].
    shifts = []
    for day in b.day_of_season:
        fits = [k for k in range(-60, 61) if set((day - k).tolist()) <= base]
        assert fits
        shifts.append(fits[0])
    assert len(set(shifts)) > 5  # drawn per sample, not per batch
    assert (np.diff(b.day_of_season, axis=1) >= 0).all()
    # Masked pixels are exactly zero after scaling; valid ones carry the scaled DN.
    assert (b.pixels.transpose(0, 1, 3, 2)[~b.pixel_mask] == 0).all()


def test_season_windows_keep_one_stretch_from_the_first_third_to_the_second_half():
    from thermocrop.training.sampling import season_windows

    rng = np.random.default_rng(3)
    dos = np.arange(0, 360, 10, dtype=float)  # 36 dates over a year
    mask = np.ones((400, 36), bool)
    mask[-1, 2:] = False  # two dates only: too few to cut
    chosen = np.arange(400) % 2 == 0
    out = season_windows(mask, np.broadcast_to(dos, mask.shape), chosen, rng)
    assert np.array_equal(out[~chosen], mask[~chosen])
    assert np.array_equal(out[-1], mask[-1])
    for row in out[chosen][:-1]:
        days = dos[row]
        assert len(days) >= 3
        assert np.all(np.diff(np.flatnonzero(row)) == 1)  # one stretch
        # Windows start in the first third and end in the second half (dates 10 days apart).
        assert days[0] < 350 / 3 + 10 and days[-1] > 350 / 2 - 10
    # Windows vary: some start late in winter, some end in summer.
    firsts = np.array([dos[r].min() for r in out[chosen][:-1]])
    lasts = np.array([dos[r].max() for r in out[chosen][:-1]])
    assert firsts.max() > 80 and lasts.min() < 200


def test_parcel_means_replace_every_valid_pixel_by_the_date_mean():
    from thermocrop.training.sampling import parcel_means

    pixels = np.zeros((2, 1, 2, 3), np.uint16)
    pixels[0, 0, 0] = [100, 200, 0]
    pixels[0, 0, 1] = [10, 21, 0]
    pixels[1, 0, 0] = [5, 6, 7]
    mask = np.array([[[True, True, False]], [[True, True, True]]])
    out = parcel_means(pixels, mask, np.array([True, False]))
    assert out[0, 0, 0].tolist() == [150, 150, 0]
    assert out[0, 0, 1].tolist() == [16, 16, 0]  # 15.5 rounds to even
    assert np.array_equal(out[1], pixels[1])
    assert pixels[0, 0, 0].tolist() == [100, 200, 0]  # the input is not changed


def test_sampler_shares_of_zero_draw_the_same_batches(dataset_dir):
    ps = open_dataset(dataset_dir)
    rows = [np.arange(len(ps) - 2)]
    scaling = InputScaling.from_pixel_sets(ps)
    plain = BatchSampler([ps], rows, scaling, 8, 10).sample(32, np.random.default_rng(5))
    zero = BatchSampler([ps], rows, scaling, 8, 10, mean_pixel_share=0.0,
                        season_window_share=0.0).sample(32, np.random.default_rng(5))
    assert np.array_equal(plain.pixels, zero.pixels) and np.array_equal(plain.gdd, zero.gdd)
    means = BatchSampler([ps], rows, scaling, 8, 10, mean_pixel_share=1.0).sample(32, np.random.default_rng(5))
    # Every valid pixel of a sample equals every other of its date.
    x = np.where(means.pixel_mask[:, :, None, :], means.pixels, np.nan)
    spread = np.nanmax(x, axis=3) - np.nanmin(x, axis=3)
    assert np.nanmax(spread) < 1e-5
    with pytest.raises(ValueError, match="between 0 and 1"):
        TrainingConfig(mean_pixel_share=1.5)


def test_a_training_gdd_floor_leaves_out_the_dates_below_it_where_a_parcel_has_one_above(dataset_dir):
    ps = open_dataset(dataset_dir, mmap=False)
    rows = np.arange(len(ps) - 2)
    gdd = np.asarray(ps.gdd)
    floor = float(np.nanmedian(gdd[rows][np.asarray(ps.date_mask)[rows]]))  # about half the dates below
    ps.gdd[:3] = np.minimum(gdd[:3], floor / 2)  # parcels 0-2 never reach it: they keep their dates
    scaling = InputScaling.from_pixel_sets(ps)
    plain = BatchSampler([ps], [rows], scaling, 8, 40, season_window_share=0.5).sample(256, np.random.default_rng(3))
    floored = BatchSampler([ps], [rows], scaling, 8, 40, season_window_share=0.5,
                           gdd_floor=floor).sample(256, np.random.default_rng(3))
    assert np.array_equal(plain.labels, floored.labels)  # the same draws
    low = floored.date_mask & (floored.gdd < floor)
    has_above = (plain.date_mask & (plain.gdd >= floor)).any(axis=1)
    assert not low[has_above].any() and (plain.date_mask & (plain.gdd < floor))[has_above].any()
    kept_below = ~has_above & plain.date_mask.any(axis=1)
    assert kept_below.any()
    assert (floored.date_mask[kept_below].sum(axis=1) == plain.date_mask[kept_below].sum(axis=1)).all()
    with pytest.raises(ValueError, match="gdd_floor"):
        TrainingConfig(gdd_floor=-1.0)


def test_focal_loss_matches_the_formula_and_cross_entropy_at_gamma_zero():
    logits = torch.tensor([[2.0, 0.0, -1.0], [0.5, 0.5, 0.0]])
    target = torch.tensor([0, 2])
    p = np.exp([2.0, 0.0, -1.0]) / np.exp([2.0, 0.0, -1.0]).sum()
    q = np.exp([0.5, 0.5, 0.0]) / np.exp([0.5, 0.5, 0.0]).sum()
    expected = -((1 - p[0]) * np.log(p[0]) + (1 - q[2]) * np.log(q[2])) / 2
    assert float(FocalLoss(1.0)(logits, target)) == pytest.approx(expected, rel=1e-6)
    ce = torch.nn.functional.cross_entropy(logits, target)
    assert float(FocalLoss(0.0)(logits, target)) == pytest.approx(float(ce), rel=1e-6)


@pytest.mark.parametrize("variant", VARIANTS)
def test_a_few_steps_lower_the_loss(variant, dataset_dir):
    torch.manual_seed(0)
    ps = open_dataset(dataset_dir)
    rows = np.flatnonzero(ps.status == "ok")
    scaling = InputScaling.from_pixel_sets(ps)
    sampler = BatchSampler([ps], [rows], scaling, n_pixels=6, n_dates=8,
                           max_shift=60 if variant == "shiftaug" else 0)
    b = sampler.sample(48, np.random.default_rng(0))
    inputs = [torch.from_numpy(a) for a in
              (b.pixels, b.pixel_mask, b.date_mask, b.day_of_season, b.gdd)]
    target = torch.from_numpy(b.labels)
    model = build_model(variant, len(CROP_CLASSES))
    opt = torch.optim.Adam(model.parameters(), lr=1e-3, weight_decay=1e-4)
    loss_fn = FocalLoss(1.0)
    losses = []
    for _ in range(15):
        loss = loss_fn(model(*inputs), target)
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(float(loss.detach()))
    assert losses[-1] < 0.7 * losses[0]


def test_train_model_writes_bundle_metrics_and_figures(dataset_dir, tmp_path):
    ps = open_dataset(dataset_dir)
    cfg = TrainingConfig(variant="tpe_sinusoidal", epochs=2, steps_per_epoch=4, batch_size=16,
                         sample_pixels=4, sample_dates=6, device="cpu")
    result = train_model([ps], tmp_path / "m.tcm", cfg, show_progress=False)
    for role in ("bundle", "metrics", "confusion", "curve", "checkpoint"):
        assert result.files[role].exists(), role
    metrics = json.loads(result.files["metrics"].read_text())
    assert len(metrics["history"]) == 2 and metrics["eval_split"] == "test"
    bundle = load_bundle(result.bundle_path)
    assert bundle.config.variant == "tpe_sinusoidal"
    assert bundle.config.provenance["training"]["sample_pixels"] == 4
    # The stored scaling is the training data's, not the identity.
    assert bundle.config.scaling.mean != (0.0,) * 10
    assert sum(sum(r) for r in metrics["confusion_matrix"]) == metrics["eval"]["n"]


def test_resume_after_a_cancelled_epoch_gives_the_unbroken_model(dataset_dir, tmp_path):
    ps = open_dataset(dataset_dir)
    cfg = TrainingConfig(variant="tpe_recurrent", epochs=3, steps_per_epoch=3, batch_size=8,
                         sample_pixels=4, sample_dates=5, device="cpu", seed=5)
    full = train_model([ps], tmp_path / "a" / "m.tcm", cfg, show_progress=False)

    calls = []

    def cancelled() -> bool:
        calls.append(1)
        return len(calls) > 7  # during the third epoch

    with pytest.raises(CancelledError):
        train_model([ps], tmp_path / "b" / "m.tcm", cfg, show_progress=False,
                    progress=Progress(cancelled=cancelled))
    assert not (tmp_path / "b" / "m.tcm").exists()
    resumed = train_model([ps], tmp_path / "b" / "m.tcm", cfg, show_progress=False, resume=True)
    assert [h["loss"] for h in resumed.metrics["history"]] == \
        [h["loss"] for h in full.metrics["history"]]
    a, b = load_file(str(full.bundle_path)), load_file(str(resumed.bundle_path))
    assert a.keys() == b.keys()
    assert all(torch.equal(a[k], b[k]) for k in a)


def test_resume_refuses_a_checkpoint_of_other_settings(dataset_dir, tmp_path):
    ps = open_dataset(dataset_dir)
    cfg = TrainingConfig(variant="no_pe", epochs=1, steps_per_epoch=2, batch_size=8,
                         sample_pixels=4, sample_dates=5, device="cpu")
    train_model([ps], tmp_path / "m.tcm", cfg, show_progress=False)
    with pytest.raises(InputError, match="other settings"):
        train_model([ps], tmp_path / "m.tcm", TrainingConfig(**{**cfg.__dict__, "epochs": 2}),
                    show_progress=False, resume=True)


def test_resume_refuses_training_data_changed_since_the_checkpoint(dataset_dir, tmp_path, capsys):
    """A dataset rewritten in place (same size, same modification time) between a run and
    ``train --resume``: refused with the file's name, not trained on a mix."""
    import os
    import shutil

    from thermocrop.cli.main import EXIT_INPUT, main

    data = Path(shutil.copytree(dataset_dir, tmp_path / "region"))
    out = tmp_path / "m.tcm"
    args = ["train", "--data", str(data), "--out", str(out), "--variant", "no_pe", "--epochs", "1",
            "--steps-per-epoch", "2", "--batch-size", "8", "--sample-pixels", "4", "--sample-dates", "5",
            "--device", "cpu"]
    assert main(args) == 0 and (tmp_path / "m.ckpt").is_file()
    assert main(args + ["--resume"]) == 0  # the same data: resumed
    labels, before = data / "labels.npy", (data / "labels.npy").stat()
    values = np.load(labels)
    first = int(np.flatnonzero(values >= 0)[0])
    values[first] = (values[first] + 1) % (values.max() + 1)
    np.save(labels, values)
    os.utime(labels, ns=(before.st_atime_ns, before.st_mtime_ns))
    assert labels.stat().st_size == before.st_size
    capsys.readouterr()
    assert main(args + ["--resume"]) == EXIT_INPUT
    said = capsys.readouterr().err
    assert str(labels.resolve()) in said and "changed" in said and "Start afresh" in said, said


def test_bundle_carries_the_datasets_gdd_settings(tmp_path):
    from thermocrop.core.errors import DatasetError

    autumn = make_pixel_sets(n=40, seed=2)
    autumn.meta = {"season_start": "09-01/-1", "t_base": 4.0, "t_cap": 28.0, "gdd_method": "average",
                   "levels": ["L2A"]}
    cfg = TrainingConfig(variant="tpe_concat", epochs=1, steps_per_epoch=2, batch_size=8,
                         sample_pixels=4, sample_dates=6, device="cpu")
    bundle = load_bundle(train_model([autumn], tmp_path / "m.tcm", cfg, show_progress=False).bundle_path)
    assert bundle.config.gdd == {"t_base": 4.0, "t_cap": 28.0, "method": "average", "season_start": "09-01/-1"}
    assert bundle.config.calendar["season_start"] == "09-01/-1"
    assert bundle.config.provenance["scene_levels"] == ["L2A"]
    spring = make_pixel_sets(n=40, seed=3)
    spring.meta = {"season_start": "01-01", "t_base": 4.0, "t_cap": 28.0, "gdd_method": "average"}
    with pytest.raises(DatasetError, match="different GDD settings"):
        train_model([autumn, spring], tmp_path / "n.tcm", cfg, show_progress=False)
    assert not (tmp_path / "n.tcm").exists()
    # Scoring a thermal model on data whose GDD was computed otherwise is refused...
    from thermocrop.training.evaluate import evaluate_bundle

    with pytest.raises(DatasetError, match="extract it again with the model's settings"):
        evaluate_bundle(bundle, [spring])
    # ... while the same data with the model's settings is scored.
    spring.meta = dict(autumn.meta)
    assert evaluate_bundle(bundle, [spring])["n"] > 0


def test_training_calibrates_on_the_validation_parcels_only(tmp_path, caplog):
    from thermocrop.core.model.calibration import fit_temperature
    from thermocrop.training.predict import predict_rows

    train, val = make_pixel_sets(n=120, seed=3), make_pixel_sets(n=70, seed=4)
    cfg = TrainingConfig(variant="tpe_sinusoidal", epochs=1, steps_per_epoch=3, batch_size=16,
                         sample_pixels=4, sample_dates=6, device="cpu")
    result = train_model([train], tmp_path / "m.tcm", cfg, val_datasets=[val], show_progress=False)
    bundle = load_bundle(result.bundle_path)
    usable = np.flatnonzero(val.status == "ok")
    assert bundle.calibration.parcels == len(usable) == 69
    probabilities = predict_rows(bundle.model, bundle.config.scaling, val, usable)
    expected = fit_temperature(probabilities, np.asarray(val.labels)[usable])
    assert bundle.calibration.temperature == pytest.approx(expected, rel=1e-3)
    assert "validation blocks" in bundle.calibration.source
    assert json.loads(result.files["metrics"].read_text())["calibration"]["parcels"] == 69
    # Too few validation parcels: saved without a calibration, with a warning.
    with caplog.at_level("WARNING"):
        small = train_model([train], tmp_path / "s.tcm", cfg, val_datasets=[make_pixel_sets(n=30, seed=5)],
                            show_progress=False)
    assert load_bundle(small.bundle_path).calibration is None
    assert any("saved without a calibration" in r.getMessage() for r in caplog.records)
