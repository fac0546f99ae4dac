"""Calibrating a model on the user's own reference parcels: extract them from the scenes and
weather (into a temporary folder, removed at the end), fit the calibration
(``core.model.calibration``) and its season stages (``core.model.season_stages``) on the model's
raw probabilities and their labels, write the model with it as a new bundle."""

from __future__ import annotations

import shutil
import tempfile
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Callable, Optional, Sequence

import numpy as np

from ..core.classify import bundle_thermal_time, scene_warnings
from ..core.errors import InputError
from ..core.io.output import check_output
from ..core.model.bundle import calibrated_bundle, default_bundle_path, load_bundle, with_gdd_floor
from ..core.model.calibration import (
    CALIBRATION_METHODS,
    MIN_CALIBRATION_PARCELS,
    Calibration,
    check_label_variety,
    expected_calibration_error,
    fit_calibration,
    reliability_table,
)
from ..core.model.season_floor import floor_range_problem
from ..core.model.shipped import refuse_shipped_model_output
from ..core.parcels import labelled_names, load_parcels
from ..core.pixel_sets import STATUS_OK, open_dataset
from ..core.preflight import run_bundle
from ..core.progress import Progress
from ..core.quiet_log import quietly
from ..core.settings import ExtractionSettings
from ..training.calibrate import (
    dataset_labels,
    fit_season_stages,
    log_stages,
    prefix_predictions,
    season_reach_note,
    stage_rows,
)
from .inputs import resolve_scenes, without_result_note
from .requests import CalibrateRequest, ExtractRequest, ScenesSpec
from .run_progress import RunProgress
from .runs import run_extraction

EXTRACT_SHARE = 0.8
"""The share of a calibration's progress that the extraction of the reference parcels takes; the
fit, the season stages' predictions as of every date among it, the rest."""


@dataclass
class CalibrationRun:
    """What a calibration gave: the new bundle, its calibration, the reference parcels used by
    class, and the reliability tables before and after (``core.model.calibration.reliability_table``)."""

    path: Path
    calibration: Calibration
    counts: dict[str, int]
    skipped: dict[str, int]
    before: list[dict[str, float]]
    after: list[dict[str, float]]
    current: Optional[float] = None
    """The expected calibration error on the reference parcels under the calibration the model
    carried (None: it carried none); ``calibration.ece_before`` is that of its raw probabilities."""


