"""The use cases, each assembled once: classify parcels, extract pixel sets, growing degree days
per parcel. A run checks its inputs, resolves its scenes and weather, chooses one process or a
Dask cluster, and writes its file output; the doors only build the request and show the run.
"""

from __future__ import annotations

import logging
import os
import time
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Optional

import numpy as np
import pandas as pd

from ..core.class_shares import read_class_shares
from ..core.classify import add_prediction_sets, calibration_threshold, classify_parcels, write_classification
from ..core.errors import InputError, NoUsableParcelsError
from ..core.extract import extract_to_dataset
from ..core.inseason import early_warning, trained_season, weather_dates_as_of
from ..core.io.csv_cells import inert_frame
from ..core.io.geoparquet import is_parquet
from ..core.io.output import check_distinct_outputs, check_output, write_text
from ..core.io.source_layer import default_layer_name, feature_count, parcel_layer_problem, source_field_kinds
from ..core.io.vector import (
    check_geometries_for,
    check_vector_output,
    date_field_names,
    earlier_date_fields,
    output_field_names,
    replaced_fields,
    write_with_fields,
)
from ..core.model.bundle import load_bundle
from ..core.parcels import ParcelFields, ParcelTable, load_parcels, require_usable
from ..core.pixel_sets import is_dataset_folder
from ..core.preflight import LayerFootprint, Preflight, check_inputs
from ..core.runs.cluster import ClusterOptions
from ..core.runs.extraction import extract_partitioned
from ..core.runs.folder import default_run_folder, remove_run_folder
from ..core.runs.layer_plan import plan_layer
from ..core.runs.partitions import classify_partitioned, classify_partitions, gdd_partitions
from ..core.runs.result_stream import PartitionedResult
from ..core.settings import PixelSampling, ThermalTime
from ..core.thermal.gdd import gdd_at_points
from ..core.thermal.weather import record_period
from ..core.threads import run_threads, thread_budget
from ..training.importers.common import grid_blocks, locations_from_geometries
from .inputs import resolve_scenes, resolve_weather, scene_dates
from .requests import ClassifyRequest, ClusterSpec, ExtractRequest, GddRequest, ParcelsSpec, scheduler_address
from .run_progress import RunProgress
from .season_status import calibration_stage_note, inseason_hint, inseason_model_choice, season_as_of

log = logging.getLogger(__name__)


# ---------------------------------------------------------------------------------------------
# What every run shares


def cluster_options(spec: ClusterSpec, out: Any) -> Optional[ClusterOptions]:
    """One process (None) or the cluster ``spec`` names; the run folder may not be the output."""
    if not spec.partitioned:
        return None
    problem = spec.problem()
    if problem:
        raise InputError(problem)
    check_distinct_outputs([("--out", out), ("--run-folder", spec.run_folder)])
    # Dask's own INFO lines (workers starting and stopping) would drown the progress display.
    for name in ("distributed", "bokeh", "tornado"):
        logging.getLogger(name).setLevel(logging.WARNING)
    return ClusterOptions(workers=spec.workers, scheduler=scheduler_address(spec.scheduler))


def run_folder_of(spec: ClusterSpec, out: Any) -> Any:
    """The run folder of a partitioned run: the one given, else ``<out>.parts`` beside the output.

    Raises:
        InputError: no run folder is given and the run writes no file of its own (a door that
            writes the result itself names the folder).
    """
    if spec.run_folder:
        return spec.run_folder
    if out is None:
        raise InputError("A partitioned run that writes no output file needs a run folder for its partitions "
                         "(--run-folder); give one.")
    return default_run_folder(out)


def parcel_checks(parcels: ParcelsSpec, fields: dict) -> dict[str, Any]:
    """``check_inputs`` arguments for the parcels: a file is checked with its fields; a table
    a door read by its CRS and extent."""
    if parcels.is_file:
        return {"parcels": parcels.source, "fields": fields}
    frame = parcels.source
    crs = frame.crs.to_wkt() if frame.crs is not None else ""
    bounds = tuple(frame.total_bounds) if len(frame) and frame.geometry.notna().any() else None
    return {"parcels": LayerFootprint(crs, bounds)}


def parcel_geometry(parcels: ParcelsSpec):
    """The parcels' geometries (for a weather service's cells)."""
    if parcels.is_file:
        return load_parcels(parcels.source, id_field=parcels.id_field, block_field=None).geometry
    return parcels.source.geometry


