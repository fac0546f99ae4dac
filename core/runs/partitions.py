"""Partitioned runs on a Dask cluster: classification, extraction and GDD of large layers.

The parcels are cut into partitions by tile and spatial strip (``sampling.spatial_chunks``, the
same chunks a one-process run makes, so the results are the same). Each partition runs as one
Dask task on any worker and writes its result as a file of its own in a run folder
(:mod:`.folder`; a Parquet table, or a dataset folder for extraction), atomically; the output
is written from the partitions in parcel order and published whole at the end (an extraction's
by :mod:`.extraction`). A
classification's output is made from the run folder batch by batch as the layer is copied
(:mod:`.result_stream`), so the client never holds the whole result, and it can be written while
the partitions run (:class:`OutputWhileRunning`): each batch as soon as the partitions holding
its parcels have finished.

A classification, an extraction or a GDD run of a layer file is planned from the parcels'
bounding boxes alone (:mod:`.layer_plan`; an extraction keeps each parcel's label and block too)
and each partition reads its own parcels from the file; a GeoDataFrame or ``ParcelTable`` is
sent to the workers in pieces.

A worker lost mid-run is replaced by the cluster and its partitions are computed again by
another worker (Dask reschedules the tasks of a dead worker). An interrupted run is taken up
with ``resume=True`` (see :mod:`.folder`).
"""

from __future__ import annotations

import contextlib
import ctypes
import hashlib
import itertools
import logging
import math
import os
import socket
import sys
import threading
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Callable, Optional, Sequence, Union

import numpy as np

from ..classify import (
    classification_setup,
    predict_chunk,
    predict_chunk_decided,
    prepare_classification,
)
from ..errors import CancelledError, InputError, OutputError, SceneError
from ..extract import chunk_groups, scene_list_of
from ..model.bundle import default_bundle_for_levels
from ..parcels import ParcelFields, ParcelTable, parcel_table
from ..pixel_sampling import scene_grids, spatial_chunks
from ..preflight import run_bundle
from ..scenes.seasons import select_season
from ..thermal.gdd import gdd_at_points
from ..thermal.weather import DailyTemperature
from .cluster import ClusterOptions, EarlyClient, cached_bundle, dashboard_link, prestart_fork_server
from .fingerprint import changed_files, file_fingerprint, input_fingerprints
from .folder import (
    PathLike,
    RunFolder,
    check_partition,
    open_run_folder,
    read_table,
    weather_fingerprint,
    write_stats,
    write_table,
)
from .layer_plan import LayerPlan, LayerSlice, id_hashes, plan_layer
from .result_stream import PART_ROW_GROUP, FinishedPartitions, PartitionedResult

log = logging.getLogger(__name__)


@dataclass
class RunSummary:
    """What a partitioned run did: partitions computed now and before, where, and what they cost."""

    partitions: int
    computed: int
    resumed: int
    dashboard: Optional[str]
    stats: list[dict] = field(default_factory=list)

    def cost(self) -> dict[str, float]:
        """Totals over the partitions' stats (CPU seconds, windows, decoded pixels, parcel-dates)."""
        keys = ("cpu_s", "read_cpu_s", "windows", "window_pixels", "parcel_dates", "parcels", "wall_s")
        return {k: float(sum(_number(s.get(k)) for s in self.stats)) for k in keys}


def _number(value: Any) -> float:
    """A cost record's value, or 0 where it is no finite number (a record damaged on disk)."""
    ok = isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
    return float(value) if ok else 0.0


class PartitionListener:
    """Told how a partitioned run goes; the CLI draws its progress bar from it."""

    def started(self, total: int, done: int, dashboard: Optional[str]) -> None:
        """The run has ``total`` partitions, ``done`` of them from an earlier run."""

    def finished(self, index: int) -> None:
        """Partition ``index`` is written."""


class FinishingListener(PartitionListener):
    """Tells a :class:`FinishedPartitions` of each partition written, then ``inner``."""

    def __init__(self, finished: FinishedPartitions, inner: Optional[PartitionListener]) -> None:
        self.finished_partitions = finished
        self.inner = inner or PartitionListener()

    def started(self, total: int, done: int, dashboard: Optional[str]) -> None:
        self.inner.started(total, done, dashboard)

    def finished(self, index: int) -> None:
        self.finished_partitions.finish(index)
        self.inner.finished(index)  # may stop the run (a cancel): the partition is written all the same


