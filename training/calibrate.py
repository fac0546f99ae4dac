"""Calibrating a model on labelled datasets (pixel-set folders from ``extract`` or an importer):
the same fit as on a reference layer (``app.calibration_run``) where the parcels are already
extracted, e.g. imported per-parcel tables."""

from __future__ import annotations

import logging
from dataclasses import replace
from typing import Callable, Optional, Sequence

import numpy as np

from ..core.model.bundle import ModelBundle
from ..core.model.calibration import (
    Calibration,
    apply_scaling,
    check_label_variety,
    fit_calibration,
    fit_temperature,
    fit_vector_scaling,
)
from ..core.model.season_stages import (
    MAX_STAGE_SCORES,
    MIN_STAGE_ROWS,
    STAGE_BOUNDS,
    SeasonStage,
    last_date_gdd,
    prefix_gdd,
)
from ..core.parcels import labelled_names
from ..core.pixel_sets import STATUS_OK, PixelSets
from .datasets import check_model_gdd

log = logging.getLogger(__name__)


def dataset_labels(bundle: ModelBundle, ps: PixelSets, ok_only: bool = True) -> np.ndarray:
    """The labels of ``ps`` as indices into ``bundle``'s classes; -1 for unlabelled parcels, parcels
    whose class the model does not know and (with ``ok_only``) parcels that are not ``ok``."""
    known = {c: i for i, c in enumerate(bundle.classes)}
    names = list(ps.classes)
    labels = np.asarray(ps.labels)
    out = np.full(len(ps), -1, dtype=np.int64)
    for i, (label, status) in enumerate(zip(labels, np.asarray(ps.status))):
        if label >= 0 and (status == STATUS_OK or not ok_only):
            out[i] = known.get(names[label], -1)
    return out


def raw_probabilities(bundle: ModelBundle, ps: PixelSets, rows: Optional[np.ndarray] = None) -> np.ndarray:
    """The network's uncalibrated probabilities ``(n, K)`` on ``rows`` of ``ps`` (all rows: None)."""
    part = ps if rows is None else ps.subset(np.asarray(rows))
    probabilities = np.full((len(part), len(bundle.classes)), np.nan, dtype=np.float32)
    ok = np.flatnonzero(np.asarray(part.status) == STATUS_OK)
    if len(ok):
        probabilities[ok] = bundle.predict(part.subset(ok), calibrated=False)
    return probabilities


def calibrate_on_datasets(bundle: ModelBundle, datasets: Sequence[PixelSets], source: str,
                          rows: Optional[Sequence[Optional[np.ndarray]]] = None,
                          method: str = "temperature", stages: bool = False) -> Calibration:
    """A calibration of ``bundle`` fitted by ``method`` (``"temperature"`` or ``"vector"``) on the
    labelled parcels of ``datasets`` (``rows`` of each, or all of them); with ``stages``, also its
    season stages (``core.model.season_stages``), fitted on the same parcels cut at every date.

    Raises:
        InputError: too few usable parcels or an unknown method
            (``core.model.calibration.fit_calibration``).
    """
    check_model_gdd(bundle, datasets)
    rows = rows if rows is not None else [None] * len(datasets)
    probabilities, labels = [], []
    unknown: dict[str, int] = {}
    for ps, r in zip(datasets, rows):
        part = ps if r is None else ps.subset(np.asarray(r))
        probabilities.append(raw_probabilities(bundle, part))
        labels.append(dataset_labels(bundle, part))
        for name in labelled_names(part.classes, part.labels):
            if name not in bundle.classes:
                unknown[name] = unknown.get(name, 0) + 1
    if unknown:  # counted, as a reference layer's are (app.calibration_run)
        log.warning("%d parcels of %s have classes the model does not know and are left out: %s",
                    sum(unknown.values()), source, ", ".join(f"{c} {n}" for c, n in sorted(unknown.items())))
    used = np.concatenate(labels)
    missing = [c for k, c in enumerate(bundle.classes) if not (used == k).any()]
    if missing:
        log.warning("No parcel of %s in %s: the calibration has not seen how the model does on these classes.",
                    ", ".join(missing), source)
    check_label_variety(used, bundle.classes, source)
    calibration = fit_calibration(np.concatenate(probabilities), np.concatenate(labels), source, method=method)
    if not stages:
        return calibration
    for ps, r in zip(datasets, rows):
        pick = slice(None) if r is None else np.asarray(r)
        note = season_reach_note(np.asarray(ps.gdd[pick]), np.asarray(ps.date_mask[pick]), source)
        if note:
            log.warning(note)
            break
    return replace(calibration, stages=season_stages(bundle, datasets, rows, method))


