"""Distillation (``train --teacher``): a student of one member learns a small ensemble's softened
probabilities (its loss falls and its classes agree with the teacher's beyond chance), takes the
teacher's classes, scaling and settings, records the teacher, and options that contradict the
teacher are refused."""

from __future__ import annotations

import hashlib

import numpy as np
import pytest
import torch
from test_train import make_pixel_sets

from thermocrop.cli.main import EXIT_INPUT, EXIT_USAGE, main
from thermocrop.core.errors import InputError
from thermocrop.core.model.bundle import load_bundle
from thermocrop.core.model.networks import build_model
from thermocrop.core.pixel_sets import open_dataset, save_dataset
from thermocrop.training.distil import DistillationLoss, Teacher, distillation_config, teacher_classes
from thermocrop.training.sampling import BatchSampler, usable_parcels
from thermocrop.training.train import TrainingConfig, train_model

SMALL = {"epochs": 2, "steps_per_epoch": 8, "batch_size": 16, "sample_pixels": 4, "sample_dates": 6, "device": "cpu"}
CLASSES = ("corn", "horsebeans", "meadow")
"""The classes of the labels ``make_pixel_sets`` gives (3 of its 9)."""


@pytest.fixture(scope="module")
def region(tmp_path_factory):
    """A labelled dataset and a teacher of two members trained on it (tpe_sinusoidal, three classes,
    a high learning rate so that a few steps tell the classes apart)."""
    root = tmp_path_factory.mktemp("distil")
    save_dataset(make_pixel_sets(n=60, t=10, s=6), root / "data")
    config = TrainingConfig(variant="tpe_sinusoidal", members=2, mean_pixel_share=0.5, lr=1e-2,
                            classes=CLASSES, **SMALL)
    result = train_model([open_dataset(root / "data")], root / "teacher.tcm", config, show_progress=False)
    return {"data": root / "data", "teacher": result.bundle_path}


def _batch(ps, teacher, size, seed):
    """One training batch of ``ps`` as the model's five input tensors and the labels."""
    k = len(teacher.bundle.classes)
    sampler = BatchSampler([ps], [usable_parcels(ps, k)], teacher.scaling, 4, 6)
    b = sampler.sample(size, np.random.default_rng(seed))
    inputs = [torch.from_numpy(a) for a in (b.pixels, b.pixel_mask, b.date_mask, b.day_of_season, b.gdd)]
    return inputs, torch.from_numpy(b.labels)


def test_the_student_learns_the_teachers_probabilities(region):
    ps = open_dataset(region["data"])
    teacher = Teacher(load_bundle(region["teacher"]), "teacher.tcm")
    k = len(teacher.bundle.classes)
    inputs, labels = _batch(ps, teacher, 48, seed=1)
    torch.manual_seed(0)
    student = build_model("tpe_sinusoidal", k)
    loss_fn = DistillationLoss(teacher, temperature=2.0)
    optimiser = torch.optim.Adam(student.parameters(), lr=3e-3)
    losses = []
    for _ in range(30):
        loss = loss_fn(student(*inputs), labels, inputs)
        optimiser.zero_grad()
        loss.backward()
        optimiser.step()
        losses.append(float(loss.detach()))
    assert np.mean(losses[-3:]) < 0.5 * np.mean(losses[:3])
    # The loss is T**2 times the KL divergence between the two softened distributions, computed here apart.
    with torch.no_grad():
        student.eval()
        s_logits, t_logits = student(*inputs), teacher.bundle.model(*inputs)
        p_t = torch.softmax(t_logits / 2.0, dim=1)
        kl = (p_t * (torch.log(p_t) - torch.log_softmax(s_logits / 2.0, dim=1))).sum(dim=1).mean()
        assert float(loss_fn(s_logits, labels, inputs)) == pytest.approx(4.0 * float(kl), rel=1e-4, abs=1e-6)
    said, heard = t_logits.argmax(dim=1).numpy(), s_logits.argmax(dim=1).numpy()
    assert len(set(said)) >= 2  # a teacher of one class would make agreement trivial
    agreement = float(np.mean(said == heard))
    # Chance: the agreement of two independent guessers with the same class frequencies.
    chance = sum(np.mean(said == c) * np.mean(heard == c) for c in range(k))
    assert agreement > chance + 0.2


def test_the_perturbation_keeps_masks_and_parcel_means(region):
    ps = open_dataset(region["data"])
    teacher = Teacher(load_bundle(region["teacher"]), "teacher.tcm")
    inputs, _ = _batch(ps, teacher, 16, seed=2)
    means = inputs[0].mean(dim=3, keepdim=True).expand_as(inputs[0]) * inputs[1].unsqueeze(2)
    torch.manual_seed(0)
    noisy = DistillationLoss(teacher, noise=0.5).perturb([means, *inputs[1:]])
    assert DistillationLoss(teacher).perturb(inputs) is inputs  # no noise: the batch as it is
    assert all(a is b for a, b in zip(noisy[1:], inputs[1:]))
    masked = ~inputs[1].unsqueeze(2).expand_as(noisy[0])
    assert (noisy[0][masked] == 0).all()
    moved = (noisy[0] - means)[~masked]
    assert 0.3 < float(moved.std()) < 0.7
    # Every valid pixel of a parcel, date and band moved alike.
    valid = ~masked
    for p, t, c in [(0, 0, 0), (3, 2, 5), (7, 1, 9)]:
        values = (noisy[0] - means)[p, t, c][valid[p, t, c]]
        assert torch.allclose(values, values[0].expand_as(values))


