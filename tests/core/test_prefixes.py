"""The probabilities of every prefix of the season in one pass equal one prediction per cut."""

import json
from dataclasses import replace

import numpy as np
import pytest
import torch

from thermocrop.core.errors import BundleError
from thermocrop.core.inseason import decided_index
from thermocrop.core.model import decided
from thermocrop.core.model.bundle import (
    BundleConfig,
    InputScaling,
    ModelBundle,
    load_bundle,
    save_bundle,
    validate_config_data,
    with_gdd_floor,
)
from thermocrop.core.model.calibration import Calibration
from thermocrop.core.model.decided import decide
from thermocrop.core.model.networks import VARIANTS, build_model
from thermocrop.core.model.season_stages import SeasonStage
from thermocrop.core.pixel_sets import PixelSets
from thermocrop.core.progress import Progress


def _pixel_sets(p=17, t=8, s=5, seed=3):
    rng = np.random.default_rng(seed)
    pmask = rng.random((p, t, s)) > 0.3
    pmask[:, :, 0] = True
    pixels = (rng.integers(200, 6000, (p, t, 10, s)) * pmask[:, :, None, :]).astype(np.uint16)
    dmask = rng.random((p, t)) > 0.3
    dmask[5, :3] = False  # a parcel first seen on the fourth date
    dmask[6] = False  # never seen
    gdd = np.cumsum(rng.random((p, t)) * 300, axis=1).astype(np.float32)
    dates = np.datetime64("2021-03-01") + np.arange(t) * 12
    dos = (dates - np.datetime64("2021-01-01")).astype(np.float32)
    return PixelSets(pixels=pixels, pixel_mask=pmask, date_mask=dmask, gdd=gdd, dates=dates,
                     day_of_season=dos, parcel_ids=np.array([f"p{i}" for i in range(p)]),
                     status=np.array(["ok"] * p))


def _bundle(ps, variant, members=1, calibration=None, provenance=None):
    torch.manual_seed(1)
    model = build_model(variant, 6, members=members)
    model.train()
    model(torch.randn(6, 5, 10, 4), torch.ones(6, 5, 4, dtype=torch.bool), torch.ones(6, 5, dtype=torch.bool),
          torch.rand(6, 5) * 100, torch.rand(6, 5) * 1000)  # BatchNorm statistics that are not the identity
    config = BundleConfig(variant=variant, classes=tuple("abcdef"), colours={c: "#000000" for c in "abcdef"},
                          scaling=InputScaling.from_pixel_sets(ps),
                          calibration=calibration.to_dict() if calibration else {}, provenance=provenance or {})
    return ModelBundle(model.eval(), config)


def _cut(ps, t):
    """The pixel sets as of date ``t``: the later dates masked."""
    date_mask = np.asarray(ps.date_mask).copy()
    date_mask[:, t + 1:] = False
    return replace(ps, date_mask=date_mask)


@pytest.mark.parametrize("variant", VARIANTS)
def test_prefixes_equal_one_prediction_per_cut(variant):
    ps = _pixel_sets()
    bundle = _bundle(ps, variant)
    prefixes = bundle.predict_prefixes(ps, batch_size=5)
    assert prefixes.shape == (len(ps), ps.n_dates, 6)
    for t in range(ps.n_dates):
        expected = bundle.predict(_cut(ps, t), batch_size=7)
        np.testing.assert_allclose(prefixes[:, t], expected, atol=2e-5, rtol=0)
    np.testing.assert_array_equal(np.isnan(prefixes[5, :3]), True)
    assert np.isfinite(prefixes[5, 3:]).all() and np.isnan(prefixes[6]).all()
    np.testing.assert_allclose(prefixes[:, -1], bundle.predict(ps), atol=2e-5, rtol=0)


@pytest.mark.parametrize("variant", ["tpe_sinusoidal", "tpe_concat"])
def test_prefixes_of_a_model_trained_on_parcel_means_equal_cuts(variant):
    """Such a model is given each set's mean pixel; the prefixes average before gathering the dates."""
    ps = _pixel_sets(seed=8)
    bundle = _bundle(ps, variant, members=2, provenance={"training": {"mean_pixel_share": 1.0}})
    prefixes = bundle.predict_prefixes(ps, batch_size=6)
    assert all(m.pse.pixel_means_first for m in bundle.fast_model().members)
    for t in range(ps.n_dates):
        np.testing.assert_allclose(prefixes[:, t], bundle.predict(_cut(ps, t), batch_size=4), atol=2e-5, rtol=0)
    assert not any(m.pse.pixel_means_first for m in _bundle(ps, variant, members=2).fast_model().members)


