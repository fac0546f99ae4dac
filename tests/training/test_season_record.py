"""A model records its accuracy through the season: at the end of training on its validation
blocks, and later on a labelled dataset into a new bundle (``thermocrop inseason --record``);
the scores are checked against one classification per cut of the parcels' dates."""

from __future__ import annotations

import json
from dataclasses import asdict, replace

import numpy as np
import pytest

from thermocrop.core.inseason import SeasonStatus, early_warning
from thermocrop.core.model.bundle import load_bundle
from thermocrop.core.model.season_curve import SEASON_CURVE_KEY, bundle_season_curve
from thermocrop.core.pixel_sets import open_dataset
from thermocrop.training.config import training_split
from thermocrop.training.sampling import season_windows


def _scores_by_hand(bundle, ps, rows, fractions):
    """OA and macro F1 of ``bundle`` on ``rows`` of ``ps`` as of each share of the season's GDD, one
    classification per cut: the dates whose GDD (the same for every parcel here) are at or below
    the share of the last date's are kept."""
    part = ps.subset(np.sort(rows))
    truth = np.asarray(part.labels)
    gdd = np.asarray(part.gdd)[0]
    oa, macro = [], []
    for fraction in fractions:
        kept = gdd <= fraction * gdd[-1] + 1e-6
        if not kept.any():
            predicted = np.full(len(truth), -1)
        else:
            mask = np.asarray(part.date_mask) & kept[None, :]
            predicted = bundle.predict(replace(part, date_mask=mask)).argmax(axis=1)
        oa.append(float((predicted == truth).mean()))
        f1 = []
        for c in range(len(bundle.classes)):
            ref, pred = truth == c, predicted == c
            if ref.any() or pred.any():
                f1.append(2 * (ref & pred).sum() / (ref.sum() + pred.sum()))
        macro.append(float(np.mean(f1)))
    return np.array(oa), np.array(macro)


def test_training_records_the_accuracy_through_the_season(late_signal_model):
    bundle = load_bundle(late_signal_model["bundle"])
    curve = bundle_season_curve(bundle.config)
    config = late_signal_model["config"]
    ps = open_dataset(late_signal_model["data"])
    split = training_split([ps], config)
    fractions = np.arange(1, 11) / 10
    np.testing.assert_allclose(curve.fractions, fractions)
    oa, macro = _scores_by_hand(bundle, split.val_sets[0], split.val_rows[0], fractions)
    np.testing.assert_allclose(curve.overall_accuracy, oa, atol=1e-6)
    np.testing.assert_allclose(curve.macro_f1, macro, atol=1e-6)
    assert curve.parcels == len(split.val_rows[0]) == 30
    assert curve.level == pytest.approx(0.9 * oa[-1], abs=1e-6)
    assert curve.source == "the validation blocks of the training data"
    assert curve.trained_on == {"window_share": 0.5, "window_start": [0.0, 1 / 3], "window_end": [0.5, 1.0]}
    # The classes look alike until the middle of the season (GDD 600 of 1,200).
    assert oa[:5].max() < curve.level <= oa[-1]
    metrics = json.loads(late_signal_model["bundle"].with_suffix(".metrics.json").read_text())
    assert metrics[SEASON_CURVE_KEY] == bundle.config.provenance[SEASON_CURVE_KEY]


def test_the_recorded_level_warns_early_in_the_season_and_not_late(late_signal_model):
    bundle = load_bundle(late_signal_model["bundle"])
    curve = bundle_season_curve(bundle.config)
    reached = curve.fractions[curve.reached()]
    day = np.datetime64("2017-05-30")
    early = SeasonStatus(as_of=day, used=4, total=12, gdd=420.0, season_gdd=1200.0, gdd_date=day)
    warning = early_warning(early, bundle)
    assert f"validation OA was {curve.overall_accuracy[2]:.2f}" in warning and "as of 30 % of the season's" in warning
    assert f"its level {curve.level:.2f} is reached from {100 * reached:.0f} % of the season's GDD" in warning
    late = SeasonStatus(as_of=day, used=11, total=12, gdd=1100.0, season_gdd=1200.0, gdd_date=day)
    assert reached <= 1100 / 1200 and early_warning(late, bundle) is None


def test_inseason_records_the_curve_on_a_dataset_into_a_new_bundle(late_signal_model, tmp_path, capsys):
    from thermocrop.cli.main import main

    model, data = late_signal_model["bundle"], late_signal_model["data"]
    before = model.read_bytes()
    out = tmp_path / "recorded.tcm"
    args = ["inseason", "--data", str(data), "--model", str(model), "--out", str(tmp_path / "scores")]
    assert main([*args, "--record", str(out), "--record-cuts", "4", "--record-level", "0.5"]) == 0
    assert f"recorded in {out}" in capsys.readouterr().out
    recorded = load_bundle(out)
    curve = bundle_season_curve(recorded.config)
    ps = open_dataset(data)
    oa, macro = _scores_by_hand(recorded, ps, np.arange(len(ps)), np.arange(1, 5) / 4)
    np.testing.assert_allclose(curve.overall_accuracy, oa, atol=1e-6)
    np.testing.assert_allclose(curve.macro_f1, macro, atol=1e-6)
    assert (curve.level, curve.level_rule, curve.parcels) == (0.5, "given", 300)
    assert curve.source == "the dataset data" and curve.trained_on["window_share"] == 0.5
    # The weights and everything else are the model's; the model's own file is unchanged.
    original = load_bundle(model)
    for name, tensor in original.model.state_dict().items():
        assert np.array_equal(tensor.numpy(), recorded.model.state_dict()[name].numpy())
    assert {k: v for k, v in asdict(recorded.config).items() if k not in ("provenance", "checksum")} == \
        {k: v for k, v in asdict(original.config).items() if k not in ("provenance", "checksum")}
    assert model.read_bytes() == before
    # Never in place, never over another file without --overwrite (exit code 5: an output problem).
    assert main([*args, "--overwrite", "--record", str(model)]) == 5
    assert main([*args, "--overwrite", "--record", str(out)]) == 0
    assert main([*args, "--overwrite", "--record-level", "0.5"]) != 0
    assert model.read_bytes() == before


def test_windows_may_end_earlier_in_the_season():
    rng = np.random.default_rng(3)
    dos = np.arange(0, 360, 10, dtype=float)
    mask = np.ones((400, 36), bool)
    out = season_windows(mask, np.broadcast_to(dos, mask.shape), np.ones(400, bool), rng, earliest_end=0.2)
    lasts = np.array([dos[r].max() for r in out])
    firsts = np.array([dos[r].min() for r in out])
    assert lasts.min() < 350 / 3 and lasts.min() >= 0.2 * 350 - 10 and (firsts <= lasts).all()
    assert firsts.max() < 350 / 3 + 10
    # The default windows are those drawn before the earliest end could be set.
    rng_a, rng_b = np.random.default_rng(8), np.random.default_rng(8)
    default = season_windows(mask, np.broadcast_to(dos, mask.shape), np.ones(400, bool), rng_a)
    u_start, u_end = rng_b.random(400), rng_b.random(400)
    start, end = u_start * 350 / 3.0, 350 - u_end * 350 / 2.0
    expected = (dos[None, :] >= start[:, None]) & (dos[None, :] <= end[:, None])
    expected = np.where((expected.sum(axis=1) >= 3)[:, None], expected, mask)
    assert np.array_equal(default, expected)
