"""Background work for the dock: reading the layer, classifying, writing a new layer file and
explaining one parcel, each in a ``QgsTask`` so that QGIS stays responsive.

The dock takes a ``QgsVectorLayerFeatureSource`` of the parcel layer on the main thread (QGIS's
way of reading a layer from another thread); the tasks read features only through it and touch
no other QGIS object, so removing the layer meanwhile harms nothing.
"""

from __future__ import annotations

import logging
import uuid
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Callable, Optional, Union

from qgis.core import Qgis, QgsFeatureRequest, QgsMessageLog, QgsProcessingUtils, QgsTask

from .. import app
from ..app import (
    ClassificationOutput,
    ClassifyRequest,
    ClusterSpec,
    ParcelsSpec,
    ResultFields,
    RunProgress,
    ScenesSpec,
    weather_spec,
)
from ..core.classify import estimated_seconds
from ..core.model.calibration import DEFAULT_COVERAGE
from ..core.runs.folder import default_run_folder
from ..core.settings import PixelSampling
from .i18n import tr
from .layers import ID_COLUMN, features_to_frame
from .python_interpreter import use_for_worker_processes

log = logging.getLogger(__name__)

TYPICAL_DATES = 40
"""Scenes assumed in weighting the progress where they are given as folders (a season)."""
TYPICAL_PARCELS = 3000
"""Parcels assumed in weighting the reading of the layer before they are counted."""


@dataclass
class LayerSnapshot:
    """A parcel layer as the worker thread may read it.

    Attributes:
        source: ``QgsVectorLayerFeatureSource`` made on the main thread.
        crs: the layer's ``QgsCoordinateReferenceSystem``.
        name: the layer's name (for messages).
        field_names: the layer's fields, copied into a new layer file.
        selected: feature ids to classify, or None for every feature.
    """

    source: Any
    crs: Any
    name: str
    field_names: list
    selected: Optional[list] = None

    def read(self, attributes: bool = False, only_selected: bool = True, label_field: Optional[str] = None,
             block_field: Optional[str] = None):
        """``(frame, fids)`` as :func:`~thermocrop.plugin.layers.features_to_frame` gives them (with
        ``label_field`` and ``block_field`` copied where named), named by the layer."""
        request = QgsFeatureRequest()
        if only_selected and self.selected is not None:
            request.setFilterFids(list(self.selected))
        features = self.source.getFeatures(request)
        frame, fids = features_to_frame(features, self.crs, label_field=label_field, block_field=block_field,
                                        attributes=self.field_names if attributes else None)
        frame.attrs["name"] = self.name  # what messages call the parcels
        return frame, fids


@dataclass
class ClassificationParameters:
    """What the dock hands to the task (plain values and a layer snapshot).

    Attributes:
        parcels: a :class:`LayerSnapshot`, or a GeoDataFrame with a ``parcel_id`` column.
        fids: ``(P,)`` feature ids of a GeoDataFrame's rows (filled from the snapshot otherwise).
        scenes: scene files or folders, or the ``Scene`` list the preflight found.
        weather: temperature file.
        model: model bundle path, or None for the shipped default.
        label_field, confidence_field, status_field: output field names.
        probabilities: also write ``p_<class>``, margin and entropy fields.
        output: a new layer file to write (through ``core.classify.write_classification``), or
            None to write the fields into the parcel layer.
        overwrite: the user agreed to replace an existing ``output``.
        bundle: the ``ModelBundle`` the preflight loaded (else ``model`` is loaded in the task).
        inputs: files the run reads (parcel file, weather, model), which ``output`` may not be.
        extra: ``core.settings.PixelSampling`` fields other than their defaults (``min_pixels``,
            ``missing_scl``...).
        credentials: for reading saved STAC items (``scenes``) from QGIS's authentication manager
            (``catalog.auth_credentials``); empty: the environment's. Held in memory only.
        coverage: the prediction sets' coverage (``crop_set``, ``crop_set_size``), or None for no sets.
        as_of: classify as of this date (a ``datetime.date``; None: every scene).
        decided: the confidence a decided label keeps (``crop_decided``); None: not asked.
        cluster: where the work runs (one process, local workers or a scheduler's cluster), its
            run folder named (``prepared_cluster``).
        class_shares: the CSV file of the crops' shares in the area (``core.class_shares``), or None.
    """

    parcels: Any
    fids: list
    scenes: list
    weather: str
    model: Optional[str] = None
    label_field: str = "crop_pred"
    confidence_field: str = "crop_conf"
    status_field: str = "crop_status"
    probabilities: bool = False
    output: Optional[str] = None
    overwrite: bool = False
    extra: dict = field(default_factory=dict)
    bundle: Any = None
    inputs: list = field(default_factory=list)
    credentials: dict = field(default_factory=dict)
    coverage: Optional[float] = DEFAULT_COVERAGE
    as_of: Any = None
    decided: Optional[float] = None
    cluster: ClusterSpec = field(default_factory=ClusterSpec)
    class_shares: Optional[str] = None


