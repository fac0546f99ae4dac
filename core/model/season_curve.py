"""A model's recorded accuracy through the season: its OA and macro F1 on labelled parcels it did
not train on, as of shares of the season's growing degree days, the level of OA it holds to, and
the part of the season its training cut samples to. A bundle keeps it in its provenance under
:data:`SEASON_CURVE_KEY`; a classification as of a date warns with it (``core.inseason``)."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Mapping, Optional, Sequence

import numpy as np

__all__ = [
    "SEASON_CURVE_KEY",
    "DEFAULT_LEVEL_SHARE",
    "DEFAULT_CUTS",
    "SeasonCurve",
    "level_of",
    "bundle_season_curve",
    "check_season_curve_data",
]

SEASON_CURVE_KEY = "season_accuracy"
"""The key of a bundle's provenance that holds its :class:`SeasonCurve`."""

DEFAULT_LEVEL_SHARE = 0.9
"""Without a level given, the level is this share of the model's whole-season OA."""

DEFAULT_CUTS = 20
"""Cuts through the season recorded by default: every 5 % of its GDD."""

_MAX_CUTS = 1000


@dataclass(frozen=True)
class SeasonCurve:
    """OA and macro F1 as of evenly spaced shares of the season's GDD.

    Attributes:
        fractions: ``(N,)`` the cuts as shares of the season's GDD (the scored parcels' median GDD
            on the last acquisition), increasing, the last 1 (the whole season).
        overall_accuracy, macro_f1: ``(N,)`` the scores as of each cut (a parcel not yet seen
            counts as wrong).
        level: the OA the model holds to; the season before the first cut whose OA reaches it is
            warned of.
        level_rule: how the level was set, e.g. ``"90 % of the whole-season OA"`` or ``"given"``.
        parcels: how many labelled parcels were scored.
        source: what they were (e.g. ``"the validation blocks of the training data"``).
        trained_on: the part of the season the training cut samples to: ``window_share`` (the
            share of samples cut; 0: whole seasons only), ``window_start`` and ``window_end``
            (the ranges, as shares of the span of the training data's dates, in which a cut
            window starts and ends). Empty where unknown (a model recorded after its training
            by another program).
    """

    fractions: tuple[float, ...]
    overall_accuracy: tuple[float, ...]
    macro_f1: tuple[float, ...]
    level: float
    level_rule: str
    parcels: int
    source: str
    trained_on: dict[str, Any] = field(default_factory=dict)

    def reached(self) -> Optional[int]:
        """The index of the first cut whose OA reaches the level; None where none does."""
        above = np.asarray(self.overall_accuracy) >= self.level
        return int(np.argmax(above)) if above.any() else None

    def cut_at(self, share: float) -> Optional[int]:
        """The index of the last cut at or below ``share`` of the season's GDD; None before the first."""
        index = int(np.searchsorted(np.asarray(self.fractions), share + 1e-9, side="right")) - 1
        return index if index >= 0 else None

    def describe_training(self) -> str:
        """The part of the season the training cut samples to, in words."""
        trained = self.trained_on or {}
        share = trained.get("window_share")
        if share is None:
            return "the part of the season it was trained on is not recorded"
        if not share:
            return "it was trained on whole seasons only"
        start, end = trained["window_start"], trained["window_end"]
        return (f"{100 * share:.0f} % of its training samples were cut to a window starting within the first "
                f"{100 * start[1]:.0f} % of the season's dates and ending between {100 * end[0]:.0f} % and "
                f"{100 * end[1]:.0f} % of them, the rest whole seasons")

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready mapping (what a bundle stores)."""
        return {"fractions": [round(float(f), 6) for f in self.fractions],
                "overall_accuracy": [round(float(v), 6) for v in self.overall_accuracy],
                "macro_f1": [round(float(v), 6) for v in self.macro_f1],
                "level": round(float(self.level), 6), "level_rule": self.level_rule, "parcels": int(self.parcels),
                "source": self.source, "trained_on": dict(self.trained_on)}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> "SeasonCurve":
        """The curve stored as ``data``.

        Raises:
            ValueError: ``data`` is not a season curve (the message names the entry).
        """
        check_season_curve_data(data)
        return cls(fractions=tuple(float(v) for v in data["fractions"]),
                   overall_accuracy=tuple(float(v) for v in data["overall_accuracy"]),
                   macro_f1=tuple(float(v) for v in data["macro_f1"]), level=float(data["level"]),
                   level_rule=str(data["level_rule"]), parcels=int(data["parcels"]), source=str(data["source"]),
                   trained_on=dict(data.get("trained_on") or {}))


def level_of(overall_accuracy: Sequence[float], level: Optional[float] = None) -> tuple[float, str]:
    """The level and its rule: ``level`` where given, else :data:`DEFAULT_LEVEL_SHARE` of the last
    (whole-season) OA."""
    if level is not None:
        return float(level), "given"
    return DEFAULT_LEVEL_SHARE * float(overall_accuracy[-1]), f"{100 * DEFAULT_LEVEL_SHARE:.0f} % of the whole-season OA"


def bundle_season_curve(config: Any) -> Optional[SeasonCurve]:
    """The season curve a bundle config records (``load_bundle`` has checked it); None without one."""
    data = (getattr(config, "provenance", None) or {}).get(SEASON_CURVE_KEY)
    return SeasonCurve.from_dict(data) if data else None


def _share(value: Any, name: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) \
            or not 0.0 <= value <= 1.0:
        raise ValueError(f"{name} must be a number from 0 to 1, not {value!r}"[:200])
    return float(value)


def _shares(value: Any, name: str, length: Optional[int] = None) -> list[float]:
    if not isinstance(value, (list, tuple)) or not 0 < len(value) <= _MAX_CUTS:
        raise ValueError(f"{name} must be a list of 1 to {_MAX_CUTS} numbers from 0 to 1")
    if length is not None and len(value) != length:
        raise ValueError(f"{name} holds {len(value)} numbers, not one per cut ({length})")
    return [_share(v, f"{name}[{i}]") for i, v in enumerate(value)]


def _check_trained_on(trained: Any) -> None:
    if not isinstance(trained, dict):
        raise ValueError("trained_on must be a mapping")
    if not trained:
        return
    unknown = sorted(set(trained) - {"window_share", "window_start", "window_end"})
    if unknown:
        raise ValueError(f"trained_on has unknown entries {', '.join(map(str, unknown))}")
    _share(trained.get("window_share"), "trained_on.window_share")
    for name in ("window_start", "window_end"):
        low, high = _shares(trained.get(name), f"trained_on.{name}", 2)
        if low > high:
            raise ValueError(f"trained_on.{name} must run from low to high, not {low} to {high}")


def check_season_curve_data(data: Any) -> None:
    """Check a stored season curve before it is used.

    Raises:
        ValueError: naming the entry that is missing or wrong.
    """
    if not isinstance(data, Mapping):
        raise ValueError("must be a mapping (a JSON object)")
    required = {"fractions", "overall_accuracy", "macro_f1", "level", "level_rule", "parcels", "source"}
    missing = sorted(required - set(data))
    if missing:
        raise ValueError(f"lacks {', '.join(missing)}")
    unknown = sorted(set(data) - required - {"trained_on"})
    if unknown:
        raise ValueError(f"has unknown entries {', '.join(map(str, unknown))}")
    fractions = _shares(data["fractions"], "fractions")
    if any(b <= a for a, b in zip(fractions, fractions[1:])) or fractions[0] <= 0 or fractions[-1] != 1.0:
        raise ValueError("fractions must increase from above 0 to 1 (the whole season)")
    _shares(data["overall_accuracy"], "overall_accuracy", len(fractions))
    _shares(data["macro_f1"], "macro_f1", len(fractions))
    _share(data["level"], "level")
    parcels = data["parcels"]
    if isinstance(parcels, bool) or not isinstance(parcels, int) or parcels < 1:
        raise ValueError(f"parcels must be a whole number of at least 1, not {parcels!r}"[:200])
    for name in ("level_rule", "source"):
        if not isinstance(data[name], str) or len(data[name]) > 500:
            raise ValueError(f"{name} must be a text of at most 500 characters")
    _check_trained_on(data.get("trained_on", {}))