def prefix_predictions(bundle: ModelBundle, ps: PixelSets, progress=None) -> tuple[np.ndarray, np.ndarray]:
    """The network's raw probabilities of the ``ok`` parcels of ``ps`` as of each of their dates,
    in one pass (``ModelBundle.predict_prefixes``): ``(rows, (n, T, K))``, ``rows`` the parcels'
    positions in ``ps``; the last date's are the whole season's."""
    rows = np.flatnonzero(np.asarray(ps.status) == STATUS_OK)
    if not len(rows):
        return rows, np.zeros((0, np.shape(ps.date_mask)[1], len(bundle.classes)), dtype=np.float32)
    return rows, bundle.predict_prefixes(ps.subset(rows), calibrated=False, progress=progress)


def stage_rows(prefixes: np.ndarray, labels: np.ndarray, gdd: np.ndarray, date_mask: np.ndarray,
               first_parcel: int = 0) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """:func:`fit_season_stages`' arguments from ``prefixes (n, T, K)`` and the ``labels``, ``gdd``
    and ``date_mask`` of their parcels (numbered from ``first_parcel``): one row per parcel and date."""
    n, t, k = prefixes.shape
    return (prefixes.reshape(n * t, k), np.repeat(labels, t), prefix_gdd(gdd, date_mask).ravel(),
            np.repeat(np.arange(n) + first_parcel, t))


def season_stages(bundle: ModelBundle, datasets: Sequence[PixelSets],
                  rows: Sequence[Optional[np.ndarray]], method: str = "temperature") -> tuple:
    """The season stages of ``bundle`` fitted by ``method`` on the labelled parcels of ``datasets``
    (``rows`` of each, None: all) as of each of their dates (``ModelBundle.predict_prefixes``, raw)."""
    parts = []
    for j, (ps, r) in enumerate(zip(datasets, rows)):
        part = ps if r is None else ps.subset(np.asarray(r))
        ok, prefixes = prefix_predictions(bundle, part)
        if len(ok):
            parts.append(stage_rows(prefixes, dataset_labels(bundle, part)[ok], np.asarray(part.gdd)[ok],
                                    np.asarray(part.date_mask)[ok], 1_000_000 * j))
    if not parts:
        return ()
    return log_stages(fit_season_stages(*(np.concatenate(column) for column in zip(*parts)), method=method))


def log_stages(found: tuple, say: Optional[Callable[[str], None]] = None) -> tuple:
    """``found`` (season stages), logged; the stages left out for too few predictions are said
    through ``say`` (a run's report; None: the log, as a warning)."""
    log.info("Season stages of the calibration: %s", ", ".join(
        f"below {s.below_gdd:,.0f} GDD {s.describe()} ({len(s.scores)} predictions)" for s in found))
    note = missing_stages_note(found)
    if note:
        (say or log.warning)(note)
    return found