def test_ensemble_and_calibration_prefixes_equal_cuts():
    ps = _pixel_sets(seed=5)
    calibration = Calibration(temperature=0.6, scores=tuple(np.linspace(0.0, 0.9, 60)), parcels=60, source="test")
    bundle = _bundle(ps, "tpe_recurrent", members=3, calibration=calibration)
    prefixes = bundle.predict_prefixes(ps)
    raw = bundle.predict_prefixes(ps, calibrated=False)
    for t in (0, 3, ps.n_dates - 1):
        np.testing.assert_allclose(prefixes[:, t], bundle.predict(_cut(ps, t)), atol=2e-5, rtol=0)
        np.testing.assert_allclose(raw[:, t], bundle.predict(_cut(ps, t), calibrated=False), atol=2e-5, rtol=0)
    # The calibration sharpens (temperature below 1): calibrated top probabilities are higher.
    ok = np.isfinite(raw[:, :, 0])
    assert (prefixes[ok].max(axis=1) >= raw[ok].max(axis=1) - 1e-6).all()


def test_prefix_attention_is_each_prefix_s_own_softmax_even_with_scores_far_apart():
    from thermocrop.core.model.prefixes import prefix_attention

    g = torch.Generator().manual_seed(4)
    b, t, h, d = 5, 9, 3, 4
    scores = torch.randn(b, t, h, generator=g) * 5
    scores[0, :4, 0] -= 90.0  # the first dates of one head sit far below its last: float32 underflows
    scores[1, 5:, 2] += 800.0
    values = torch.randn(b, t, h, d, generator=g)
    lengths = [9, 6, 1, 4, 0]
    date_mask = torch.arange(t)[None] < torch.tensor(lengths)[:, None]
    out = prefix_attention(scores, values, date_mask)
    for i, n in enumerate(lengths):
        for p in range(t):
            seen = min(p + 1, n)
            for k in range(h):
                if seen == 0:
                    expected = torch.zeros(d, dtype=torch.float64)
                else:
                    w = torch.softmax(scores[i, :seen, k].double(), dim=0)
                    expected = (w[:, None] * values[i, :seen, k].double()).sum(dim=0)
                torch.testing.assert_close(out[i, p, k].double(), expected, rtol=1e-5, atol=1e-6)


def _below_floor_left_out(ps, floor):
    """The date mask a floor gives, written out parcel by parcel."""
    mask = np.asarray(ps.date_mask).copy()
    for p in range(len(ps)):
        above = [t for t in range(ps.n_dates) if mask[p, t] and ps.gdd[p, t] >= floor]
        if above:
            mask[p, :above[0]] = False
    return replace(ps, date_mask=mask)


@pytest.mark.parametrize("variant", ["tpe_sinusoidal", "calendar"])
def test_a_gdd_floor_leaves_out_the_acquisitions_below_it(variant):
    ps = _pixel_sets(seed=11)
    ps.gdd[2] = np.linspace(10, 200, ps.n_dates)  # never reaches the floor: keeps every acquisition
    plain = _bundle(ps, variant)
    floored = with_gdd_floor(plain, 500.0)
    assert floored.config.gdd["floor"] == 500.0 and "floor" not in plain.config.gdd
    got = floored.predict(ps)
    expected = plain.predict(_below_floor_left_out(ps, 500.0))
    np.testing.assert_allclose(got, expected, atol=2e-5, rtol=0)
    np.testing.assert_allclose(got[2], plain.predict(ps)[2], atol=2e-5, rtol=0)
    changed = np.flatnonzero(np.abs(got - plain.predict(ps)).max(axis=1) > 1e-4)
    assert len(changed) > 3  # the floor does change what parcels seen below it are given
    np.testing.assert_allclose(with_gdd_floor(floored, 0).predict(ps), plain.predict(ps), atol=2e-5, rtol=0)