def sampling_options(sampling: PixelSampling) -> dict[str, Any]:
    """The keyword arguments of ``classify_parcels`` a classification's doors set."""
    return {"sampling": sampling}


def extraction_options(request: ExtractRequest) -> dict[str, Any]:
    """The keyword arguments of ``extract_to_dataset`` for ``request``: its settings and the
    parcel fields it reads."""
    fields = ParcelFields(id_field=request.parcels.id_field, label_field=request.label_field,
                          block_field=request.block_field, class_map=request.class_map,
                          min_parcels=request.min_parcels, unmapped_as=request.unmapped_as)
    # The weather file's options (column names, reach) come with the request's weather.
    settings = replace(request.settings, weather_options={**request.weather.reader_options(),
                                                          **request.settings.weather_options})
    return {"settings": settings, "fields": fields}


def thermal_options(thermal: ThermalTime) -> dict[str, Any]:
    """The keyword arguments of ``gdd_at_points`` that ``thermal`` holds."""
    return {"season_start": thermal.season_start, "t_base": thermal.t_base, "t_cap": thermal.t_cap,
            "method": thermal.method}


def _partitioned(progress: RunProgress, what: str, work):
    """Run ``work(listener)`` (a partitioned run returning ``(value, summary, folder)``) and
    report its summary."""
    start = time.perf_counter()
    with progress.partitions(what) as listener:
        value, summary, folder = work(listener)
    progress.partitions_done(summary, time.perf_counter() - start)
    return value, folder


# ---------------------------------------------------------------------------------------------
# Classification


@dataclass
class ClassificationRun:
    """What a classification gave: the result in layer order, the model, the scenes read, the
    preflight, the file written (None without an output) and its checked
    ``core.io.vector.VectorTarget`` (field names as stored; None where the door checked it).

    A partitioned run of a layer file into an output file gives a
    ``core.runs.result_stream.PartitionedResult``: the output was written from its run folder
    batch by batch, and once that folder is removed it holds the counts, the warnings and the
    prediction sets' coverage, not the per-parcel arrays."""

    result: Any
    bundle: Any
    scenes: list
    checked: Preflight
    written: Optional[Path] = None
    target: Any = None


def require_features(parcels: ParcelsSpec, what: str) -> None:
    """Refuse, once the output is checked and before any scene or weather is read, a parcel layer
    that cannot be read or has no feature, by its name (a layer the Toolbox passes as a table was
    refused only after every scene was read; an empty one failed in the GDD's points).

    Raises:
        InputError: the layer is unreadable or empty.
    """
    source = parcels.source
    if parcels.is_file:
        problem = parcel_layer_problem(source)
        if problem:
            raise InputError(problem)
    if feature_count(source) == 0:
        where = (f"Parcel layer {default_layer_name(source) or Path(source).stem!r} of {source}" if parcels.is_file
                 else parcels.describe())
        raise InputError(f"{where} has no features, so there are no parcels to {what}; choose the layer that holds "
                         "the parcels, or check that the export wrote them.")


def class_shares_of(request: ClassifyRequest, bundle: Any, cluster: Any) -> Optional[np.ndarray]:
    """The class shares of ``request`` (``core.class_shares``) for ``bundle``'s classes, read
    before any pixel is; None where none are given.

    Raises:
        InputError: the file cannot be used, or the run is partitioned (``cluster``).
    """
    if not request.class_shares:
        return None
    if cluster is not None:
        raise InputError("Class shares need every parcel's probabilities at once, which a partitioned run "
                         "(workers or a scheduler) does not hold: run in one process, or leave the class shares out.")
    return read_class_shares(request.class_shares, tuple(bundle.classes))


