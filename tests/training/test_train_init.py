"""Fine-tuning (``train --init``): the run starts from the bundle's weights, a new class list gets a
new output layer and keeps the rest, options that contradict the bundle are refused, an ensemble's
members each start from their own weights, and the new bundle classifies parcels."""

from __future__ import annotations

import hashlib
import json
from dataclasses import replace

import numpy as np
import pytest
import torch
from test_train import make_pixel_sets

from thermocrop.cli.main import EXIT_INPUT, main
from thermocrop.core.errors import DatasetError, InputError
from thermocrop.core.model.bundle import ModelBundle, load_bundle
from thermocrop.core.pixel_sets import open_dataset, save_dataset
from thermocrop.training.config import training_split
from thermocrop.training.ensemble import member_configs
from thermocrop.training.finetune import FEW_LABEL_RECIPE, initial_weights, new_model, training_config
from thermocrop.training.train import TrainingConfig, train_model

SMALL = {"epochs": 1, "steps_per_epoch": 2, "batch_size": 8, "sample_pixels": 4, "sample_dates": 6, "device": "cpu"}


@pytest.fixture(scope="module")
def region(tmp_path_factory):
    """A labelled dataset and a model trained on it from scratch (tpe_sinusoidal, with a training
    record like the shipped model's)."""
    root = tmp_path_factory.mktemp("init")
    save_dataset(make_pixel_sets(n=60, t=10, s=6), root / "data")
    config = TrainingConfig(variant="tpe_sinusoidal", mean_pixel_share=0.5, **SMALL)
    result = train_model([open_dataset(root / "data")], root / "base.tcm", config, show_progress=False)
    return {"data": root / "data", "base": result.bundle_path}


def _start(config: TrainingConfig, ps) -> torch.nn.Module:
    """The model a run of ``config`` on ``ps`` starts from, before its first step (as ``train_model``
    builds it)."""
    split = training_split([ps], config)
    init = initial_weights(config, split, ps.bands)
    model, _ = new_model(config, len(split.classes), init, split.classes, torch.device("cpu"))
    return model.eval()


def test_the_run_starts_from_the_bundles_weights_and_predicts_as_it_does(region):
    ps = open_dataset(region["data"])
    base = load_bundle(region["base"])
    config = training_config({"seed": 5}, init=str(region["base"]))
    # The bundle's variant, settings and sampling recipe; the few-label recipe for the rest.
    assert (config.variant, config.members, config.mean_pixel_share) == ("tpe_sinusoidal", 1, 0.5)
    assert (config.lr, config.epochs, config.test_split) == (FEW_LABEL_RECIPE["lr"], FEW_LABEL_RECIPE["epochs"], False)
    from thermocrop.training.finetune import init_classes

    config = init_classes(config, [ps])
    assert config.classes == base.classes
    model = _start(config, ps)
    start = model.state_dict()
    assert all(torch.equal(start[k], v) for k, v in base.model.state_dict().items())
    before = ModelBundle(model, base.config).predict(ps)
    expected = base.predict(ps)
    ok = ~np.isnan(expected[:, 0])
    assert ok.sum() > 40 and np.array_equal(before[ok], expected[ok])


def test_train_init_records_the_bundle_it_started_from_and_keeps_its_settings(region, tmp_path, capsys):
    out = tmp_path / "tuned.tcm"
    assert main(["train", "--data", str(region["data"]), "--init", str(region["base"]), "--out", str(out),
                 "--epochs", "2", "--steps-per-epoch", "2", "--batch-size", "8", "--device", "cpu"]) == 0
    assert "fine-tuned from" in capsys.readouterr().out
    base, tuned = load_bundle(region["base"]), load_bundle(out)
    digest = hashlib.sha256(region["base"].read_bytes()).hexdigest()
    assert tuned.config.provenance["init"] == {"file": "base.tcm", "sha256": digest}
    assert tuned.config.scaling == base.config.scaling
    assert (tuned.config.variant, tuned.config.hyperparameters, tuned.classes, tuned.config.bands,
            tuned.config.gdd) == (base.config.variant, base.config.hyperparameters, base.classes,
                                  base.config.bands, base.config.gdd)
    training = tuned.config.provenance["training"]
    assert (training["lr"], training["epochs"], training["steps_per_epoch"]) == (FEW_LABEL_RECIPE["lr"], 2, 2)
    # No test blocks held out: the scores are the validation blocks'.
    metrics = json.loads(out.with_suffix(".metrics.json").read_text())
    assert metrics["eval_split"] == "validation"
    # The training moved the weights.
    changed = [k for k, v in base.model.state_dict().items() if not torch.equal(v, tuned.model.state_dict()[k])]
    assert changed