def run_calibration(request: CalibrateRequest, progress: Optional[RunProgress] = None) -> CalibrationRun:
    """Extract ``request.reference``, fit a calibration by ``request.method`` on the model's raw
    probabilities of the parcels whose label is one of the model's classes, with season stages
    fitted on the same parcels as of each date (both from one pass over the season's prefixes,
    ``training.calibrate.prefix_predictions``), and write ``request.out``. The pixel sets live in a
    temporary folder, read from the disk as the model needs them and removed at the end.

    Raises:
        InputError: an unknown method, or fewer than ``MIN_CALIBRATION_PARCELS`` usable reference
            parcels (the counts are named: labelled, of classes the model does not know, without a result).
        OutputError: ``out`` exists without ``overwrite``, or is one of the inputs (without a model,
            either shipped model).
    """
    progress = progress or RunProgress()
    if request.method not in CALIBRATION_METHODS:
        raise InputError(f"The calibration method {request.method!r} is not known; choose "
                         + " or ".join(CALIBRATION_METHODS) + ".")
    check_gdd_floor(request.gdd_floor)
    # Without a model the run reads the shipped model of the scenes' level, known only later:
    # neither shipped model may be the output.
    models = [request.model] if request.model is not None else [default_bundle_path("L1C"), default_bundle_path("L2A")]
    refuse_shipped_model_output(request.out)
    out = check_output(request.out, overwrite=request.overwrite, what="calibrated model", suffixes=(".tcm",),
                       inputs=[p for p in (*models, request.reference.source) if isinstance(p, (str, Path))])
    name = request.reference.describe()
    table = load_parcels(request.reference.source, id_field=request.reference.id_field,
                         label_field=request.label_field, class_map=request.class_map, block_field=None,
                         selected_ids=request.reference.selected_ids, unmapped_as=None)
    request.reference.check_selection(len(table))
    unlabelled = int((np.asarray(table.labels) < 0).sum())
    if unlabelled:
        unmapped = " or a code the class map does not map" if request.class_map is not None else ""
        progress.report(f"{unlabelled} parcels of {name} have no label in {request.label_field!r}{unmapped} "
                        "and are left out.")
    check_reference_labels(table, model_classes(request.model), name, unlabelled)
    # Without a model, the shipped one of the scenes' level. The reference parcels are extracted
    # with its thermal time; the calibration is fitted on the network's raw probabilities, of the
    # whole season and, for its season stages, as of every date.
    scenes = resolve_scenes(request.scenes, request.reference.source, on_stats=progress.on_stats,
                            report=progress.report, model=request.model)
    bundle = run_bundle(request.model, scenes)
    if request.gdd_floor is not None:  # the calibration is fitted as the written model will predict
        bundle = with_gdd_floor(bundle, request.gdd_floor)
    for warning in scene_warnings(bundle, scenes):
        progress.report(warning)
    names = np.asarray(table.classes, dtype=object)
    given = np.asarray(table.labels) >= 0
    skipped: dict[str, int] = {}
    for label in names[np.asarray(table.labels)[given]]:
        if label not in bundle.classes:
            skipped[str(label)] = skipped.get(str(label), 0) + 1
    del table
    if skipped:
        progress.report(f"{sum(skipped.values())} reference parcels of {name} have classes the model does not know "
                        f"and are left out: " + ", ".join(f"{c} {n}" for c, n in sorted(skipped.items())))
    settings = ExtractionSettings(sampling=request.sampling, thermal=bundle_thermal_time(bundle))
    work = Path(tempfile.mkdtemp(prefix="thermocrop-calibrate-"))
    try:
        extract = ExtractRequest(parcels=request.reference, weather=request.weather, out=str(work / "reference"),
                                 scenes=ScenesSpec(found=tuple(scenes), season=request.scenes.season),
                                 label_field=request.label_field, class_map=request.class_map, block_field=None,
                                 settings=settings, unmapped_as=None)
        with quietly():  # its read of the layer's labels logs what the first read logged
            ps = open_dataset(run_extraction(extract, progress.share(0.0, EXTRACT_SHARE)).path)  # read as needed
        with progress.share(EXTRACT_SHARE, 1.0).bar("calibrate") as bar:
            calibration, raw, index = fit_on_reference(bundle, ps, name, request.method, progress.report, bar)
            bar.check()  # a cancel while fitting writes nothing
        del ps
    finally:
        shutil.rmtree(work, ignore_errors=True)
    calibrated = calibration.apply(raw)
    counts: dict[str, int] = {}
    for k in index[index >= 0]:
        counts[bundle.classes[k]] = counts.get(bundle.classes[k], 0) + 1
    missing = [c for c in bundle.classes if counts.get(c, 0) == 0]
    if missing:
        progress.report(f"No reference parcel of {', '.join(missing)} in {name}: the calibration has not seen how "
                        "the model does on these classes.")
    calibrated_bundle(bundle, calibration, out, overwrite=request.overwrite)
    current = (expected_calibration_error(bundle.calibration.apply(raw), index) if bundle.calibration is not None
               else None)
    if current is not None and current < calibration.ece_after:
        progress.report(f"On these parcels the model's own calibration gave a lower calibration error ({current:.3f}) "
                        f"than the new one ({calibration.ece_after:.3f}); the new model is no better calibrated here. "
                        "Keep the model as it was unless these parcels are more like the fields you will classify.")
    return CalibrationRun(out, calibration, counts, skipped,
                          reliability_table(raw, index), reliability_table(calibrated, index), current)


def check_gdd_floor(floor: Optional[float]) -> None:
    """Refuse a GDD floor a bundle cannot carry (None: the model's own, never refused).

    Raises:
        InputError: naming the floor and the range.
    """
    problem = floor_range_problem(floor) if floor is not None else None
    if problem:
        raise InputError(f"The GDD floor {problem}; give 0 for none, or leave it out to keep the model's.")


