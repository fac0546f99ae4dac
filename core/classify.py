"""Classify parcels end to end (parcels + scenes + weather + model bundle) and write the result.

Parcels stream through extraction and the model in spatial chunks, so memory stays bounded
whatever the size of the layer.
"""

from __future__ import annotations

import logging
import math
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Optional, Sequence, Union

import numpy as np

from .class_shares import apply_share_factors, few_parcels_note, prefix_share_factors, share_factors
from .crops import UNKNOWN_CLASS
from .errors import InputError, SceneError
from .extract import SceneSource, chunk_groups, dataset_meta, scene_list_of
from .inseason import decided_index, decision_dates
from .io.field_batches import FieldBatches
from .io.source_layer import feature_count, source_field_kinds
from .io.vector import write_with_fields
from .model.calibration import prediction_sets
from .parcels import ParcelSource, ParcelTable, load_parcels
from .pixel_sampling import scene_grids, spatial_chunks
from .pixel_sets import STATUS_OK, status_ok
from .preflight import run_bundle
from .progress import Progress
from .result_columns import column_kinds, earlier_run_fields, empty_columns, result_columns, widest_texts
from .scenes.radiometry import check_missing_scl
from .scenes.seasons import select_season
from .settings import ExtractionSettings, PixelSampling, ThermalTime

log = logging.getLogger(__name__)

BATCH_SIZE = 256
"""Parcels per model call (fewer on a CPU: ``CPU_BATCH_PIXEL_DATES``)."""

PREDICT_BATCH = 2048
"""Parcels copied out of a chunk at a time for the model (keeps the copy small)."""

CPU_BATCH_PIXEL_DATES = 80_000
"""Pixel-dates per model call on a CPU (32 parcels of 39 dates x 64 pixels). A cancel waits for
the call in progress, about a second on two cores; smaller calls predict more slowly (16
parcels took 1.5 to 1.7 times as long per parcel as 256, 32 parcels 1.1 to 1.2 times)."""

SECONDS_PER_PARCEL = {"read": 1.3e-4, "write": 7e-5}
"""Reading a parcel from a QGIS layer and writing it with its classes.

These costs, like the ones below, are seconds on two CPU cores, from a run on 3,000 synthetic
parcels and one on 100 (39 scenes, the shipped model's architecture)."""
EXTRACT_SECONDS = {"parcel_date": 5.4e-5, "scene": 0.026, "weather": 2.5}
"""Extracting one parcel's pixels on one date; opening one scene; reading the temperatures."""
PREDICT_SECONDS_PER_PIXEL_DATE = 1.6e-5
"""The model on one pixel of one date: 64 pixels of 39 dates make prediction 12 times the cost
of extracting a parcel, which the progress bar must show."""


def estimated_seconds(parcels: int, dates: int, pixels: int = 64) -> dict[str, float]:
    """What each phase of classifying ``parcels`` with ``dates`` scenes and up to ``pixels``
    pixels per parcel (``classify_parcels``' ``max_pixels``) costs, in seconds on the machine
    the constants were measured on: only their ratios matter, to weight each phase's part of
    the progress.

    Returns:
        ``{"read", "extract", "predict", "write"}`` -> seconds.
    """
    return {"read": parcels * SECONDS_PER_PARCEL["read"],
            "extract": (parcels * dates * EXTRACT_SECONDS["parcel_date"] + dates * EXTRACT_SECONDS["scene"]
                        + EXTRACT_SECONDS["weather"]),
            "predict": parcels * dates * pixels * PREDICT_SECONDS_PER_PIXEL_DATE,
            "write": parcels * SECONDS_PER_PARCEL["write"]}


