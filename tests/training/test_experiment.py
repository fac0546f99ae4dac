"""The leave-one-region-out experiment end to end at toy scale, resumable, and the
evaluate command on a trained bundle."""

from __future__ import annotations

import json
import os

import numpy as np
import pytest
from test_train import make_pixel_sets

from thermocrop.cli.main import main
from thermocrop.core.pixel_sets import save_dataset
from thermocrop.core.progress import Progress
from thermocrop.training.experiment import (
    estimate_experiment,
    load_finished_runs,
    run_experiment,
    write_outputs,
)
from thermocrop.training.train import TrainingConfig


@pytest.fixture(scope="module")
def regions(tmp_path_factory):
    root = tmp_path_factory.mktemp("regions")
    paths = []
    for i, name in enumerate(("R1", "R2", "R3")):
        save_dataset(make_pixel_sets(n=40, seed=10 + i, blocks=6), root / name)
        paths.append(root / name)
    return paths


@pytest.mark.slow
def test_experiment_writes_the_table_and_skips_finished_runs(regions, tmp_path):
    cfg = TrainingConfig(epochs=1, steps_per_epoch=2, batch_size=8, sample_pixels=4,
                         sample_dates=5, device="cpu")
    out = tmp_path / "exp"
    seen = []
    records = run_experiment(regions, ["calendar", "tpe_recurrent"], out, cfg,
                             progress=Progress(report=seen.append))
    assert len(records) == 6
    # Progress moves within runs (the first run reports before it ends) and ends at 1.
    assert seen == sorted(seen) and seen[-1] == pytest.approx(1.0)
    assert any(0 < f < 1 / 6 for f in seen)
    data = json.loads((out / "results.json").read_text())
    assert data["regions"] == ["R1", "R2", "R3"]
    cal = [r for r in data["runs"] if r["variant"] == "calendar"]
    assert [r["held_out"] for r in cal] == ["R1", "R2", "R3"]
    assert cal[0]["train_regions"] == ["R2", "R3"]
    # Held-out scores use every usable parcel of the region (two have another status).
    assert all(r["n_parcels"] == 39 for r in data["runs"])
    mean_f1 = np.mean([100 * r["macro_f1"] for r in cal])
    assert data["summary"]["calendar"]["mean_macro_f1"] == pytest.approx(mean_f1)
    table = (out / "table.md").read_text().splitlines()
    header = next(line for line in table if line.startswith("| PE"))
    assert "R1 F1 / OA" in header and "mean F1 / OA" in header
    row = next(line for line in table if line.startswith("| Calendar PE"))
    assert f"{mean_f1:.1f} /" in row and "68.0 / 82.9" in row
    stamp = (out / "calendar" / "R1" / "model.tcm").stat().st_mtime_ns
    again = run_experiment(regions, ["calendar", "tpe_recurrent"], out, cfg)
    assert (out / "calendar" / "R1" / "model.tcm").stat().st_mtime_ns == stamp
    assert sorted(r["macro_f1"] for r in again) == sorted(r["macro_f1"] for r in records)


def test_train_and_evaluate_commands(regions, tmp_path, capsys):
    model = tmp_path / "m.tcm"
    assert main(["train", "--data", str(regions[0]), str(regions[1]), "--variant", "no_pe",
                 "--out", str(model), "--epochs", "1", "--steps-per-epoch", "2",
                 "--batch-size", "8", "--sample-pixels", "4", "--sample-dates", "5",
                 "--device", "cpu"]) == 0
    assert model.exists() and model.with_suffix(".metrics.json").exists()
    capsys.readouterr()
    scores = tmp_path / "scores.json"
    assert main(["evaluate", "--model", str(model), "--data", str(regions[2]),
                 "--json", str(scores)]) == 0
    text = capsys.readouterr().out
    result = json.loads(scores.read_text())
    cm = np.array(result["confusion_matrix"])
    assert cm.sum() == 39
    assert result["overall_accuracy"] == pytest.approx(np.trace(cm) / cm.sum())
    assert f"OA {result['overall_accuracy']:.4f}" in text


def _record(variant, held, f1, oa, **training):
    return {"variant": variant, "held_out": held, "train_regions": [], "macro_f1": f1,
            "overall_accuracy": oa, "training": {**TrainingConfig().__dict__, **training, "variant": variant}}


def test_table_keeps_the_runs_of_earlier_calls(tmp_path):
    out = tmp_path / "exp"
    # An earlier call left calendar runs (one with other settings) and a region of its own.
    for rec in (_record("calendar", "R1", 0.5, 0.7), _record("calendar", "R2", 0.6, 0.8, epochs=3),
                _record("calendar", "R9", 0.4, 0.6)):
        (out / rec["variant"] / rec["held_out"]).mkdir(parents=True)
        (out / rec["variant"] / rec["held_out"] / "result.json").write_text(json.dumps(rec))
    now = [_record("tpe_recurrent", "R1", 0.9, 0.95), _record("tpe_recurrent", "R2", 0.7, 0.85)]
    write_outputs(now, ["tpe_recurrent"], [tmp_path / "R1", tmp_path / "R2"], out, TrainingConfig())
    data = json.loads((out / "results.json").read_text())
    assert data["variants"] == ["tpe_recurrent", "calendar"]
    assert data["regions"] == ["R1", "R2", "R9"]
    assert len(data["runs"]) == 5 and len(load_finished_runs(out)) == 3
    assert data["summary"]["calendar"]["mean_macro_f1"] == pytest.approx(50.0)
    assert data["summary"]["tpe_recurrent"]["complete"] is False      # no run held out R9
    assert data["other_settings"] == ["calendar/R2"]
    table = (out / "table.md").read_text()
    row = next(line for line in table.splitlines() if line.startswith("| Calendar PE"))
    assert "50.0 / 70.0" in row and "40.0 / 60.0" in row and "50.0 / 70.0 |" in row
    assert "other settings than the last call's: calendar/R2" in table