def fit_on_reference(bundle: Any, ps: Any, name: str, method: str, report: Callable[[str], None],
                     progress: Progress) -> tuple[Calibration, np.ndarray, np.ndarray]:
    """The calibration of ``bundle`` with its season stages, fitted on the extracted reference
    parcels ``ps`` (``name`` in messages); the raw whole-season probabilities and the label index
    of each parcel (-1: no label of the model's classes, or no result) come with it.

    Raises:
        InputError: fewer than ``MIN_CALIBRATION_PARCELS`` parcels with both a label of the
            model's classes and a result (the counts and the parcels' statuses named), or labels
            of a single class.
        CancelledError: the user stopped the run.
    """
    status = np.asarray(ps.status)
    ok = status == STATUS_OK
    labels = dataset_labels(bundle, ps, ok_only=False)
    without = without_result_note(status, name)
    if without:
        report(without)
    usable = ok & (labels >= 0)
    if usable.sum() < MIN_CALIBRATION_PARCELS:
        raise InputError(f"{name}: {int(usable.sum())} parcels can calibrate the model ({len(ps)} given, "
                         f"{int((labels < 0).sum())} without a label the model knows, {int((~ok).sum())} without a "
                         f"result); at least {MIN_CALIBRATION_PARCELS} are needed. "
                         + ("Check that the scenes cover the reference parcels with clear dates and that the "
                            "weather covers the scenes, or give more labelled parcels." if without
                            else "Give more labelled parcels."))
    index = np.where(ok, labels, -1)
    check_label_variety(index, bundle.classes, name)
    # One pass over the season's prefixes: the last date's are the whole season's probabilities.
    rows, prefixes = prefix_predictions(bundle, ps, progress)
    raw = np.full((len(ps), len(bundle.classes)), np.nan, dtype=np.float32)
    raw[rows] = prefixes[:, -1]
    calibration = fit_calibration(raw, index, name, method=method, say=report)
    stages = fit_season_stages(*stage_rows(prefixes, index[rows], np.asarray(ps.gdd)[rows],
                                           np.asarray(ps.date_mask)[rows]), method=method)
    calibration = replace(calibration, stages=log_stages(stages, report))
    if calibration.parcels < 5 * len(bundle.classes):
        report(f"Only {calibration.parcels} reference parcels for {len(bundle.classes)} classes: the calibration is "
               "rough; more parcels give a steadier one.")
    if calibration.stages:
        report("Season stages fitted on the reference parcels as of each date: " + ", ".join(
            f"below {s.below_gdd:,.0f} GDD {s.describe()}" for s in calibration.stages) + ".")
    reach = season_reach_note(np.asarray(ps.gdd)[rows], np.asarray(ps.date_mask)[rows], name)
    if reach:
        report(reach)
    return calibration, raw, index


def model_classes(model: Any) -> Optional[tuple[str, ...]]:
    """The classes of the model a run will use, known before any scene is read: a bundle's (given
    as a path or loaded), or without one the shipped models' where every level's has the same;
    None where they differ."""
    if model is None:
        paths = [Path(default_bundle_path(level)) for level in ("L1C", "L2A")]
        lists = {tuple(load_bundle(path).classes) for path in paths if path.is_file()}
        return lists.pop() if len(lists) == 1 else None
    return tuple(model.classes if hasattr(model, "classes") else load_bundle(model).classes)


def check_reference_labels(table: Any, classes: Optional[Sequence[str]], name: str, unlabelled: int) -> None:
    """Refuse, before any scene is read, reference parcels whose labels alone show that fewer than
    ``MIN_CALIBRATION_PARCELS`` can calibrate: too few parcels, too few labelled, or labels of
    classes the model does not know (``classes``; None: not known yet, labels only counted).

    Raises:
        InputError: naming the counts.
    """
    labels = labelled_names(table.classes, table.labels)
    usable = int(len(labels) if classes is None else np.isin(labels, list(classes)).sum())
    if usable >= MIN_CALIBRATION_PARCELS:
        return
    other = len(labels) - usable
    raise InputError(f"{name}: {usable} parcels can calibrate the model ({len(table)} given, {unlabelled} without "
                     f"a label, {other} of classes the model does not know); at least {MIN_CALIBRATION_PARCELS} are "
                     "needed. Give more labelled parcels (or a class map that names the model's classes).")