class OutputWhileRunning:
    """A classification's output written from its run folder while its partitions run:
    ``write(result)`` in a thread of its own, each batch of the output as soon as the partitions
    holding its parcels have finished (a partition finishing early waits in the run folder).

    Use as a context manager around :func:`run_partitions`, giving it :meth:`listener` and
    :meth:`cancelled`. Leaving the block waits for the output, which is published only once the
    block ends well; a run that failed or was cancelled stops it (``write`` then raises, and its
    staged file goes with it, even when every partition had finished), and an output that failed
    stops the run after the partition running (its error is raised). What ``write`` returns is
    kept as ``result.written``.
    """

    def __init__(self, result: PartitionedResult, write: Callable[[PartitionedResult], Any]) -> None:
        self.result = result
        result.finished = FinishedPartitions(result.folder.done(len(result.chunks)))
        self._write = write
        self._error: Optional[BaseException] = None
        self._thread = threading.Thread(target=self._run, name="thermocrop-output", daemon=True)

    def _run(self) -> None:
        try:
            self.result.written = self._write(self.result)
        except BaseException as exc:  # handed to the thread that runs the partitions
            self._error = exc

    def listener(self, inner: Optional[PartitionListener]) -> PartitionListener:
        return FinishingListener(self.result.finished, inner)

    def cancelled(self, inner: Optional[Callable[[], bool]]) -> Callable[[], bool]:
        """``inner``, or true once the output failed."""
        return lambda: self._error is not None or (inner is not None and bool(inner()))

    def __enter__(self) -> "OutputWhileRunning":
        self._thread.start()
        return self

    def __exit__(self, kind: Any, exc: Optional[BaseException], trace: Any) -> None:
        failed_first = self._error
        if exc is None:
            self.result.finished.end()  # the output may now be published
        else:
            self.result.finished.stop(str(exc) or type(exc).__name__)
        self._thread.join()
        self.result.finished = None  # every partition is there, or none will come
        if exc is None and self._error is not None:
            raise self._error
        if failed_first is not None and isinstance(exc, CancelledError):
            raise failed_first  # the run stopped because the output failed


def run_partitions(task: Callable[..., dict], arguments: Sequence[tuple], folder: RunFolder,
                   early: EarlyClient, *, listener: Optional[PartitionListener] = None,
                   cancelled: Optional[Callable[[], bool]] = None, shared: Optional[dict] = None) -> RunSummary:
    """Run ``task(i, folder, *arguments[i], **shared)`` for every partition not yet written.

    With a cluster each call is one Dask task (``pure=False``: a task whose worker dies is
    run again elsewhere); without, they run here one after the other. ``shared`` holds
    keyword arguments common to every task, sent to the workers once. ``early``: the run's
    client (the caller closes it).

    Raises:
        CancelledError: ``cancelled()`` said to stop (the partitions written so far stay).
        Whatever a partition raised (the others are cancelled; those written stay).
    """
    listener = listener or PartitionListener()
    total = len(arguments)
    todo = [i for i in range(total) if not folder.part(i).exists()]
    shared = dict(shared or {})
    client = early.client()
    link = dashboard_link(client) if client is not None else None
    if link:
        log.info("Dask dashboard: %s", link)
    listener.started(total, total - len(todo), link)
    if client is None:
        for i in todo:
            if cancelled is not None and cancelled():
                raise CancelledError("Cancelled by the user.")
            run_partition(task, i, folder, *arguments[i], **shared)
            listener.finished(i)
    else:
        from distributed import as_completed

        # Wrapped in a list: scatter would take a dict or a tuple apart into several futures. Keys of
        # their own (hash=False): the same values scattered by the run before, on the same scheduler,
        # would share its key while that is being released, and their tasks come back cancelled.
        shared_futures = {k: client.scatter([v], broadcast=True, hash=False)[0] for k, v in shared.items()}

        def submit(i: int, given: dict) -> Any:
            return client.submit(run_partition, task, i, folder, *arguments[i], **given, pure=False,
                                 key=f"thermocrop-partition-{i:05d}-{os.getpid()}-{time.monotonic_ns()}")

        # A few partitions ahead of the workers, not all of them: each one's inputs (its parcels'
        # positions, a few hundred kB) are held here until it has run, so a run of many
        # partitions would hold them all at once. The window follows the cluster's threads: it is
        # looked at again every WINDOW_CHECK_S, so workers that join a running cluster (an
        # adaptive or batch-queue cluster) get partitions at once, not when one has finished.
        waiting = iter(todo)
        futures: dict[Any, int] = {}
        retried: set[int] = set()
        pending = as_completed(loop=client.loop)

        def top_up() -> float:
            for j in itertools.islice(waiting, max(0, submission_window(client) - len(futures))):
                following = submit(j, shared_futures)
                futures[following] = j
                pending.add(following)
            return time.monotonic()

        try:
            looked = top_up()
            while futures:
                if cancelled is not None and cancelled():
                    raise CancelledError("Cancelled by the user.")
                if not pending.has_ready():
                    time.sleep(POLL_S)
                    if time.monotonic() - looked >= WINDOW_CHECK_S:
                        looked = top_up()
                    continue
                for future in pending.next_batch(block=False):
                    i = futures.pop(future)
                    if future.status == "cancelled" and i not in retried:
                        # A partition whose scattered inputs went with a lost worker comes back
                        # cancelled: it runs once more, its inputs sent with it.
                        retried.add(i)
                        log.warning("Partition %d lost its inputs with a worker; it runs again", i)
                        again = submit(i, shared)
                        futures[again] = i
                        pending.add(again)
                        continue
                    future.result()  # raises the partition's error here
                    listener.finished(i)
                    if cancelled is not None and cancelled():
                        raise CancelledError("Cancelled by the user.")
                looked = top_up()
        except BaseException:
            client.cancel(list(futures))
            raise
    return RunSummary(partitions=total, computed=len(todo), resumed=total - len(todo), dashboard=link,
                      stats=folder.stats(total))


