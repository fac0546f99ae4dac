"""The reliability diagram of an accuracy report: the share of right labels in each confidence
bin against the bin's mean confidence, with the diagonal a calibrated map would follow, as PNG."""

from __future__ import annotations

import io
import logging
import math
from typing import Optional

from .accuracy_stats import Reliability

log = logging.getLogger(__name__)


def reliability_png(table: Reliability, dpi: int = 96) -> Optional[bytes]:
    """The diagram of ``table`` as PNG bytes: bars of accuracy per bin, dots at the bins' mean
    confidence, the diagonal and the expected calibration error in the title; None where
    matplotlib is not installed (the report then gives the table alone)."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        from matplotlib.figure import Figure
    except ImportError:
        log.info("matplotlib is not installed: the accuracy report has no reliability diagram")
        return None
    figure = Figure(figsize=(3.4, 3.5), dpi=dpi)
    axes = figure.add_subplot(1, 1, 1)
    filled = [row for row in table.bins if row["parcels"]]
    width = filled[0]["high"] - filled[0]["low"] if filled else 0.1
    axes.bar([row["low"] for row in filled], [row["accuracy"] for row in filled], width=width, align="edge",
             color="#4c78a8", edgecolor="#2f4b6e", label="share right")
    axes.plot([row["confidence"] for row in filled], [row["accuracy"] for row in filled], "o", color="#e45756",
              markersize=4, label="share right at the mean confidence")
    axes.plot([0, 1], [0, 1], "--", color="#555555", linewidth=1, label="calibrated")
    axes.set_xlim(0, 1)
    axes.set_ylim(0, 1)
    axes.set_xlabel("confidence")
    axes.set_ylabel("share of labels right")
    ece = "n/a" if not math.isfinite(table.ece) else f"{table.ece:.3f}"
    axes.set_title(f"Reliability ({table.units} units), ECE {ece}", fontsize=10)
    # Below the axes, where it hides no bar.
    axes.legend(loc="upper center", bbox_to_anchor=(0.5, -0.2), ncol=2, fontsize=7, frameon=False)
    figure.tight_layout()
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png")
    return buffer.getvalue()