def prepared_cluster(spec: ClusterSpec, beside: Optional[str], name: str) -> ClusterSpec:
    """``spec`` ready to run from QGIS: a partitioned run's folder is the one given, else
    ``<beside>.parts`` beside the output file (as on the command line), else a new folder
    ``<name>-<random>.parts`` in QGIS's temporary folder (one that cannot be resumed once QGIS
    closes); local workers start from QGIS's Python interpreter.

    Raises:
        DependencyError: local workers are asked for and that interpreter cannot be found.
    """
    if spec.partitioned and not spec.run_folder:
        folder = default_run_folder(beside) if beside else \
            Path(QgsProcessingUtils.tempFolder()) / f"{name}-{uuid.uuid4().hex[:12]}.parts"
        spec = replace(spec, run_folder=str(folder))
    if spec.workers > 1 and not spec.scheduler:
        use_for_worker_processes()
    return spec


class ThermoCropTask(QgsTask):
    """A cancellable background task that reports its end instead of raising.

    Subclasses do their work in :meth:`work`. Afterwards ``error`` holds what went wrong (a
    ThermoCrop message, or the type and text of an unexpected exception, which is also logged
    with its traceback) and ``cancelled`` tells a user stop from a failure; ``on_done(task)``
    runs in the main thread.
    """

    WHAT = "ThermoCrop task"
    """Names the task in the log when it fails unexpectedly."""

    def __init__(self, description: str, on_done: Optional[Callable[[Any], None]]):
        super().__init__(description, QgsTask.CanCancel)
        self.on_done = on_done
        self.error: Optional[str] = None
        self.cancelled = False

    def work(self, progress) -> None:
        """The task's work; ``progress`` is a ``core.progress.Progress`` tied to the task."""
        raise NotImplementedError

    def cancel(self) -> None:
        """Stop at the next scene window or model batch, and say so at once in QGIS's log."""
        if not self.isCanceled():
            QgsMessageLog.logMessage(tr("{task}: cancelling…").format(task=self.description()), "ThermoCrop",
                                     Qgis.Info)
        super().cancel()

    def run(self) -> bool:
        from ..core.errors import CancelledError, ThermoCropError
        from ..core.progress import Progress

        progress = Progress(lambda f: self.setProgress(100.0 * f), self.isCanceled)
        try:
            self.work(progress)
            return True
        except CancelledError:
            self.cancelled = True
            return False
        except ThermoCropError as exc:
            self.error = str(exc)
            return False
        except Exception as exc:  # a worker thread must report, not crash QGIS
            log.exception("%s failed", self.WHAT)
            self.error = f"{type(exc).__name__}: {exc}"
            return False

    def finished(self, ok: bool) -> None:
        # A Cancel pressed as the work ended changes nothing: what it wrote is reported as done.
        if self.isCanceled() and not ok and self.error is None:
            self.cancelled = True
        if self.on_done is not None:
            self.on_done(self)