@dataclass
class ClassificationResult:
    """Per-parcel predictions.

    Attributes:
        parcel_ids: ``(P,)`` str.
        labels: ``(P,)`` str predicted class, ``""`` where the status is not ``"ok"``.
        confidence: ``(P,)`` float32 highest class probability, NaN where not ``"ok"``.
        probabilities: ``(P, K)`` float32 class probabilities, NaN rows where not ``"ok"``.
        status: ``(P,)`` str, ``"ok"`` or why the parcel was not classified.
        classes: the K class names.
        rows: ``(P,)`` int64 position of each parcel in the source layer.
        warnings: things the user should know about the run as a whole (e.g. scenes of
            another processing level than the model was trained on).
        sets: ``(P, K)`` bool prediction sets (:func:`add_prediction_sets`), or None.
        coverage: the chance each set holds the true class, or None without sets.
        decided: ``(P,)`` datetime64[D] the acquisition from which the label was decided
            (``core.inseason.decided_index``; NaT: never, or not ``"ok"``), or None when not asked.
        decided_gdd: ``(P,)`` float32 the parcel's GDD on that acquisition (NaN: never), or None.
        decided_threshold: the confidence a decided label kept, or None.
        share_factors: ``(K,)`` the factors that brought the probabilities to the class shares
            given (``core.class_shares``), or None where none were.
    """

    parcel_ids: np.ndarray
    labels: np.ndarray
    confidence: np.ndarray
    probabilities: np.ndarray
    status: np.ndarray
    classes: tuple[str, ...]
    rows: np.ndarray
    warnings: tuple[str, ...] = ()
    sets: Optional[np.ndarray] = None
    coverage: Optional[float] = None
    decided: Optional[np.ndarray] = None
    decided_gdd: Optional[np.ndarray] = None
    decided_threshold: Optional[float] = None
    share_factors: Optional[np.ndarray] = None

    def __len__(self) -> int:
        return len(self.parcel_ids)

    def counts(self) -> dict[str, int]:
        """Parcels per predicted class, plus one entry per non-ok status."""
        out: dict[str, int] = {}
        for label, status in zip(self.labels, self.status):
            key = label if status == STATUS_OK else f"({status})"
            out[key] = out.get(key, 0) + 1
        return out

    def status_counts(self) -> dict[str, int]:
        """Parcels per status (as ``PartitionedResult.status_counts``)."""
        names, counts = np.unique(np.asarray(self.status, dtype=str), return_counts=True)
        return dict(zip(names.tolist(), counts.tolist()))


def bundle_thermal_time(bundle: Any) -> ThermalTime:
    """The thermal time the model of ``bundle`` was trained with, so that inputs match its
    training: its config's ``gdd`` record, or for older bundles the config's own fields
    (``method`` or ``gdd_method``)."""
    config = bundle.config
    gdd = getattr(config, "gdd", None)
    return ThermalTime.from_dict(gdd if gdd is not None else config)


def level_mismatch(bundle: Any, scenes: Sequence[Any]) -> Optional[str]:
    """A warning when the scenes' processing levels are not those the model was trained on.

    Top-of-atmosphere (L1C) and surface (L2A) reflectance differ by several hundredths in the
    visible bands, enough to move a classifier's decisions.
    """
    trained = set((bundle.config.provenance or {}).get("scene_levels") or [])
    here = {sc.level for sc in scenes if sc.level}
    if not trained or not here or here <= trained:
        return None
    return (f"The model was trained on {'/'.join(sorted(trained))} scenes but these are "
            f"{'/'.join(sorted(here))}: top-of-atmosphere and surface reflectance differ, so expect lower "
            f"accuracy. Use {'/'.join(sorted(trained))} products, or a model trained on "
            f"{'/'.join(sorted(here))} scenes.")


FEW_DATES = 6
"""Fewer acquisition dates than this are too few to follow a crop through its season."""
UNKNOWN_SHARE = 0.25
"""A run with this share of its classified parcels "unknown" or more says so."""


def scene_warnings(bundle: Any, scenes: Sequence[Any]) -> list[str]:
    """What a run of ``bundle`` on extracted ``scenes`` should say before it starts, as a
    classification does: scenes of another processing level than the model's
    (:func:`level_mismatch`), too few dates (:func:`few_dates`). The extraction says itself which
    L2A scenes lack a scene classification layer."""
    return [w for w in (level_mismatch(bundle, scenes), few_dates(scenes)) if w]


