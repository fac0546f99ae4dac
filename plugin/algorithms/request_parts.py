"""The Toolbox's parameters as the parts of an ``app`` request (scenes, weather, class map), and a
run followed in the Processing log and progress bar."""

from __future__ import annotations

import time
from typing import Callable, Optional

from qgis.core import QgsProcessingContext, QgsProcessingException, QgsProcessingFeedback

from ...app import RunProgress, ScenesSpec, WeatherSpec
from ...app.requests import DEFAULT_MAX_DISTANCE_KM
from ...core.progress import Progress
from ...core.scenes.stac import CATALOG_KEY, load_items
from ..catalog import auth_credentials
from ..i18n import tr
from .base import ThermoCropAlgorithm

PRESETS = ("", "france", "denmark", "austria")
"""The class map presets a ``CLASS_MAP`` parameter offers, in the order of :data:`PRESET_LABELS`."""
PRESET_LABELS = ("none: the label values are the classes", "france (RPG CODE_CULTU codes)",
                 "denmark (afgkode codes)", "austria (SNAR codes)")


def class_map_of(algorithm: ThermoCropAlgorithm, parameters: dict, context: QgsProcessingContext):
    """The ``ClassMap`` of ``CLASS_MAP`` (a preset) or ``CLASS_MAP_FILE``, or None for neither.

    Raises:
        QgsProcessingException: both are given, or the file does not load.
    """
    from ...core.classmap import ClassMap
    from ...core.errors import InputError

    preset = PRESETS[algorithm.parameterAsEnum(parameters, "CLASS_MAP", context)]
    path = algorithm.parameterAsFile(parameters, "CLASS_MAP_FILE", context)
    if preset and path:
        raise QgsProcessingException(tr("Give either the {preset} code table or the class map file {path}, "
                                        "not both.").format(preset=preset, path=path))
    if not preset and not path:
        return None
    try:
        return ClassMap.load(preset or path)
    except InputError as exc:
        raise QgsProcessingException(str(exc)) from exc


def scenes_spec(algorithm: ThermoCropAlgorithm, parameters: dict, context: QgsProcessingContext) -> ScenesSpec:
    """``STAC_ITEMS`` (read with the ``AUTH`` credentials, or the environment's), else the files
    of ``SCENES`` and ``SCENE_FOLDER``.

    Raises:
        QgsProcessingException: the credentials cannot be loaded.
    """
    path = algorithm.stac_items(parameters, context)
    if not path:
        return ScenesSpec(files=tuple(algorithm.scenes(parameters, context)))
    auth = algorithm.parameterAsString(parameters, "AUTH", context) if algorithm.parameterDefinition("AUTH") else ""
    credentials = {}
    if auth:
        recorded = algorithm.run_core(lambda: load_items(path)).extra_fields.get(CATALOG_KEY)
        catalog = recorded.get("name", "url") if isinstance(recorded, dict) else "url"
        try:
            credentials = auth_credentials(auth, catalog)
        except ValueError as exc:
            raise QgsProcessingException(str(exc)) from None
    return ScenesSpec(items=(path,), credentials=credentials)


def weather_spec(algorithm: ThermoCropAlgorithm, parameters: dict, context: QgsProcessingContext,
                 max_distance_km: float = DEFAULT_MAX_DISTANCE_KM) -> WeatherSpec:
    """``WEATHER`` (a file) or ``WEATHER_SERVICE``."""
    service = algorithm.weather_service(parameters, context)
    if service:
        return WeatherSpec(service=service, max_distance_km=max_distance_km)
    return WeatherSpec(path=algorithm.parameterAsFile(parameters, "WEATHER", context) or None,
                       max_distance_km=max_distance_km)


def interface_cores() -> int:
    """The CPUs a run leaves to QGIS's interface: one in the desktop, none in ``qgis_process``."""
    from qgis.utils import iface

    return 1 if iface is not None else 0


class ProcessingRun(RunProgress):
    """A run seen in the Processing dialog: its lines in the log, its progress on the bar, the
    user's Cancel asked between scene windows and model batches.

    Args:
        feedback: the algorithm's feedback.
        progress: the part of the bar the run's work moves through (default: all of it).
        checked: called with the preflight once the inputs passed it (to say what was found).
    """

    def __init__(self, feedback: QgsProcessingFeedback, progress: Optional[Progress] = None,
                 checked: Optional[Callable] = None) -> None:
        super().__init__(progress or ThermoCropAlgorithm.progress(feedback), report=feedback.pushInfo)
        self.feedback = feedback
        self.checked = checked
        self._last_stats = 0.0
        self.reserve_cores = interface_cores()

    def inputs_checked(self, checked) -> None:
        self.feedback.pushInfo(tr("Inputs checked in {seconds} s").format(seconds=f"{checked.seconds:.1f}"))
        if self.checked is not None:
            self.checked(checked)

    def weather_fetched(self, service: str, path: str) -> None:
        self.feedback.pushInfo(tr("Temperatures from {service}: {path}").format(service=service, path=path))

    def on_stats(self, stats) -> None:
        if time.monotonic() - self._last_stats >= 5.0:
            self._last_stats = time.monotonic()
            self.feedback.pushInfo(stats.describe())