class ReferenceLayerTask(ThermoCropTask):
    """A run on labelled reference parcels: reads them (a :class:`LayerSnapshot`, in the worker
    thread) and hands the request to :meth:`run_request`; ``run_result`` then holds what that
    returned. ``title`` names the task, with ``{layer}`` for the layer's name."""

    def __init__(self, request: Any, on_done: Optional[Callable[[Any], None]], title: str):
        snapshot = request.reference.source
        name = snapshot.name if isinstance(snapshot, LayerSnapshot) else tr("the reference parcels")
        super().__init__(title.format(layer=name), on_done)
        self.request = request
        self.run_result = None
        self.reports: list[str] = []
        """What the run said for the user besides its result (parcels left out, season stages...)."""

    def run_request(self, request: Any, progress: RunProgress) -> Any:
        """The app's run of ``request``, the reference parcels read."""
        raise NotImplementedError

    def work(self, progress) -> None:
        request = self.request
        snapshot = request.reference.source
        if isinstance(snapshot, LayerSnapshot):  # its selected features alone, where some are
            frame, _ = snapshot.read(label_field=request.label_field)
            request = replace(request, reference=replace(request.reference, source=frame))
        progress(0.02)
        self.run_result = self.run_request(request, RunProgress(progress.sub(0.02, 1.0), report=self.reports.append))


class ClassificationTask(ThermoCropTask):
    """Reads the parcels and runs ``app.run_classification`` (which writes a new layer file when
    asked) off the main thread.

    It takes a ``ClassifyRequest`` whose parcels may be a :class:`LayerSnapshot` (read here, in
    the worker thread), or the dock's :class:`ClassificationParameters` (turned into one by
    :func:`classification_request`). ``on_done(task)`` runs in the main thread. After it ends,
    ``result`` holds the ``ClassificationResult``, ``bundle`` the model (``model_choice`` says
    why, where the scenes' level chose the shipped one), ``fids`` the feature id of each frame
    row and ``written`` the new file (new-layer mode); or ``error`` says what went wrong
    (``cancelled`` tells a user stop from a failure).
    """

    WHAT = "Classification"

    def __init__(self, params: Union[ClassificationParameters, ClassifyRequest],
                 on_done: Optional[Callable[["ClassificationTask"], None]], fids: Optional[list] = None):
        super().__init__(tr("ThermoCrop: classify parcels"), on_done)
        self.params = params
        self.request = params if isinstance(params, ClassifyRequest) else classification_request(params)
        self.result = None
        self.bundle = None
        self.model_choice: Optional[str] = None  # which shipped model the scenes' level chose, and why
        self.fids: list = list(params.fids) if isinstance(params, ClassificationParameters) else list(fids or [])
        self.written: Optional[str] = None
        self.reports: list[str] = []
        """What the run said for the user (as of a date: the season's status, the model's training)."""

    def work(self, progress) -> None:
        request = self.request
        new_file = request.output is not None
        # The bar moves through reading the layer, classifying and writing by their cost, which
        # is known once the parcels are counted.
        found = request.scenes.found
        dates = len(found) if found else TYPICAL_DATES
        reading, rest = progress.parts(_phase_costs(estimated_seconds(TYPICAL_PARCELS, dates), new_file, 2))
        request, self.fids = read_parcels(request, self.fids)
        reading(1.0)
        classifying, writing = rest.parts(_phase_costs(estimated_seconds(len(self.fids), dates), new_file)[1:])
        run_progress = RunProgress(classifying, report=self.reports.append)
        run_progress.reserve_cores = 1  # the dock's run leaves a core to the QGIS interface
        run = app.run_classification(request, run_progress)
        self.result, self.bundle = run.result, run.bundle
        self.model_choice = run.checked.model_choice
        self.written = None if run.written is None else str(run.written)
        writing(1.0)


