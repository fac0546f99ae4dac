"""What training and evaluation both need to know about their datasets: that they can be used
together (bands, GDD settings), the class list a model gets and each dataset's labels moved onto
it, and the deterministic train / validation / test split by spatial block.

``train`` and ``evaluate`` import from here (and from ``predict``); neither imports the other.
"""

from __future__ import annotations

import logging
from typing import Any, Optional, Sequence

import numpy as np

from ..core.errors import DatasetError
from ..core.pixel_sets import PixelSets
from .sampling import usable_parcels

log = logging.getLogger(__name__)

SPLIT_FRACTIONS = (0.7, 0.1, 0.2)


def check_bands(datasets: Sequence[PixelSets], what: str = "training") -> tuple[str, ...]:
    """The bands every dataset shares.

    Raises:
        DatasetError: no datasets, or datasets with different bands.
    """
    if not datasets:
        raise DatasetError(f"No {what} datasets given.")
    bands = tuple(datasets[0].bands)
    for ps in datasets:
        if tuple(ps.bands) != bands:
            raise DatasetError(f"{ps.name}: bands {list(ps.bands)} differ from {list(bands)} of {datasets[0].name}; "
                               "extract every dataset with the same bands.")
    return bands


def model_classes(datasets: Sequence[PixelSets], classes: Optional[Sequence[str]] = None) -> tuple[str, ...]:
    """The class list of a model trained on ``datasets``.

    Args:
        datasets: the training pixel sets.
        classes: a chosen list (kept in its order); None takes the union of the datasets' class
            lists, sorted.

    Raises:
        DatasetError: a dataset without classes, or a chosen list that is empty or repeats a name.
    """
    for ps in datasets:
        if not ps.classes:
            raise DatasetError(f"{ps.name} has no class list; extract it with --label-field.")
    if classes is None:
        return tuple(sorted({c for ps in datasets for c in ps.classes}))
    chosen = tuple(str(c).strip() for c in classes)
    if not chosen or any(not c for c in chosen):
        raise DatasetError("The chosen class list is empty or has an empty name.")
    repeated = sorted({c for c in chosen if chosen.count(c) > 1})
    if repeated:
        raise DatasetError(f"The chosen class list names {repeated} more than once.")
    return chosen


def align_classes(datasets: Sequence[PixelSets], classes: Sequence[str], unseen: str = "error"
                  ) -> list[PixelSets]:
    """Each dataset with its labels moved onto ``classes`` (see ``PixelSets.relabel``).

    Args:
        datasets: pixel sets, each with its own class list.
        classes: the model's class list.
        unseen: ``"error"`` refuses parcels of classes outside ``classes`` (naming them and the
            dataset), ``"drop"`` leaves them out.
    """
    return [ps.relabel(classes, unseen=unseen) for ps in datasets]


def unseen_classes(datasets: Sequence[PixelSets], classes: Sequence[str]) -> dict[str, int]:
    """``{class: parcels}`` of the datasets' usable labelled parcels whose class is not in ``classes``."""
    known, out = set(classes), {}
    for ps in datasets:
        for c, n in ps.class_counts().items():
            if n and c not in known:
                out[c] = out.get(c, 0) + n
    return dict(sorted(out.items()))


def gdd_settings(datasets: Sequence[PixelSets]) -> dict[str, Any]:
    """The GDD settings the datasets were extracted with, for the bundle, so that
    classification computes thermal time the way the training data did.

    Raises:
        DatasetError: datasets extracted with different settings.
    """
    from ..core.thermal.gdd import SeasonStart

    found = []
    for ps in datasets:
        meta = ps.meta or {}
        start = str(meta.get("season_start") or "01-01")
        try:
            start = str(SeasonStart.parse(start))
        except ValueError:
            raise DatasetError(f"{ps.name}: its season start {start!r} cannot be read; extract it again.") from None
        found.append({"t_base": float(meta.get("t_base", 0.0)), "t_cap": float(meta.get("t_cap", 30.0)),
                      "method": str(meta.get("gdd_method", "paper")), "season_start": start})
    for other in found[1:]:
        if other != found[0]:
            raise DatasetError(f"The datasets were extracted with different GDD settings ({found[0]} and "
                               f"{other}); extract them with the same season start, base, cap and method.")
    return found[0]


def check_model_gdd(bundle: Any, datasets: Sequence[PixelSets], name: str = "") -> None:
    """Refuse datasets extracted with other GDD settings than ``bundle`` computes thermal time
    with (season start, base, cap, method): scored or calibrated on them, the model would see
    thermal times it never met, and say nothing.

    Raises:
        DatasetError: naming both settings.
    """
    found = gdd_settings(datasets)
    model = {key: bundle.config.gdd.get(key) for key in found}
    if model != found:
        raise DatasetError(f"The datasets were extracted with the GDD settings {found}; the model"
                           f"{' ' + name if name else ''} uses {bundle.config.gdd}. Extract them again with the "
                           "model's settings.")


def split_blocks(datasets: Sequence[PixelSets], num_classes: int, seed: int = 0,
                 fractions: tuple[float, float, float] = SPLIT_FRACTIONS
                 ) -> list[tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """Train / validation / test rows by spatial block, deterministic for a seed.

    The (dataset, block) pairs are shuffled with ``seed`` and cut by ``fractions`` (at least
    one block each for validation and test, none for test when its fraction is 0); parcels
    without a block (-1) train. With fewer
    than three blocks the parcels themselves are split, and a warning says so.

    Returns:
        Per dataset, ``(train_rows, val_rows, test_rows)`` of usable parcels.
    """
    usable = [usable_parcels(ps, num_classes) for ps in datasets]
    keys = sorted({(d, int(b)) for d, ps in enumerate(datasets)
                   for b in np.unique(np.asarray(ps.blocks)[usable[d]]) if b >= 0})
    rng = np.random.default_rng(seed)
    out = []
    if len(keys) >= 3:
        order = [keys[i] for i in rng.permutation(len(keys))]
        n_val = max(1, round(fractions[1] * len(keys)))
        n_test = max(1, round(fractions[2] * len(keys))) if fractions[2] > 0 else 0
        val, test = set(order[:n_val]), set(order[n_val:n_val + n_test])
        for d, ps in enumerate(datasets):
            rows = usable[d]
            blocks = np.asarray(ps.blocks)[rows]
            in_val = np.array([(d, int(b)) in val for b in blocks], dtype=bool)
            in_test = np.array([(d, int(b)) in test for b in blocks], dtype=bool)
            out.append((rows[~in_val & ~in_test], rows[in_val], rows[in_test]))
        return out
    names = ", ".join(sorted({ps.name for ps in datasets}))
    log.warning("%s: %d spatial block(s), fewer than three, so parcels are split into training, validation and "
                "test at random; neighbouring parcels then fall on both sides and the scores come out "
                "optimistic. Give the parcels blocks when extracting: a field of block numbers (thermocrop "
                "extract --block-field FIELD; in QGIS a field named 'block') or a grid (thermocrop extract "
                "--block-size-km 10 for 10 km cells).", names, len(keys))
    for rows in usable:
        perm = rows[rng.permutation(len(rows))]
        a = int(round(fractions[0] * len(rows)))
        b = a + max(1, int(round(fractions[1] * len(rows)))) if fractions[2] > 0 else len(rows)
        out.append((np.sort(perm[:a]), np.sort(perm[a:b]), np.sort(perm[b:])))
    return out