def run_classification(request: ClassifyRequest, progress: Optional[RunProgress] = None) -> ClassificationRun:
    """Classify the parcels of ``request`` and write its output file, if any.

    The output is checked before any scene is read; a run that classifies no parcel fails with
    the parcels counted by status and writes nothing. With ``request.as_of`` the scenes after it
    are left out, the season's status on that date is reported and a date early in the season is
    warned of (``core.inseason``).
    """
    progress = progress or RunProgress()
    parcels, output, target = request.parcels, request.output, None
    if output is not None and parcels.is_file:
        target = check_vector_output(output.path, overwrite=output.overwrite, inputs=list(output.inputs),
                                     replaceable=[parcels.source], layer=output.layer,
                                     fields=list(request.fields.kinds()))
        replaced_fields(source_field_kinds(parcels.source), target, request.fields.kinds(),
                        source=f"The parcel layer {parcels.source}", through_geopackage=is_parquet(parcels.source),
                        fid_kept_as_field=True)
        check_geometries_for(target, parcels.source, None, source=f"The parcel layer {parcels.source}")
    require_features(parcels, "classify")
    cluster = cluster_options(request.cluster, output.path if output else None)
    out_path = target.path if target else output.path if output else None
    run_folder = run_folder_of(request.cluster, out_path) if cluster else None
    scenes = resolve_scenes(request.scenes, parcels.source, on_stats=progress.on_stats, report=progress.report,
                            model=request.model)
    checked = check_inputs(**parcel_checks(parcels, {"id": parcels.id_field}), scenes=scenes,
                           season=request.scenes.season, weather=request.weather.local_files()[0],
                           weather_options=request.weather.reader_options(), bundle=request.model, need_bundle=True,
                           dates=weather_dates_as_of(scenes, request.as_of))
    scenes = checked.scenes
    # As of a date with no model given, the in-season model may replace the level's: which model
    # runs is said once, after the season's status.
    level_choice = checked.model_choice if request.as_of is not None else None
    progress.inputs_checked(replace(checked, model_choice=None) if level_choice else checked)
    weather = request.weather.path
    if request.weather.service:
        weather = resolve_weather(request.weather, parcel_geometry(parcels), [s.date for s in scenes],
                                  checked.season_start)
        progress.weather_fetched(request.weather.service, weather)
    season, model = None, request.model
    season_gdd = None  # as of a date: the GDD of the last acquisition kept, which choose the season stage
    if request.as_of is not None:
        scenes, season = season_as_of(request.as_of, parcels, scenes, weather, checked.bundle,
                                      request.weather.reader_options())
        # The stage of what the model sees: the GDD of the last acquisition kept, as each parcel's
        # confidence takes the stage of its own last date.
        season_gdd = season.seen_gdd if np.isfinite(season.seen_gdd) else None
        progress.report(season.describe())
        early_model = inseason_model_choice(season, (sc.level for sc in scenes)) if model is None else None
        if early_model is not None:
            model, why = early_model
            checked = replace(checked, bundle=load_bundle(model), model_choice=why)
            progress.report(why)
        elif level_choice:
            progress.report(level_choice)
        if model is not None and early_model is None:
            loaded = model if isinstance(model, (str, os.PathLike)) else getattr(model, "path", None)
            given = Path(loaded).name if loaded else "the model given"
            hint = inseason_hint(season, (sc.level for sc in scenes), checked.bundle, given)
            if hint:
                progress.report(hint)
        progress.report(f"The model: {trained_season(checked.bundle)}.")
        staged = calibration_stage_note(checked.bundle, season.seen_gdd)
        if staged:
            progress.report(staged)
    shares = class_shares_of(request, checked.bundle, cluster)
    options = {"id_field": parcels.id_field, "weather_options": request.weather.reader_options(),
               **sampling_options(request.sampling)}
    if request.fields.decided is not None:
        options["decided"] = request.fields.decided
    if shares is not None:
        options["class_shares"] = shares
    if parcels.selected_ids is not None:
        options["selected_ids"] = list(parcels.selected_ids)
    folder = None
    fields = request.fields

    def write(result: Any) -> Path:
        return write_classification(
            parcels.source if output.features is None else output.features, result, output.path,
            label_field=fields.label, conf_field=fields.confidence, status_field=fields.status,
            overwrite=output.overwrite, out_layer=output.layer, inputs=list(output.inputs),
            probabilities=fields.probabilities)

    def write_while_running(result: PartitionedResult) -> Path:
        # Nothing is published unless some parcel was classified, as after a one-process run.
        result.require = lambda statuses: require_usable(statuses, "classified", parcels.describe())
        result.set_threshold = calibration_threshold(result, checked.bundle, fields.coverage, season_gdd)
        result.coverage = fields.coverage if result.set_threshold is not None else None
        return write(result)

    if cluster is None:
        with run_threads(thread_budget(progress.reserve_cores)), progress.bar("classify") as bar:
            result = classify_parcels(parcels.source, scenes, weather, checked.bundle, chunk_size=request.chunk_size,
                                      progress=bar, **options)
    else:
        # Workers load the model from its file (once each); a checksum of it guards a resume. A
        # layer file written to a file output stays in the run folder, and the output is written
        # from it batch by batch while the partitions run; otherwise the result is merged here.
        streamed = parcels.is_file and output is not None and output.features is None
        if streamed:
            options["output"] = write_while_running
        result, folder = _partitioned(progress, "classify", lambda listener: (
            classify_partitions if streamed else classify_partitioned)(
            parcels.source, scenes, weather, model, cluster=cluster, resume=request.cluster.resume,
            run_folder=run_folder,
            chunk_size=request.chunk_size, listener=listener, inputs=list(output.inputs) if output else [], **options))
    partitioned_result = isinstance(result, PartitionedResult)
    require_usable(result.status_counts(), "classified", parcels.describe())
    if shares is not None:
        progress.report(f"Probabilities brought to the class shares of {request.class_shares}.")
    early = early_warning(season, checked.bundle) if season is not None else None
    if early:
        log.warning(early)
        result.warnings = (*result.warnings, early)
    if not partitioned_result:
        add_prediction_sets(result, checked.bundle, fields.coverage, season_gdd)
    run = ClassificationRun(result, checked.bundle, scenes, checked, target=target)
    if partitioned_result:
        run.written = result.written
    elif output is not None:
        progress.progress.check()
        run.written = write(result)
    if folder is not None:
        remove_run_folder(folder)
    return run


