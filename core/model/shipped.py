"""The models shipped with the plugin (``resources/models``), which no run of a user writes over:
``classify`` and every door choose them by the scenes' level, so a calibration, a fine-tuning or
a recorded curve written there would change every later run that names no model."""

from __future__ import annotations

import logging
import os
from pathlib import Path
from typing import Any, Iterable, Optional

from ..errors import OutputError

log = logging.getLogger(__name__)

SHIPPED_MODELS = Path(__file__).resolve().parents[2] / "resources" / "models"
"""The folder of the shipped model bundles."""


def shipped_model_files() -> list[Path]:
    """The shipped model bundles (``*.tcm``)."""
    return sorted(SHIPPED_MODELS.glob("*.tcm"))


def refuse_shipped_model_output(out: Any) -> None:
    """Refuse ``out`` where it is one of the shipped models, under any name (a link to one
    included).

    Raises:
        OutputError: naming the output and the shipped model.
    """
    path = Path(os.fspath(out)).expanduser()
    for shipped in shipped_model_files():
        same = path.resolve() == shipped.resolve()
        if not same and path.exists():
            try:
                same = os.path.samefile(path, shipped)
            except OSError:
                same = False
        if same:
            raise OutputError(f"{out} is the model {shipped.name} shipped with ThermoCrop, which runs choose when no "
                              "model is given; a run never writes over it. Write the new model under another name "
                              "(e.g. beside your project).")


SHIPPED_BUNDLES = {"L1C": "default_fast.tcm", "L2A": "default_fast_l2a.tcm"}
"""Processing level -> the file name of the model shipped for scenes of that level, the one used
wherever no model is given: one model distilled from that level's ensemble."""
SHIPPED_ENSEMBLES = {"L1C": "default.tcm", "L2A": "default_l2a.tcm"}
"""Processing level -> the file name of the ensemble of five shipped for that level (given by path)."""


def default_bundle_path(level: Optional[str] = None) -> Path:
    """Path of the model bundle shipped with the plugin for scenes of ``level``: the L2A model
    for ``"L2A"``, the L1C model otherwise."""
    name = SHIPPED_BUNDLES["L2A" if level == "L2A" else "L1C"]
    return SHIPPED_MODELS / name


def ensemble_bundle_path(level: Optional[str] = None) -> Path:
    """Path of the ensemble shipped for scenes of ``level`` (L2A for ``"L2A"``, L1C otherwise)."""
    return default_bundle_path(level).parent / SHIPPED_ENSEMBLES["L2A" if level == "L2A" else "L1C"]


def shipped_model_choice(levels: Iterable[Optional[str]]) -> tuple[Path, str]:
    """The shipped bundle for scenes of these processing levels, and why, in a sentence for the
    run's log: the L2A model when every scene of known level is L2A; the L1C model for L1C
    scenes, for a mix of both (the run then warns that the levels differ), for scenes of no known
    level, and where the L2A model is not installed."""
    known = sorted({level for level in levels if level})
    l1c, l2a = default_bundle_path("L1C"), default_bundle_path("L2A")
    if known == ["L2A"]:
        if l2a.is_file():
            return l2a, f"L2A scenes: using the shipped L2A model {l2a.name}"
        return l1c, f"L2A scenes, but the shipped L2A model {l2a} is not installed: using the shipped L1C model {l1c.name}"
    if len(known) > 1:
        reason = f"Scenes of levels {' and '.join(known)}"
    else:
        reason = f"{known[0]} scenes" if known else "Scenes of no known processing level"
    return l1c, f"{reason}: using the shipped L1C model {l1c.name}"


def default_bundle_for_levels(levels: Iterable[Optional[str]]) -> Path:
    """The shipped bundle for scenes of these processing levels (:func:`shipped_model_choice`),
    the choice logged."""
    path, why = shipped_model_choice(levels)
    log.log(logging.WARNING if "not installed" in why else logging.INFO, why)
    return path
