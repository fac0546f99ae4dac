"""A model's recorded accuracy through the season: stored and read back, checked when loaded, and
the warning of a classification as of a date that falls before its level is reached."""

from __future__ import annotations

from dataclasses import replace
from types import SimpleNamespace

import numpy as np
import pytest

from thermocrop.core.errors import BundleError
from thermocrop.core.inseason import SeasonStatus, early_warning, trained_season
from thermocrop.core.model.bundle import default_bundle_path, load_bundle, save_bundle
from thermocrop.core.model.season_curve import SEASON_CURVE_KEY, SeasonCurve, bundle_season_curve, level_of

OA = (0.1, 0.2, 0.41, 0.55, 0.7, 0.71)


def _curve(**changes) -> SeasonCurve:
    fractions = tuple(np.arange(1, 7) / 6)
    value, rule = level_of(OA)
    curve = SeasonCurve(fractions=fractions, overall_accuracy=OA, macro_f1=tuple(v / 2 for v in OA), level=value,
                        level_rule=rule, parcels=120, source="the validation blocks of the training data",
                        trained_on={"window_share": 0.5, "window_start": [0.0, 1 / 3], "window_end": [0.5, 1.0]})
    return replace(curve, **changes)


def _status(share: float) -> SeasonStatus:
    day = np.datetime64("2018-05-30")
    return SeasonStatus(as_of=day, used=8, total=14, gdd=2000.0 * share, season_gdd=2000.0, gdd_date=day)


def _bundle(curve):
    return SimpleNamespace(config=SimpleNamespace(provenance={SEASON_CURVE_KEY: curve.to_dict()}))


def test_the_level_and_the_cut_where_it_is_reached():
    curve = _curve()
    assert curve.level == pytest.approx(0.9 * 0.71) and curve.level_rule == "90 % of the whole-season OA"
    # 0.639: the fifth cut (0.7) is the first at or above it.
    assert curve.reached() == 4
    assert curve.cut_at(0.5) == 2 and curve.cut_at(1 / 6) == 0 and curve.cut_at(0.1) is None
    assert _curve(level=0.8).reached() is None
    assert level_of(OA, 0.5) == (0.5, "given")


def test_a_curve_round_trips_through_a_mapping():
    curve = _curve()
    assert SeasonCurve.from_dict(curve.to_dict()) == replace(curve, level=round(curve.level, 6),
                                                              fractions=tuple(round(f, 6) for f in curve.fractions))


def test_the_warning_names_the_recorded_figure_before_the_level_and_nothing_after():
    bundle = _bundle(_curve())
    warning = early_warning(_status(0.55), bundle)
    # 55 % of the season: the last cut at or below it is the third (50 %), OA 0.41.
    assert "As of 2018-05-30 (1,100 GDD, 55 % of the season's 2,000" in warning
    assert "validation OA was 0.41 (macro F1 " in warning and ") as of 50 % of the season's GDD" in warning
    assert "its level 0.64 is reached from 83 % of the season's GDD" in warning
    assert "50 % of its training samples were cut to a window" in warning
    assert early_warning(_status(5 / 6), bundle) is None
    assert early_warning(_status(0.95), bundle) is None
    # Before the first cut there is no recorded figure to give.
    assert "recorded from 17 % of the season's GDD on" in early_warning(_status(0.1), bundle)
    # A level never reached: every date before the whole season is warned of.
    never = early_warning(_status(0.95), _bundle(_curve(level=0.8)))
    assert "its level 0.80 is not reached even on the whole season" in never
    assert "window starting within the first 33 %" in trained_season(bundle)


def test_without_a_record_the_third_of_the_season_rule_stays():
    bundle = SimpleNamespace(config=SimpleNamespace(provenance={"training": {"season_window_share": 0.0}}))
    assert early_warning(_status(0.4), bundle) is None
    assert "below a third of the season" in early_warning(_status(0.3), bundle)


def test_a_bundle_with_a_damaged_record_is_refused_naming_the_entry(tmp_path):
    shipped = load_bundle(default_bundle_path())
    good = tmp_path / "good.tcm"
    save_bundle(good, shipped.model, replace(shipped.config, provenance={
        **shipped.config.provenance, SEASON_CURVE_KEY: _curve().to_dict()}))
    assert bundle_season_curve(load_bundle(good).config) == SeasonCurve.from_dict(_curve().to_dict())
    for damage, message in (({"overall_accuracy": [0.1, 0.2]}, "overall_accuracy holds 2 numbers"),
                            ({"fractions": [0.5, 0.4, 0.6, 0.7, 0.8, 1.0]}, "fractions must increase"),
                            ({"level": 1.5}, "level must be a number from 0 to 1"),
                            ({"parcels": "many"}, "parcels must be a whole number"),
                            ({"run": "code"}, "unknown entries run")):
        bad = tmp_path / "bad.tcm"
        save_bundle(bad, shipped.model, replace(shipped.config, provenance={
            **shipped.config.provenance, SEASON_CURVE_KEY: {**_curve().to_dict(), **damage}}))
        with pytest.raises(BundleError, match=f"provenance.{SEASON_CURVE_KEY}.*{message}"):
            load_bundle(bad)
