"""Shared base of ThermoCrop's Processing algorithms: help text, translation, the dependency
check, progress, errors, scenes."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Callable

from qgis.core import (
    QgsProcessing,
    QgsProcessingAlgorithm,
    QgsProcessingContext,
    QgsProcessingException,
    QgsProcessingFeedback,
    QgsProcessingParameterFile,
    QgsProcessingParameterMultipleLayers,
    QgsProcessingParameterNumber,
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

TORCH_ALGORITHMS = ("classifyparcels", "trainmodel")
"""Algorithms that run a model and so need torch; the others need only the geo stack."""


class ThermoCropAlgorithm(QgsProcessingAlgorithm):
    """Base class: subclasses set ``NAME``, ``DISPLAY``, ``SUMMARY`` and ``HELP`` (param -> text)."""

    NAME = ""
    DISPLAY = ""
    SUMMARY = ""
    HELP: dict[str, str] = {}

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
        from ..dependencies import missing_requirements

        optional = () if self.NAME in TORCH_ALGORITHMS else ("torch", "safetensors")
        return [r for r in missing_requirements() if r.module not in optional + ("matplotlib",)]

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
        """Processing's own checks, then the packages (so qgis_process says so before running)."""
        ok, message = super().checkParameterValues(parameters, context)
        if not ok:
            return ok, message
        missing = self.missing_modules()
        if missing:
            return False, self.missing_message(missing)
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

    def check_parcel_crs(self, parameters: dict, context: QgsProcessingContext, key: str = "INPUT"
                         ) -> tuple[bool, str]:
        """``(ok, message)``: the parcel layer has a CRS that places it on Earth."""
        from ...core.extract import crs_problem

        source = self.parameterAsSource(parameters, key, context)
        if source is None:
            return True, ""  # QGIS reports an unreadable layer itself
        crs = source.sourceCrs()
        problem = crs_problem(crs.toWkt() if crs.isValid() else None)
        if problem:
            return False, (f"The parcel layer {problem}; assign the right one first (Layer Properties > "
                           "Source, or Assign projection; a shapefile needs its .prj).")
        return True, ""

    def preflight(self, parameters: dict, context: QgsProcessingContext, feedback: QgsProcessingFeedback,
                  **checks: Any):
        """Run ``core.preflight.check_inputs`` for the ``INPUT`` layer and ``checks`` (weather,
        scenes, bundle, ...), before any scene is read; its problems become a
        ``QgsProcessingException``."""
        from ...core.preflight import check_inputs

        source = self.parameterAsSource(parameters, "INPUT", context)
        crs, bounds = None, None
        if source is not None:
            crs = source.sourceCrs().toWkt() if source.sourceCrs().isValid() else None
            extent = source.sourceExtent()
            if not extent.isEmpty():
                bounds = (extent.xMinimum(), extent.yMinimum(), extent.xMaximum(), extent.yMaximum())
        checked = self.run_core(lambda: check_inputs(parcel_crs=crs or "", parcel_bounds=bounds, **checks))
        feedback.pushInfo(f"Inputs checked in {checked.seconds:.1f} s")
        return checked

    SCENES_HELP = ("Sentinel-2 scenes of one season: multi-band GeoTIFFs, per-band files or .SAFE "
                   "products, as layers or files (repeat SCENES=... on the command line). Give these, "
                   "a scene folder, or both: one of the two is required.")
    SCENE_FOLDER_HELP = ("A folder holding the scenes, instead of or besides the scenes above: one of the two "
                         "is required.")
    SCENES_REQUIRED = True
    """False where the scenes only supply dates that may come another way (growing degree days)."""

    def add_scene_parameters(self, label: str = "") -> None:
        """Add ``SCENES`` (raster layers or files) and ``SCENE_FOLDER`` (a folder).

        Both are optional to Processing, since either may be left empty, so the labels say that
        one of them is required and ``check_scenes`` checks it.
        """
        if self.SCENES_REQUIRED:
            scenes_label = label or "Sentinel-2 scenes (these or a folder of scenes)"
            folder_label = "Folder of scenes (or the scenes above)"
        else:
            scenes_label, folder_label = label or "Sentinel-2 scenes", "Folder of scenes"
        self.add(QgsProcessingParameterMultipleLayers("SCENES", scenes_label, QgsProcessing.TypeRaster,
                                                      optional=True),
                 self.HELP.get("SCENES", self.SCENES_HELP))
        self.add(QgsProcessingParameterFile("SCENE_FOLDER", folder_label,
                                            behavior=QgsProcessingParameterFile.Folder, optional=True),
                 self.HELP.get("SCENE_FOLDER", self.SCENE_FOLDER_HELP))

    def scenes(self, parameters: dict, context: QgsProcessingContext) -> list[str]:
        """File paths of the scenes from ``SCENES`` and ``SCENE_FOLDER``."""
        paths = self.scene_paths(self.parameterAsLayerList(parameters, "SCENES", context), context)
        folder = self.parameterAsFile(parameters, "SCENE_FOLDER", context)
        if folder:
            inside = os.path.abspath(folder) + os.sep
            # A layer from inside the folder would otherwise be read twice.
            paths = [p for p in paths if not os.path.abspath(p).startswith(inside)] + [folder]
        return paths

    def check_scenes(self, parameters: dict, context: QgsProcessingContext) -> tuple[bool, str]:
        """``(ok, message)``: scenes were given and the folder exists."""
        folder = self.parameterAsFile(parameters, "SCENE_FOLDER", context)
        if folder and not os.path.isdir(folder):
            return False, tr("The scene folder {folder!r} does not exist; choose an existing folder.").format(
                folder=folder)
        if not folder and not self.parameterAsLayerList(parameters, "SCENES", context):
            return False, tr("Give Sentinel-2 scenes: '{scenes}' (SCENES, layers or files) or '{folder}' "
                             "(SCENE_FOLDER); one of them is required.").format(
                scenes=self.parameterDefinition("SCENES").description(),
                folder=self.parameterDefinition("SCENE_FOLDER").description())
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
    def check_output_file(path: str, **check) -> tuple[bool, str]:
        """``(ok, message)`` of ``core.output.check_output(path, **check)``: the output can be
        written there (before any work; nothing is written)."""
        from ...core.errors import ThermoCropError
        from ...core.output import check_output

        try:
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