# ---------------------------------------------------------------------------------------------
# Extraction


@dataclass
class ExtractionRun:
    """What an extraction gave: the dataset folder written and the scenes read."""

    path: Path
    scenes: list
    checked: Preflight


def selected_table(request: ExtractRequest, block_field: Optional[str]):
    """The parcels of ``request`` (the selected ones, ``ParcelsSpec.selected_ids``, where some are)
    as a ``ParcelTable`` read with its fields, blocks from ``block_field``."""
    fields = extraction_options(request)["fields"]
    return load_parcels(request.parcels.source, id_field=fields.id_field, label_field=fields.label_field,
                        block_field=block_field, class_map=fields.class_map, min_parcels=fields.min_parcels,
                        selected_ids=request.parcels.selected_ids, unmapped_as=fields.unmapped_as)


def grid_block_table(request: ExtractRequest):
    """The parcels (the selected ones, where some are) as a ``ParcelTable`` whose blocks are the
    cells of a ``block_size_km`` grid."""
    table = selected_table(request, block_field=None)
    blocks = grid_blocks(locations_from_geometries(table.geometry), request.block_size_km * 1000.0)
    logging.getLogger("thermocrop.extract").info(
        "%s: %d spatial blocks from a %g km grid", table.source, len(np.unique(blocks[blocks >= 0])),
        request.block_size_km)
    return replace(table, blocks=blocks)


def run_extraction(request: ExtractRequest, progress: Optional[RunProgress] = None) -> ExtractionRun:
    """Extract the pixel sets of the parcels of ``request`` into its dataset folder (checked
    before any scene is read; only a dataset folder is ever replaced)."""
    progress = progress or RunProgress()
    parcels, thermal = request.parcels, request.settings.thermal
    weather_file = request.weather.local_files()[0]
    check_output(request.out, what="dataset folder", kind="folder", overwrite=request.overwrite,
                 inputs=[parcels.source if parcels.is_file else None, weather_file,
                         *request.scenes.local_files()],
                 replaceable_folder=is_dataset_folder)
    cluster = cluster_options(request.cluster, request.out)
    run_folder = run_folder_of(request.cluster, request.out) if cluster else None
    scenes = resolve_scenes(request.scenes, parcels.source, on_stats=progress.on_stats, report=progress.report)
    checked = check_inputs(**parcel_checks(parcels, {"id": parcels.id_field, "label": request.label_field}),
                           scenes=scenes, season=request.scenes.season, season_start=thermal.season_start,
                           weather=weather_file, weather_options=request.weather.reader_options())
    scenes = checked.scenes
    progress.inputs_checked(checked)
    if request.block_size_km:
        source = grid_block_table(request)
    else:
        source = parcels.source if parcels.selected_ids is None else selected_table(request, request.block_field)
    weather = request.weather.path
    if request.weather.service:
        weather = resolve_weather(request.weather, parcel_geometry(parcels), [s.date for s in scenes],
                                  thermal.season_start)
        progress.weather_fetched(request.weather.service, weather)
    options = extraction_options(request)
    if cluster is None:
        with run_threads(thread_budget(progress.reserve_cores)), progress.bar("extract") as bar:
            out = extract_to_dataset(source, scenes, weather, request.out, chunk_size=request.chunk_size,
                                     overwrite=request.overwrite, progress=bar, **options)
    else:
        out, folder = _partitioned(progress, "extract", lambda listener: extract_partitioned(
            source, scenes, weather, request.out, cluster=cluster, resume=request.cluster.resume,
            run_folder=run_folder,
            chunk_size=request.chunk_size, overwrite=request.overwrite, listener=listener,
            inputs=[parcels.source if parcels.is_file else None, weather_file], **options))
        remove_run_folder(folder)
    return ExtractionRun(Path(out), scenes, checked)


