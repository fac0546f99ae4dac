"""Recording a model's accuracy through the season in its bundle (``core.model.season_curve``): at
the end of training on its validation blocks, or later on labelled datasets (``thermocrop inseason
--record``). The cuts are shares of each dataset's season in growing degree days, as in
``experiment --as-of-steps``; the scores of several datasets are pooled parcel by parcel."""

from __future__ import annotations

import logging
from dataclasses import replace
from pathlib import Path
from typing import Any, Mapping, Optional, Sequence, Union

import numpy as np

from ..core.errors import DatasetError
from ..core.io.output import check_output
from ..core.model.bundle import BundleConfig, ModelBundle, save_bundle
from ..core.model.season_curve import DEFAULT_CUTS, SEASON_CURVE_KEY, SeasonCurve, level_of
from ..core.model.shipped import refuse_shipped_model_output
from ..core.pixel_sets import PixelSets
from .datasets import align_classes
from .sampling import WINDOW_START, usable_parcels
from .season_accuracy import macro_f1_score

log = logging.getLogger(__name__)

__all__ = ["cut_predictions", "season_curve", "trained_part", "with_season_curve", "recorded_bundle",
           "record_on_datasets"]


def trained_part(training: Mapping[str, Any]) -> dict[str, Any]:
    """The part of the season a training run's samples were cut to, from its settings (a
    ``TrainingConfig`` as a mapping, or what a bundle's provenance stores of it); empty where the
    settings do not say."""
    share = training.get("season_window_share")
    if share is None:
        return {}
    return {"window_share": float(share), "window_start": list(WINDOW_START),
            "window_end": [float(training.get("season_window_end", 0.5)), 1.0]}


def cut_predictions(bundle: ModelBundle, ps: PixelSets, fractions: np.ndarray) -> np.ndarray:
    """The label of each parcel of ``ps`` as of each share of its season's GDD.

    A cut keeps the acquisitions whose median GDD over the parcels is at or below the share of
    the median GDD on the last acquisition; the last share (1) is the whole season.

    Args:
        bundle: the model.
        ps: the parcels to label (all of them are).
        fractions: ``(N,)`` increasing shares, the last 1.

    Returns:
        ``(P, N)`` int64 class indices; -1 where a parcel had no acquisition yet.
    """
    prefixes = bundle.predict_prefixes(ps)
    seen = np.isfinite(prefixes).all(axis=2)
    labels = np.where(seen, np.nan_to_num(prefixes, nan=-1.0).argmax(axis=2), -1)
    gdd = np.nanmedian(np.asarray(ps.gdd, dtype=np.float64), axis=0)
    used = np.searchsorted(gdd, np.asarray(fractions) * gdd[-1], side="right")
    used[-1] = len(gdd)  # the whole season, whatever rounding does to the last threshold
    out = np.full((len(ps), len(fractions)), -1, dtype=np.int64)
    for i, n in enumerate(used):
        if n > 0:
            out[:, i] = labels[:, n - 1]
    return out


def season_curve(bundle: ModelBundle, datasets: Sequence[PixelSets], rows: Sequence[np.ndarray], *,
                 source: str, cuts: int = DEFAULT_CUTS, level: Optional[float] = None,
                 trained_on: Optional[Mapping[str, Any]] = None) -> SeasonCurve:
    """OA and macro F1 of ``bundle`` on ``rows`` of ``datasets`` (labels on the model's classes)
    as of ``cuts`` evenly spaced shares of each dataset's season GDD, pooled over the datasets.

    Args:
        bundle: the model.
        datasets: labelled pixel sets on the model's classes.
        rows: per dataset, the parcels to score.
        source: what the parcels are, in words (recorded).
        cuts: the number of cuts (every ``1 / cuts`` of the season).
        level: the OA to record as the model's level; None: 90 % of the whole-season OA.
        trained_on: the part of the season the training cut samples to (``trained_part``).

    Raises:
        DatasetError: no parcel to score.
    """
    fractions = np.arange(1, cuts + 1) / cuts
    truth, predicted = [], []
    for ps, r in zip(datasets, rows):
        if len(r):
            part = ps.subset(np.sort(np.asarray(r)))
            truth.append(np.asarray(part.labels).astype(np.int64))
            predicted.append(cut_predictions(bundle, part, fractions))
    if not truth:
        raise DatasetError(f"No labelled parcels to record the accuracy through the season on ({source}).")
    y, p, k = np.concatenate(truth), np.concatenate(predicted), len(bundle.classes)
    oa = (p == y[:, None]).mean(axis=0)
    macro = np.array([macro_f1_score(y, p[:, i], k) for i in range(len(fractions))])
    value, rule = level_of(oa, level)
    curve = SeasonCurve(fractions=tuple(fractions), overall_accuracy=tuple(oa), macro_f1=tuple(macro),
                        level=value, level_rule=rule, parcels=len(y), source=source,
                        trained_on=dict(trained_on or {}))
    first = curve.reached()
    log.info("Accuracy through the season on %d parcels (%s): OA %s at %s of the season's GDD; level %.3f (%s) %s",
             len(y), source, " ".join(f"{v:.2f}" for v in oa), f"every {100 / cuts:.0f} %", value, rule,
             f"reached from {100 * fractions[first]:.0f} %" if first is not None else "never reached")
    return curve


def with_season_curve(config: BundleConfig, curve: SeasonCurve) -> BundleConfig:
    """``config`` with ``curve`` recorded in its provenance."""
    return replace(config, provenance={**(config.provenance or {}), SEASON_CURVE_KEY: curve.to_dict()})


def recorded_bundle(bundle: ModelBundle, curve: SeasonCurve, out: Union[str, Path], *, overwrite: bool = False,
                    inputs: Sequence[Any] = ()) -> BundleConfig:
    """Write ``bundle``'s model to the new file ``out`` with ``curve`` recorded (the weights and
    everything else unchanged); the config as stored.

    Raises:
        OutputError: ``out`` exists (without ``overwrite``) or is one of ``inputs`` (the bundle
            itself is never rewritten in place).
    """
    refuse_shipped_model_output(out)
    check_output(out, what="model bundle", suffixes=(".tcm",), overwrite=overwrite, inputs=[p for p in inputs if p])
    return save_bundle(out, bundle.model, with_season_curve(bundle.config, curve), overwrite=overwrite)


def record_on_datasets(bundle: ModelBundle, datasets: Sequence[PixelSets], source: str, *,
                       cuts: int = DEFAULT_CUTS, level: Optional[float] = None,
                       unseen: str = "error") -> SeasonCurve:
    """The season curve of ``bundle`` on every labelled ``ok`` parcel of ``datasets`` (their labels
    moved onto the model's classes by name; ``unseen``: ``"error"`` or ``"drop"`` for parcels of
    other classes), with the part of the season its training cut samples to, from its provenance."""
    classes = tuple(bundle.classes)
    aligned = align_classes(list(datasets), classes, unseen=unseen)
    rows = [usable_parcels(ps, len(classes)) for ps in aligned]
    training = (bundle.config.provenance or {}).get("training") or {}
    return season_curve(bundle, aligned, rows, source=source, cuts=cuts, level=level,
                        trained_on=trained_part(training))