POLL_S = 0.05  # how often the run looks for finished partitions and for a cancel
WINDOW_CHECK_S = 1.0  # how often it looks at the cluster's threads while none finishes


def submission_window(client: Any) -> int:
    """How many partitions are submitted ahead: twice the cluster's threads now (at least 4), so
    every thread has one to run and one waiting while the next are sent."""
    return max(4, 2 * sum(client.nthreads().values()))


def run_partition(task: Callable[..., None], i: int, folder: RunFolder, *arguments: Any, **shared: Any) -> None:
    """``task(i, folder, *arguments, **shared)``, then the memory it freed goes back to the system."""
    try:
        task(i, folder, *arguments, **shared)
    finally:
        release_freed_memory()


# -- partition inputs -------------------------------------------------------------------------

@dataclass
class PartitionParcels:
    """The parcels of one partition, compact for sending to a worker (WKB geometries)."""

    rows: np.ndarray  # positions in the table (layer order, sorted)
    wkb: list
    crs: str
    parcel_ids: np.ndarray
    labels: np.ndarray
    blocks: np.ndarray
    status: np.ndarray
    layer_rows: np.ndarray
    source: str

    @classmethod
    def of(cls, table: Any, idx: np.ndarray) -> "PartitionParcels":
        geoms = table.geometry.iloc[idx]
        wkb = [None if g is None else g.wkb for g in geoms]
        return cls(np.asarray(idx, dtype=np.int64), wkb, table.geometry.crs.to_wkt(), table.parcel_ids[idx],
                   table.labels[idx], table.blocks[idx], table.status[idx], np.asarray(table.rows)[idx],
                   table.source)

    def table(self, classes: Sequence[str] = ()) -> Any:
        """A ``ParcelTable`` of these parcels alone."""
        import geopandas as gpd
        from shapely import wkb as shapely_wkb

        geometry = gpd.GeoSeries([None if b is None else shapely_wkb.loads(b) for b in self.wkb], crs=self.crs)
        return ParcelTable(geometry, self.parcel_ids, self.labels, self.blocks, self.status.copy(), self.source,
                           self.layer_rows, tuple(classes))


def weather_for(weather: Any, rows: np.ndarray) -> Any:
    """The weather argument of one partition: a file as it is, per-parcel series cut to its rows."""
    if isinstance(weather, DailyTemperature):
        return DailyTemperature(weather.dates, weather.tmin[rows], weather.tmax[rows], weather.source)
    return weather


# -- classification, extraction and GDD in partitions -----------------------------------------

