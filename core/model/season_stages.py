"""Calibration by season stage: confidence and prediction sets for part of a season.

A calibration fitted on whole seasons does not hold for a parcel seen only up to May: the network
is as sure of itself early in the season as late, while it is right far less often. On the
validation blocks of the shipped model's synthetic regions, parcels cut below 400 growing degree
days (GDD) were right 48 % of the time at a mean calibrated confidence of 0.81, and the 90 %
prediction sets, one class each, held the true class for 48 % of them.

A :class:`SeasonStage` holds a temperature and split-conformal scores fitted on the held-out
parcels *as of* dates whose GDD fall within the stage (every date of every parcel, cut there);
a calibration by vector scaling also gives each stage its own class biases, because how often the
network confuses two crops early in the season is not how often it does on whole seasons.
A prediction whose last date has fewer GDD than a stage's upper bound uses the first such stage;
from the last bound on, the calibration's own (whole-season) temperature and scores hold, so
whole-season runs are unchanged. Stages are thermal time, not dates or shares of the season: a
run as of today knows its GDD but not the season's end, and the same GDD mean a similar stage of
the crops wherever they grow.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping, Optional, Sequence

import numpy as np

STAGE_BOUNDS = (400.0, 800.0, 1200.0, 1600.0, 2000.0)
"""Upper GDD bounds (base 0 from 1 January in the shipped models) of the stages fitted; from the
last on, the whole-season calibration holds. On the Bavarian parcels of 2018, 400 GDD came on
9 April, 2,000 on 17 July."""

MIN_STAGE_ROWS = 50
"""Held-out predictions a stage is fitted on at least (fewer: that stage is left out, and its
predictions use the next stage)."""

MAX_STAGES = 32
MAX_STAGE_SCORES = 20_000
"""Scores kept per stage at most (evenly spaced quantiles beyond)."""


@dataclass(frozen=True)
class SeasonStage:
    """The calibration of predictions whose last date has fewer than ``below_gdd`` GDD (and at
    least the previous stage's bound).

    Attributes:
        below_gdd: the stage's upper GDD bound.
        temperature: the divisor of the raw log-probabilities.
        scores: sorted conformal scores ``1 - p(true class)`` of the held-out predictions of the
            stage, under ``temperature``.
        parcels: how many held-out parcels the stage's predictions came from.
        bias: ``(K,)`` class biases added after the temperature (vector scaling); empty: none.
    """

    below_gdd: float
    temperature: float
    scores: tuple[float, ...]
    parcels: int
    bias: tuple[float, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        data = {"below_gdd": float(self.below_gdd), "temperature": float(self.temperature),
                "scores": [round(float(s), 6) for s in self.scores], "parcels": int(self.parcels)}
        if self.bias:
            data["bias"] = [float(b) for b in self.bias]
        return data

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> "SeasonStage":
        return cls(below_gdd=float(data["below_gdd"]), temperature=float(data["temperature"]),
                   scores=tuple(float(s) for s in data["scores"]), parcels=int(data["parcels"]),
                   bias=tuple(float(b) for b in data.get("bias", ())))

    def describe(self) -> str:
        """The stage's scaling in a few words, for logs and reports."""
        return f"temperature {self.temperature:.2f}" + (" and class biases" if self.bias else "")


def stage_of(stages: Sequence[SeasonStage], gdd: np.ndarray) -> np.ndarray:
    """For each GDD, the index of the first stage whose bound it is below; -1 beyond the last
    (and for NaN): the whole-season calibration."""
    g = np.asarray(gdd, dtype=np.float64)
    bounds = np.array([s.below_gdd for s in stages], dtype=np.float64)
    index = np.searchsorted(bounds, np.nan_to_num(g, nan=np.inf), side="right")
    return np.where(index < len(stages), index, -1)


def describe_stage(stages: Sequence[SeasonStage], gdd: float) -> Optional[str]:
    """How predictions at ``gdd`` are calibrated, for a run's log; None beyond the last stage."""
    index = int(stage_of(stages, np.array([gdd]))[0])
    if index < 0:
        return None
    stage = stages[index]
    low = fitted_from(stages, index)
    said = (f"confidence and prediction sets calibrated on {stage.parcels} labelled parcels (none the model trained "
            f"on) as of {low:,.0f}-{stage.below_gdd:,.0f} GDD ({stage.describe()}), not on whole seasons")
    if gdd < low:
        said += (f"; these predictions are earlier ({gdd:,.0f} GDD) than any the calibration was fitted on, so its "
                 "confidence may be too high")
    return said


def fitted_from(stages: Sequence[SeasonStage], index: int) -> float:
    """The lowest GDD of the predictions stage ``index`` was fitted on: the bound of the stage before
    it in :data:`STAGE_BOUNDS` (or in ``stages``, for other bounds), 0 for the first."""
    bound = stages[index].below_gdd
    below = [b for b in STAGE_BOUNDS if b < bound]
    if bound in STAGE_BOUNDS:
        return below[-1] if below else 0.0
    return stages[index - 1].below_gdd if index else 0.0


def last_date_gdd(gdd: np.ndarray, date_mask: np.ndarray) -> np.ndarray:
    """``(P,)`` the GDD of each parcel's last valid date (NaN without one): how far the season had
    come in what the model saw of it (the last cut of :func:`prefix_gdd`)."""
    mask = np.asarray(date_mask, dtype=bool)
    return prefix_gdd(gdd, mask)[:, -1] if mask.shape[-1] else np.full(len(mask), np.nan)


def prefix_gdd(gdd: np.ndarray, date_mask: np.ndarray) -> np.ndarray:
    """``(P, T)``: as of each date, the GDD of the parcel's last valid date up to it (NaN before
    its first): :func:`last_date_gdd` of every cut of the season at once."""
    mask = np.asarray(date_mask, dtype=bool)
    valid = np.where(mask, np.asarray(gdd, dtype=np.float64), -np.inf)
    last = np.maximum.accumulate(valid, axis=1) if valid.size else valid
    return np.where(np.isneginf(last), np.nan, last)
