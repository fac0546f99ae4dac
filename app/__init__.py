"""The use cases both doors call: a request object per use case, its inputs resolved once, and
one run function each. ``cli`` and ``plugin`` import this package; it imports ``training`` and
``core`` and never QGIS or Qt.

The requests, the input resolution and the result columns are light; the run functions (which
bring torch) are loaded on first use, so that the QGIS plugin loads before its heavy packages are
installed.
"""

import importlib

from ..core.result_columns import NOT_SELECTED, result_columns
from .inputs import resolve_scenes, resolve_weather, scene_dates, weather_spec
from .requests import (
    CalibrateRequest,
    ClassificationOutput,
    ClassifyRequest,
    ClusterSpec,
    ExtractRequest,
    GddRequest,
    ParcelsSpec,
    ResultFields,
    ScenesSpec,
    SeasonAccuracyRequest,
    WeatherSpec,
)
from .run_progress import RunProgress

RUNS = {"ClassificationRun": "runs", "ExtractionRun": "runs", "GddRun": "runs", "run_classification": "runs",
        "run_extraction": "runs", "run_gdd": "runs", "CalibrationRun": "calibration_run",
        "run_calibration": "calibration_run", "SeasonAccuracyRun": "season_accuracy_run",
        "run_season_accuracy": "season_accuracy_run"}
"""Names of the run modules -> their module, imported when first asked for."""


def __getattr__(name):
    if name in RUNS:
        return getattr(importlib.import_module(f"{__name__}.{RUNS[name]}"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "NOT_SELECTED", "CalibrateRequest", "CalibrationRun", "ClassificationOutput", "ClassificationRun", "ClassifyRequest", "ClusterSpec", "ExtractRequest",
    "ExtractionRun", "GddRequest", "GddRun", "ParcelsSpec", "ResultFields", "RunProgress", "ScenesSpec",
    "SeasonAccuracyRequest", "SeasonAccuracyRun", "WeatherSpec", "resolve_scenes", "resolve_weather", "result_columns", "run_calibration", "run_classification", "run_extraction",
    "run_gdd", "run_season_accuracy", "scene_dates", "weather_spec",
]
