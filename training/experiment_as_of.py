"""The leave-one-region-out experiment scored as of points through the season: each run's model on
its held-out region as of ``N`` evenly spaced fractions of the region's season in growing degree
days, from one pass over the season's prefixes (``season_accuracy.accuracy_through_season``).
Writes ``as_of.csv`` (per run and cut), ``as_of_reached.csv`` (per run, when its macro F1 first
reaches 90 % of the whole season's), ``as_of.md`` (means over the held-out regions) and
``as_of.png``."""

from __future__ import annotations

import csv
import io
import logging
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Optional, Sequence

import numpy as np

from ..core.io.output import write_bytes, write_text
from .experiment import VARIANT_NAMES, region_name
from .season_accuracy import REACHED_SHARE, SeasonAccuracy, accuracy_through_season

log = logging.getLogger(__name__)

AS_OF_FILES = {"table": "as_of.csv", "reached": "as_of_reached.csv", "summary": "as_of.md", "figure": "as_of.png"}
"""The files :func:`write_as_of` writes into the experiment's folder, by kind."""


@dataclass
class RunAsOf:
    """One run's scores on its held-out region as of each cut.

    Attributes:
        variant, held_out: the run.
        fractions: ``(N,)`` the cuts as shares of the season's GDD (``i / N``, i = 1..N).
        gdd: ``(N,)`` the cuts' GDD (the share of the GDD of the region's last acquisition).
        acquisitions: ``(N,)`` acquisitions on or before each cut (the last one's GDD at or below
            the cut's; 0: none yet, every parcel counts as wrong).
        dates: ``(N,)`` datetime64[D] the last acquisition of each cut (NaT where none).
        overall_accuracy, macro_f1: ``(N,)``.
        season: the scores as of every acquisition they come from.
    """

    variant: str
    held_out: str
    fractions: np.ndarray
    gdd: np.ndarray
    acquisitions: np.ndarray
    dates: np.ndarray
    overall_accuracy: np.ndarray
    macro_f1: np.ndarray
    season: SeasonAccuracy

    def reached(self, share: float = REACHED_SHARE) -> tuple[float, np.datetime64, float]:
        """GDD, date and season share of the first acquisition whose macro F1 reaches ``share`` of
        the whole season's (the last acquisition's)."""
        season = self.season
        first = int(np.argmax(season.macro_f1 >= share * season.macro_f1[-1]))
        return float(season.gdd[first]), season.dates[first], float(season.gdd[first] / season.gdd[-1])


def cuts_of(season: SeasonAccuracy, steps: int, variant: str, held_out: str) -> RunAsOf:
    """The scores of ``season`` as of ``steps`` evenly spaced shares of its season GDD."""
    fractions = np.arange(1, steps + 1) / steps
    thresholds = fractions * float(season.gdd[-1])
    # The last cut is the whole season, whatever rounding does to its threshold.
    used = np.searchsorted(season.gdd, thresholds, side="right")
    used[-1] = len(season.gdd)
    seen = used > 0
    last = np.maximum(used - 1, 0)
    return RunAsOf(variant=variant, held_out=held_out, fractions=fractions, gdd=thresholds, acquisitions=used,
                   dates=np.where(seen, season.dates[last], np.datetime64("NaT")).astype("datetime64[D]"),
                   overall_accuracy=np.where(seen, season.overall_accuracy[last], 0.0),
                   macro_f1=np.where(seen, season.macro_f1[last], 0.0), season=season)


