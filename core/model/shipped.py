"""The models shipped with the plugin (``resources/models``), which no run of a user writes over:
``classify`` and every door choose them by the scenes' level, so a calibration, a fine-tuning or
a recorded curve written there would change every later run that names no model."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from ..errors import OutputError

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