def peak_memory_mb() -> float:
    """Peak resident memory of this process so far (VmHWM), in MiB; 0 where /proc is missing."""
    with contextlib.suppress(OSError):
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024.0
    return 0.0


def release_freed_memory() -> None:
    """Give the memory a finished partition (or the client's planning) freed back to the system:
    glibc's ``malloc_trim`` and, where pyarrow is loaded, its memory pool's unused pages.

    A worker runs partition after partition; without this, the pages the last one freed stay
    in the process, scattered, and the next one's peak lands on top of them (a worker's peak
    grew from 683 to 754 MB over five partitions). Planning a million-parcel GeoParquet layer
    leaves some 14 MB in pyarrow's pool. Elsewhere than glibc the trim does nothing.
    """
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL("libc.so.6").malloc_trim(0)
    if "pyarrow" in sys.modules:
        with contextlib.suppress(AttributeError):  # a pyarrow older than 9 has no such call
            sys.modules["pyarrow"].default_memory_pool().release_unused()


def task_stats(i: int, parcels: PartitionParcels, wall_start: float, cpu_start: float, **extra: float) -> dict:
    wall, end = time.perf_counter() - wall_start, time.time()
    return {"partition": i, "parcels": len(parcels.rows), "wall_s": wall, "start_time": end - wall, "end_time": end,
            "cpu_s": time.process_time() - cpu_start, "host": socket.gethostname(), "pid": os.getpid(),
            "peak_mb": peak_memory_mb(), **extra}


def extract_stats(stats: dict) -> dict:
    return {"windows": stats.get("windows", 0), "window_pixels": stats.get("window_pixels", 0),
            "read_cpu_s": stats.get("read_cpu_s", 0.0), "extract_cpu_s": stats.get("cpu_s", 0.0),
            "parcel_dates": stats.get("parcel_dates", 0)}


def classify_partition(i: int, folder: RunFolder, parcels: PartitionParcels, weather: Any, *, scenes: list,
                       settings: Any, bundle: Any, batch_size: int, decided: Optional[float] = None) -> None:
    """One partition of a classification: extract, predict, write ``part-i.parquet`` (row, status, p0..pK-1,
    and with ``decided`` the decision's day number and GDD)."""
    wall, cpu = time.perf_counter(), time.process_time()
    model = cached_bundle(*bundle) if isinstance(bundle, tuple) else bundle
    classes = tuple(model.config.classes)
    table = parcels.table()
    n = len(table)
    stats: dict = {}
    probabilities = np.full((n, len(classes)), np.nan, dtype=np.float32)
    status = np.empty(n, dtype=object)
    decided_days = np.full(n, np.datetime64("NaT"), dtype="datetime64[D]")
    decided_gdd = np.full(n, np.nan, dtype=np.float32)
    predict_cpu = 0.0
    # The same groups, and so the same model batches, as a one-process run's chunk.
    for rows, ps in chunk_groups(table, np.arange(n), scenes, weather, settings, classes, {}, stats=stats):
        status[rows] = ps.status
        predict_start = time.process_time()
        if decided is None:
            probabilities[rows] = predict_chunk(model, ps, batch_size)
        else:
            probabilities[rows], decided_days[rows], decided_gdd[rows] = predict_chunk_decided(
                model, ps, decided, batch_size)
        predict_cpu += time.process_time() - predict_start
        del ps
    columns = {"row": parcels.rows, "parcel_id": np.asarray(table.parcel_ids, dtype=str), "status": status.astype(str)}
    columns.update({f"p{k}": probabilities[:, k] for k in range(probabilities.shape[1])})
    if decided is not None:
        # Days since 1970 as numbers (NaN: never), which every Parquet reader takes.
        columns["decided_day"] = np.where(np.isnat(decided_days), np.nan, decided_days.astype(np.int64))
        columns["decided_gdd"] = decided_gdd
    write_table(folder.part(i), columns, row_group_size=PART_ROW_GROUP)
    write_stats(folder, i, task_stats(i, parcels, wall, cpu, predict_cpu_s=predict_cpu, **extract_stats(stats)))


