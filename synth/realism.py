"""How close synthetic regions come to real parcels: per class and band, the quartiles of the
parcel-mean reflectance (and NDVI, NDWI) in bins of growing degree days, side by side, and one
distance per class and band.

Both sides are labelled datasets (``thermocrop extract`` of synthetic regions, ``thermocrop
import table`` of real per-parcel tables) of the same processing level. Each parcel and date
gives one observation: the mean of its valid pixels, so pixel sets and per-parcel means
compare directly. Observations bright in both blue and SWIR (clouds; snow is dark in the SWIR)
are left out on both sides, and their share is reported.
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional, Sequence

import numpy as np

from ..core.errors import InputError
from ..core.io.output import staged_file, write_text
from ..core.pixel_sets import PixelSets

log = logging.getLogger(__name__)

FEATURES = ("B02", "B03", "B04", "B05", "B06", "B07", "B08", "B8A", "B11", "B12", "NDVI", "NDWI")
"""What is compared: the ten bands (reflectance) and two indices."""
CLOUD_B02, CLOUD_B11 = 0.2, 0.2
"""An observation brighter than both in reflectance is taken for a cloud."""
MERGE_GDD = 50.0
"""Real dates closer than this in thermal time share one bin."""
QUARTILES = (25.0, 50.0, 75.0)


@dataclass
class Observations:
    """Parcel-mean observations of one side.

    Attributes:
        gdd: ``(N,)`` growing degree days of each observation.
        values: ``(N, F)`` the ``FEATURES`` of each observation.
        classes: ``(N,)`` class name of its parcel.
        parcels: number of parcels per class.
        screened: share of observations taken for clouds and left out.
        levels: processing levels of the datasets.
    """

    gdd: np.ndarray
    values: np.ndarray
    classes: np.ndarray
    parcels: dict[str, int] = field(default_factory=dict)
    screened: float = 0.0
    levels: tuple[str, ...] = ()


@dataclass
class Realism:
    """The comparison.

    Attributes:
        classes: the classes compared (enough real parcels, present on both sides).
        edges: ``(K + 1,)`` GDD bin edges.
        real: per class, ``(K, F, 3)`` quartiles of the real side (NaN where too few).
        synthetic: per class, the same for the synthetic side.
        distance: ``(C, F)`` mean over the bins both sides fill of the mean absolute
            difference of the three quartiles (reflectance or index units).
        counts: per class, ``(K, 2)`` real and synthetic observations per bin.
        real_info, synthetic_info: parcels per class, screened share, levels.
    """

    classes: list[str]
    edges: np.ndarray
    real: dict[str, np.ndarray]
    synthetic: dict[str, np.ndarray]
    distance: np.ndarray
    counts: dict[str, np.ndarray]
    real_info: dict[str, Any]
    synthetic_info: dict[str, Any]

    def to_json(self) -> dict[str, Any]:
        def clean(a: np.ndarray) -> Any:
            return [None if not np.isfinite(v) else round(float(v), 5) for v in a.ravel()] \
                if a.ndim == 1 else [clean(x) for x in a]

        return {
            "features": list(FEATURES), "quartiles": list(QUARTILES),
            "gdd_bin_edges": [round(float(e), 1) for e in self.edges],
            "classes": self.classes,
            "distance": {c: dict(zip(FEATURES, clean(self.distance[i])))
                         for i, c in enumerate(self.classes)},
            "mean_distance": dict(zip(FEATURES, clean(np.nanmean(self.distance, axis=0)))),
            "real": {c: clean(self.real[c]) for c in self.classes},
            "synthetic": {c: clean(self.synthetic[c]) for c in self.classes},
            "observations_per_bin": {c: self.counts[c].tolist() for c in self.classes},
            "real_info": self.real_info, "synthetic_info": self.synthetic_info,
        }


def parcel_observations(datasets: Sequence[PixelSets]) -> Observations:
    """The parcel-mean observations of labelled datasets (unlabelled parcels are skipped).

    Raises:
        InputError: a dataset without labels or without the ten bands.
    """
    gdd, values, classes, parcels, screened, total, levels = [], [], [], {}, 0, 0, set()
    for ps in datasets:
        source = ps.meta.get("source", "a dataset")
        if not ps.classes:
            raise InputError(f"{source} has no class names; give a labelled dataset "
                             "(extract or import it with a label field).")
        missing = [b for b in FEATURES[:10] if b not in ps.bands]
        if missing:
            raise InputError(f"{source} lacks the bands {missing}; the comparison needs all ten.")
        levels.update(ps.meta.get("levels", []))
        bands = [list(ps.bands).index(b) for b in FEATURES[:10]]
        labels = np.asarray(ps.labels).astype(np.int64)
        rows = np.flatnonzero((labels >= 0) & (np.asarray(ps.status) == "ok"))
        names = np.asarray(ps.classes)
        for start in range(0, len(rows), 512):
            chunk = rows[start:start + 512]
            pix = np.asarray(ps.pixels[chunk])[:, :, bands].astype(np.float64) / 10000.0
            mask = np.asarray(ps.pixel_mask[chunk], dtype=bool) & \
                np.asarray(ps.date_mask[chunk], dtype=bool)[:, :, None]
            n = mask.sum(axis=2)
            mean = (pix * mask[:, :, None, :]).sum(axis=3) / np.maximum(n, 1)[:, :, None]
            seen = n > 0
            cloud = seen & (mean[..., 0] > CLOUD_B02) & (mean[..., 8] > CLOUD_B11)
            screened += int(cloud.sum())
            total += int(seen.sum())
            keep = seen & ~cloud
            m = mean[keep]
            with np.errstate(invalid="ignore", divide="ignore"):
                ndvi = (m[:, 6] - m[:, 2]) / (m[:, 6] + m[:, 2])
                ndwi = (m[:, 6] - m[:, 8]) / (m[:, 6] + m[:, 8])
            values.append(np.column_stack([m, ndvi, ndwi]))
            gdd.append(np.asarray(ps.gdd[chunk], dtype=np.float64)[keep])
            classes.append(np.broadcast_to(names[labels[chunk]][:, None], keep.shape)[keep])
        for name, count in zip(*np.unique(names[labels[rows]], return_counts=True)):
            parcels[str(name)] = parcels.get(str(name), 0) + int(count)
    if not values:
        raise InputError("No datasets to compare.")
    return Observations(np.concatenate(gdd), np.concatenate(values), np.concatenate(classes),
                        parcels, screened / max(total, 1), tuple(sorted(levels)))


def gdd_bins(real: Observations, merge: float = MERGE_GDD) -> np.ndarray:
    """Bin edges in GDD around the real observations: one bin per group of real dates.

    The centres are the distinct real GDD values (rounded to whole degree days) merged while
    closer than ``merge``; edges lie half-way between neighbouring centres, and the outer bins
    are as wide on their outer side as on their inner one.
    """
    values = np.unique(np.round(real.gdd))
    if len(values) == 0:
        raise InputError("The real dataset has no observation to compare with.")
    groups = [[values[0]]]
    for v in values[1:]:
        if v - groups[-1][-1] < merge:
            groups[-1].append(v)
        else:
            groups.append([v])
    if len(groups) > 40:
        # Many distinct dates (per-parcel weather): fixed bins of the merge width instead.
        lo, hi = float(values[0]), float(values[-1])
        return np.arange(np.floor(lo / 250) * 250, hi + 250, 250.0)
    centres = np.array([np.mean(g) for g in groups])
    lows = np.array([g[0] for g in groups])
    highs = np.array([g[-1] for g in groups])
    inner = (highs[:-1] + lows[1:]) / 2.0
    if len(centres) == 1:
        return np.array([max(0.0, lows[0] - merge), highs[0] + merge])
    first = max(0.0, lows[0] - (inner[0] - highs[0]))
    last = highs[-1] + (lows[-1] - inner[-1])
    return np.concatenate([[first], inner, [last]])


def _quartiles(obs: Observations, name: str, edges: np.ndarray, min_count: int
               ) -> tuple[np.ndarray, np.ndarray]:
    sel = obs.classes == name
    g, v = obs.gdd[sel], obs.values[sel]
    k = len(edges) - 1
    out = np.full((k, len(FEATURES), len(QUARTILES)), np.nan)
    counts = np.zeros(k, dtype=np.int64)
    which = np.searchsorted(edges, g, side="right") - 1
    for b in range(k):
        rows = v[which == b]
        counts[b] = len(rows)
        if len(rows) >= min_count:
            with np.errstate(invalid="ignore"):
                out[b] = np.nanpercentile(rows, QUARTILES, axis=0).T
    return out, counts


def compare(real: Observations, synthetic: Observations, min_parcels: int = 5,
            min_count: int = 3, edges: Optional[np.ndarray] = None) -> Realism:
    """Quartiles per class, bin and feature on both sides, and the distances.

    Args:
        real: real observations.
        synthetic: synthetic observations.
        min_parcels: classes with fewer real parcels are left out.
        min_count: bins with fewer observations on a side are not compared.
        edges: GDD bin edges; default ``gdd_bins(real)``.

    Raises:
        InputError: different processing levels, or no class to compare.
    """
    if real.levels and synthetic.levels and set(real.levels) != set(synthetic.levels):
        raise InputError(
            f"The real data are of level {', '.join(real.levels)} and the synthetic of "
            f"{', '.join(synthetic.levels)}; compare at one level (generate L1C regions with "
            "'thermocrop synth --level L1C' to compare with L1C data).")
    classes = sorted(c for c, n in real.parcels.items()
                     if n >= min_parcels and synthetic.parcels.get(c, 0) > 0)
    if not classes:
        raise InputError(f"No class has {min_parcels} real parcels and synthetic parcels too; "
                         f"real: {real.parcels}, synthetic: {synthetic.parcels}.")
    edges = gdd_bins(real) if edges is None else np.asarray(edges, dtype=np.float64)
    rq, sq, counts = {}, {}, {}
    distance = np.full((len(classes), len(FEATURES)), np.nan)
    for i, name in enumerate(classes):
        rq[name], rc = _quartiles(real, name, edges, min_count)
        sq[name], sc = _quartiles(synthetic, name, edges, min_count)
        counts[name] = np.stack([rc, sc], axis=1)
        diff = np.abs(rq[name] - sq[name]).mean(axis=2)  # (K, F)
        both = np.isfinite(diff).all(axis=1)
        if both.any():
            distance[i] = diff[both].mean(axis=0)
    info = [{"parcels": o.parcels, "observations": int(len(o.gdd)), "cloud_screened": round(o.screened, 4),
             "levels": list(o.levels)} for o in (real, synthetic)]
    return Realism(classes, edges, rq, sq, distance, counts, info[0], info[1])


def format_table(result: Realism) -> str:
    """Markdown table of the distances: reflectance bands in reflectance x 100, indices x 100."""
    head = ["class"] + list(FEATURES)
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    rows = list(zip(result.classes, result.distance)) + [("mean", np.nanmean(result.distance, axis=0))]
    for name, d in rows:
        lines.append("| " + " | ".join([name] + [f"{100 * v:.1f}" if np.isfinite(v) else "-"
                                                 for v in d]) + " |")
    return "\n".join(lines) + "\n"


def plot_realism(result: Realism, png: Path, title: str = "") -> Path:
    """Per class a panel: real and synthetic median NDVI and SWIR (B11) against GDD, with
    their inter-quartile bands."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    n = len(result.classes)
    cols = min(4, n)
    rows = int(np.ceil(n / cols))
    fig, axes = plt.subplots(rows, cols, figsize=(3.6 * cols, 2.9 * rows), sharex=True, sharey=True,
                             squeeze=False)
    mid = (result.edges[:-1] + result.edges[1:]) / 2.0
    styles = {"NDVI": "#2e7d32", "B11": "#8d5524"}
    for ax, name in zip(axes.ravel(), result.classes):
        for feature, colour in styles.items():
            f = FEATURES.index(feature)
            for side, q, line in (("real", result.real[name], "-"),
                                  ("synthetic", result.synthetic[name], "--")):
                ok = np.isfinite(q[:, f, 1])
                ax.plot(mid[ok], q[ok, f, 1], line, color=colour, lw=1.6,
                        marker="o" if side == "real" else None, ms=3,
                        label=f"{side} {'SWIR B11' if feature == 'B11' else feature}")
                ax.fill_between(mid[ok], q[ok, f, 0], q[ok, f, 2], color=colour,
                                alpha=0.22 if side == "real" else 0.1,
                                hatch=None if side == "real" else "//", lw=0)
        i = result.classes.index(name)
        ax.set_title(f"{name} (NDVI {100 * result.distance[i, 10]:.0f}, "
                     f"B11 {100 * result.distance[i, 8]:.0f})", fontsize=9)
        ax.grid(alpha=0.3)
        ax.set_ylim(-0.1, 0.95)
    for ax in axes.ravel()[n:]:
        ax.axis("off")
    for ax in axes[-1]:
        ax.set_xlabel("growing degree days since season start")
    handles, labels = axes.ravel()[0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="lower right" if n < rows * cols else "upper center",
               ncol=2 if n < rows * cols else 4, fontsize=8, frameon=False,
               bbox_to_anchor=(0.98, 0.05) if n < rows * cols else (0.5, 1.0))
    if title:
        fig.suptitle(title, fontsize=10, y=1.02 if n >= rows * cols else 0.99)
    fig.tight_layout()
    png = Path(png)
    png.parent.mkdir(parents=True, exist_ok=True)
    try:
        with staged_file(png, what="figure") as tmp:
            fig.savefig(tmp, dpi=110, bbox_inches="tight")
    finally:
        plt.close(fig)
    return png


def write_report(result: Realism, out: Path) -> dict[str, Path]:
    """``realism.json`` and ``realism.md`` (the distance table) in ``out``."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    paths = {"json": out / "realism.json", "table": out / "realism.md"}
    write_text(paths["json"], json.dumps(result.to_json(), indent=1), what="realism scores")
    write_text(paths["table"], "Distance between synthetic and real parcel-mean observations per class and feature: "
               "mean over GDD bins of the mean absolute difference of the quartiles (x 100: reflectance percent, "
               "index hundredths).\n\n" + format_table(result), what="realism table")
    return paths