def score_runs_as_of(records: Sequence[dict[str, Any]], regions: Sequence[Path], out: Path, steps: int,
                     classes: Optional[Sequence[str]] = None) -> list[RunAsOf]:
    """Each finished run of ``records`` (``run_experiment``'s) scored on its held-out region as of
    ``steps`` cuts, from the model in ``out/<variant>/<region>/model.tcm``.

    Args:
        records: the runs (``variant``, ``held_out``).
        regions: the dataset folders, by which the held-out regions are found.
        out: the experiment's folder.
        steps: cuts through the season.
        classes: the experiment's chosen class list (its held-out parcels of other classes are
            left out, as in the whole-season score); None: every class must be the model's.
    """
    from ..core.model.bundle import load_bundle
    from ..core.pixel_sets import open_dataset

    by_name = {region_name(r): Path(r) for r in regions}
    scored = []
    for rec in records:
        held = by_name.get(rec["held_out"])
        if held is None:
            continue
        bundle = load_bundle(Path(out) / rec["variant"] / rec["held_out"] / "model.tcm")
        season = accuracy_through_season(bundle, open_dataset(held), unseen="drop" if classes else "error")
        scored.append(cuts_of(season, steps, rec["variant"], rec["held_out"]))
        log.info("%s held out %s: macro F1 as of %d cuts %s", rec["variant"], rec["held_out"], steps,
                 " ".join(f"{v:.2f}" for v in scored[-1].macro_f1))
    return scored


def _ordered(runs: Sequence[RunAsOf], variants: Sequence[str]) -> list[RunAsOf]:
    regions = sorted({r.held_out for r in runs})
    order = {v: i for i, v in enumerate(variants)}
    return sorted(runs, key=lambda r: (order.get(r.variant, len(order)), regions.index(r.held_out)))


def as_of_csv(runs: Sequence[RunAsOf]) -> str:
    """One row per run and cut: the cut's season share, GDD, last acquisition date, acquisitions
    used, OA and macro F1."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\r\n")
    writer.writerow(["variant", "held_out", "cut", "season_fraction", "gdd", "date", "acquisitions",
                     "overall_accuracy", "macro_f1"])
    for run in runs:
        for i, fraction in enumerate(run.fractions):
            day = "" if np.isnat(run.dates[i]) else str(run.dates[i])
            writer.writerow([run.variant, run.held_out, i + 1, f"{fraction:.4f}", f"{run.gdd[i]:.1f}", day,
                             int(run.acquisitions[i]), f"{run.overall_accuracy[i]:.4f}", f"{run.macro_f1[i]:.4f}"])
    return out.getvalue()


def reached_csv(runs: Sequence[RunAsOf], share: float = REACHED_SHARE) -> str:
    """One row per run: whole-season macro F1 and the GDD, date and season share at which its macro
    F1 first reaches ``share`` of it."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\r\n")
    pct = round(100 * share)
    writer.writerow(["variant", "held_out", "season_macro_f1", f"gdd_at_{pct}pct", f"date_at_{pct}pct",
                     f"season_fraction_at_{pct}pct"])
    for run in runs:
        gdd, day, fraction = run.reached(share)
        writer.writerow([run.variant, run.held_out, f"{run.season.macro_f1[-1]:.4f}", f"{gdd:.0f}", str(day),
                         f"{fraction:.3f}"])
    return out.getvalue()


def mean_by_variant(runs: Sequence[RunAsOf], variants: Sequence[str]) -> dict[str, dict[str, np.ndarray]]:
    """Per variant with runs: the mean over its held-out regions of OA and macro F1 at each cut,
    and of the season share at which macro F1 first reaches 90 % of the whole season's."""
    table = {}
    for v in variants:
        mine = [r for r in runs if r.variant == v]
        if mine:
            table[v] = {"overall_accuracy": np.mean([r.overall_accuracy for r in mine], axis=0),
                        "macro_f1": np.mean([r.macro_f1 for r in mine], axis=0),
                        "reached_fraction": np.mean([r.reached()[2] for r in mine]), "regions": len(mine)}
    return table


