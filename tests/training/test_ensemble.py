"""Ensembles: the model averages its members' class probabilities, a bundle of members loads and
predicts their average, training keeps every member on the ensemble's split, and a resumed
run keeps the members already finished."""

from __future__ import annotations

import json
from dataclasses import replace

import numpy as np
import pytest
import torch
from safetensors.torch import load_file
from test_train import make_pixel_sets

from thermocrop.core.model.bundle import load_bundle
from thermocrop.core.model.networks import EnsembleClassifier, build_model
from thermocrop.core.pixel_sets import open_dataset, save_dataset
from thermocrop.training.ensemble import member_configs, member_paths
from thermocrop.training.train import TrainingConfig, train_model


@pytest.fixture(scope="module")
def dataset_dir(tmp_path_factory):
    path = tmp_path_factory.mktemp("ensemble") / "region"
    ps = make_pixel_sets(n=60, t=10, s=6)
    ps.meta = {**(ps.meta or {}), "levels": ["L1C"]}
    save_dataset(ps, path)
    return path


@pytest.mark.parametrize("variant", ["calendar", "tpe_recurrent"])
def test_the_ensemble_gives_the_mean_of_its_members_probabilities(variant, random_batch):
    torch.manual_seed(0)
    model = build_model(variant, 4, members=3).eval()
    assert isinstance(model, EnsembleClassifier) and len(model.members) == 3
    inputs = random_batch(5, 7, 6, torch.Generator().manual_seed(0))
    with torch.no_grad():
        probs = torch.softmax(model(*inputs).double(), dim=1).numpy()
        # Second route: each member alone, softmax in numpy, averaged.
        member_logits = [m(*inputs).double().numpy() for m in model.members]
    expected = np.mean([np.exp(z - z.max(1, keepdims=True)) / np.exp(z - z.max(1, keepdims=True)).sum(1, keepdims=True)
                        for z in member_logits], axis=0)
    assert np.allclose(probs, expected, atol=1e-6)
    assert np.allclose(probs.sum(axis=1), 1.0)
    # The members differ (their own initial weights), so the mean is not one of them.
    assert not np.allclose(member_logits[0], member_logits[1])


def test_members_must_be_a_whole_number_of_at_least_one():
    for bad in (0, -1, 2.5):
        with pytest.raises(ValueError, match="members"):
            build_model("calendar", 3, members=bad)


def test_training_an_ensemble_keeps_the_split_and_the_first_member_is_the_single_model(dataset_dir, tmp_path):
    ps = open_dataset(dataset_dir)
    cfg = TrainingConfig(variant="tpe_sinusoidal", epochs=2, steps_per_epoch=3, batch_size=8,
                         sample_pixels=4, sample_dates=5, device="cpu", seed=3)
    single = train_model([ps], tmp_path / "single" / "m.tcm", cfg, show_progress=False)
    result = train_model([ps], tmp_path / "ens" / "m.tcm", replace(cfg, members=2), show_progress=False)

    paths = member_paths(tmp_path / "ens" / "m.tcm", 2)
    assert all(p.exists() for p in paths)
    assert [c.seed for c in member_configs(replace(cfg, members=2))] == [3, 4]
    # Member 0 has the ensemble's seed and split: it is the single model, bit for bit.
    a, b = load_file(str(single.bundle_path)), load_file(str(paths[0]))
    assert a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a)
    # Both members were trained on the same split: the same input scaling and test blocks.
    m0, m1 = load_bundle(paths[0]), load_bundle(paths[1])
    assert m0.config.scaling == m1.config.scaling
    metrics = [json.loads(p.with_suffix(".metrics.json").read_text()) for p in paths]
    assert metrics[0]["eval"]["n"] == metrics[1]["eval"]["n"] == result.metrics["eval"]["n"]

    bundle = load_bundle(result.bundle_path)
    assert bundle.config.hyperparameters["members"] == 2
    assert [m["seed"] for m in bundle.config.provenance["members"]] == [3, 4]
    assert [m["bundle"] for m in bundle.config.provenance["members"]] == ["m.members/member-0.tcm",
                                                                         "m.members/member-1.tcm"]
    # What the members recorded about their data (e.g. the scene level) the ensemble keeps.
    assert bundle.config.provenance["scene_levels"] == m0.config.provenance["scene_levels"] == ["L1C"]
    assert bundle.config.scene_level == "L1C"
    # The bundle predicts the mean of its members' predictions (each member's own bundle).
    probs = bundle.predict(ps)
    expected = (m0.predict(ps) + m1.predict(ps)) / 2
    ok = ~np.isnan(expected[:, 0])
    assert ok.sum() > 50
    assert np.allclose(probs[ok], expected[ok], atol=1e-5)
    assert np.isnan(probs[~ok]).all()
    # The ensemble's scores are its own, from its averaged predictions on the test blocks.
    cm = np.array(result.metrics["confusion_matrix"])
    assert cm.sum() == result.metrics["eval"]["n"]


def test_a_resumed_ensemble_keeps_finished_members(dataset_dir, tmp_path):
    ps = open_dataset(dataset_dir)
    cfg = TrainingConfig(variant="calendar", epochs=1, steps_per_epoch=2, batch_size=8, sample_pixels=4,
                         sample_dates=5, device="cpu", members=2)
    out = tmp_path / "m.tcm"
    train_model([ps], out, cfg, show_progress=False)
    first, second = member_paths(out, 2)
    stamp = first.stat().st_mtime_ns
    second.unlink()
    result = train_model([ps], out, cfg, show_progress=False, resume=True)
    assert first.stat().st_mtime_ns == stamp  # kept, not trained again
    assert second.exists() and load_bundle(result.bundle_path).config.hyperparameters["members"] == 2