@pytest.mark.slow
def test_paper_scale_on_a_cpu_is_estimated_and_warned(regions, tmp_path, caplog):
    caplog.set_level("INFO", logger="thermocrop.training.experiment")
    paper = TrainingConfig(device="cpu")                       # 100 epochs x 500 steps x 128
    records = run_experiment(regions, ["calendar"], tmp_path / "exp", paper, estimate_only=True)
    assert records == [] and not (tmp_path / "exp").exists()   # nothing trained or written
    text = caplog.text
    assert "Estimate: 3 runs x 50,000 steps" in text
    assert "--epochs 20 --steps-per-epoch 25" in text
    small = TrainingConfig(epochs=2, steps_per_epoch=3, batch_size=8, sample_pixels=4, sample_dates=5,
                           device="cpu")
    estimate = estimate_experiment(regions, ["calendar"], small, runs=4, jobs=2)
    # Two parcels sets of 39 usable train, one held out: scored 10 % each epoch, 20 % + held once.
    scored = 2 * 0.1 * 78 + (0.2 * 78 + 39)
    assert estimate.run_s == pytest.approx(6 * estimate.step_s + scored * estimate.predict_s)
    assert estimate.total_s == pytest.approx(2 * estimate.run_s)
    assert not estimate.long_on_cpu


@pytest.mark.slow
def test_parallel_runs_log_through_the_parent_with_their_logger(tmp_path, caplog):
    # Datasets without spatial blocks: every run warns, from its worker process.
    paths = []
    for i, name in enumerate(("A", "B")):
        save_dataset(make_pixel_sets(n=30, seed=20 + i, blocks=1), tmp_path / name)
        paths.append(tmp_path / name)
    caplog.set_level("INFO")
    cfg = TrainingConfig(epochs=1, steps_per_epoch=2, batch_size=8, sample_pixels=4, sample_dates=5,
                         device="cpu")
    seen = []
    records = run_experiment(paths, ["no_pe"], tmp_path / "exp", cfg, jobs=2,
                             progress=Progress(report=seen.append))
    assert len(records) == 2
    warnings = [r for r in caplog.records if r.name == "thermocrop.training.datasets"
                and "fewer than three" in r.getMessage()]
    assert len(warnings) == 2 and all(r.process != os.getpid() for r in warnings)
    assert "--block-size-km 10" in warnings[0].getMessage()
    assert any(r.name == "thermocrop.training.train" and "epoch 1" in r.getMessage() for r in caplog.records)
    assert seen[-1] == pytest.approx(1.0)


def test_evaluate_warns_about_another_processing_level(tmp_path, caplog, capsys):
    from dataclasses import replace as dc_replace

    from thermocrop.training.train import train_model

    l1c = dc_replace(make_pixel_sets(n=40, seed=31, blocks=6), meta={"levels": ["L1C"]})
    model = train_model([l1c], tmp_path / "m.tcm", TrainingConfig(
        epochs=1, steps_per_epoch=2, batch_size=8, sample_pixels=4, sample_dates=5, device="cpu"),
        show_progress=False).bundle_path
    for levels, warned in ((["L1C"], False), (["L2A"], True)):
        path = tmp_path / levels[0]
        save_dataset(dc_replace(make_pixel_sets(n=20, seed=32, blocks=6), meta={"levels": levels}), path)
        caplog.clear()
        assert main(["evaluate", "--model", str(model), "--data", str(path)]) == 0
        said = [r.getMessage() for r in caplog.records if r.levelname == "WARNING"]
        assert any("trained on L1C scenes but these are L2A" in m for m in said) is warned


def test_one_training_run_is_estimated_from_a_measured_step(tmp_path):
    from thermocrop.core.pixel_sets import open_dataset
    from thermocrop.training.experiment import describe_training_estimate, estimate_training

    save_dataset(make_pixel_sets(n=40, seed=3, blocks=4), tmp_path / "A")
    data = [open_dataset(tmp_path / "A")]
    config = TrainingConfig(epochs=3, steps_per_epoch=4, batch_size=8, sample_pixels=4, sample_dates=5,
                            device="cpu")
    estimate = estimate_training(data, config, threads=1)
    assert estimate.steps_per_run == 12 and estimate.step_s > 0 and estimate.predict_s > 0
    usable = sum(1 for label, ok in zip(data[0].labels, data[0].status) if label >= 0 and ok == "ok")
    # Validation (10 %) every epoch and the test split (20 %) once are scored besides the steps.
    scored = (3 * 0.1 + 0.2) * usable
    assert estimate.run_s == pytest.approx(12 * estimate.step_s + scored * estimate.predict_s)
    text = describe_training_estimate(estimate)
    assert text.startswith("12 steps at ") and "measured here on cpu" in text