def classify_partitioned(parcels: Any, scenes: Any, weather: Any, bundle: Any = None,
                         **kwargs: Any) -> tuple[Any, RunSummary, RunFolder]:
    """:func:`classify_partitions` with the result merged in memory: the
    :class:`ClassificationResult` that ``classify_parcels`` gives with the same ``chunk_size``
    (probabilities bit for bit when torch runs on as many threads here as on a worker, one), the
    run's summary and its folder. ``kwargs``: as for :func:`classify_partitions`."""
    result, summary, folder = classify_partitions(parcels, scenes, weather, bundle, **kwargs)
    return result.merged(), summary, folder


def classify_partitions(
    parcels: Any,
    scenes: Any,
    weather: Any,
    bundle: Any = None,
    *,
    run_folder: PathLike,
    cluster: ClusterOptions,
    resume: bool = False,
    chunk_size: int = 20000,
    listener: Optional[PartitionListener] = None,
    cancelled: Optional[Callable[[], bool]] = None,
    batch_size: int = 256,
    inputs: Sequence[PathLike] = (),
    **options: Any,
) -> tuple[PartitionedResult, RunSummary, RunFolder]:
    """:func:`core.classify.classify_parcels` in partitions on a Dask cluster, the result left in
    the run folder and read from it batch by batch in parcel order
    (``result_stream.PartitionedResult``); the client keeps each parcel's position in the layer
    and partition (about 16 bytes a parcel).

    Args:
        parcels, scenes, weather, bundle: as ``classify_parcels`` (``bundle``: a path or None
            for the model shipped for the scenes' processing level; a loaded ``ModelBundle`` is
            sent to every worker). A layer file is not loaded here: its partitions are planned
            from its bounding boxes and each reads its parcels itself (the file must be at the
            same path on every worker).
        run_folder: where the partitions are written (kept when the run stops; removed by the
            caller with :func:`remove_run_folder` once the output is written).
        cluster: the workers or scheduler.
        resume: take up the partitions an interrupted run left in ``run_folder``.
        chunk_size: parcels per partition (at most; partitions never span two tiles).
        listener: told the partitions' progress.
        cancelled: asked between partitions whether to stop.
        batch_size: parcels per model batch.
        inputs: files the run reads, which the run folder must not be.
        options: ``sampling``, ``selected_ids``, ``id_field``, ``weather_options``, ``decided`` as
            for ``classify_parcels``; ``output``: ``output(result)`` writes the output from the
            ``PartitionedResult`` while the partitions run (:class:`OutputWhileRunning`; what it
            returns is ``result.written``).

    Returns:
        The ``PartitionedResult``, the run's summary and its folder.

    Raises:
        Whatever a partition or ``output`` raised; ``CancelledError`` when cancelled (the
        partitions written stay; ``output`` publishes nothing).
    """
    prestart_fork_server(cluster)
    if bundle is None:  # the shipped model of the scenes' level, loaded by path on every worker
        scenes = scene_list_of(scenes)
        bundle = default_bundle_for_levels(sc.level for sc in scenes)
    decided = options.pop("decided", None)
    output = options.pop("output", None)
    bundle_ref: Any = bundle
    if isinstance(bundle, (str, os.PathLike)):
        path = str(Path(os.fspath(bundle)).resolve())
        bundle_ref = (path, os.stat(path).st_mtime)
        model_key: Any = input_fingerprints([path])
    else:
        model_key = getattr(bundle.config, "checksum", None) or repr(asdict(bundle.config))
    # The cluster starts, and its workers load the model, while the layer is read here.
    with EarlyClient(cluster, warm_up=("classify", bundle_ref if isinstance(bundle_ref, tuple) else None)) as early:
        if isinstance(parcels, (str, os.PathLike)):
            # A layer file: planned here from its bounding boxes, read by each partition itself.
            given = None if bundle is None else run_bundle(bundle, ())
            plan = plan_layer(parcels, id_field=options.get("id_field"), selected_ids=options.get("selected_ids"))
            job = classification_setup(scenes, given, sampling=options.get("sampling"),
                                       weather_options=options.get("weather_options"))
            n, source, ids_digest = len(plan), plan.source, plan.ids_digest
            chunks = plan.chunks(chunk_size, scene_grids(job.scenes))
            plan.bounds = plan.usable = None  # planned: not needed any more
            release_freed_memory()  # what reading the layer left
            inputs_of = plan.slice
        else:
            job = prepare_classification(parcels, scenes, weather, bundle, **options)
            table = job.table
            n, source, ids_digest = len(table), table.source, digest_of_ids(table.parcel_ids)
            chunks = spatial_chunks(table, chunk_size, scene_grids(job.scenes))

            def inputs_of(idx: np.ndarray) -> PartitionParcels:
                return PartitionParcels.of(table, idx)
        fingerprint = {
            "kind": "classify",
            "parcels": file_fingerprint(parcels) if isinstance(parcels, (str, os.PathLike)) else source,
            "parcel_ids": ids_digest,
            "scenes": input_fingerprints(f for sc in job.scenes for f in sc.files),
            "weather": weather_fingerprint(weather, options.get("weather_options")),
            "model": model_key,
            "settings": repr(job.settings),
            "chunk_size": chunk_size,
            "batch_size": batch_size,
            "decided": decided,
        }
        folder = open_run_folder(run_folder, fingerprint=fingerprint, chunks=chunks, n_parcels=n,
                                 suffix=".parquet", resume=resume, inputs=inputs)
        rows = plan.rows if job.table is None else job.table.rows
        result = PartitionedResult(folder, chunks, rows, job.classes, job.warnings, decided)
        # Each partition's inputs are made as it is sent, not all at once.
        arguments = LazyArguments(len(chunks), lambda i: (inputs_of(chunks[i]), weather_for(weather, chunks[i])))
        shared = {"scenes": job.scenes, "settings": job.settings, "bundle": bundle_ref, "batch_size": batch_size,
                  "decided": decided}
        if output is None:
            summary = run_partitions(classify_partition, arguments, folder, early, listener=listener,
                                     cancelled=cancelled, shared=shared)
            check_layer_unchanged(parcels, fingerprint["parcels"], folder)
        else:
            with OutputWhileRunning(result, output) as writing:
                summary = run_partitions(classify_partition, arguments, folder, early,
                                         listener=writing.listener(listener), cancelled=writing.cancelled(cancelled),
                                         shared=shared)
                check_layer_unchanged(parcels, fingerprint["parcels"], folder)  # before the output is published
    return result, summary, folder


