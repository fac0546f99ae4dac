"""The Toolbox's parameters as the parts of an ``app`` request (scenes, weather, class map, where
partitions run), and a run followed in the Processing log and progress bar."""

from __future__ import annotations

import time
from typing import Any, Callable, Optional

from qgis.core import (
    QgsProcessingContext,
    QgsProcessingException,
    QgsProcessingFeedback,
    QgsProcessingParameterBoolean,
    QgsProcessingParameterDefinition,
    QgsProcessingParameterFeatureSink,
    QgsProcessingParameterFile,
    QgsProcessingParameterString,
)

from ...app import ClusterSpec, RunProgress, ScenesSpec, WeatherSpec
from ...app.requests import DEFAULT_MAX_DISTANCE_KM
from ...core.errors import DependencyError
from ...core.progress import Progress
from ...core.scenes.stac import CATALOG_KEY, load_items
from ..catalog import auth_credentials
from ..i18n import tr
from ..staged_sinks import file_destination
from ..task import prepared_cluster
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


CLUSTER_HELP = {
    "CHUNK_SIZE": "Parcels read and processed together: the size of a partition in a partitioned run (a "
                  "partition never spans two Sentinel-2 tiles), and of what is held in memory at once in one "
                  "process.",
    "WORKERS": "Worker processes of a Dask cluster started on this computer for the run (one thread each), "
               "which work on the partitions side by side; 1: the run stays in this process. Needs "
               "dask.distributed.",
    "SCHEDULER": "Run the partitions on a Dask cluster started apart (dask-jobqueue on SLURM, Kubernetes, "
                 "'dask scheduler' and 'dask worker'): the scheduler's address, tcp://HOST:PORT or HOST:PORT. "
                 "The run folder, the scenes, the weather file and the model must be at the same paths on every "
                 "worker. Leave the local worker processes at 1.",
    "RUN_FOLDER": "Where the partitions of a partitioned run are written as they finish; it is removed once the "
                  "output is written. Empty: beside the output (its name + .parts), or a temporary folder for a "
                  "temporary output. Giving one runs the partitions even in this process, so that the run can "
                  "be resumed.",
    "RESUME": "Take up a cancelled or interrupted run from the partitions its run folder holds: only the missing "
              "ones are computed. The inputs and settings must be those of the interrupted run.",
}
"""Help of the advanced parameters of a partitioned run (``add_cluster_parameters``)."""


def add_cluster_parameters(algorithm: ThermoCropAlgorithm) -> None:
    """Add the advanced parameters of where the run goes: ``CHUNK_SIZE``, ``WORKERS``,
    ``SCHEDULER``, ``RUN_FOLDER`` and ``RESUME`` (the command line's ``--chunk-size``,
    ``--workers``, ``--scheduler``, ``--run-folder`` and ``--resume``)."""
    parameters = [
        algorithm.number(algorithm.CHUNK_SIZE, "Parcels per partition", "chunk_size", 20000),
        algorithm.number(algorithm.WORKERS, "Local worker processes (Dask; 1: this process)", "workers", 1),
        QgsProcessingParameterString(algorithm.SCHEDULER, "Dask scheduler address (tcp://HOST:PORT)", optional=True),
        QgsProcessingParameterFile(algorithm.RUN_FOLDER, "Run folder (the partitions, kept to resume)",
                                   behavior=QgsProcessingParameterFile.Folder, optional=True),
        QgsProcessingParameterBoolean(algorithm.RESUME, "Resume the interrupted run in the run folder",
                                      defaultValue=False),
    ]
    for parameter in parameters:
        parameter.setFlags(parameter.flags() | QgsProcessingParameterDefinition.FlagAdvanced)
        algorithm.add(parameter, CLUSTER_HELP[parameter.name()])