def few_dates(scenes: Sequence[Any]) -> Optional[str]:
    """A warning when the scenes hold fewer than :data:`FEW_DATES` acquisition dates.

    The model reads each crop's development over the season; two or three dates show too little
    of it, and many parcels come out "unknown" or wrong.
    """
    dates = sorted({np.datetime64(sc.date, "D") for sc in scenes})
    if len(dates) >= FEW_DATES:
        return None
    return (f"Only {len(dates)} acquisition date{'s' if len(dates) != 1 else ''} "
            f"({', '.join(map(str, dates))}): far too few to follow the crops through the season, so expect "
            f"many parcels 'unknown' or wrong. Give at least {FEW_DATES} dates, better 8 or more spread from "
            "spring to autumn.")


def unknown_share(labels: np.ndarray, ok: np.ndarray) -> Optional[str]:
    """A warning when :data:`UNKNOWN_SHARE` or more of the classified parcels are "unknown"."""
    return unknown_warning(int(ok.sum()), int((labels[ok] == UNKNOWN_CLASS).sum()))


def unknown_warning(done: int, unknown: int) -> Optional[str]:
    """:func:`unknown_share` from the counts: ``done`` parcels classified, ``unknown`` of them "unknown"."""
    if done == 0 or unknown < UNKNOWN_SHARE * done:
        return None
    return (f"{unknown} of {done} classified parcels came out 'unknown' ({100.0 * unknown / done:.0f} %): the "
            "model could not place them (too few dates, scenes of another season or level, or crops it does "
            "not know).")


def classify_parcels(
    parcels: Union[ParcelSource, ParcelTable],
    scenes: SceneSource,
    weather: Any,
    bundle: Any = None,
    *,
    sampling: Optional[PixelSampling] = None,
    selected_ids: Optional[Sequence[Any]] = None,
    id_field: Optional[str] = None,
    weather_options: Optional[dict[str, Any]] = None,
    chunk_size: int = 20000,
    progress: Optional[Progress] = None,
    decided: Optional[float] = None,
    class_shares: Optional[np.ndarray] = None,
) -> ClassificationResult:
    """Predict the crop of every parcel.

    Args:
        parcels: vector file or GeoDataFrame (any CRS), or a prepared ``ParcelTable``.
        scenes: scene folder / glob / files, or scenes from ``find_scenes``.
        weather: temperature file (E-OBS / CF NetCDF / station CSV) or ``DailyTemperature``.
        bundle: a ``ModelBundle``, a bundle path, or None for the model shipped for the
            scenes' processing level (``core.model.bundle.default_bundle_for_levels``).
        sampling: how pixels are sampled and masked (:class:`PixelSampling`; None for its
            defaults). L2A products without SCL (``missing_scl="warn"``) give a warning in the
            result. The thermal time comes from the bundle (:func:`bundle_thermal_time`).
        selected_ids: classify only these parcel ids.
        id_field: field with the parcel ids (default ``parcel_id`` or the row number).
        weather_options: extra keyword arguments of ``read_daily_temperature``.
        chunk_size: parcels extracted and classified at a time. 20,000 parcels x 60 dates x
            64 pixels take about 1.5 GB, so 100k parcels stay well within 4 GB.
        progress: progress and cancellation.
        decided: also say when each label was decided (``result.decided``, ``decided_gdd``):
            the confidence it must keep (``core.inseason.decided_index``); None: not asked.
        class_shares: ``(K,)`` the crops' shares in the area (``core.class_shares``): the
            probabilities are brought to them before the labels are made, and with ``decided`` as
            of each date (from every prefix of the season, kept for the whole layer); the result's
            ``share_factors`` hold the whole season's factors. None: as the model gives them.

    Returns:
        A :class:`ClassificationResult` in layer order.
    """
    progress = progress or Progress()
    job = prepare_classification(parcels, scenes, weather, bundle, sampling=sampling, selected_ids=selected_ids,
                                 id_field=id_field, weather_options=weather_options)
    progress.check()
    n, k = len(job.table), len(job.classes)
    probabilities = np.full((n, k), np.nan, dtype=np.float32)
    status = np.empty(n, dtype=object)
    decided_days = np.full(n, np.datetime64("NaT"), dtype="datetime64[D]")
    decided_gdd = np.full(n, np.nan, dtype=np.float32)
    # With shares, decisions need every parcel's prefixes at once: each date's map is matched to them.
    prefixes = gdd = None
    if class_shares is not None and decided is not None:
        prefixes = np.full((n, len(job.scenes), k), np.nan, dtype=np.float32)
        gdd = np.full((n, len(job.scenes)), np.nan, dtype=np.float32)
    select_season(job.scenes, job.settings.thermal.season_start)  # refuses scenes of several seasons
    chunks = spatial_chunks(job.table, chunk_size, scene_grids(job.scenes))
    costs = [estimated_seconds(len(idx), len(job.scenes), job.settings.sampling.max_pixels) for idx in chunks]
    # Each chunk is read, then its parcels go through the model: the bar moves through both
    # by their cost, the model's part batch by batch.
    for idx, part, cost in zip(chunks, progress.parts([c["extract"] + c["predict"] for c in costs]), costs):
        reading, predicting = part.parts([cost["extract"], cost["predict"]])
        done = 0
        for group, ps in chunk_groups(job.table, idx, job.scenes, weather, job.settings, job.classes, job.meta,
                                      reading):
            status[group] = ps.status
            share = predicting.sub(done / len(idx), (done + len(group)) / len(idx))
            if prefixes is not None:
                prefixes[group] = predict_chunk(job.model, ps, BATCH_SIZE, share, every_date=True)
                gdd[group] = ps.gdd
            elif decided is None:
                probabilities[group] = predict_chunk(job.model, ps, BATCH_SIZE, share)
            else:
                probabilities[group], decided_days[group], decided_gdd[group] = predict_chunk_decided(
                    job.model, ps, decided, BATCH_SIZE, share)
            done += len(group)
            del ps
    progress(1.0)
    factors = None
    if prefixes is not None:
        raw = prefixes[:, -1].copy() if len(job.scenes) else probabilities
        per_date = prefix_share_factors(prefixes, class_shares)
        prefixes = apply_share_factors(prefixes, per_date[None, :, :])
        probabilities, factors = prefixes[:, -1], per_date[-1]
        decided_days, decided_gdd = decision_dates(decided_index(prefixes, decided),
                                                   [sc.date for sc in job.scenes], gdd)
    elif class_shares is not None:
        raw, factors = probabilities, share_factors(probabilities, class_shares)
        probabilities = apply_share_factors(probabilities, factors)
    result = assemble_result(job, status, probabilities,
                             None if decided is None else (decided_days, decided_gdd, decided))
    if factors is not None:
        result.share_factors = factors
        ok = status_ok(result.status)
        changed = int((np.nan_to_num(raw, nan=-1.0).argmax(axis=1) != np.nan_to_num(
            probabilities, nan=-1.0).argmax(axis=1))[ok].sum())
        log.info("Class shares: %d of %d classified parcels changed label", changed, int(ok.sum()))
        note = few_parcels_note(int(ok.sum()))
        if note:
            log.warning(note)
            result.warnings = (*result.warnings, note)
    return result


