"""Accuracy through the season on the user's labelled reference parcels: extract them from the
scenes and weather with the model's thermal time, score the model as of each acquisition
(``training.season_accuracy``) and write the tables and the figure."""

from __future__ import annotations

import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Optional

import numpy as np

from ..core.classify import bundle_thermal_time, scene_warnings
from ..core.errors import DatasetError
from ..core.model.bundle import default_bundle_path, shipped_model_choice
from ..core.parcels import labelled_names, load_parcels
from ..core.pixel_sets import open_dataset
from ..core.preflight import run_bundle
from ..core.quiet_log import quietly
from ..core.settings import ExtractionSettings
from ..training.datasets import unseen_classes
from ..training.season_accuracy import (
    SeasonAccuracy,
    accuracy_through_season,
    check_season_accuracy_out,
    write_season_accuracy,
)
from .inputs import resolve_scenes, without_result_note
from .requests import ExtractRequest, ScenesSpec, SeasonAccuracyRequest
from .run_progress import RunProgress
from .runs import require_features, run_extraction
from .season_status import INSEASON_BUNDLE, INSEASON_GDD, installed_inseason_bundle


@dataclass
class SeasonAccuracyRun:
    """What an in-season accuracy run gave: the scores, the files written by kind, the model,
    and the reference parcels left out because the model does not know their class."""

    accuracy: SeasonAccuracy
    paths: dict[str, Path]
    bundle: Any
    left_out: dict[str, int]
    model: str = ""
    """The file name of the model scored (the shipped one of the scenes' level where none was given)."""


def run_season_accuracy(request: SeasonAccuracyRequest, progress: Optional[RunProgress] = None
                        ) -> SeasonAccuracyRun:
    """Score ``request.model`` on ``request.reference`` as of each acquisition and write
    ``request.out``.

    The output folder is checked before any scene is read; the pixel sets live in a temporary
    folder removed at the end.

    Raises:
        OutputError: ``out`` holds an earlier run's files without ``overwrite``, or is an input.
        DatasetError: no reference parcel of the model's classes could be scored.
    """
    progress = progress or RunProgress()
    reference = request.reference
    check_season_accuracy_out(request.out, overwrite=request.overwrite,
                              inputs=[reference.source, request.model, *request.weather.local_files(),
                                      *request.scenes.local_files()])
    require_features(reference, "score")
    scenes = resolve_scenes(request.scenes, reference.source, on_stats=progress.on_stats, report=progress.report,
                            model=request.model)
    bundle = run_bundle(request.model, scenes)
    for warning in scene_warnings(bundle, scenes):
        progress.report(warning)
    model = Path(request.model).name if request.model else shipped_model_choice(sc.level for sc in scenes)[0].name
    progress.report(f"Scoring {model} as of each acquisition" + _inseason_note(request.model, model))
    table = load_parcels(reference.source, id_field=reference.id_field, label_field=request.label_field,
                         class_map=request.class_map, block_field=None, selected_ids=reference.selected_ids,
                         unmapped_as=None)
    reference.check_selection(len(table))
    labels = labelled_names(table.classes, table.labels)
    if not np.isin(labels, list(bundle.classes)).any():  # the labels alone show it: no pixel needs reading
        raise DatasetError(f"No reference parcel of {reference.describe()} can be scored: none of its {len(table)} "
                           f"parcels has a label of the model's classes ({', '.join(bundle.classes)}) in "
                           f"{request.label_field} ({len(table) - len(labels)} without a label). Check the label "
                           "field and the class map.")
    del table
    settings = ExtractionSettings(sampling=request.sampling, thermal=bundle_thermal_time(bundle))
    work = Path(tempfile.mkdtemp(prefix="thermocrop-inseason-"))
    try:
        extract = ExtractRequest(parcels=reference, scenes=ScenesSpec(found=tuple(scenes), season=request.scenes.season),
                                 weather=request.weather, out=str(work / "reference"), label_field=request.label_field,
                                 class_map=request.class_map, block_field=None, settings=settings, unmapped_as=None)
        with quietly():  # its read of the layer's labels logs what the first read logged
            ps = open_dataset(run_extraction(extract, progress).path)
        without = without_result_note(ps.status, reference.describe())
        if without:
            progress.report(without)
        left_out = unseen_classes([ps], bundle.classes)
        if left_out:
            progress.report(f"{sum(left_out.values())} reference parcels of {reference.describe()} have classes the "
                            "model does not know and are left out: "
                            + ", ".join(f"{c} {n}" for c, n in sorted(left_out.items())))
        try:
            accuracy = accuracy_through_season(bundle, ps, unseen="drop")
        except DatasetError:
            raise DatasetError(f"No reference parcel of {reference.describe()} can be scored: none has both a label "
                               f"of the model's classes ({', '.join(bundle.classes)}) in {request.label_field} and "
                               "clear pixels in the scenes. Check the label field and --class-map.") from None
        del ps
    finally:
        shutil.rmtree(work, ignore_errors=True)
    paths = write_season_accuracy(accuracy, request.out, overwrite=request.overwrite,
                                  title=f"{reference.describe()}: accuracy of {model} through the season "
                                        f"({accuracy.parcels} parcels)")
    return SeasonAccuracyRun(accuracy, paths, bundle, left_out, model)


def _inseason_note(given: Any, model: str) -> str:
    """Where no model was given and the shipped L1C model is scored: that a run as of a date early
    in the season uses the in-season model instead, and where that is."""
    inseason = installed_inseason_bundle()
    if given or model != default_bundle_path("L1C").name or inseason is None:
        return ""
    return (f". A run as of a date whose last acquisition kept has fewer than {INSEASON_GDD:,.0f} GDD uses "
            f"{INSEASON_BUNDLE} instead; give it as the model to score those runs: {inseason}")

