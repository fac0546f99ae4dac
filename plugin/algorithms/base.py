"""Shared base of ThermoCrop's Processing algorithms: help text, translation, the dependency
check, progress, errors, scenes."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Callable, Optional

from qgis.core import (
    QgsProcessing,
    QgsProcessingAlgorithm,
    QgsProcessingContext,
    QgsProcessingException,
    QgsProcessingFeatureSourceDefinition,
    QgsProcessingFeedback,
    QgsProcessingParameterAuthConfig,
    QgsProcessingParameterEnum,
    QgsProcessingParameterFile,
    QgsProcessingParameterMultipleLayers,
    QgsProcessingParameterNumber,
    QgsProperty,
    QgsRasterLayer,
)
from qgis.PyQt.QtCore import QUrl
from qgis.PyQt.QtGui import QIcon

from ..i18n import tr

ICON = Path(__file__).resolve().parents[2] / "resources" / "icons" / "thermocrop.svg"
DOCS = Path(__file__).resolve().parents[2] / "docs" / "plugin.md"
"""The plugin's documentation, shipped in the plugin folder; the dialogs' Help button opens it."""

WIDGETS_MODULE = __package__.rsplit(".", 1)[0] + ".widgets"
"""Where Processing finds the plugin's dialog widgets (a class path, imported only by dialogs)."""

TORCH_ALGORITHMS = ("classifyparcels", "trainmodel", "calibratemodel")
"""Algorithms that run a model and so need torch; the others need only the geo stack."""