# ---------------------------------------------------------------------------------------------
# Growing degree days per parcel


@dataclass
class GddRun:
    """What a GDD run gave: ``gdd`` ``(P, T)`` at ``dates`` for the parcels of ``table``
    (NaN where a parcel has no usable temperatures), the temperature file read, the output
    written (None without one) and its field names. A partitioned run of a layer file with a
    local temperature file gives a ``table`` of ids and layer rows without geometries."""

    gdd: np.ndarray
    dates: np.ndarray
    table: Any
    weather: str
    written: Optional[Path] = None
    names: Optional[list] = None

    @property
    def missing(self) -> np.ndarray:
        """``(P,)`` True where a parcel has no usable temperatures at some date."""
        return ~np.isfinite(self.gdd).all(axis=1)


def item_dates(request: GddRequest, progress: RunProgress) -> Optional[np.ndarray]:
    """The dates asked for, or those of saved items or of a catalogue search (their images are
    not opened); None where they come from scene files or the weather record."""
    if request.dates:
        return np.unique(np.array(request.dates, dtype="datetime64[D]"))
    scenes = request.scenes
    if scenes is not None and not scenes.files and scenes.sources():
        return scene_dates(scenes, request.parcels.source, report=progress.report)
    return None


def gdd_dates(request: GddRequest, dates: Optional[np.ndarray], checked: Preflight,
              progress: RunProgress) -> np.ndarray:
    """The dates of the run: given or of items (``dates``), of the scene files, or the end of
    the weather record."""
    if dates is not None:
        return dates
    if checked.scenes:
        return np.unique(np.array([s.date for s in checked.scenes], dtype="datetime64[D]"))
    if request.weather.service:
        raise InputError(f"The weather service {request.weather.service} needs the dates: give the dates or scenes "
                         "(--dates, --scenes, --stac or --catalog).")
    options = request.weather.reader_options()
    _, last = record_period(request.weather.path, tmin_var=options["tmin_var"], date_var=options["date_var"])
    progress.report(f"no --dates or --scenes: GDD at the end of the weather record, {last}")
    return np.array([last])


def _with_ids(done: tuple) -> tuple:
    """``(gdd, ids, summary, folder)`` as ``((gdd, ids), summary, folder)`` for :func:`_partitioned`."""
    gdd, ids, summary, folder = done
    return (gdd, ids), summary, folder