def missing_stages_note(found: Sequence[SeasonStage], bounds: Sequence[float] = STAGE_BOUNDS) -> Optional[str]:
    """What a calibration's stages leave out of ``bounds`` (each had fewer than
    ``MIN_STAGE_ROWS`` predictions), and what predictions there use instead; None: nothing."""
    have = {float(s.below_gdd) for s in found}
    missing = [float(b) for b in bounds if float(b) not in have]
    if not missing:
        return None
    later = {b: min((s.below_gdd for s in found if s.below_gdd > b), default=None) for b in missing}
    uses = "; ".join(f"below {b:,.0f} GDD the stage below {later[b]:,.0f}" if later[b] is not None
                     else f"below {b:,.0f} GDD the whole-season calibration" for b in missing)
    return (f"The season stages below {', '.join(f'{b:,.0f}' for b in missing)} GDD were left out: the reference "
            f"parcels gave fewer than {MIN_STAGE_ROWS} predictions there (parcels times dates). Predictions there use "
            f"the next stage fitted ({uses}), which was fitted on a later part of the season.")


def season_reach_note(gdd: np.ndarray, date_mask: np.ndarray, source: str) -> Optional[str]:
    """A warning where the parcels' season (the median GDD of their last valid dates) ends before the
    last stage bound: their whole-season calibration is then fitted on part of a season only."""
    reach = last_date_gdd(gdd, date_mask)
    reach = reach[np.isfinite(reach)]
    if not len(reach) or float(np.median(reach)) >= STAGE_BOUNDS[-1]:
        return None
    return (f"The season of {source} reaches only {float(np.median(reach)):,.0f} GDD (the parcels' median at their "
            f"last date), fewer than the {STAGE_BOUNDS[-1]:,.0f} from which a whole-season calibration holds: the "
            "calibration written as the whole season's was fitted on part of a season, and whole-season runs will "
            "use it. Give scenes up to the end of the season for a whole-season calibration.")


def fit_season_stages(probabilities: np.ndarray, labels: np.ndarray, gdd: np.ndarray, parcels: np.ndarray,
                      bounds: Sequence[float] = STAGE_BOUNDS, method: str = "temperature") -> tuple[SeasonStage, ...]:
    """The stages of held-out predictions cut at every date.

    With ``method="vector"`` each stage gets a temperature and class biases (vector scaling, its
    penalty chosen by folds of whole parcels); otherwise a temperature alone.

    Args:
        probabilities: ``(n, K)`` raw probabilities, one row per parcel and date it was cut at.
        labels: ``(n,)`` the true class indices (rows with -1 or NaN probabilities are left out).
        gdd: ``(n,)`` the GDD of the date each row was cut at.
        parcels: ``(n,)`` which parcel each row is of (counted per stage).
        bounds: the stages' upper GDD bounds, rising.
    """
    p = np.asarray(probabilities, dtype=np.float64)
    y = np.asarray(labels, dtype=np.int64)
    g = np.asarray(gdd, dtype=np.float64)
    usable = (y >= 0) & np.isfinite(p).all(axis=1) & np.isfinite(g)
    stages = []
    low = -np.inf
    for bound in bounds:
        rows = np.flatnonzero(usable & (g >= low) & (g < bound))
        low = bound
        if len(rows) < MIN_STAGE_ROWS:
            continue
        if method == "vector":
            temperature, bias, _ = fit_vector_scaling(p[rows], y[rows], groups=np.asarray(parcels)[rows])
            bias = tuple(round(float(b), 6) for b in bias)  # as stored
        else:
            temperature, bias = fit_temperature(p[rows], y[rows]), ()
        calibrated = apply_scaling(p[rows], temperature, bias).astype(np.float64)
        scores = np.sort(1.0 - calibrated[np.arange(len(rows)), y[rows]])
        if len(scores) > MAX_STAGE_SCORES:
            scores = np.quantile(scores, np.linspace(0.0, 1.0, MAX_STAGE_SCORES))
        stages.append(SeasonStage(float(bound), float(temperature), tuple(float(s) for s in scores),
                                  int(len(np.unique(np.asarray(parcels)[rows]))), bias))
    return tuple(stages)
