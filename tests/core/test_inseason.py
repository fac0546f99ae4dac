"""When a label was decided, from probabilities as of each date, and the season's status."""

from types import SimpleNamespace

import numpy as np

from thermocrop.core.inseason import (
    SeasonStatus,
    decided_index,
    decisions,
    early_warning,
    scenes_as_of,
    trained_season,
)


def _probabilities(rows):
    """``(P, T, 2)`` from each parcel's probability of class 0 as of each date (None: not seen yet)."""
    return np.array([[[np.nan, np.nan] if p is None else [p, 1.0 - p] for p in row] for row in rows])


def test_decided_is_the_first_date_from_which_label_and_confidence_hold():
    probabilities = _probabilities([
        [0.6, 0.85, 0.9, 0.95],    # class 0 throughout; sure enough from the second date
        [0.9, 0.2, 0.9, 0.9],      # class 0, but changed at the second date: decided at the third
        [0.9, 0.9, 0.9, 0.7],      # the last date drops below the threshold: never
        [None, None, 0.1, 0.15],   # first seen on the third date, class 1 at 0.9 then 0.85
        [0.1, 0.9, 0.5, 0.1],      # class 1 at the end, but only from the last date
        [None, None, None, None],  # never seen
    ])
    assert decided_index(probabilities, 0.8).tolist() == [1, 2, -1, 2, 3, -1]
    # With no confidence asked, only the label must hold; the third parcel is decided at once.
    assert decided_index(probabilities, 0.0).tolist() == [0, 2, 0, 2, 3, -1]
    dates = np.array(["2021-04-01", "2021-05-01", "2021-06-01", "2021-07-01"], dtype="datetime64[D]")
    gdd = np.tile([100.0, 400.0, 800.0, 1300.0], (6, 1)) + np.arange(6)[:, None]
    days, values = decisions(probabilities, dates, gdd, 0.8)
    assert [str(d) for d in days] == ["2021-05-01", "2021-06-01", "NaT", "2021-06-01", "2021-07-01", "NaT"]
    np.testing.assert_allclose(values, [400.0, 801.0, np.nan, 803.0, 1304.0, np.nan])


def test_scenes_after_the_date_are_left_out():
    scenes = [SimpleNamespace(date=np.datetime64(d)) for d in ("2021-04-01", "2021-06-30", "2021-07-01")]
    assert [str(s.date) for s in scenes_as_of(scenes, "2021-06-30")] == ["2021-04-01", "2021-06-30"]


def test_status_and_early_warning_say_how_far_the_season_is():
    def bundle(training):
        return SimpleNamespace(config=SimpleNamespace(provenance={"training": training} if training else {}))

    day = np.datetime64("2018-06-30")
    status = SeasonStatus(as_of=day, used=9, total=14, gdd=1697.4, season_gdd=2884.0, gdd_date=day)
    assert status.describe().startswith("as of 2018-06-30: 9 of 14 acquisitions, GDD 1,697 at the parcels' median")
    assert early_warning(status, bundle({"season_window_share": 0.5})) is None
    early = SeasonStatus(as_of=np.datetime64("2018-04-30"), used=3, total=14, gdd=657.0, season_gdd=2884.0,
                         gdd_date=np.datetime64("2018-04-30"))
    warning = early_warning(early, bundle({"season_window_share": 0.0}))
    assert "657 GDD, 23 %" in warning and "whole seasons only" in warning
    assert "does not say" in trained_season(bundle(None))
    assert "50 % of its training samples" in trained_season(bundle({"season_window_share": 0.5}))
