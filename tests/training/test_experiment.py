"""The leave-one-region-out experiment end to end at toy scale, resumable, and the
evaluate command on a trained bundle."""

from __future__ import annotations

import json

import numpy as np
import pytest

from thermocrop.core.dataset import save_dataset
from thermocrop.training.cli import main
from thermocrop.training.experiment import run_experiment
from thermocrop.training.train import TrainingConfig

from test_train import make_pixel_sets


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
    records = run_experiment(regions, ["calendar", "tpe_recurrent"], out, cfg)
    assert len(records) == 6
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
