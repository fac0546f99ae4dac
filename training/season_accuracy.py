"""Accuracy through the season: a model's scores on a labelled dataset as of each acquisition,
from one pass over the season's prefixes (``ModelBundle.predict_prefixes``), against the date and
the growing degree days; per class, the GDD at which its F1 first reaches 90 % of its
whole-season value."""

from __future__ import annotations

import csv
import io
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Optional, Sequence, Union

import numpy as np

from ..core.errors import DatasetError
from ..core.io.output import check_output, write_bytes, write_text
from ..core.model.bundle import ModelBundle
from ..core.pixel_sets import PixelSets
from .datasets import align_classes
from .sampling import usable_parcels

REACHED_SHARE = 0.9
"""A class counts as recognised once its F1 reaches this share of its whole-season F1."""


@dataclass
class SeasonAccuracy:
    """Scores as of each acquisition.

    Attributes:
        dates: ``(T,)`` datetime64[D] the acquisitions.
        gdd: ``(T,)`` the scored parcels' median GDD on each.
        overall_accuracy, macro_f1: ``(T,)``.
        f1: ``(T, K)`` per class (NaN for a class absent from the reference).
        classes: the K class names.
        parcels: how many parcels were scored (a parcel not yet seen on a date counts as wrong).
    """

    dates: np.ndarray
    gdd: np.ndarray
    overall_accuracy: np.ndarray
    macro_f1: np.ndarray
    f1: np.ndarray
    classes: tuple
    parcels: int

    def reached(self, share: float = REACHED_SHARE) -> dict[str, Optional[float]]:
        """Class -> the GDD of the first acquisition whose F1 reaches ``share`` of the whole
        season's (the last acquisition's); None where the class is absent or its whole-season F1 is 0."""
        out: dict[str, Optional[float]] = {}
        for k, name in enumerate(self.classes):
            final = self.f1[-1, k]
            if not np.isfinite(final) or final <= 0:
                out[name] = None
                continue
            first = int(np.argmax(self.f1[:, k] >= share * final))
            out[name] = float(self.gdd[first])
        return out

    def never_right(self) -> list[str]:
        """The classes with reference parcels whose whole-season F1 is 0: none of their parcels was
        named right (``reached`` gives them no GDD, as it gives none to classes without parcels)."""
        return [name for k, name in enumerate(self.classes) if self.f1[-1, k] == 0]

    def overall_reached(self, share: float = REACHED_SHARE) -> Optional[int]:
        """The index of the first acquisition whose OA reaches ``share`` of the whole season's;
        None where the whole-season OA is 0."""
        final = self.overall_accuracy[-1]
        if not np.isfinite(final) or final <= 0:
            return None
        return int(np.argmax(self.overall_accuracy >= share * final))

    def table_csv(self) -> str:
        """One row per acquisition: date, GDD, OA, macro F1 and each present class's F1."""
        present = [k for k in range(len(self.classes)) if np.isfinite(self.f1[:, k]).all()]
        out = io.StringIO()
        writer = csv.writer(out, lineterminator="\r\n")
        writer.writerow(["date", "gdd", "overall_accuracy", "macro_f1", *[f"f1_{self.classes[k]}" for k in present]])
        for t, day in enumerate(self.dates):
            writer.writerow([str(day), f"{self.gdd[t]:.1f}", f"{self.overall_accuracy[t]:.4f}",
                             f"{self.macro_f1[t]:.4f}", *[f"{self.f1[t, k]:.4f}" for k in present]])
        return out.getvalue()

    def classes_csv(self, share: float = REACHED_SHARE) -> str:
        """One row per class: its whole-season F1 and the GDD at which it first reached ``share`` of it."""
        out = io.StringIO()
        writer = csv.writer(out, lineterminator="\r\n")
        writer.writerow(["class", "season_f1", f"gdd_at_{round(100 * share)}pct"])
        for k, (name, gdd) in enumerate(self.reached(share).items()):
            if np.isfinite(self.f1[-1, k]):
                writer.writerow([name, f"{self.f1[-1, k]:.4f}", "" if gdd is None else f"{gdd:.0f}"])
        return out.getvalue()


def f1_scores(truth: np.ndarray, predicted: np.ndarray, k: int) -> np.ndarray:
    """``(K,)`` F1 per class, NaN for a class absent from ``truth``; ``predicted`` -1 (no
    prediction) counts against its parcel's class."""
    f1 = np.full(k, np.nan)
    for c in range(k):
        ref, pred = truth == c, predicted == c
        if not ref.any():
            continue
        tp = float((ref & pred).sum())
        f1[c] = 2 * tp / (ref.sum() + pred.sum())
    return f1


def macro_f1_score(truth: np.ndarray, predicted: np.ndarray, k: int) -> float:
    """Macro F1 over the classes of ``truth``; a class predicted but absent from ``truth`` has F1 0
    and is counted too (as ``metrics.scores`` does); ``predicted`` -1 (no prediction) is wrong."""
    f1 = f1_scores(truth, predicted, k)
    absent_predicted = sum(1 for c in range(k) if not np.isfinite(f1[c]) and (predicted == c).any())
    return float(np.concatenate([f1[np.isfinite(f1)], np.zeros(absent_predicted)]).mean())