@dataclass
class ClassificationJob:
    """Everything a classification run needs besides the weather: checked once, before any scene is read."""

    model: Any
    classes: tuple[str, ...]
    settings: ExtractionSettings
    table: Optional[ParcelTable]
    scenes: list
    meta: dict[str, Any]
    warnings: tuple[str, ...]


def prepare_classification(
    parcels: Union[ParcelSource, ParcelTable],
    scenes: SceneSource,
    weather: Any,
    bundle: Any = None,
    *,
    sampling: Optional[PixelSampling] = None,
    selected_ids: Optional[Sequence[Any]] = None,
    id_field: Optional[str] = None,
    weather_options: Optional[dict[str, Any]] = None,
) -> ClassificationJob:
    """Load the model and the parcels and find the scenes (arguments as :func:`classify_parcels`).

    A model given is loaded first; without one, the shipped model of the scenes' level is loaded
    once the scenes are found."""
    given = None if bundle is None else run_bundle(bundle, ())
    table = parcels if isinstance(parcels, ParcelTable) else load_parcels(
        parcels, id_field=id_field, block_field=None, selected_ids=selected_ids)
    if len(table) == 0:
        raise InputError(f"No parcels to classify in {table.source}"
                         + (" among the selected ids." if selected_ids is not None else "."))
    job = classification_setup(scenes, given, sampling=sampling, weather_options=weather_options)
    job.table = table
    job.meta = dataset_meta(table, job.scenes, weather, job.settings, None)
    return job