def cluster_choice(algorithm: ThermoCropAlgorithm, parameters: dict, context: QgsProcessingContext) -> ClusterSpec:
    """The run's workers, scheduler, run folder and resume as given (the folder not yet defaulted)."""
    return ClusterSpec(workers=algorithm.parameterAsInt(parameters, algorithm.WORKERS, context),
                       scheduler=(algorithm.parameterAsString(parameters, algorithm.SCHEDULER, context) or "").strip()
                       or None,
                       run_folder=algorithm.parameterAsFile(parameters, algorithm.RUN_FOLDER, context) or None,
                       resume=algorithm.parameterAsBoolean(parameters, algorithm.RESUME, context))


def output_file(algorithm: ThermoCropAlgorithm, parameters: dict, context: QgsProcessingContext) -> Optional[str]:
    """The file or folder ``OUTPUT`` names; None for a memory or database layer."""
    if isinstance(algorithm.parameterDefinition(algorithm.OUTPUT), QgsProcessingParameterFeatureSink):
        found = file_destination(algorithm.parameterAsOutputLayer(parameters, algorithm.OUTPUT, context))
        return found[0] if found else None
    return algorithm.parameterAsString(parameters, algorithm.OUTPUT, context) or None


def check_cluster(algorithm: ThermoCropAlgorithm, parameters: dict, context: QgsProcessingContext) -> tuple[bool, str]:
    """``(ok, message)``: a scheduler address that is one, not beside local workers, and a run
    folder to resume from (a temporary output has none of its own)."""
    spec = cluster_choice(algorithm, parameters, context)
    problem = spec.problem()
    if problem:
        return False, problem
    if spec.resume and not spec.run_folder and output_file(algorithm, parameters, context) is None:
        return False, tr("Resuming needs the run folder of the interrupted run: give '{folder}' (a temporary "
                         "output has no run folder beside it).").format(
            folder=algorithm.parameterDefinition(algorithm.RUN_FOLDER).description())
    return True, ""


def cluster_spec(algorithm: ThermoCropAlgorithm, parameters: dict, context: QgsProcessingContext) -> ClusterSpec:
    """Where the run goes, as the request's ``ClusterSpec``, its run folder named
    (``plugin.task.prepared_cluster``: beside a file output, else a temporary folder).

    Raises:
        QgsProcessingException: the scheduler address is not one, or local workers cannot start.
    """
    spec = cluster_choice(algorithm, parameters, context)
    problem = spec.problem()
    if problem:
        raise QgsProcessingException(problem)
    try:
        return prepared_cluster(spec, output_file(algorithm, parameters, context), algorithm.name())
    except DependencyError as exc:
        raise QgsProcessingException(str(exc)) from None


def run_request(algorithm: ThermoCropAlgorithm, call: Callable[[], Any], cluster: ClusterSpec,
                feedback: QgsProcessingFeedback) -> Any:
    """``algorithm.run_core(call)``; a cancelled partitioned run says where its partitions stay and
    how to take it up."""
    try:
        return algorithm.run_core(call)
    except QgsProcessingException:
        if cluster.partitioned and feedback.isCanceled():
            feedback.pushInfo(tr("The partitions written so far stay in {folder}; run again with '{resume}' ticked "
                                 "to take the run up.").format(
                folder=cluster.run_folder, resume=algorithm.parameterDefinition(algorithm.RESUME).description()))
        raise


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

    def partitions_started(self, total: int, done: int, dashboard) -> None:
        self.feedback.pushInfo(tr("{total} partitions").format(total=total))
        if done:
            self.feedback.pushInfo(tr("Resuming: {done} of {total} partitions already written").format(
                done=done, total=total))
        if dashboard:
            self.feedback.pushInfo(tr("Dask dashboard: {link}").format(link=dashboard))

    def partitions_done(self, summary, wall_s: float) -> None:
        self.feedback.pushInfo(tr("{total} partitions ({computed} computed now, {resumed} from the interrupted run) "
                                  "in {seconds} s; the partitions took {cpu} CPU s").format(
            total=summary.partitions, computed=summary.computed, resumed=summary.resumed,
            seconds=f"{wall_s:.1f}", cpu=f"{summary.cost()['cpu_s']:.1f}"))

    def on_stats(self, stats) -> None:
        if time.monotonic() - self._last_stats >= 5.0:
            self._last_stats = time.monotonic()
            self.feedback.pushInfo(stats.describe())