def accuracy_through_season(bundle: ModelBundle, ps: PixelSets, *, unseen: str = "error",
                            batch_size: int = 256) -> SeasonAccuracy:
    """Scores of ``bundle`` on the labelled parcels of ``ps`` as of each of its acquisitions.

    Args:
        bundle: the model.
        ps: a labelled dataset (its labels are moved onto the model's classes by name).
        unseen: parcels of classes the model does not have: ``"error"`` or ``"drop"``.
        batch_size: parcels per model call.

    Raises:
        DatasetError: no labelled parcel with status ``ok``.
    """
    classes = tuple(bundle.classes)
    ps = align_classes([ps], classes, unseen=unseen)[0]
    rows = np.sort(usable_parcels(ps, len(classes)))
    if len(rows) == 0:
        raise DatasetError(f"{ps.name}: no labelled parcels with status 'ok' to score.")
    sub = ps.subset(rows)
    prefixes = bundle.predict_prefixes(sub, batch_size=batch_size)
    truth = np.asarray(sub.labels).astype(np.int64)
    seen = np.isfinite(prefixes).all(axis=2)
    predicted = np.where(seen, np.nan_to_num(prefixes, nan=-1.0).argmax(axis=2), -1)
    f1 = np.stack([f1_scores(truth, predicted[:, t], len(classes)) for t in range(prefixes.shape[1])])
    macro = np.array([macro_f1_score(truth, predicted[:, t], len(classes)) for t in range(prefixes.shape[1])])
    return SeasonAccuracy(dates=np.asarray(sub.dates, dtype="datetime64[D]"),
                          gdd=np.nanmedian(np.asarray(sub.gdd, dtype=np.float64), axis=0),
                          overall_accuracy=(predicted == truth[:, None]).mean(axis=0), macro_f1=macro, f1=f1,
                          classes=classes, parcels=len(rows))


def plot_season_accuracy(accuracy: SeasonAccuracy, title: str = "") -> bytes:
    """OA and macro F1 as of each acquisition, against the date and against GDD, as PNG bytes."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(11, 4.2), sharey=True)
    dates = accuracy.dates.astype("datetime64[D]").astype(object)
    for ax, x, label in ((axes[0], dates, "acquisition date"), (axes[1], accuracy.gdd, "GDD since season start")):
        ax.plot(x, accuracy.overall_accuracy, "o-", label="overall accuracy")
        ax.plot(x, accuracy.macro_f1, "s-", label="macro F1")
        ax.set_xlabel(label)
        ax.grid(alpha=0.3)
    axes[0].set_ylabel("score as of the acquisition")
    axes[0].set_ylim(0, 1)
    axes[0].legend(loc="lower right")
    fig.autofmt_xdate()
    fig.suptitle(title or f"accuracy through the season ({accuracy.parcels} parcels)")
    fig.tight_layout()
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=100)
    plt.close(fig)
    return buffer.getvalue()


def season_accuracy_paths(out: Union[str, Path]) -> dict[str, Path]:
    """The files :func:`write_season_accuracy` writes into the folder ``out``, by kind."""
    out = Path(out)
    return {"table": out / "inseason.csv", "classes": out / "inseason_classes.csv", "figure": out / "inseason.png"}


def check_season_accuracy_out(out: Union[str, Path], *, overwrite: bool = False, inputs: Sequence[Any] = ()) -> None:
    """Refuse, before any work, an ``out`` that is not a folder, holds the files of an earlier run
    without ``overwrite``, or is one of ``inputs``.

    Raises:
        OutputError: naming the file or folder.
    """
    inputs = [p for p in inputs if isinstance(p, (str, Path))]
    if Path(out).is_dir():
        for path in season_accuracy_paths(out).values():
            check_output(path, what="in-season output", overwrite=overwrite, inputs=inputs)
    else:
        check_output(out, what="in-season folder", kind="folder", inputs=inputs)


def write_season_accuracy(accuracy: SeasonAccuracy, out: Union[str, Path], *, overwrite: bool = False,
                          title: str = "") -> dict[str, Any]:
    """Write ``inseason.csv`` (per acquisition), ``inseason_classes.csv`` (per class) and
    ``inseason.png`` into the folder ``out``; their paths by kind."""
    paths = season_accuracy_paths(out)
    Path(out).mkdir(parents=True, exist_ok=True)
    write_text(paths["table"], accuracy.table_csv(), overwrite=overwrite, what="in-season table")
    write_text(paths["classes"], accuracy.classes_csv(), overwrite=overwrite, what="in-season class table")
    write_bytes(paths["figure"], plot_season_accuracy(accuracy, title), overwrite=overwrite, what="in-season figure")
    return paths