def check_layer_unchanged(parcels: Any, recorded: Any, folder: RunFolder) -> None:
    """Refuse a run whose parcel layer file changed while it ran: partitions read their parcels
    from the file by position, so those read before and after the change would be put together
    (``recorded``: the file's fingerprint when the run began; a layer held in memory passes).

    Raises:
        InputError: naming the file and what changed.
    """
    if not isinstance(parcels, (str, os.PathLike)) or not isinstance(recorded, dict):
        return
    files = changed_files(recorded, file_fingerprint(parcels))
    if files:
        raise InputError(f"The parcel layer {parcels} changed while the run ran ({'; '.join(files)}); its partitions "
                         "may hold parcels of the old and of the new layer, so nothing was written. Remove the run "
                         f"folder {folder.path} and run again once the layer stays as it is.")


def digest_of_ids(parcel_ids: Sequence[Any]) -> str:
    return hashlib.sha256("\n".join(map(str, parcel_ids)).encode()).hexdigest()


class LazyArguments(Sequence):
    """The partitions' arguments, each made when asked for (and not kept)."""

    def __init__(self, n: int, make: Callable[[int], tuple]) -> None:
        self._n, self._make = n, make

    def __len__(self) -> int:
        return self._n

    def __getitem__(self, i: int) -> tuple:  # type: ignore[override]
        if not 0 <= i < self._n:
            raise IndexError(i)
        return self._make(i)


def gdd_partition(i: int, folder: RunFolder, parcels: PartitionParcels, weather: Any, *, dates: np.ndarray,
                  gdd_options: dict) -> None:
    """One partition of a GDD table: ``part-i.parquet`` with row, parcel_id and g0..gT-1 (float32, NaN
    without weather)."""
    wall, cpu = time.perf_counter(), time.process_time()
    table = parcels.table()
    usable = np.array([g is not None for g in table.geometry])
    xs = np.full(len(table), np.nan)
    ys = np.full(len(table), np.nan)
    if usable.any():
        points = table.geometry[usable].representative_point()
        xs[usable], ys[usable] = points.x.to_numpy(), points.y.to_numpy()
    gdd = gdd_at_points(weather, xs, ys, table.geometry.crs, dates, parcel_ids=list(table.parcel_ids),
                        **gdd_options)
    columns = {"row": parcels.rows, "parcel_id": np.asarray(table.parcel_ids, dtype=str)}
    columns.update({f"g{t}": gdd[:, t].astype(np.float32) for t in range(gdd.shape[1])})
    write_table(folder.part(i), columns)
    write_stats(folder, i, task_stats(i, parcels, wall, cpu, parcel_dates=len(table) * len(dates)))