def classification_setup(scenes: SceneSource, given: Any = None, *, sampling: Optional[PixelSampling] = None,
                         weather_options: Optional[dict[str, Any]] = None) -> ClassificationJob:
    """The model, the scenes and the settings of a classification, without its parcels (``table``
    None, ``meta`` empty: a partitioned run's workers read their parcels themselves).

    Args:
        given: a loaded model (``run_bundle``), or None for the one shipped for the scenes' level.
    """
    scene_list = scene_list_of(scenes)
    if not scene_list:
        raise SceneError("No scenes were given.")
    model = given if given is not None else run_bundle(None, scene_list)
    classes = tuple(model.config.classes)
    settings = ExtractionSettings(sampling=sampling or PixelSampling(), thermal=bundle_thermal_time(model),
                                  weather_options=dict(weather_options or {}))
    warnings = [w for w in (level_mismatch(model, scene_list),
                            check_missing_scl(scene_list, settings.sampling.missing_scl), few_dates(scene_list)) if w]
    for w in warnings:
        log.warning(w)
    return ClassificationJob(model, classes, settings, None, scene_list, {}, tuple(warnings))


def predict_chunk(model: Any, ps: Any, batch_size: int = 256, progress: Optional[Progress] = None,
                  every_date: bool = False) -> np.ndarray:
    """Class probabilities ``(n, K)`` float32 of a chunk's pixel sets, NaN rows where not ``ok``;
    with ``every_date``, ``(n, T, K)`` as of each date (``ModelBundle.predict_prefixes``).

    ``progress`` moves and is asked whether to stop after every model call; on a CPU a call
    holds at most ``CPU_BATCH_PIXEL_DATES`` pixel-dates (fewer parcels than ``batch_size``
    where they have many dates), so that a cancel is never kept waiting long.
    """
    progress = progress or Progress()
    shape = (len(ps), len(ps.dates), len(model.config.classes)) if every_date else \
        (len(ps), len(model.config.classes))
    probabilities = np.full(shape, np.nan, dtype=np.float32)
    ok = np.flatnonzero(ps.status == STATUS_OK)
    batch = model_batch(model, ps, batch_size)
    predict = model.predict_prefixes if every_date else model.predict
    for start in range(0, len(ok), PREDICT_BATCH):
        part = ok[start:start + PREDICT_BATCH]
        probabilities[part] = predict(ps.subset(part), batch_size=batch, progress=progress.sub(
            start / len(ok), (start + len(part)) / len(ok)))
    progress(1.0)
    return probabilities