def summary_markdown(runs: Sequence[RunAsOf], variants: Sequence[str]) -> str:
    """Macro F1 / OA (%) per variant as of each cut, mean over the held-out regions, the season
    share at which macro F1 reaches 90 % of the whole season's, and each thermal variant's cuts
    below calendar PE."""
    table = mean_by_variant(runs, variants)
    if not table:
        return "No finished runs to score as of the season's cuts.\n"
    fractions = runs[0].fractions
    head = ["PE"] + [f"{100 * f:.0f} % GDD" for f in fractions] + [f"{100 * REACHED_SHARE:.0f} % of season F1 at"]
    lines = ["Leave-one-region-out as of shares of the held-out region's season GDD: macro F1 / OA (%), mean over "
             "the held-out regions (as_of.csv has each region, with the dates).", "",
             "| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for v, row in table.items():
        cells = [f"{100 * f1:.1f} / {100 * oa:.1f}" for f1, oa in zip(row["macro_f1"], row["overall_accuracy"])]
        lines.append("| " + " | ".join([VARIANT_NAMES.get(v, v), *cells,
                                        f"{100 * row['reached_fraction']:.0f} % GDD"]) + " |")
    if "calendar" in table:
        lines.append("")
        base = table["calendar"]["macro_f1"]
        for v, row in table.items():
            if v == "calendar":
                continue
            below = [f"{100 * f:.0f} %" for f, mine, cal in zip(fractions, row["macro_f1"], base) if mine < cal]
            lines.append(f"- {VARIANT_NAMES.get(v, v)}: " + ("at or above Calendar PE at every cut" if not below
                                                            else "below Calendar PE at " + ", ".join(below)))
    return "\n".join(lines) + "\n"


def plot_as_of(runs: Sequence[RunAsOf]) -> bytes:
    """Macro F1 (solid) and OA (dashed) per variant as of each cut, one row per held-out region,
    against the date and against GDD, as PNG bytes."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    regions = sorted({r.held_out for r in runs})
    variants = list(dict.fromkeys(r.variant for r in runs))
    colours = {v: f"C{i}" for i, v in enumerate(variants)}
    fig, axes = plt.subplots(len(regions), 2, figsize=(11, 2.8 * len(regions) + 0.6), squeeze=False, sharey=True)
    for row, region in zip(axes, regions):
        for run in (r for r in runs if r.held_out == region):
            seen = ~np.isnat(run.dates)
            for ax, x in ((row[0], run.dates[seen].astype(object)), (row[1], run.gdd[seen])):
                ax.plot(x, run.macro_f1[seen], "o-", color=colours[run.variant],
                        label=f"{VARIANT_NAMES.get(run.variant, run.variant)} macro F1")
                ax.plot(x, run.overall_accuracy[seen], "--", color=colours[run.variant], alpha=0.6)
        row[0].set_ylabel(f"{region} held out")
        for ax in row:
            ax.grid(alpha=0.3)
            ax.set_ylim(0, 1)
    axes[-1, 0].set_xlabel("as of (last acquisition)")
    axes[-1, 1].set_xlabel("GDD since season start")
    axes[0, 0].legend(loc="lower right", fontsize=8)
    fig.autofmt_xdate()
    fig.suptitle("held-out regions as of shares of their season (solid: macro F1, dashed: OA)")
    fig.tight_layout()
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=100)
    plt.close(fig)
    return buffer.getvalue()


def write_as_of(runs: Sequence[RunAsOf], variants: Sequence[str], out: Path) -> dict[str, Path]:
    """(Re)write the as-of files (:data:`AS_OF_FILES`) into the experiment's folder ``out``;
    their paths by kind."""
    runs = _ordered(runs, variants)
    paths = {kind: Path(out) / name for kind, name in AS_OF_FILES.items()}
    write_text(paths["table"], as_of_csv(runs), overwrite=True, what="as-of table")
    write_text(paths["reached"], reached_csv(runs), overwrite=True, what="as-of 90 % table")
    write_text(paths["summary"], summary_markdown(runs, variants), overwrite=True, what="as-of summary")
    write_bytes(paths["figure"], plot_as_of(runs), overwrite=True, what="as-of figure")
    return paths