def gdd_partitioned(table: Any, weather: Any, dates: np.ndarray, *, run_folder: PathLike, cluster: ClusterOptions,
                    resume: bool = False, chunk_size: int = 20000, listener: Optional[PartitionListener] = None,
                    inputs: Sequence[PathLike] = (), **gdd_options: Any) -> tuple[np.ndarray, RunSummary, RunFolder]:
    """GDD ``(P, T)`` float32 of a ``ParcelTable`` at ``dates``, in partitions (see ``gdd.gdd_at_points``)."""
    gdd, _, summary, folder = gdd_partitions(table, weather, dates, run_folder=run_folder, cluster=cluster,
                                             resume=resume, chunk_size=chunk_size, listener=listener, inputs=inputs,
                                             **gdd_options)
    return gdd, summary, folder


def gdd_partitions(parcels: Any, weather: Any, dates: np.ndarray, *, run_folder: PathLike, cluster: ClusterOptions,
                   resume: bool = False, chunk_size: int = 20000, listener: Optional[PartitionListener] = None,
                   inputs: Sequence[PathLike] = (),
                   **gdd_options: Any) -> tuple[np.ndarray, np.ndarray, RunSummary, RunFolder]:
    """:func:`gdd_partitioned` of a ``ParcelTable`` or of a layer file's ``LayerPlan``
    (``layer_plan.plan_layer``: the client holds no geometry, each partition reads its own
    parcels from the file); returns the GDD, the parcel ids (from the partitions), the summary
    and the run folder."""
    planned = isinstance(parcels, LayerPlan)
    with EarlyClient(cluster, warm_up=("gdd",)) as early:
        if planned:
            chunks = parcels.chunks(chunk_size)
            parcels.bounds = parcels.usable = None  # planned: not needed any more
            release_freed_memory()  # what reading the layer left
            source, ids_digest, inputs_of = parcels.source, parcels.ids_digest, parcels.slice
        else:
            chunks = spatial_chunks(parcels, chunk_size)
            source, ids_digest = parcels.source, digest_of_ids(parcels.parcel_ids)

            def inputs_of(idx: np.ndarray) -> PartitionParcels:
                return PartitionParcels.of(parcels, idx)
        fingerprint = {
            "kind": "gdd",
            "parcels": source if not os.path.exists(str(source)) else file_fingerprint(source),
            "parcel_ids": ids_digest,
            "weather": weather_fingerprint(weather, gdd_options),
            "dates": [str(d) for d in np.asarray(dates, dtype="datetime64[D]")],
            "options": repr(sorted(gdd_options.items())),
            "chunk_size": chunk_size,
        }
        n = len(parcels)
        folder = open_run_folder(run_folder, fingerprint=fingerprint, chunks=chunks, n_parcels=n,
                                 suffix=".parquet", resume=resume, inputs=inputs)
        arguments = LazyArguments(len(chunks), lambda i: (inputs_of(chunks[i]), weather_for(weather, chunks[i])))
        summary = run_partitions(gdd_partition, arguments, folder, early, listener=listener,
                                 shared={"dates": np.asarray(dates, dtype="datetime64[D]"), "gdd_options": gdd_options})
        if planned:
            check_layer_unchanged(source, fingerprint["parcels"], folder)
    gdd = np.full((n, len(dates)), np.nan, dtype=np.float32)
    parcel_ids = np.empty(n, dtype=object)
    for i, idx in enumerate(chunks):
        part = read_table(folder.part(i))
        check_partition(folder, i, idx, part["row"])
        if "parcel_id" not in part:
            raise OutputError(f"The partition {folder.part(i)} was written by another version of ThermoCrop; "
                              f"remove the run folder {folder.path} and run again.")
        gdd[idx] = np.stack([part[f"g{t}"] for t in range(len(dates))], axis=1)
        parcel_ids[idx] = part["parcel_id"]
    return gdd, parcel_ids.astype(str), summary, folder