def test_a_new_class_list_gets_a_new_output_layer_and_keeps_the_rest(region, tmp_path, caplog):
    ps = make_pixel_sets(n=60, t=10, s=6)
    ps = replace(ps, classes=("corn", "meadow", "sunflower"))
    base = load_bundle(region["base"])
    config = training_config(SMALL, init=str(region["base"]))
    with caplog.at_level("INFO", logger="thermocrop.training.finetune"):
        start = _start(config, ps).state_dict()
    assert "new class list" in caplog.text
    old = base.model.state_dict()
    assert start["decoder.out.weight"].shape == (3, old["decoder.out.weight"].shape[1])
    assert not torch.equal(start["decoder.out.weight"][:2], old["decoder.out.weight"][:2])
    assert all(torch.equal(start[k], v) for k, v in old.items() if not k.startswith("decoder.out."))
    # Trained with the pixel-set encoder frozen: its weights stay those of the bundle.
    save_dataset(ps, tmp_path / "new")
    result = train_model([open_dataset(tmp_path / "new")], tmp_path / "new.tcm",
                         replace(config, freeze_pixel_encoder=True, init_anchor=0.5), show_progress=False)
    tuned = load_bundle(result.bundle_path)
    assert tuned.classes == ("corn", "meadow", "sunflower")
    assert tuned.config.colours["corn"] == base.config.colours["corn"]
    after = tuned.model.state_dict()
    assert all(torch.equal(after[k], old[k]) for k in old if k.startswith("pse.") and "norm.running" not in k
               and "num_batches" not in k)
    assert not torch.equal(after["decoder.hidden.0.linear.weight"], old["decoder.hidden.0.linear.weight"])


def test_options_that_contradict_the_bundle_are_refused(region, tmp_path, capsys):
    with pytest.raises(InputError, match="tpe_recurrent.*base.tcm.*tpe_sinusoidal"):
        training_config({"variant": "tpe_recurrent"}, init=str(region["base"]))
    with pytest.raises(InputError, match="3 member.*base.tcm.*single model"):
        training_config({"members": 3}, init=str(region["base"]))
    with pytest.raises(InputError, match="d_model = 128.*base.tcm.*256"):
        training_config({"model_settings": {"d_model": 128}}, init=str(region["base"]))
    # The same option as the bundle's is no contradiction.
    assert training_config({"variant": "tpe_sinusoidal"}, init=str(region["base"])).variant == "tpe_sinusoidal"
    out = tmp_path / "x.tcm"
    assert main(["train", "--data", str(region["data"]), "--init", str(region["base"]), "--variant", "calendar",
                 "--out", str(out)]) == EXIT_INPUT
    err = capsys.readouterr().err
    assert "calendar" in err and "tpe_sinusoidal" in err and "base.tcm" in err
    assert not out.exists()
    # Data of other bands than the bundle's are refused, naming both.
    ps = open_dataset(region["data"])
    other = replace(ps, bands=tuple(reversed(ps.bands)))
    with pytest.raises(DatasetError, match="bands"):
        train_model([other], tmp_path / "y.tcm", training_config(SMALL, init=str(region["base"])),
                    show_progress=False)


def test_each_member_of_an_ensemble_starts_from_its_own_weights(region, tmp_path):
    ps = open_dataset(region["data"])
    ensemble = train_model([ps], tmp_path / "ens.tcm", TrainingConfig(variant="tpe_sinusoidal", members=2, **SMALL),
                           show_progress=False).bundle_path
    config = training_config(SMALL, init=str(ensemble))
    assert config.members == 2
    members = load_bundle(ensemble).model.members
    for m, member in enumerate(member_configs(config)):
        assert member.init_member == m
        start = _start(member, ps).state_dict()
        assert all(torch.equal(start[k], v) for k, v in members[m].state_dict().items())
    tuned = load_bundle(train_model([ps], tmp_path / "tuned.tcm", config, show_progress=False).bundle_path)
    assert tuned.config.hyperparameters["members"] == 2
    assert tuned.config.provenance["init"]["file"] == "ens.tcm"


@pytest.mark.slow
def test_a_fine_tuned_bundle_classifies_parcels(tiny_region, tmp_path):
    from thermocrop.core.classify import classify_parcels

    data = tmp_path / "data"
    assert main(["extract", "--parcels", str(tiny_region / "parcels.gpkg"), "--scenes", str(tiny_region / "scenes"),
                 "--weather", str(tiny_region / "weather.nc"), "--label-field", "crop", "--out", str(data)]) == 0
    ps = open_dataset(data)
    base = train_model([ps], tmp_path / "base.tcm", TrainingConfig(variant="tpe_sinusoidal", **SMALL),
                       show_progress=False).bundle_path
    out = tmp_path / "tuned.tcm"
    assert main(["train", "--data", str(data), "--init", str(base), "--out", str(out), "--epochs", "1",
                 "--steps-per-epoch", "2", "--batch-size", "8", "--device", "cpu"]) == 0
    result = classify_parcels(tiny_region / "parcels.gpkg", tiny_region / "scenes", tiny_region / "weather.nc",
                              bundle=out)
    tuned = load_bundle(out)
    assert result.classes == tuned.classes
    ok = result.status == "ok"
    assert ok.sum() > 50
    assert set(result.labels[ok]) <= set(tuned.classes)
    assert np.allclose(np.nansum(result.probabilities[ok], axis=1), 1.0, atol=1e-4)