class ThermoCropAlgorithm(QgsProcessingAlgorithm):
    """Base class: subclasses set ``NAME``, ``DISPLAY``, ``SUMMARY``, ``HELP`` (param -> text) and
    ``CHECKS``, and name their parameters' keys as class attributes (``LABEL_FIELD = "LABEL_FIELD"``).
    """

    NAME = ""
    DISPLAY = ""
    READS_GEOPARQUET = False
    """Whether a GeoParquet ``INPUT`` given by its path is read by ThermoCrop (``geoparquet_input``)."""
    SUMMARY = ""
    HELP: dict[str, str] = {}

    # Parameter keys several algorithms share.
    INPUT = "INPUT"
    OUTPUT = "OUTPUT"
    SCENES = "SCENES"
    SCENE_FOLDER = "SCENE_FOLDER"
    STAC_ITEMS = "STAC_ITEMS"
    AUTH = "AUTH"
    WEATHER = "WEATHER"
    WEATHER_SERVICE = "WEATHER_SERVICE"
    # Where a partitioned run goes (advanced; ``request_parts.add_cluster_parameters``).
    CHUNK_SIZE = "CHUNK_SIZE"
    WORKERS = "WORKERS"
    SCHEDULER = "SCHEDULER"
    RUN_FOLDER = "RUN_FOLDER"
    RESUME = "RESUME"

    CHECKS: tuple[Callable[..., tuple[bool, str]], ...] = ()
    """The algorithm's own checks of its parameters, in order: functions ``(algorithm, parameters,
    context) -> (ok, message)``. ``checkParameterValues`` runs them after Processing's checks and
    the package check, and answers with the first that fails."""

    def name(self) -> str:
        return self.NAME

    def displayName(self) -> str:  # noqa: N802 (QGIS API)
        return tr(self.DISPLAY)

    def group(self) -> str:
        return tr("Crop classification")

    def groupId(self) -> str:  # noqa: N802
        return "cropclassification"

    def icon(self) -> QIcon:
        return QIcon(str(ICON))

    def shortHelpString(self) -> str:  # noqa: N802
        """The summary and each parameter's help under the label the dialog shows for it."""
        definitions = self.parameterDefinitions()
        if definitions:
            items = [(p.description(), p.help()) for p in definitions]
        else:  # before initAlgorithm
            items = [(name, tr(text)) for name, text in self.HELP.items()]
        listed = "".join(f"<dt><b>{label}</b></dt><dd>{text}</dd>" for label, text in items)
        return f"<p>{tr(self.SUMMARY)}</p><dl>{listed}</dl>"

    def helpUrl(self) -> str:  # noqa: N802
        """The plugin's documentation page (docs/plugin.md in the plugin folder), or "" without it."""
        if not DOCS.is_file():
            return ""
        url = QUrl.fromLocalFile(str(DOCS))
        url.setFragment("processing-algorithms")
        return url.toString()

    def missing_modules(self) -> list:
        """The requirements this algorithm needs that this QGIS cannot import."""
        from ..dependencies import missing_for_processing

        return missing_for_processing(self.NAME in TORCH_ALGORITHMS)

    def missing_message(self, missing: list) -> str:
        from ..dependencies import describe_missing

        return (tr("{name} needs {modules}, which this QGIS cannot import.").format(
            name=self.displayName(), modules=", ".join(r.module for r in missing)) + "\n"
            + describe_missing(missing))

    def canExecute(self):  # noqa: N802
        """Refuse to open the dialog, saying what to install, when a package is missing."""
        missing = self.missing_modules()
        if missing:
            return False, self.missing_message(missing)
        return True, ""

    def checkParameterValues(self, parameters, context):  # noqa: N802
        """Processing's own checks, then the packages (so qgis_process says so before running),
        then the algorithm's ``CHECKS``. A GeoParquet ``INPUT``, which QGIS cannot load, is left
        to ``check_parcel_crs``."""
        parquet = self.geoparquet_input(parameters, context)
        if parquet is not None and not self.READS_GEOPARQUET:
            return False, tr("QGIS 3.22 cannot open the GeoParquet file {path}, and {algorithm} needs a layer QGIS "
                             "reads: save it as a GeoPackage first (with geopandas: read_parquet, then to_file), or "
                             "use Classify parcels, Export training data or Growing degree days per parcel, which "
                             "read it themselves.").format(path=parquet, algorithm=tr(self.DISPLAY))
        if parquet is not None:
            for definition in self.parameterDefinitions():
                name = definition.name()
                if name != self.INPUT and not definition.checkValueIsAcceptable(parameters.get(name), context):
                    return False, tr("Incorrect parameter value for {name}").format(name=name)
        else:
            ok, message = super().checkParameterValues(parameters, context)
            if not ok:
                return ok, message
        missing = self.missing_modules()
        if missing:
            return False, self.missing_message(missing)
        for check in self.CHECKS:
            ok, message = check(self, parameters, context)
            if not ok:
                return False, message
        return True, ""

    def createInstance(self):  # noqa: N802
        return type(self)()

    def add(self, parameter, help_text: str = ""):
        """Add ``parameter`` with its help text (shown in the dialog and in ``qgis_process help``).

        The label and help are translated here, so subclasses write them in English once.
        """
        text = help_text or self.HELP.get(parameter.name(), "")
        parameter.setDescription(tr(parameter.description()))
        if hasattr(parameter, "setHelp"):
            parameter.setHelp(tr(text))
        self.addParameter(parameter)

    @staticmethod
    def progress(feedback: QgsProcessingFeedback, start: float = 0.0, stop: float = 1.0):
        """A core ``Progress`` driving ``feedback`` (percent) and asking it whether to stop."""
        from ...core.progress import Progress

        return Progress(lambda f: feedback.setProgress(100.0 * f), feedback.isCanceled, start, stop)

    @staticmethod
    def acknowledge_cancel(feedback: QgsProcessingFeedback) -> None:
        """Say in the log, as soon as the user presses Cancel, that the run is stopping (it stops
        at the next scene window or model batch, which takes a moment)."""
        feedback.canceled.connect(lambda: feedback.pushInfo(tr("Cancelling…")))

    @staticmethod
    def run_core(call: Callable[[], Any]) -> Any:
        """Run a core call, turning ThermoCrop's errors into ``QgsProcessingException``."""
        from ...core.errors import CancelledError, ThermoCropError

        try:
            return call()
        except CancelledError as exc:
            raise QgsProcessingException(tr("Cancelled: {reason}").format(reason=exc)) from exc
        except ThermoCropError as exc:
            raise QgsProcessingException(str(exc)) from exc
        except ImportError as exc:
            from ..dependencies import describe_missing, missing_requirements

            raise QgsProcessingException(f"{exc}\n{describe_missing(missing_requirements())}") from exc

    @staticmethod
    def number(name: str, description: str, limit: str, default: float) -> QgsProcessingParameterNumber:
        """A number parameter accepting the range ``core.limits.LIMITS[limit]`` (as the CLI does)."""
        from ...core.limits import LIMITS

        rule = LIMITS[limit]
        kind = QgsProcessingParameterNumber.Integer if rule.integer else QgsProcessingParameterNumber.Double
        low = rule.low + (1 if rule.integer else 1e-9) * rule.above
        return QgsProcessingParameterNumber(name, description, kind, defaultValue=default, minValue=low,
                                            maxValue=rule.high)

    def geoparquet_input(self, parameters: dict, context: QgsProcessingContext) -> Optional[str]:
        """The ``INPUT`` file where it is a GeoParquet layer (``.parquet``), None for any other input.

        QGIS 3.22's GDAL has no Parquet driver, so such a layer is never a QGIS layer: the
        algorithms give the file to ThermoCrop's own reader (by row groups, as the command line
        does) and write their output with ThermoCrop's writers.
        """
        from ...core.io.geoparquet import is_parquet

        value = parameters.get(self.INPUT)
        if isinstance(value, QgsProcessingFeatureSourceDefinition):
            value = value.source
        if isinstance(value, QgsProperty):
            value = value.valueAsString(context.expressionContext())
        if isinstance(value, str) and value.strip() and is_parquet(value.strip()):
            return value.strip().split("|")[0]
        return None

    def check_parcel_crs(self, parameters: dict, context: QgsProcessingContext) -> tuple[bool, str]:
        """``(ok, message)``: the parcel layer has a CRS that places it on Earth (a GeoParquet file:
        it can be read; its CRS is checked with the other inputs when the run starts)."""
        from ...core.parcels import crs_problem

        path = self.geoparquet_input(parameters, context)
        if path is not None:
            from ...core.io.source_layer import parcel_layer_problem

            problem = self.run_core(lambda: parcel_layer_problem(path))
            return (False, problem) if problem else (True, "")
        source = self.parameterAsSource(parameters, self.INPUT, context)
        if source is None:
            return True, ""  # QGIS reports an unreadable layer itself
        crs = source.sourceCrs()
        problem = crs_problem(crs.toWkt() if crs.isValid() else None)
        if problem:
            return False, tr("The parcel layer {problem}; assign the right one first (Layer Properties > "
                             "Source, or Assign projection; a shapefile needs its .prj).").format(problem=problem)
        return True, ""

    def check_label_field(self, parameters: dict, context: QgsProcessingContext) -> tuple[bool, str]:
        """``(ok, message)``: the ``LABEL_FIELD`` is a field of the ``INPUT`` layer (QGIS checks a
        field parameter only against a layer chosen in the dialog, not one given by its path), by
        the layer's name and its fields. A GeoParquet file's fields are checked when it is read."""
        name = self.parameterAsString(parameters, "LABEL_FIELD", context)
        if not name or self.geoparquet_input(parameters, context) is not None:
            return True, ""
        source = self.parameterAsSource(parameters, self.INPUT, context)
        if source is None or source.fields().indexOf(name) >= 0:
            return True, ""
        return False, tr("The layer {layer} has no field {name!r} (LABEL_FIELD); its fields are {fields}. Choose "
                         "the field that holds the classes.").format(layer=source.sourceName(), name=name,
                                                                     fields=", ".join(source.fields().names()))

    def preflight(self, parameters: dict, context: QgsProcessingContext, feedback: QgsProcessingFeedback,
                  **checks: Any):
        """Run ``core.preflight.check_inputs`` for the ``INPUT`` layer and ``checks`` (weather,
        scenes, bundle, ...), before any scene is read; its problems become a
        ``QgsProcessingException``."""
        from ...core.preflight import LayerFootprint, check_inputs

        source = self.parameterAsSource(parameters, self.INPUT, context)
        crs, bounds = None, None
        if source is not None:
            crs = source.sourceCrs().toWkt() if source.sourceCrs().isValid() else None
            extent = source.sourceExtent()
            if not extent.isEmpty():
                bounds = (extent.xMinimum(), extent.yMinimum(), extent.xMaximum(), extent.yMaximum())
        checked = self.run_core(lambda: check_inputs(parcels=LayerFootprint(crs or "", bounds), **checks))
        feedback.pushInfo(tr("Inputs checked in {seconds} s").format(seconds=f"{checked.seconds:.1f}"))
        return checked

    SCENES_HELP = ("Sentinel-2 scenes of one season: multi-band GeoTIFFs, per-band files or .SAFE "
                   "products, as layers or files (repeat SCENES=... on the command line). Give these, "
                   "a scene folder, or both, or else saved STAC items: one of them is required.")
    SCENE_FOLDER_HELP = ("A folder holding the scenes, instead of or besides the scenes above: one of the two "
                         "(or saved STAC items) is required.")
    STAC_HELP = ("A STAC item collection saved by 'Search a catalogue' (or 'thermocrop scenes search'), instead "
                 "of scene files: only the parts of its images that hold parcels are fetched, and kept in the "
                 "cache ($THERMOCROP_CACHE or ~/.cache/thermocrop), so a second run reads nothing over the network.")
    AUTH_HELP = ("Credentials for the saved items' images, from QGIS's authentication manager (a Basic "
                 "configuration): for the Copernicus Data Space the S3 access key as user name and the secret key "
                 "as password; for Planetary Computer a subscription key as password (optional). Empty: the "
                 "environment's AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY / PC_SDK_SUBSCRIPTION_KEY, if set. "
                 "Never stored in the project.")
    WEATHER_SERVICE_HELP = ("Where the daily temperatures come from: the file above, or a weather service fetched "
                            "for the parcels' 0.1-degree cells and kept as a NetCDF in the cache (Open-Meteo needs no "
                            "key; the Copernicus CDS needs CDSAPI_URL / CDSAPI_KEY in the environment).")
    SCENES_REQUIRED = True
    """False where the scenes only supply dates that may come another way (growing degree days)."""

    def add_scene_parameters(self, label: str = "", auth: bool = True) -> None:
        """Add ``SCENES`` (raster layers or files), ``SCENE_FOLDER`` (a folder), ``STAC_ITEMS`` (a
        saved item collection, the alternative to files) and, with ``auth``, ``AUTH`` (credentials
        for the items' images from QGIS's authentication manager).

        All are optional to Processing, since any may be left empty, so the labels say that
        one source is required and ``check_scenes`` checks it.
        """
        if self.SCENES_REQUIRED:
            scenes_label = label or "Sentinel-2 scenes (these, a folder of scenes or saved STAC items)"
            folder_label = "Folder of scenes (or the scenes above)"
        else:
            scenes_label, folder_label = label or "Sentinel-2 scenes", "Folder of scenes"
        self.add(QgsProcessingParameterMultipleLayers(self.SCENES, scenes_label, QgsProcessing.TypeRaster,
                                                      optional=True),
                 self.HELP.get(self.SCENES, self.SCENES_HELP))
        self.add(QgsProcessingParameterFile(self.SCENE_FOLDER, folder_label,
                                            behavior=QgsProcessingParameterFile.Folder, optional=True),
                 self.HELP.get(self.SCENE_FOLDER, self.SCENE_FOLDER_HELP))
        self.add(QgsProcessingParameterFile(self.STAC_ITEMS, "Saved STAC items (instead of scene files)", optional=True,
                                            fileFilter="STAC item collection (*.json *.geojson)"),
                 self.HELP.get(self.STAC_ITEMS, self.STAC_HELP))
        if auth:
            self.add(QgsProcessingParameterAuthConfig(self.AUTH, "Catalogue credentials (authentication configuration)",
                                                      optional=True), self.AUTH_HELP)

    def add_weather_parameters(self, help_text: str) -> None:
        """Add ``WEATHER`` (a file) and ``WEATHER_SERVICE`` (the file, or a service to fetch from)."""
        from ..catalog import WEATHER_LABELS

        self.add(QgsProcessingParameterFile(self.WEATHER, "Daily temperature file", optional=True, fileFilter=(
            "Temperature files (*.nc *.nc4 *.csv);;All files (*)")), help_text)
        self.add(QgsProcessingParameterEnum(self.WEATHER_SERVICE, "Temperatures from", options=list(WEATHER_LABELS),
                                            defaultValue=0), self.WEATHER_SERVICE_HELP)

    def weather_service(self, parameters: dict, context: QgsProcessingContext) -> str:
        """The weather service chosen (``open-meteo``, ``cds:e-obs``...), or "" for the file."""
        from ..catalog import WEATHER_SERVICES

        return WEATHER_SERVICES[self.parameterAsEnum(parameters, self.WEATHER_SERVICE, context)]

    def check_weather(self, parameters: dict, context: QgsProcessingContext) -> tuple[bool, str]:
        """``(ok, message)``: a temperature file that exists, or a service, not both."""
        path = self.parameterAsFile(parameters, self.WEATHER, context)
        service = self.weather_service(parameters, context)
        if service and path:
            return False, tr("Give either the temperature file {path!r} or the weather service {service}, not "
                             "both.").format(path=path, service=service)
        if service:
            return True, ""
        if not path:
            return False, tr("Give a daily temperature file (WEATHER), or choose a weather service "
                             "(WEATHER_SERVICE).")
        return self.check_files([path], tr("temperature file"))

    def fetch_weather(self, parameters: dict, context: QgsProcessingContext, feedback: QgsProcessingFeedback,
                      frame, dates, season_start) -> str:
        """The temperature file: the one given, or the chosen service's answer for the parcels'
        cells from the season start to the last date (fetched once, then taken from the cache)."""
        service = self.weather_service(parameters, context)
        if not service:
            return self.parameterAsFile(parameters, self.WEATHER, context)

        def fetch():
            from ...core.thermal.weather_services import fetch_for_parcels

            return fetch_for_parcels(service, frame.geometry, dates, season_start)

        path = str(self.run_core(fetch))
        feedback.pushInfo(tr("Temperatures from {service}: {path}").format(service=service, path=path))
        return path

    def stac_items(self, parameters: dict, context: QgsProcessingContext) -> str:
        """The saved item collection given (``STAC_ITEMS``), or ""."""
        if self.parameterDefinition(self.STAC_ITEMS) is None:
            return ""
        return self.parameterAsFile(parameters, self.STAC_ITEMS, context) or ""

    def stac_scenes(self, parameters: dict, context: QgsProcessingContext, feedback: QgsProcessingFeedback,
                    progress=None) -> list:
        """The scenes of ``STAC_ITEMS`` (their assets opened once), read with the ``AUTH``
        credentials or the environment's; fetching reports bytes and dates to the log."""
        import time

        from ..catalog import auth_credentials, stac_scenes

        path = self.stac_items(parameters, context)
        auth = self.parameterAsString(parameters, self.AUTH, context) if self.parameterDefinition(self.AUTH) else ""
        last = [0.0]

        def show(stats) -> None:
            if time.monotonic() - last[0] >= 5.0:
                last[0] = time.monotonic()
                feedback.pushInfo(stats.describe())

        def scenes():
            from ...core.scenes.stac import CATALOG_KEY, load_items

            recorded = load_items(path).extra_fields.get(CATALOG_KEY)
            catalog = recorded.get("name", "url") if isinstance(recorded, dict) else "url"
            try:
                credentials = auth_credentials(auth, catalog)
            except ValueError as exc:
                raise QgsProcessingException(str(exc)) from None
            return stac_scenes([path], credentials=credentials, progress=progress, on_stats=show)

        found = self.run_core(scenes)
        feedback.pushInfo(tr("STAC items {path}: {scenes}").format(path=path, scenes=self.describe_scenes(found)))
        return found

    def scenes(self, parameters: dict, context: QgsProcessingContext) -> list[str]:
        """File paths of the scenes from ``SCENES`` and ``SCENE_FOLDER``."""
        paths = self.scene_paths(self.parameterAsLayerList(parameters, self.SCENES, context), context)
        folder = self.parameterAsFile(parameters, self.SCENE_FOLDER, context)
        if folder:
            inside = os.path.abspath(folder) + os.sep
            # A layer from inside the folder would otherwise be read twice.
            paths = [p for p in paths if not os.path.abspath(p).startswith(inside)] + [folder]
        return paths

    def check_scenes(self, parameters: dict, context: QgsProcessingContext) -> tuple[bool, str]:
        """``(ok, message)``: exactly one source of scenes was given (files and/or a folder, or
        saved STAC items) and it exists."""
        folder = self.parameterAsFile(parameters, self.SCENE_FOLDER, context)
        files = bool(folder or self.parameterAsLayerList(parameters, self.SCENES, context))
        stac = self.stac_items(parameters, context)
        if files and stac:
            return False, tr("Give either scene files ('{scenes}', '{folder}') or saved STAC items ('{stac}'), not "
                             "both.").format(scenes=self.parameterDefinition(self.SCENES).description(),
                                             folder=self.parameterDefinition(self.SCENE_FOLDER).description(),
                                             stac=self.parameterDefinition(self.STAC_ITEMS).description())
        if stac:
            from ...core.scenes.stac import is_item_collection_file

            if not os.path.isfile(stac):
                return False, tr("The STAC items file {path!r} does not exist; choose the .json file 'Search a "
                                 "catalogue' wrote.").format(path=stac)
            if not is_item_collection_file(stac):
                return False, tr("{path!r} is not a STAC item collection; choose the .json file 'Search a "
                                 "catalogue' wrote.").format(path=stac)
            return True, ""
        if folder and not os.path.isdir(folder):
            return False, tr("The scene folder {folder!r} does not exist; choose an existing folder.").format(
                folder=folder)
        if not files:
            stac_label = self.parameterDefinition(self.STAC_ITEMS)
            return False, tr("Give Sentinel-2 scenes: '{scenes}' (SCENES, layers or files), '{folder}' "
                             "(SCENE_FOLDER){stac}; one of them is required.").format(
                scenes=self.parameterDefinition(self.SCENES).description(),
                folder=self.parameterDefinition(self.SCENE_FOLDER).description(),
                stac=f" or '{stac_label.description()}' (STAC_ITEMS)" if stac_label is not None else "")
        return True, ""

    @staticmethod
    def describe_scenes(scenes: list) -> str:
        """``"39 dates from 39 products"``: what the log says the scenes are."""
        products = sum(len(s.products) for s in scenes)
        return tr("{dates} dates from {products} products").format(dates=len(scenes), products=products)

    @staticmethod
    def scene_paths(layers_or_paths: list, context: QgsProcessingContext) -> list[str]:
        """File paths of the scenes given as raster layers, files or folders."""
        paths = []
        for item in layers_or_paths:
            if isinstance(item, QgsRasterLayer):
                paths.append(item.source().split("|")[0])
            else:
                paths.append(str(item))
        return paths

    @staticmethod
    def measures_dropped(driver: str) -> str:
        """The warning for M values a format cannot hold."""
        return tr("The M (measure) values of the parcels are not written: {driver} files cannot hold them. "
                  "Write a .gpkg, .shp, .fgb or .csv file to keep them.").format(driver=driver)

    @staticmethod
    def write_failed(fid: int, error: str) -> str:
        """The error for a feature the sink refused."""
        return tr("Writing feature {fid} failed: {error}").format(fid=fid, error=error)

    @staticmethod
    def check_output_file(path: str, **check) -> tuple[bool, str]:
        """``(ok, message)`` of ``core.io.output.check_output(path, **check)``: the output can be
        written there (before any work; nothing is written)."""
        from ...core.errors import ThermoCropError
        from ...core.io.output import check_output
        from ...core.model.shipped import refuse_shipped_model_output

        try:
            if ".tcm" in check.get("suffixes", ()):  # a model: never one of the shipped models
                refuse_shipped_model_output(path)
            check_output(path, **check)
        except ThermoCropError as exc:
            return False, str(exc)
        return True, ""

    @staticmethod
    def check_files(paths: list[str], what: str) -> tuple[bool, str]:
        """``(ok, message)``: every path exists."""
        for path in paths:
            if not path or not os.path.exists(path):
                return False, tr("The {what} {path!r} does not exist; choose an existing file or folder.").format(
                what=what, path=path)
        return True, ""