def classification_request(p: ClassificationParameters) -> ClassifyRequest:
    """The dock's parameters as a ``ClassifyRequest`` (its parcels still the layer snapshot)."""
    if p.credentials:  # saved STAC items read with keys from QGIS's authentication manager
        scenes = ScenesSpec(items=tuple(p.scenes), credentials=dict(p.credentials))
    elif _all_scenes(p.scenes):
        scenes = ScenesSpec(found=tuple(p.scenes))
    else:
        scenes = ScenesSpec(files=tuple(p.scenes))
    output = None
    if p.output:
        output = ClassificationOutput(p.output, overwrite=p.overwrite, inputs=tuple(p.inputs))
    return ClassifyRequest(
        parcels=ParcelsSpec(p.parcels, name=_parcels_name(p.parcels), id_field=ID_COLUMN),
        scenes=scenes, weather=weather_spec(p.weather), model=p.bundle if p.bundle is not None else p.model,
        fields=ResultFields(p.label_field, p.confidence_field, p.status_field, p.probabilities, p.coverage,
                            decided=p.decided),
        sampling=PixelSampling(**p.extra), output=output, as_of=p.as_of, cluster=p.cluster,
        class_shares=p.class_shares)


def read_parcels(request: ClassifyRequest, fids: list) -> tuple[ClassifyRequest, list]:
    """``request`` with a layer snapshot read into a table (in the worker thread), and the
    feature id of each row (``fids`` for a table given as such).

    A new file gets every feature (the unselected ones with status ``not_selected``), the
    layer itself only the selected ones.
    """
    import geopandas as gpd

    snapshot = request.parcels.source
    if not isinstance(snapshot, LayerSnapshot):
        return request, list(fids)
    whole = request.output is not None
    table, fids = snapshot.read(attributes=whole, only_selected=not whole)
    parcels = replace(request.parcels, source=table)
    if whole:
        # The user's own fields (a parcel_id among them) are kept apart from the ids core
        # reads: each row's feature id.
        frame = gpd.GeoDataFrame({ID_COLUMN: [str(fid) for fid in fids]}, geometry=table.geometry.values,
                                 crs=table.crs)
        selected = None if snapshot.selected is None else tuple(str(fid) for fid in snapshot.selected)
        parcels = replace(parcels, source=frame, selected_ids=selected)
        request = replace(request, output=replace(request.output, features=table))
    return replace(request, parcels=parcels), fids


def _phase_costs(cost: dict, new_file: bool, parts: int = 3) -> list:
    """The costs of reading, classifying and writing (nothing to write without a new file),
    or of reading and the rest with ``parts=2``."""
    costs = [cost["read"], cost["extract"] + cost["predict"], cost["write"] if new_file else 0.0]
    return costs if parts == 3 else [costs[0], costs[1] + costs[2]]


def _all_scenes(scenes) -> bool:
    """Whether ``scenes`` are the preflight's ``Scene`` objects (one per date), not paths."""
    return bool(scenes) and all(hasattr(scene, "date") for scene in scenes)


def _parcels_name(parcels) -> str:
    """How messages name the parcels: the layer's name, or "the parcels" for a table."""
    return parcels.name if isinstance(parcels, LayerSnapshot) else tr("the parcels")


def ndvi_series(ps, parcel: int = 0):
    """Mean NDVI per date of one parcel, ``(T,)`` with NaN on unusable dates.

    NDVI = (B08 - B04) / (B08 + B04) over the parcel's valid pixels.
    """
    import numpy as np

    bands = list(ps.bands)
    red = np.asarray(ps.pixels[parcel, :, bands.index("B04")], dtype=np.float64)
    nir = np.asarray(ps.pixels[parcel, :, bands.index("B08")], dtype=np.float64)
    mask = np.asarray(ps.pixel_mask[parcel])
    with np.errstate(invalid="ignore", divide="ignore"):
        ndvi = np.where(mask, (nir - red) / (nir + red), np.nan)
        series = np.nanmean(np.where(mask.any(axis=1, keepdims=True), ndvi, 0.0), axis=1)
    series[~np.asarray(ps.date_mask[parcel])] = np.nan
    return series