def test_train_teacher_takes_the_teachers_settings_and_records_it(region, tmp_path, capsys):
    out = tmp_path / "student.tcm"
    assert main(["train", "--data", str(region["data"]), "--teacher", str(region["teacher"]), "--out", str(out),
                 "--epochs", "3", "--steps-per-epoch", "2", "--device", "cpu", "--distil-temperature", "3"]) == 0
    assert "distilled from" in capsys.readouterr().out
    teacher, student = load_bundle(region["teacher"]), load_bundle(out)
    digest = hashlib.sha256(region["teacher"].read_bytes()).hexdigest()
    assert student.config.provenance["teacher"] == {"file": "teacher.tcm", "sha256": digest}
    assert student.config.scaling == teacher.config.scaling
    assert (student.config.variant, student.classes, student.config.bands, student.config.gdd) == \
        (teacher.config.variant, teacher.classes, teacher.config.bands, teacher.config.gdd)
    assert student.config.hyperparameters.get("members", 1) == 1
    assert teacher.config.hyperparameters["members"] == 2
    training = student.config.provenance["training"]
    # The teacher's sampling and batch; the options given; the recipe's label weight.
    assert (training["mean_pixel_share"], training["batch_size"], training["sample_pixels"]) == (0.5, 16, 4)
    assert (training["epochs"], training["steps_per_epoch"], training["distil_temperature"]) == (3, 2, 3.0)
    assert training["distil_hard_weight"] == 0.0 and training["teacher"] == str(region["teacher"])
    assert student.classes == CLASSES  # the data's other six classes are the teacher's business
    # The last epoch's weights are kept (the checkpoint holds them), whatever the validation F1 said.
    last = torch.load(out.with_suffix(".ckpt"), weights_only=True)["model"]
    assert all(torch.equal(v, last[k]) for k, v in student.model.state_dict().items())
    ps = open_dataset(region["data"])
    labels = student.predict(ps)
    assert labels.shape == (len(ps), len(student.classes))


def test_options_that_contradict_the_teacher_are_refused(region, tmp_path, capsys):
    with pytest.raises(InputError, match="tpe_recurrent.*teacher.tcm.*tpe_sinusoidal"):
        distillation_config({"variant": "tpe_recurrent"}, str(region["teacher"]))
    with pytest.raises(InputError, match="one model"):
        distillation_config({"members": 3}, str(region["teacher"]))
    with pytest.raises(InputError, match="not those of the teacher"):
        teacher_classes(distillation_config({"classes": ("corn", "meadow")}, str(region["teacher"])))
    out = tmp_path / "x.tcm"
    assert main(["train", "--data", str(region["data"]), "--teacher", str(region["teacher"]), "--init",
                 str(region["teacher"]), "--out", str(out)]) == EXIT_INPUT
    assert "either an initial model or a teacher" in capsys.readouterr().err
    assert not out.exists()


def test_a_smaller_student_takes_the_sizes_given_and_the_teachers_others(region, tmp_path, capsys):
    out = tmp_path / "small.tcm"
    assert main(["train", "--data", str(region["data"]), "--teacher", str(region["teacher"]), "--out", str(out),
                 "--epochs", "1", "--steps-per-epoch", "2", "--device", "cpu",
                 "--architecture", "mlp1=8", "mlp2=16", "d_model=32", "n_head=4", "mlp4=12"]) == 0
    teacher, student = load_bundle(region["teacher"]), load_bundle(out)
    hp, taught = student.config.hyperparameters, teacher.config.hyperparameters
    assert (hp["mlp1"], hp["mlp2"], hp["d_model"], hp["n_head"], hp["mlp4"]) == ([8], 16, 32, 4, [12])
    assert (hp["d_k"], hp["mlp3"], hp["dropout"]) == (taught["d_k"], taught["mlp3"], taught["dropout"])
    weights = student.model.state_dict()
    assert tuple(weights["pse.mlp1.0.linear.weight"].shape) == (8, 10) and "pse.mlp1.1.linear.weight" not in weights
    assert tuple(weights["ltae.key.weight"].shape) == (4 * taught["d_k"], 32)
    assert tuple(weights["decoder.hidden.0.linear.weight"].shape) == (12, taught["mlp3"])
    assert "decoder.hidden.1.linear.weight" not in weights
    one_member = sum(p.numel() for p in teacher.model.members[0].parameters())
    assert sum(p.numel() for p in student.model.parameters()) < one_member / 4
    assert student.predict(open_dataset(region["data"])).shape[1] == len(CLASSES)


def test_layer_sizes_that_fit_no_network_are_refused(region, tmp_path, capsys):
    out = tmp_path / "x.tcm"
    assert main(["train", "--data", str(region["data"]), "--teacher", str(region["teacher"]), "--out", str(out),
                 "--architecture", "d_model=30"]) == EXIT_INPUT
    assert "d_model 30 is not a multiple of n_head 16" in capsys.readouterr().err
    for wrong in ("width=3", "mlp2=0", "mlp2=16,32", "mlp1="):
        with pytest.raises(SystemExit) as exc:
            main(["train", "--data", str(region["data"]), "--out", str(out), "--architecture", wrong])
        assert exc.value.code == EXIT_USAGE
        assert "--architecture" in capsys.readouterr().err
    # Fine-tuning keeps the initial model's sizes: others are refused.
    assert main(["train", "--data", str(region["data"]), "--init", str(region["teacher"]), "--out", str(out),
                 "--architecture", "mlp2=64"]) == EXIT_INPUT
    assert "mlp2 = 64 contradicts the initial model" in capsys.readouterr().err
    assert not out.exists()
