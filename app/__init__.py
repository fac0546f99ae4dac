"""The use cases both doors call: a request object per use case, its inputs resolved once, and
one run function each. ``cli`` and ``plugin`` import this package; it imports ``training`` and
``core`` and never QGIS or Qt."""

from ..core.result_columns import NOT_SELECTED, result_columns
from .inputs import resolve_scenes, resolve_weather, scene_dates, weather_spec
from .requests import (
    ClassificationOutput,
    ClassifyRequest,
    ClusterSpec,
    ExtractRequest,
    GddRequest,
    ParcelsSpec,
    ResultFields,
    ScenesSpec,
    WeatherSpec,
)
from .runs import (
    ClassificationRun,
    ExtractionRun,
    GddRun,
    RunProgress,
    run_classification,
    run_extraction,
    run_gdd,
)

__all__ = [
    "NOT_SELECTED", "ClassificationOutput", "ClassificationRun", "ClassifyRequest", "ClusterSpec", "ExtractRequest",
    "ExtractionRun", "GddRequest", "GddRun", "ParcelsSpec", "ResultFields", "RunProgress", "ScenesSpec",
    "WeatherSpec", "resolve_scenes", "resolve_weather", "result_columns", "run_classification", "run_extraction",
    "run_gdd", "scene_dates", "weather_spec",
]
