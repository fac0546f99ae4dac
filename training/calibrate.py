"""Calibrating a model on labelled datasets (pixel-set folders from ``extract`` or an importer):
the same fit as on a reference layer (``app.calibration_run``) where the parcels are already
extracted, e.g. imported per-parcel tables."""

from __future__ import annotations

import logging
from typing import Optional, Sequence

import numpy as np

from ..core.model.bundle import ModelBundle
from ..core.model.calibration import Calibration, fit_calibration
from ..core.parcels import labelled_names
from ..core.pixel_sets import STATUS_OK, PixelSets
from .datasets import check_model_gdd

log = logging.getLogger(__name__)


def dataset_labels(bundle: ModelBundle, ps: PixelSets) -> np.ndarray:
    """The labels of ``ps`` as indices into ``bundle``'s classes; -1 for unlabelled parcels, parcels
    whose class the model does not know and parcels that are not ``ok``."""
    known = {c: i for i, c in enumerate(bundle.classes)}
    names = list(ps.classes)
    labels = np.asarray(ps.labels)
    out = np.full(len(ps), -1, dtype=np.int64)
    for i, (label, status) in enumerate(zip(labels, np.asarray(ps.status))):
        if label >= 0 and status == STATUS_OK:
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
                          method: str = "temperature") -> Calibration:
    """A calibration of ``bundle`` fitted by ``method`` (``"temperature"`` or ``"vector"``) on the
    labelled parcels of ``datasets`` (``rows`` of each, or all of them).

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
    return fit_calibration(np.concatenate(probabilities), np.concatenate(labels), source, method=method)