def run_gdd(request: GddRequest, progress: Optional[RunProgress] = None) -> GddRun:
    """Growing degree days of every parcel of ``request`` at its dates, written to ``out`` (a
    CSV table or the parcels with one field per date) when given.

    Raises:
        NoUsableParcelsError: ``out`` is given and no parcel has usable temperatures (nothing is
            written; without ``out`` the door shows the parcels without values itself).
    """
    progress = progress or RunProgress()
    parcels, weather_spec, thermal = request.parcels, request.weather, request.thermal
    out, target = request.out, None
    table_out = out is not None and str(out).lower().endswith(".csv")
    inputs = [parcels.source if parcels.is_file else None, *weather_spec.local_files(), weather_spec.tmax_path]
    if table_out:
        out = check_output(out, what="GDD table", overwrite=request.overwrite, inputs=inputs)
    elif out is not None:
        target = check_vector_output(out, overwrite=request.overwrite, inputs=inputs, replaceable=[parcels.source],
                                     layer=request.out_layer)
        out = target.path
    options = weather_spec.reader_options()
    given = item_dates(request, progress)
    local_scenes = list(request.scenes.files) if request.scenes is not None and request.scenes.files else None
    checked = check_inputs(**parcel_checks(parcels, {"id": parcels.id_field}), scenes=local_scenes,
                           season=request.scenes.season if request.scenes is not None else None,
                           season_start=thermal.season_start, dates=given,
                           weather=weather_spec.local_files()[0], weather_options=options)
    dates = gdd_dates(request, given, checked, progress)
    names = None
    if out is not None:
        names = date_field_names(dates, None if table_out else target.driver)
        if not table_out:
            target.fields = output_field_names(target.driver, names)
            replaced_fields(source_field_kinds(parcels.source), target, dict.fromkeys(names, "real"),
                            source=f"The parcel layer {parcels.source}",
                            through_geopackage=parcels.is_file and is_parquet(parcels.source),
                            fid_kept_as_field=True)
            if parcels.is_file:
                check_geometries_for(target, parcels.source, None,
                                     source=f"The parcel layer {parcels.source}")
    require_features(parcels, "compute growing degree days for")
    cluster = cluster_options(request.cluster, out)
    run_folder = run_folder_of(request.cluster, out) if cluster else None
    # A partitioned run of a layer file with a local temperature file plans its partitions from
    # the parcels' bounding boxes; each partition reads its own parcels (a weather service needs
    # the geometries here, for its cells).
    planned = cluster is not None and parcels.is_file and not weather_spec.service
    if planned:
        table = plan_layer(parcels.source, id_field=parcels.id_field)
        weather = resolve_weather(weather_spec, None, dates, thermal.season_start)
    else:
        table = load_parcels(parcels.source, id_field=parcels.id_field)
        weather = resolve_weather(weather_spec, table.geometry, dates, thermal.season_start)
    if weather_spec.service:
        progress.weather_fetched(weather_spec.service, weather)
    folder = None
    if cluster is None:
        usable = np.array([g is not None for g in table.geometry])
        points = table.geometry[usable].representative_point()
        xs = np.full(len(table), np.nan)
        ys = np.full(len(table), np.nan)
        xs[usable], ys[usable] = points.x.to_numpy(), points.y.to_numpy()
        gdd = gdd_at_points(weather, xs, ys, table.geometry.crs, dates, parcel_ids=list(table.parcel_ids),
                            **thermal_options(thermal), **options)
    else:
        (gdd, ids), folder = _partitioned(progress, "gdd", lambda listener: _with_ids(gdd_partitions(
            table, weather, dates, cluster=cluster, resume=request.cluster.resume,
            run_folder=run_folder, chunk_size=request.chunk_size,
            listener=listener, inputs=inputs, **thermal_options(thermal), **options)))
        if planned:  # the ids came back from the partitions; no geometry was read here
            table = ParcelTable(None, ids, np.empty(0, dtype=np.int16), np.empty(0, dtype=np.int32),
                                np.empty(0, dtype=object), table.source, table.rows)
    if out is not None and not np.isfinite(gdd).all(axis=1).any():
        raise NoUsableParcelsError(
            f"No parcel of {parcels.describe()} has usable temperatures in {weather_spec.service or weather_spec.path} "
            f"(no cell with data within {weather_spec.max_distance_km:g} km, or gaps of more than 3 days); check the "
            "parcels' CRS and that the file covers them. Nothing was written.")
    run = GddRun(gdd, dates, table, weather, names=names)
    if table_out:
        frame = pd.DataFrame(np.round(gdd, 2), columns=names)
        frame.insert(0, parcels.id_field or "parcel_id", table.parcel_ids)
        # CRLF rows (RFC 4180): pandas then quotes a cell holding a carriage return, which a
        # spreadsheet would otherwise take for a new row (whose first cell could be a formula).
        text = inert_frame(frame).to_csv(index=False, float_format="%.2f", lineterminator="\r\n")
        write_text(out, text, overwrite=request.overwrite, what="GDD table")
        run.written = out
    elif out is not None:
        columns = {n: np.round(gdd[:, i], 2) for i, n in enumerate(names)}
        earlier = earlier_date_fields(list(source_field_kinds(parcels.source)), names)
        if earlier:
            progress.report(f"Fields {', '.join(earlier)} of {parcels.describe()} came from an earlier run and this run "
                            "does not make them: they are written empty.")
            columns.update({name: np.full(len(gdd), np.nan) for name in earlier})
        write_with_fields(parcels.source, columns, out, overwrite=request.overwrite, out_layer=request.out_layer,
                          inputs=inputs)
        run.written = out
    if folder is not None:
        remove_run_folder(folder)
    return run