def test_prefixes_with_a_gdd_floor_equal_one_prediction_per_cut():
    """As of each date, the floor applies to the dates up to it: before a parcel's first acquisition
    above the floor, it is classified on those below."""
    ps = _pixel_sets(seed=12)
    calibration = Calibration(temperature=0.7, scores=tuple(np.linspace(0.0, 0.9, 60)), parcels=60, source="test")
    bundle = with_gdd_floor(_bundle(ps, "tpe_sinusoidal", members=2, calibration=calibration), 400.0)
    seen = []
    prefixes = bundle.predict_prefixes(ps, batch_size=6, progress=Progress(seen.append))
    for t in range(ps.n_dates):
        np.testing.assert_allclose(prefixes[:, t], bundle.predict(_cut(ps, t), batch_size=5), atol=2e-5, rtol=0)
    assert seen == sorted(seen) and seen[-1] == pytest.approx(1.0)


def test_a_gdd_floor_travels_with_the_bundle_and_is_checked(tmp_path):
    ps = _pixel_sets(seed=13)
    bundle = with_gdd_floor(_bundle(ps, "tpe_sinusoidal"), 350.0)
    save_bundle(tmp_path / "floor.tcm", bundle.model, bundle.config)
    loaded = load_bundle(tmp_path / "floor.tcm")
    assert loaded.config.gdd["floor"] == 350.0
    np.testing.assert_allclose(loaded.predict(ps), bundle.predict(ps), atol=2e-5, rtol=0)
    for bad, says in ((-5.0, "at least 0"), ("early", "a finite number"), (4000.0, "at most 3000")):
        data = json.loads(loaded.config.to_json())
        data["gdd"]["floor"] = bad
        with pytest.raises(BundleError, match=f"gdd.floor.*{says}"):
            validate_config_data(data)
    with pytest.raises(BundleError, match="outside"):
        with_gdd_floor(bundle, 5000.0)


def _sharpened(bundle, factor=300.0):
    """``bundle`` with its last layers' logits spread ``factor`` times wider (centred, no bias), so
    that a random network's labels differ between parcels and often pass a threshold."""
    members = getattr(bundle.model, "members", [bundle.model])
    with torch.no_grad():
        for member in members:
            weight = member.decoder.out.weight
            weight.mul_(factor).sub_(weight.mean(dim=0, keepdim=True))
            member.decoder.out.bias.zero_()
    return bundle


def _counting_decoder(monkeypatch):
    """The prefixes the decision search decodes, call by call."""
    counts = []
    decode = decided.decode_prefixes

    def counted(pools, parcels, prefixes):
        counts.append(len(parcels))
        return decode(pools, parcels, prefixes)

    monkeypatch.setattr(decided, "decode_prefixes", counted)
    return counts


@pytest.mark.parametrize("threshold", [0.0, 0.3, 0.5, 0.7, 1.01])
@pytest.mark.parametrize("members", [1, 3])
def test_decisions_decode_a_suffix_of_the_prefixes_and_equal_every_prefix(threshold, members, monkeypatch):
    """The search from the end of the season finds the decisions and the whole season that every
    prefix gives, with a calibration by stage, and decodes fewer prefixes than there are."""
    ps = _pixel_sets(p=60, t=24, seed=21)
    scores = tuple(np.linspace(0.0, 0.9, 60))
    stages = (SeasonStage(below_gdd=600.0, temperature=1.8, scores=scores, parcels=60),
              SeasonStage(below_gdd=1500.0, temperature=0.5, scores=scores, parcels=60, bias=(0.0, 0.4, 0, 0, 0, 0)))
    calibration = Calibration(temperature=0.6, bias=(0.3, -0.2, 0.0, 0.1, 0.0, -0.1), scores=scores, parcels=60,
                              source="test", stages=stages)
    bundle = _sharpened(_bundle(ps, "tpe_sinusoidal", members=members, calibration=calibration))
    every = bundle.predict_prefixes(ps, batch_size=7)
    expected = decided_index(every, threshold)
    counts = _counting_decoder(monkeypatch)
    seen = []
    probabilities, index = decide(bundle, ps, threshold, batch_size=7, progress=Progress(seen.append))
    np.testing.assert_array_equal(index, expected)
    np.testing.assert_allclose(probabilities, every[:, -1], atol=2e-6, rtol=0)
    assert seen == sorted(seen) and seen[-1] == pytest.approx(1.0)
    assert sum(counts) < np.asarray(ps.date_mask).sum()
    if threshold == 0.5:  # parcels decided after their first date and never: the test must see both
        assert (expected == -1).any() and (expected > np.asarray(ps.date_mask).argmax(axis=1)).any()