@dataclass
class Explanation:
    """One parcel's inputs and prediction, ready to draw.

    Attributes:
        fid: the feature id; name: its ``parcel_id`` attribute or the id.
        dates: ``(T,)`` datetime64[D]; gdd: ``(T,)`` growing degree days; ndvi: ``(T,)`` mean NDVI
            (NaN where unusable); probabilities: ``(K,)`` (NaN when not classified);
            status: ``"ok"`` or why not; bundle: the model.
        share_factors: the factors of the run's class shares applied to ``probabilities``
            (``core.class_shares``), or None.
    """

    fid: int
    name: str
    dates: Any
    gdd: Any
    ndvi: Any
    probabilities: Any
    status: str
    bundle: Any
    share_factors: Any = None


class ExplainTask(ThermoCropTask):
    """Extracts one parcel's pixels and predicts its class off the main thread.

    ``explanation`` holds the :class:`Explanation` afterwards, or ``error`` what went wrong.
    """

    WHAT = "Explain"

    def __init__(self, snapshot: LayerSnapshot, fid: int, scenes: list, weather: str, bundle: Any,
                 on_done: Callable[["ExplainTask"], None], as_of: Any = None, share_factors: Any = None):
        super().__init__(tr("ThermoCrop: explain a parcel"), on_done)
        self.snapshot, self.fid, self.scenes, self.weather, self.bundle = snapshot, fid, scenes, weather, bundle
        self.as_of = as_of
        """A date: the scenes acquired after it are left out, as the run as of it left them."""
        self.share_factors = share_factors
        """The factors that brought the run's probabilities to its class shares, applied here too."""
        self.explanation: Optional[Explanation] = None

    def work(self, progress) -> None:
        import numpy as np

        from ..core.classify import bundle_thermal_time
        from ..core.errors import ThermoCropError
        from ..core.extract import extract_pixel_sets, scene_list_of
        from ..core.parcels import ParcelFields
        from ..core.preflight import run_bundle
        from ..core.settings import ExtractionSettings

        features = list(self.snapshot.source.getFeatures(QgsFeatureRequest(self.fid)))
        if not features:
            raise ThermoCropError(tr("Feature {fid} is no longer in {layer}.").format(
                fid=self.fid, layer=self.snapshot.name))
        feature = features[0]
        frame, _ = features_to_frame(features, self.snapshot.crs)
        scenes = scene_list_of(self.scenes)
        if self.as_of is not None:
            from ..core.inseason import scenes_as_of

            scenes = scenes_as_of(scenes, self.as_of) or scenes
        bundle = run_bundle(self.bundle or None, scenes)  # none (or an empty path): the shipped model of their level
        progress(0.1)
        ps = extract_pixel_sets(frame, scenes, self.weather, fields=ParcelFields(block_field=None),
                                settings=ExtractionSettings(thermal=bundle_thermal_time(bundle)),
                                progress=progress.sub(0.1, 0.9))
        ok = ps.status[0] == "ok"
        probs = bundle.predict(ps)[0] if ok else np.full(len(bundle.classes), np.nan)
        if ok and self.share_factors is not None:
            from ..core.class_shares import apply_share_factors

            probs = apply_share_factors(probs, self.share_factors)
        name = feature["parcel_id"] if feature.fields().indexOf("parcel_id") >= 0 else self.fid
        self.explanation = Explanation(self.fid, str(name), np.asarray(ps.dates), np.asarray(ps.gdd[0]),
                                       ndvi_series(ps), np.asarray(probs), str(ps.status[0]), bundle,
                                       self.share_factors)
        progress(1.0)