def predict_chunk_decided(model: Any, ps: Any, threshold: float, batch_size: int = 256,
                          progress: Optional[Progress] = None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """:func:`predict_chunk` and when each label was decided, from one pass over the season's
    prefixes (``core.model.decided.decide``: only those a decision needs are decoded).

    Returns:
        ``(n, K)`` probabilities, ``(n,)`` datetime64[D] decision dates and ``(n,)`` float32 GDD
        (``core.inseason.decisions``; NaT and NaN where never decided or not ``ok``).
    """
    from .model.decided import decide  # torch: imported when a run predicts, not when the plugin loads

    progress = progress or Progress()
    probabilities = np.full((len(ps), len(model.config.classes)), np.nan, dtype=np.float32)
    days = np.full(len(ps), np.datetime64("NaT"), dtype="datetime64[D]")
    gdd = np.full(len(ps), np.nan, dtype=np.float32)
    ok = np.flatnonzero(ps.status == STATUS_OK)
    batch = model_batch(model, ps, batch_size)
    for start in range(0, len(ok), PREDICT_BATCH):
        part = ok[start:start + PREDICT_BATCH]
        sub = ps.subset(part)
        probabilities[part], index = decide(model, sub, threshold, batch_size=batch, progress=progress.sub(
            start / len(ok), (start + len(part)) / len(ok)))
        days[part], gdd[part] = decision_dates(index, sub.dates, sub.gdd)
    progress(1.0)
    return probabilities, days, gdd


def model_batch(model: Any, ps: Any, batch_size: int) -> int:
    """Parcels per model call: ``batch_size``, fewer on a CPU where their ``(T, S)`` pixel-dates
    exceed ``CPU_BATCH_PIXEL_DATES``. It depends on the data alone, so that every run (one
    process or partitioned) groups the same parcels and gets the same probabilities."""
    network = getattr(model, "model", None)
    device = next(network.parameters()).device.type if network is not None else "cpu"
    if device != "cpu":
        return batch_size
    _, dates, _, pixels = np.shape(ps.pixels)
    return max(1, min(batch_size, CPU_BATCH_PIXEL_DATES // max(dates * pixels, 1)))


def assemble_result(job: ClassificationJob, status: np.ndarray, probabilities: np.ndarray,
                    decided: Optional[tuple] = None) -> ClassificationResult:
    """The :class:`ClassificationResult` of a whole layer from its statuses and probabilities
    (and ``decided``: the decision dates, their GDD and the threshold, where asked)."""
    result = labelled_result(job.classes, job.table.parcel_ids, job.table.rows, status, probabilities, decided)
    result.warnings = job.warnings
    unknown = unknown_share(result.labels, result.status == STATUS_OK)
    if unknown:
        log.warning(unknown)
        result.warnings = (*result.warnings, unknown)
    log.info("Classified %d parcels: %s", len(result), result.counts())
    return result


def labelled_result(classes: Sequence[str], parcel_ids: Sequence[Any], rows: np.ndarray, status: np.ndarray,
                    probabilities: np.ndarray, decided: Optional[tuple] = None) -> ClassificationResult:
    """A :class:`ClassificationResult` of some parcels: each one's label and confidence from its
    probabilities where its status is ``ok`` (``decided`` as for :func:`assemble_result`)."""
    n, classes = len(status), tuple(classes)
    ok = status_ok(status)
    best = np.where(ok, np.nan_to_num(probabilities, nan=-1.0).argmax(axis=1), 0) if n else np.zeros(0, dtype=int)
    labels = np.where(ok, np.asarray(classes, dtype=object)[best], "")
    confidence = np.where(ok, probabilities[np.arange(n), best], np.nan).astype(np.float32)
    result = ClassificationResult(
        parcel_ids=np.asarray(parcel_ids, dtype=str),
        labels=labels.astype(str),
        confidence=confidence,
        probabilities=probabilities,
        status=status.astype(str),
        classes=classes,
        rows=np.asarray(rows, dtype=np.int64),
    )
    if decided is not None:
        result.decided = np.where(ok, decided[0], np.datetime64("NaT")).astype("datetime64[D]")
        result.decided_gdd = np.where(ok, decided[1], np.nan).astype(np.float32)
        result.decided_threshold = float(decided[2])
    return result


def add_prediction_sets(result: ClassificationResult, bundle: Any, coverage: Optional[float],
                        gdd: Optional[float] = None) -> None:
    """Give ``result`` its prediction sets for ``coverage`` from ``bundle``'s calibration
    (``core.model.calibration``; with ``gdd``, the parcels' GDD on the date of a run as of it, that
    of their season stage), in place; a bundle without one gives none, with a warning in the
    result. ``coverage`` None: no sets."""
    threshold = calibration_threshold(result, bundle, coverage, gdd)
    if threshold is None:
        return
    calibration = bundle.calibration
    sets = prediction_sets(result.probabilities, threshold)
    sets[~status_ok(result.status)] = False
    result.sets, result.coverage = sets, float(coverage)
    ok = status_ok(result.status)
    sizes = sets[ok].sum(axis=1)
    log.info("Prediction sets for %g %% coverage (from %d calibration parcels): mean size %.2f, %d of %d parcels "
             "with more than one class", 100 * coverage, calibration.parcels, sizes.mean() if len(sizes) else 0.0,
             int((sizes > 1).sum()), int(ok.sum()))


def calibration_threshold(result: Any, bundle: Any, coverage: Optional[float],
                          gdd: Optional[float] = None) -> Optional[float]:
    """The score threshold of ``bundle``'s calibration for ``coverage`` (None: no sets; a bundle
    without a calibration adds a warning to ``result``'s warnings); with ``gdd``, that of the
    season stage of predictions made then (``core.model.season_stages``)."""
    if coverage is None:
        return None
    calibration = getattr(bundle, "calibration", None)
    if calibration is None or not calibration.scores:
        note = ("The model carries no calibration, so no prediction sets were made (crop_set); calibrate it on "
                "labelled parcels (thermocrop calibrate, the Toolbox's Calibrate model or the dock's Accuracy tab).")
        log.warning(note)
        result.warnings = (*result.warnings, note)
        return None
    stage = calibration.stage_at(gdd)
    n = len(calibration.scores if stage is None else stage.scores)
    if math.ceil((n + 1) * coverage) > n:  # the split-conformal rank runs past the scores
        note = (f"The model's {n} calibration parcels are too few for prediction sets of {100 * coverage:g} % "
                f"coverage (at least {math.ceil(coverage / (1 - coverage))} are needed): every set holds every class. "
                "Choose a lower coverage, or calibrate the model on more parcels.")
        log.warning(note)
        result.warnings = (*result.warnings, note)
    return calibration.threshold(coverage, gdd)


def write_classification(
    parcels: ParcelSource,
    result: Any,
    out: Union[str, os.PathLike],
    *,
    label_field: str = "crop_pred",
    conf_field: str = "crop_conf",
    status_field: str = "crop_status",
    overwrite: bool = False,
    layer: Optional[str] = None,
    out_layer: Optional[str] = None,
    inputs: Sequence[Union[str, os.PathLike]] = (),
    probabilities: bool = False,
) -> Path:
    """Write the parcels with their predictions, in any OGR format chosen by extension.

    ``result`` is a :class:`ClassificationResult`, or a partitioned run's
    ``core.runs.result_stream.PartitionedResult``, whose fields are made from its run folder
    batch by batch as the layer is copied (the same values, never held whole).

    Every feature and attribute of the input is kept; the three fields are added (or replace
    fields of the same name). Parcels that were not classified get NULL as class and
    confidence; those not selected get the status ``not_selected`` (``result_columns``). With ``probabilities`` the
    fields of :func:`~thermocrop.core.model.uncertainty.uncertainty_fields` follow (``p_<class>`` per
    class, ``crop_margin``, ``crop_entropy``). The output is written beside the target, read
    back and counted, and only then takes its name; an existing file (the input included) is
    replaced only with ``overwrite``, and in a GeoPackage only the written layer is. Field
    names are those ``vector.output_field_names`` gives for the format (shapefiles keep 10
    characters: ``crop_statu``).

    Raises:
        OutputError: unknown extension, an unusable or existing output without ``overwrite``,
            or the write failed (nothing is left behind).
        InputError: the result does not fit the layer.
    """
    n = feature_count(parcels, layer)
    if len(result) and (result.rows.max() >= n):
        raise InputError(f"The classification holds rows beyond the {n} features of the layer; "
                         "classify this layer again.")
    names = {"label_field": label_field, "conf_field": conf_field, "status_field": status_field,
             "probabilities": probabilities}
    if isinstance(result, ClassificationResult):
        values: Any = result_columns(result, n, **names)
    else:  # a partitioned run's result, read from its run folder batch by batch as the layer is copied
        values = result.columns(n, **names)
    earlier = earlier_run_fields(source_field_kinds(parcels, layer),
                                 values if isinstance(values, dict) else values.names, result.classes)
    if earlier:
        log.info("Fields %s of %s came from an earlier run and this run does not make them: they are written "
                 "empty, so that no value of that run is left beside this one's.", ", ".join(earlier), parcels)
        if isinstance(values, dict):  # declared, since a field of no value has no kind of its own
            values.update(empty_columns(earlier, n))
            values = FieldBatches.of(values, kinds=column_kinds(values), widths=widest_texts(result.classes, **names))
        else:
            values = result.columns(n, **names, empty=earlier)
    out = write_with_fields(parcels, values, out, overwrite=overwrite, layer=layer, out_layer=out_layer,
                            inputs=inputs)
    log.info("Wrote %d parcels to %s", n, out)
    return out