def test_the_search_from_the_end_finds_the_earliest_prefix_from_which_all_hold():
    """On tables of prefix probabilities with every length of season and of holding suffix, the
    search by doubling blocks agrees with a walk back one prefix at a time."""
    rng = np.random.default_rng(30)
    n, t, k = 400, 37, 4
    valid = rng.integers(1, t + 1, n)
    table = rng.dirichlet(np.ones(k) * 0.5, (n, t)).astype(np.float32)
    for i in range(n):  # a suffix of random length that keeps the label and a high confidence
        start = rng.integers(0, valid[i] + 1)
        table[i, start:valid[i]] = np.eye(k)[i % k] * 0.9 + 0.025
    asked = []

    def decode(parcels, prefixes):
        asked.extend(zip(parcels.tolist(), prefixes.tolist()))
        assert (prefixes < valid[parcels]).all() and (prefixes >= 0).all()
        return table[parcels, prefixes]

    last = table[np.arange(n), valid - 1]
    label = last.argmax(axis=1)
    found = decided.earliest_holding(decode, last, label, valid, 0.8)
    for i in range(n):
        j = valid[i]
        while j > 0 and table[i, j - 1].argmax() == label[i] and table[i, j - 1].max() >= 0.8:
            j -= 1
        assert found[i] == (j if j < valid[i] else -1), i
    assert len(asked) == len(set(asked)) < valid.sum()  # no prefix twice, fewer than all


@pytest.mark.parametrize("threshold", [0.0, 0.3, 0.6])
def test_decisions_with_a_gdd_floor_need_only_the_parcels_decided_on_their_first_acquisition_above_it(threshold):
    """The pass behind crop_decided computes the prefixes below the floor only where they can move a
    decision; the decisions and the whole season are those of every prefix."""
    ps = _pixel_sets(p=40, t=9, seed=14)
    ps.gdd[3] = np.linspace(10, 200, ps.n_dates)  # never reaches the floor
    bundle = with_gdd_floor(_sharpened(_bundle(ps, "tpe_sinusoidal", members=2)), 450.0)
    every = bundle.predict_prefixes(ps, batch_size=7)
    calls = []
    model_batches = bundle.model_batches

    def counted(part, batch_size):
        calls.append(int(np.asarray(part.date_mask).any(axis=1).sum()))
        return model_batches(part, batch_size)

    bundle.model_batches = counted
    probabilities, index = decide(bundle, ps, threshold, batch_size=7)
    np.testing.assert_array_equal(index, decided_index(every, threshold))
    np.testing.assert_allclose(probabilities, every[:, -1], atol=2e-6, rtol=0)
    assert len(calls) == 2 and calls[1] < calls[0]  # the second pass: a few parcels
    if threshold == 0.0:
        assert calls[1] > 1  # with no confidence asked, some are decided on their first date above


def test_a_run_with_a_gdd_floor_says_so_once(caplog):
    ps = _pixel_sets(seed=15)
    bundle = with_gdd_floor(_bundle(ps, "tpe_sinusoidal"), 420.0)
    with caplog.at_level("INFO", logger="thermocrop.core.model.season_floor"):
        for start in range(0, len(ps), 5):  # batch by batch, as a run predicts
            bundle.predict(ps.subset(np.arange(start, min(start + 5, len(ps)))))
    said = [m for m in caplog.messages if "GDD floor" in m]
    assert len(said) == 1 and "before 420 GDD" in said[0]


def test_a_run_with_a_gdd_floor_says_so_once_when_it_decides_too(caplog):
    """A run with decisions (crop_decided) left out the same acquisitions without a word: the
    floor's line came only from a plain prediction."""
    ps = _pixel_sets(seed=16)
    bundle = with_gdd_floor(_bundle(ps, "tpe_sinusoidal"), 430.0)
    with caplog.at_level("INFO", logger="thermocrop.core.model.season_floor"):
        decide(bundle, ps, 0.5)
        decide(bundle, ps, 0.5)
    said = [m for m in caplog.messages if "GDD floor" in m]
    assert len(said) == 1 and "before 430 GDD" in said[0]
    # Where no parcel has an acquisition below the floor and one above it, nothing is left out.
    caplog.clear()
    high = with_gdd_floor(_bundle(ps, "tpe_sinusoidal"), 2900.0)
    assert (ps.gdd < 2900.0).all()
    with caplog.at_level("INFO", logger="thermocrop.core.model.season_floor"):
        decide(high, ps, 0.5)
    assert not [m for m in caplog.messages if "GDD floor" in m]
