"""Partitioned runs on a Dask cluster: classification, extraction and GDD of large layers.

The parcels are cut into partitions by tile and spatial strip (``extract.spatial_chunks``, the
same chunks a one-process run makes, so the results are the same). Each
partition runs as one Dask task on any worker and writes its result as a file of its own in
a run folder (a Parquet table, or a dataset folder for extraction), atomically; at the end the
client merges the partitions into the output in parcel order and publishes it whole.

A worker lost mid-run is replaced by the cluster and its partitions are computed again by
another worker (Dask reschedules the tasks of a dead worker). A run interrupted as a whole
(Ctrl-C, a killed client, a lost scheduler) keeps its run folder; run again with
``resume=True`` and only the missing partitions are computed. The run folder records the
settings and a fingerprint of the content of every input file (:func:`input_fingerprints`), and a
resumed run refuses one made from other inputs, naming the file that changed.

On a cluster of several machines the run folder, the scenes, the weather file and the model
must be at the same paths on every worker (a shared file system).
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import io
import json
import logging
import os
import re
import shutil
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator, Optional, Sequence, Union

import numpy as np

from ..errors import CancelledError, InputError, OutputError, ThermoCropError
from .fingerprint import changed_files, file_fingerprint, input_fingerprints
from ..io.output import check_output, cleanup_stale, staged_file, write_bytes, write_text

log = logging.getLogger(__name__)

RUN_FORMAT = "thermocrop-run"
RUN_VERSION = 2
"""2: inputs are fingerprinted by content (:func:`input_fingerprints`), not by name and second."""
RUN_SUFFIX = ".parts"
"""A run folder is named after the output: ``classified.gpkg.parts``."""

PathLike = Union[str, os.PathLike]


# -- the cluster ------------------------------------------------------------------------------

@dataclass(frozen=True)
class ClusterOptions:
    """Where partitions run.

    Attributes:
        workers: worker processes of a Dask ``LocalCluster`` on this machine (one thread
            each); 1 runs the partitions one after the other in this process.
        scheduler: address of a running Dask scheduler (``tcp://host:8786``); overrides
            ``workers``.
        dashboard: address the local cluster's dashboard listens on (``:0`` picks a free port).
    """

    workers: int = 1
    scheduler: Optional[str] = None
    dashboard: str = ":8787"

    @property
    def partitioned(self) -> bool:
        return bool(self.scheduler) or self.workers > 1


@contextlib.contextmanager
def dask_client(options: ClusterOptions) -> Iterator[Any]:
    """A ``distributed.Client`` for ``options`` (None for a one-process run), closed on exit.

    Raises:
        InputError: the scheduler cannot be reached, or dask.distributed is not installed.
    """
    with EarlyClient(options) as early:
        yield early.client()


def _start_client(options: ClusterOptions) -> tuple[Any, Any]:
    """A connected client and the local cluster it runs on (None for a scheduler's address)."""
    try:
        from distributed import Client, LocalCluster
    except ImportError:
        raise InputError("Partitioned runs need dask.distributed; run 'make setup' (Debian: apt-get install "
                         "python3-distributed).") from None
    if options.scheduler:
        try:
            return Client(options.scheduler, timeout="30s"), None
        except (OSError, TimeoutError) as exc:
            raise InputError(f"Cannot reach the Dask scheduler at {options.scheduler} ({exc}); start it (dask "
                             "scheduler, dask-jobqueue, dask-kubernetes) or check the address.") from None
    import dask

    method = "forkserver" if start_fork_server() else "spawn"
    with dask.config.set({**cluster_config(), "distributed.worker.multiprocessing-method": method}):
        cluster = LocalCluster(n_workers=options.workers, threads_per_worker=1, processes=True,
                               dashboard_address=options.dashboard)
    try:
        return Client(cluster), cluster
    except BaseException:
        cluster.close()
        raise


class EarlyClient:
    """A Dask client whose cluster starts in a background thread while this process prepares the
    run (reads the layer, checks the scenes), and whose workers then import ThermoCrop's
    libraries and load the model (``warm_up``) before the first partition reaches them.

    Use as a context manager; :meth:`client` waits for the start and returns the client (None
    for a one-process run), or raises what the start raised. On exit the cluster is closed,
    also when the run failed before it asked for the client.
    """

    def __init__(self, options: ClusterOptions, warm_up: Optional[tuple] = None) -> None:
        import concurrent.futures
        import threading

        self.options = options
        self._warm_up = warm_up
        self._started: concurrent.futures.Future = concurrent.futures.Future()
        self._warming: list = []
        self._thread = None
        if options.partitioned:
            self._thread = threading.Thread(target=self._start, name="thermocrop-cluster-start", daemon=True)
            self._thread.start()
        else:
            self._started.set_result((None, None))

    def _start(self) -> None:
        try:
            client, cluster = _start_client(self.options)
        except BaseException as exc:  # handed to the thread that asks for the client
            self._started.set_exception(exc)
            return
        if self._warm_up is not None:
            with contextlib.suppress(Exception):  # a worker that cannot warm up fails its first partition instead
                self._warming = [client.submit(warm_up_worker, *self._warm_up, workers=[address], pure=False,
                                               key=f"thermocrop-warm-up-{os.getpid()}-{time.monotonic_ns()}-{n}")
                                 for n, address in enumerate(client.scheduler_info()["workers"])]
        self._started.set_result((client, cluster))

    def client(self) -> Any:
        return self._started.result()[0]

    def __enter__(self) -> "EarlyClient":
        return self

    def __exit__(self, *exc: Any) -> None:
        if self._thread is not None:
            self._thread.join()
        if self._started.exception() is None:
            client, cluster = self._started.result()
            if client is not None:
                client.close()
            if cluster is not None:
                cluster.close()


WARM_UP_MODULES = {"gdd": ("gdd",), "extract": ("dataset", "extract"), "classify": ("dataset", "extract", "classify")}
"""What a partition of each kind imports (with torch, rasterio, geopandas and pyarrow under them)."""


def warm_up_worker(kind: str, bundle: Optional[tuple] = None) -> None:
    """Import what a partition of ``kind`` needs, and load the model bundle ``(path, mtime)``
    a classification's partitions will use."""
    import importlib

    for name in WARM_UP_MODULES[kind]:
        importlib.import_module(f"{__package__}.{name}")
    if bundle is not None:
        cached_bundle(*bundle)


PRELOAD_MODULES = ("distributed", "dask", "msgpack", "cloudpickle", "tornado", "toolz", "numpy", "pandas", "lz4",
                   "torch", "safetensors", "rasterio", "shapely", "pyproj", "geopandas", "pyarrow.parquet", "xarray",
                   "netCDF4", "scipy.spatial", f"{__package__}.bundle", f"{__package__}.classify",
                   f"{__package__}.dataset", f"{__package__}.extract", f"{__package__}.gdd", f"{__package__}.weather",
                   __name__)
"""What the fork server imports once for all of a local cluster's workers: Dask's own list
(``distributed.utils.get_mp_context``) and what a partition needs. A module that is not
installed is skipped."""


_fork_server_environ: Optional[dict] = None


def start_fork_server() -> bool:
    """Start the process a local cluster's workers are forked from, with :data:`PRELOAD_MODULES`
    imported, unless it runs already (it then lives as long as this process). False where it
    cannot serve this cluster: it was started with other values of the workers' environment
    (:func:`worker_environment`, which numeric and memory libraries read as a process starts),
    so the workers must be started as new interpreters instead.

    Started as a new interpreter, each worker spent 3-4 s of CPU importing torch, rasterio and
    the rest, while on two cores the cluster's start competed with this process reading the
    layer; the server imports them once, at the same time, and a forked worker starts in a
    fraction of a second. The server imports nothing that starts threads (a fork copies one).
    """
    global _fork_server_environ
    import multiprocessing
    import multiprocessing.forkserver

    import dask
    from distributed.utils import get_mp_context

    # What the workers' environment will be: Dask's variables, a value of this process's own
    # first; the trim setting only where this process has one (None: unset).
    environ = {key: os.environ.get(key, str(value)) for key, value in worker_environment().items()}
    environ[TRIM_VARIABLE] = os.environ.get(TRIM_VARIABLE)
    if _fork_server_environ is not None and environ != _fork_server_environ:
        return False
    with dask.config.set({"distributed.worker.multiprocessing-method": "forkserver"}):
        get_mp_context()  # Dask sets its own preload list once; ours, a superset, replaces it
    multiprocessing.get_context("forkserver").set_forkserver_preload(list(PRELOAD_MODULES))
    with _environment(environ):
        multiprocessing.forkserver.ensure_running()
    _fork_server_environ = environ
    return True


def _set_environment(values: dict[str, Optional[str]]) -> None:
    for key, value in values.items():
        if value is None:
            os.environ.pop(key, None)
        else:
            os.environ[key] = value


@contextlib.contextmanager
def _environment(values: dict[str, Optional[str]]) -> Iterator[None]:
    """This process's environment with ``values`` set (None: unset), restored on exit."""
    saved = {key: os.environ.get(key) for key in values}
    _set_environment(values)
    try:
        yield
    finally:
        _set_environment(saved)


def prestart_fork_server(options: ClusterOptions) -> None:
    """Start a local cluster's fork server at once (:func:`start_fork_server`), so that it imports
    its libraries while this process imports its own; the cluster itself starts later."""
    if options.partitioned and not options.scheduler:
        with contextlib.suppress(ImportError):  # the cluster's start says what is missing
            start_fork_server()


TRIM_VARIABLE = "MALLOC_TRIM_THRESHOLD_"


def worker_environment() -> dict[str, Any]:
    """The environment Dask sets before it starts a local worker process, less its
    ``MALLOC_TRIM_THRESHOLD_``.

    Dask sets that to 64 KiB so that workers hand freed memory back to the system at once;
    for ThermoCrop's partitions, which allocate and free a window's pixels for every scene,
    glibc then gives back and faults in the same pages again and again: one worker ran a
    partition 1.5x slower than the same process without the setting (decoding 1.25x, the
    model 2x). Without it glibc keeps its own adaptive threshold, as in a one-process run. A
    value the user has set in the environment is still passed on (Dask gives it precedence).
    """
    import dask

    environ = dict(dask.config.get("distributed.nanny.pre-spawn-environ", default={}) or {})
    environ.pop(TRIM_VARIABLE, None)
    return environ


def cluster_config() -> dict[str, Any]:
    """Dask settings for ThermoCrop's local cluster (its scheduler, nannies and workers).

    - The workers' environment of :func:`worker_environment`.
    - No statistical profiler: every 10 ms a worker's profiler walks the stack of the running
      task, which for a partition's deep calls (torch, rasterio) cost a quarter of the
      partitions' CPU time here (117 against 90 CPU seconds for the same ten partitions). The
      dashboard's Profile page stays empty.
    - Slower housekeeping, for partitions that take seconds to minutes: event-loop health
      checks every second (Dask: 20 ms), system and memory monitors every 5 s and 0.5 s
      (500 ms, 100 ms), work stealing every second (100 ms). An idle two-worker cluster then
      takes 1.9 % of a core instead of 11 % (client process and workers together).
    """
    return {"distributed.nanny.pre-spawn-environ": worker_environment(),
            "distributed.worker.profile.enabled": False,
            "distributed.admin.tick.interval": "1s",
            "distributed.admin.system-monitor.interval": "5s",
            "distributed.worker.memory.monitor-interval": "500ms",
            "distributed.scheduler.work-stealing-interval": "1s"}


def dask_variables() -> dict[str, str]:
    """The settings of :func:`cluster_config` (less the workers' environment) as the ``DASK_*``
    environment variables that give them to a scheduler or worker started elsewhere (a
    dask-jobqueue job script, a Kubernetes pod)."""
    return {"DASK_" + key.upper().replace(".", "__").replace("-", "_"): str(value)
            for key, value in cluster_config().items() if key != "distributed.nanny.pre-spawn-environ"}


def dashboard_link(client: Any) -> Optional[str]:
    """The dashboard address of ``client``'s scheduler, or None without bokeh."""
    try:
        return client.dashboard_link
    except Exception:  # no dashboard (bokeh missing) or a scheduler without one
        return None


# -- run folders ------------------------------------------------------------------------------

def default_run_folder(out: PathLike) -> Path:
    """``<out>.parts`` beside the output."""
    out = Path(os.path.abspath(os.fspath(out)))
    return out.with_name(out.name + RUN_SUFFIX)


def _weather_fingerprint(weather: Any, weather_options: Optional[dict] = None) -> Any:
    """The weather file (and a separate maximum-temperature file) by content; temperatures
    already read, or a service, by kind."""
    if not isinstance(weather, (str, os.PathLike)):
        return str(type(weather))
    return input_fingerprints([weather, (weather_options or {}).get("tmax_path")])


@dataclass
class RunFolder:
    """The folder holding a partitioned run's plan and its finished partitions.

    ``run.json`` records the kind of run, a fingerprint of its inputs and settings and the
    number of partitions; ``plan.npy`` the partition of every parcel (-1: none). Partition
    ``i`` is ``part-{i:05d}<suffix>`` once finished (written whole, so a file that is there is
    complete), with ``part-{i:05d}.json`` beside it holding what it cost.
    """

    path: Path
    suffix: str

    def part(self, i: int) -> Path:
        return self.path / f"part-{i:05d}{self.suffix}"

    def stats_path(self, i: int) -> Path:
        return self.path / f"part-{i:05d}.json"

    def done(self, n: int) -> list[int]:
        return [i for i in range(n) if self.part(i).exists()]

    def stats(self, n: int) -> list[dict]:
        out = []
        for i in range(n):
            with contextlib.suppress(OSError, ValueError):
                out.append(json.loads(self.stats_path(i).read_text(encoding="utf-8")))
        return out


def _plan_array(chunks: Sequence[np.ndarray], n: int) -> np.ndarray:
    plan = np.full(n, -1, dtype=np.int32)
    for i, idx in enumerate(chunks):
        plan[idx] = i
    return plan


def open_run_folder(path: PathLike, *, fingerprint: dict, chunks: Sequence[np.ndarray], n_parcels: int,
                    suffix: str, resume: bool, inputs: Sequence[PathLike] = ()) -> RunFolder:
    """Create the run folder, or with ``resume`` take up the one an interrupted run left.

    Raises:
        OutputError: the folder exists without ``resume`` (an interrupted run: say how to go
            on), it holds a run of other inputs or settings, or it cannot be created.
    """
    path = Path(os.path.abspath(os.fspath(path)))
    folder = RunFolder(path, suffix)
    plan = _plan_array(chunks, n_parcels)
    header = {"format": RUN_FORMAT, "version": RUN_VERSION, "partitions": len(chunks),
              "fingerprint": json.loads(json.dumps(fingerprint, default=str))}
    run_json = path / "run.json"
    if path.is_dir() and not any(path.iterdir()):
        path.rmdir()  # an empty folder given as --run-folder: used as it is
    if path.exists():
        try:
            old = json.loads(run_json.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            old = None
        if not isinstance(old, dict) or old.get("format") != RUN_FORMAT:
            raise OutputError(f"{path} exists and is not a ThermoCrop run folder; remove it or give another "
                              "run folder.")
        if not resume:
            n_done = len(folder.done(int(old.get("partitions", 0))))
            raise OutputError(f"{path} holds an interrupted run ({n_done} of {old.get('partitions')} partitions "
                              "written); continue it with --resume, or remove that folder to start again.")
        if old.get("version") != RUN_VERSION:
            raise OutputError(f"The run in {path} was made by another version of ThermoCrop; it cannot be resumed. "
                              "Start afresh: remove that folder and run again without --resume.")
        old_fingerprint = old.get("fingerprint", {})
        changed = [k for k in sorted(set(header["fingerprint"]) | set(old_fingerprint))
                   if header["fingerprint"].get(k) != old_fingerprint.get(k)]
        files = [f for k in changed for f in changed_files(old_fingerprint.get(k), header["fingerprint"].get(k))]
        if files:
            raise OutputError(f"Input files changed since the interrupted run in {path} began: {'; '.join(files)}. "
                              "Resuming would mix results of the old and the new files. Start afresh: remove that "
                              "folder and run again without --resume (or put the files back as they were).")
        old_plan = None
        with contextlib.suppress(OSError, ValueError):
            old_plan = np.load(path / "plan.npy", allow_pickle=False)
        if changed or old_plan is None or not np.array_equal(old_plan, plan):
            what = ", ".join(changed) if changed else "the partitions"
            raise OutputError(f"The run in {path} was made with other inputs or settings ({what} differ); it cannot "
                              "be resumed with these. Remove that folder to start again, or run with the same "
                              "inputs.")
        log.info("Resuming the run in %s: %d of %d partitions already written", path,
                 len(folder.done(len(chunks))), len(chunks))
        return folder
    if resume:
        log.info("No interrupted run in %s; starting a new one", path)
    check_output(path, what="run folder", kind="folder", inputs=inputs)
    try:
        path.mkdir()
    except OSError as exc:
        raise OutputError(f"Cannot create the run folder {path} ({exc.strerror or exc}); choose a folder you can "
                          "write to (--run-folder).") from None
    plan_bytes = io.BytesIO()
    np.save(plan_bytes, plan)
    write_bytes(path / "plan.npy", plan_bytes.getvalue(), what="run plan")
    write_text(path / "run.json", json.dumps(header, indent=1), what="run record")  # last: marks the folder whole
    return folder


# -- running the partitions -------------------------------------------------------------------

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
        return {k: float(sum(s.get(k, 0) for s in self.stats)) for k in keys}


class PartitionListener:
    """Told how a partitioned run goes; the CLI draws its progress bar from it."""

    def started(self, total: int, done: int, dashboard: Optional[str]) -> None:
        """The run has ``total`` partitions, ``done`` of them from an earlier run."""

    def finished(self, index: int) -> None:
        """Partition ``index`` is written."""


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

        # Wrapped in a list: scatter would take a dict or a tuple apart into several futures.
        shared_futures = {k: client.scatter([v], broadcast=True)[0] for k, v in shared.items()}
        futures = {client.submit(run_partition, task, i, folder, *arguments[i], **shared_futures, pure=False,
                                 key=f"thermocrop-partition-{i:05d}-{os.getpid()}-{time.monotonic_ns()}"): i
                   for i in todo}
        try:
            for future in as_completed(list(futures)):
                future.result()  # raises the partition's error here
                listener.finished(futures[future])
                if cancelled is not None and cancelled():
                    raise CancelledError("Cancelled by the user.")
        except BaseException:
            client.cancel(list(futures))
            raise
    return RunSummary(partitions=total, computed=len(todo), resumed=total - len(todo), dashboard=link,
                      stats=folder.stats(total))


def run_partition(task: Callable[..., None], i: int, folder: RunFolder, *arguments: Any, **shared: Any) -> None:
    """``task(i, folder, *arguments, **shared)``, then the memory it freed goes back to the system."""
    try:
        task(i, folder, *arguments, **shared)
    finally:
        release_freed_memory()


def write_stats(folder: RunFolder, i: int, stats: dict) -> None:
    """Record what partition ``i`` cost beside it (for the cost model; not needed to resume)."""
    with contextlib.suppress(OSError, OutputError):
        with staged_file(folder.stats_path(i), what="partition record") as tmp:
            tmp.write_text(json.dumps(stats), encoding="utf-8")


_RUN_ENTRY = re.compile(r"(plan\.npy|run\.json|part-\d{5}(\.json|\.parquet)?)")


def remove_run_folder(folder: RunFolder) -> None:
    """Remove a finished run's folder (its result is in the output now).

    Only what runs write there goes (the plan, the record, the partitions and their records,
    staging folders of killed partitions); anything else someone put in the folder is left,
    and so is the folder then.
    """
    cleanup_stale(folder.path)
    try:
        entries = list(os.scandir(folder.path))
    except OSError:
        return
    for entry in entries:
        if not _RUN_ENTRY.fullmatch(entry.name):
            continue
        if entry.is_dir(follow_symlinks=False):
            shutil.rmtree(entry.path, ignore_errors=True)
        else:
            with contextlib.suppress(OSError):
                os.unlink(entry.path)
    try:
        folder.path.rmdir()
    except OSError:
        log.warning("The run folder %s holds files this run did not write; it was left with them", folder.path)


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

        from ..extract import ParcelTable

        geometry = gpd.GeoSeries([None if b is None else shapely_wkb.loads(b) for b in self.wkb], crs=self.crs)
        return ParcelTable(geometry, self.parcel_ids, self.labels, self.blocks, self.status.copy(), self.source,
                           self.layer_rows, tuple(classes))


def weather_for(weather: Any, rows: np.ndarray) -> Any:
    """The weather argument of one partition: a file as it is, per-parcel series cut to its rows."""
    from ..thermal.weather import DailyTemperature

    if isinstance(weather, DailyTemperature):
        return DailyTemperature(weather.dates, weather.tmin[rows], weather.tmax[rows], weather.source)
    return weather


@functools.lru_cache(maxsize=2)
def cached_bundle(path: str, mtime: float) -> Any:
    """A worker's model bundle, loaded once per process (``mtime`` tells a changed file apart)."""
    from ..model.bundle import load_bundle

    return load_bundle(path)


# -- Parquet tables of partition results --------------------------------------------------------

def write_table(path: Path, columns: dict[str, np.ndarray], what: str = "partition") -> None:
    """Write ``columns`` as one Parquet table at ``path``, atomically (it appears whole or not at all)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    table = pa.table({k: pa.array(v) for k, v in columns.items()})

    def rows_back(tmp: Path) -> None:
        if pq.ParquetFile(str(tmp)).metadata.num_rows != table.num_rows:
            raise OutputError(f"The {what} {path.name} does not read back after writing; the disk may be full.")

    with staged_file(path, what=what, verify=rows_back) as tmp:
        pq.write_table(table, str(tmp))


def read_table(path: Path) -> dict[str, np.ndarray]:
    """A partition's Parquet table as numpy arrays by column."""
    import pyarrow.parquet as pq

    try:
        table = pq.read_table(str(path))
    except Exception as exc:  # pyarrow's own errors
        raise OutputError(f"The partition {path} cannot be read ({exc}); remove it and run again with --resume.") \
            from None
    return {name: table.column(name).to_numpy(zero_copy_only=False) for name in table.column_names}


def check_partition(folder: RunFolder, i: int, rows: np.ndarray, got: np.ndarray) -> None:
    if not np.array_equal(np.asarray(got, dtype=np.int64), rows):
        raise ThermoCropError(f"Partition {folder.part(i)} holds other parcels than the run's plan; remove the run "
                              f"folder {folder.path} and run again.")


# -- classification, extraction and GDD in partitions -----------------------------------------

def peak_memory_mb() -> float:
    """Peak resident memory of this process so far (VmHWM), in MiB; 0 where /proc is missing."""
    with contextlib.suppress(OSError):
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024.0
    return 0.0


def release_freed_memory() -> None:
    """Give the memory a finished partition freed back to the system (glibc's ``malloc_trim``).

    A worker runs partition after partition; without this, the pages the last one freed stay
    in the process, scattered, and the next one's peak lands on top of them (a worker's peak
    grew from 683 to 754 MB over five partitions). Elsewhere than glibc it does nothing.
    """
    import ctypes

    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL("libc.so.6").malloc_trim(0)


def _task_stats(i: int, parcels: PartitionParcels, wall_start: float, cpu_start: float, **extra: float) -> dict:
    import socket

    wall, end = time.perf_counter() - wall_start, time.time()
    return {"partition": i, "parcels": len(parcels.rows), "wall_s": wall, "start_time": end - wall, "end_time": end,
            "cpu_s": time.process_time() - cpu_start, "host": socket.gethostname(), "pid": os.getpid(),
            "peak_mb": peak_memory_mb(), **extra}


def _extract_stats(stats: dict) -> dict:
    return {"windows": stats.get("windows", 0), "window_pixels": stats.get("window_pixels", 0),
            "read_cpu_s": stats.get("read_cpu_s", 0.0), "extract_cpu_s": stats.get("cpu_s", 0.0),
            "parcel_dates": stats.get("parcel_dates", 0)}


def classify_partition(i: int, folder: RunFolder, parcels: PartitionParcels, weather: Any, *, scenes: list,
                       settings: Any, bundle: Any, batch_size: int) -> None:
    """One partition of a classification: extract, predict, write ``part-i.parquet`` (row, status, p0..pK-1)."""
    from ..classify import predict_chunk
    from ..extract import chunk_groups

    wall, cpu = time.perf_counter(), time.process_time()
    model = cached_bundle(*bundle) if isinstance(bundle, tuple) else bundle
    classes = tuple(model.config.classes)
    table = parcels.table()
    n = len(table)
    stats: dict = {}
    probabilities = np.full((n, len(classes)), np.nan, dtype=np.float32)
    status = np.empty(n, dtype=object)
    predict_cpu = 0.0
    # The same groups, and so the same model batches, as a one-process run's chunk.
    for rows, ps in chunk_groups(table, np.arange(n), scenes, weather, settings, classes, {}, stats=stats):
        status[rows] = ps.status
        predict_start = time.process_time()
        probabilities[rows] = predict_chunk(model, ps, batch_size)
        predict_cpu += time.process_time() - predict_start
        del ps
    columns = {"row": parcels.rows, "status": status.astype(str)}
    columns.update({f"p{k}": probabilities[:, k] for k in range(probabilities.shape[1])})
    write_table(folder.part(i), columns)
    write_stats(folder, i, _task_stats(i, parcels, wall, cpu, predict_cpu_s=predict_cpu, **_extract_stats(stats)))


def classify_partitioned(
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
) -> tuple[Any, RunSummary, RunFolder]:
    """:func:`core.classify.classify_parcels` in partitions on a Dask cluster.

    Args:
        parcels, scenes, weather, bundle: as ``classify_parcels`` (``bundle``: a path or None
            for the shipped model; a loaded ``ModelBundle`` is sent to every worker).
        run_folder: where the partitions are written (kept when the run stops; removed by the
            caller with :func:`remove_run_folder` once the output is written).
        cluster: the workers or scheduler.
        resume: take up the partitions an interrupted run left in ``run_folder``.
        chunk_size: parcels per partition (at most; partitions never span two tiles).
        listener: told the partitions' progress.
        cancelled: asked between partitions whether to stop.
        batch_size: parcels per model batch.
        inputs: files the run reads, which the run folder must not be.
        options: ``id_field``, ``selected_ids``, ``max_pixels``, ``seed``, ``min_valid_fraction``,
            ``min_pixels``, ``scl_invalid``, ``weather_options`` as for ``classify_parcels``.

    Returns:
        The :class:`ClassificationResult` (the same as ``classify_parcels`` with the same
        ``chunk_size``; probabilities bit for bit when torch runs on as many threads here as
        on a worker, one), the run's summary and its folder.
    """
    prestart_fork_server(cluster)
    from dataclasses import asdict

    from ..model.bundle import default_bundle_path
    from ..classify import assemble_result, prepare_classification
    from ..extract import scene_grids, spatial_chunks

    bundle_ref: Any = bundle
    if bundle is None or isinstance(bundle, (str, os.PathLike)):
        path = str(Path(os.fspath(bundle)).resolve()) if bundle is not None else str(default_bundle_path())
        bundle_ref = (path, os.stat(path).st_mtime)
        model_key: Any = input_fingerprints([path])
    else:
        model_key = getattr(bundle.config, "checksum", None) or repr(asdict(bundle.config))
    # The cluster starts, and its workers load the model, while the layer is read here.
    with EarlyClient(cluster, warm_up=("classify", bundle_ref if isinstance(bundle_ref, tuple) else None)) as early:
        job = prepare_classification(parcels, scenes, weather, bundle, **options)
        table = job.table
        chunks = spatial_chunks(table, chunk_size, scene_grids(job.scenes))
        fingerprint = {
            "kind": "classify",
            "parcels": file_fingerprint(parcels) if isinstance(parcels, (str, os.PathLike)) else table.source,
            "parcel_ids": hashlib.sha256("\n".join(map(str, table.parcel_ids)).encode()).hexdigest(),
            "scenes": input_fingerprints(f for sc in job.scenes for f in sc.files),
            "weather": _weather_fingerprint(weather, options.get("weather_options")),
            "model": model_key,
            "settings": repr(job.settings),
            "chunk_size": chunk_size,
            "batch_size": batch_size,
        }
        folder = open_run_folder(run_folder, fingerprint=fingerprint, chunks=chunks, n_parcels=len(table),
                                 suffix=".parquet", resume=resume, inputs=inputs)
        arguments = [(PartitionParcels.of(table, idx), weather_for(weather, idx)) for idx in chunks]
        summary = run_partitions(classify_partition, arguments, folder, early, listener=listener, cancelled=cancelled,
                                 shared={"scenes": job.scenes, "settings": job.settings, "bundle": bundle_ref,
                                         "batch_size": batch_size})
    # Merge: partition by partition into per-parcel arrays, in parcel order.
    n, k = len(table), len(job.classes)
    probabilities = np.full((n, k), np.nan, dtype=np.float32)
    status = np.empty(n, dtype=object)
    for i, idx in enumerate(chunks):
        part = read_table(folder.part(i))
        check_partition(folder, i, idx, part["row"])
        status[idx] = part["status"]
        probabilities[idx] = np.stack([part[f"p{c}"] for c in range(k)], axis=1) if k else np.zeros((len(idx), 0))
    return assemble_result(job, status, probabilities), summary, folder


def extract_partition(i: int, folder: RunFolder, parcels: PartitionParcels, weather: Any, *, scenes: list,
                      settings: Any, classes: tuple, meta: dict) -> None:
    """One partition of an extraction, written as the dataset folder ``part-i``."""
    from ..pixel_sets import DatasetWriter
    from ..extract import chunk_groups
    from ..thermal.gdd import day_of_season

    wall, cpu = time.perf_counter(), time.process_time()
    table = parcels.table(classes)
    stats: dict = {}
    dates = np.array([sc.date for sc in scenes], dtype="datetime64[D]")
    with DatasetWriter(folder.part(i), n_parcels=len(table), dates=dates,
                       day_of_season=np.asarray(day_of_season(dates, settings.season_start), dtype=np.float32),
                       max_pixels=settings.max_pixels, classes=classes, meta=meta,
                       parcel_id_width=max(8, max(len(x) for x in table.parcel_ids))) as writer:
        for rows, ps in chunk_groups(table, np.arange(len(table)), scenes, weather, settings, classes, meta,
                                     full_slots=True, stats=stats):
            writer.write_rows(rows, ps)
    write_stats(folder, i, _task_stats(i, parcels, wall, cpu, **_extract_stats(stats)))


def extract_partitioned(
    parcels: Any,
    scenes: Any,
    weather: Any,
    out: PathLike,
    *,
    run_folder: PathLike,
    cluster: ClusterOptions,
    resume: bool = False,
    chunk_size: int = 20000,
    overwrite: bool = False,
    listener: Optional[PartitionListener] = None,
    cancelled: Optional[Callable[[], bool]] = None,
    inputs: Sequence[PathLike] = (),
    **options: Any,
) -> tuple[Path, RunSummary, RunFolder]:
    """:func:`core.extract.extract_to_dataset` in partitions on a Dask cluster.

    Each partition is a dataset folder in the run folder; they are merged, partition by
    partition through memory maps, into the dataset ``out`` (written whole, as by
    ``extract_to_dataset``, whose arrays it equals value for value). Arguments as
    ``extract_to_dataset`` and :func:`classify_partitioned`.
    """
    prestart_fork_server(cluster)
    from ..pixel_sets import DatasetWriter, open_dataset
    from ..errors import ExtractionError, SceneError
    from ..extract import (
        ParcelTable,
        _meta,
        _say_missing_scl,
        _scene_list,
        _settings,
        load_parcels,
        require_usable,
        scene_grids,
        select_season,
        spatial_chunks,
    )
    from ..thermal.gdd import day_of_season

    keys = ("max_pixels", "seed", "min_valid_fraction", "min_pixels", "season_start", "t_base", "t_cap",
            "gdd_method", "scl_invalid", "weather_options", "missing_scl")
    defaults = {"max_pixels": 64, "seed": 0, "min_valid_fraction": 0.5, "min_pixels": 1, "season_start": None,
                "t_base": 0.0, "t_cap": 30.0, "gdd_method": "paper", "weather_options": None, "missing_scl": "warn"}
    from ..scenes.radiometry import SCL_INVALID

    defaults["scl_invalid"] = SCL_INVALID
    settings = _settings(*(options.pop(k, defaults[k]) for k in keys))
    label_field = options.get("label_field")
    with EarlyClient(cluster, warm_up=("extract",)) as early:  # starts while the layer is read
        table = parcels if isinstance(parcels, ParcelTable) else load_parcels(parcels, **options)
        scene_list = _scene_list(scenes)
        if not scene_list:
            raise SceneError("No scenes were given.")
        if len(table) == 0:
            raise ExtractionError(f"Parcel layer {table.source} holds no parcels.")
        select_season(scene_list, settings.season_start)  # refuses scenes of several seasons
        _say_missing_scl(scene_list, settings)
        meta = _meta(table, scene_list, weather, settings, label_field)
        chunks = spatial_chunks(table, chunk_size, scene_grids(scene_list))
        fingerprint = {
            "kind": "extract",
            "parcels": file_fingerprint(parcels) if isinstance(parcels, (str, os.PathLike)) else table.source,
            "parcel_ids": hashlib.sha256("\n".join(map(str, table.parcel_ids)).encode()).hexdigest(),
            "scenes": input_fingerprints(f for sc in scene_list for f in sc.files),
            "weather": _weather_fingerprint(weather, settings.weather_options),
            "settings": repr(settings),
            "options": repr(sorted(options.items())),
            "classes": list(table.classes),
            "chunk_size": chunk_size,
        }
        folder = open_run_folder(run_folder, fingerprint=fingerprint, chunks=chunks, n_parcels=len(table), suffix="",
                                 resume=resume, inputs=inputs)
        arguments = [(PartitionParcels.of(table, idx), weather_for(weather, idx)) for idx in chunks]
        summary = run_partitions(extract_partition, arguments, folder, early, listener=listener, cancelled=cancelled,
                                 shared={"scenes": scene_list, "settings": settings,
                                         "classes": tuple(table.classes), "meta": meta})
    dates = np.array([sc.date for sc in scene_list], dtype="datetime64[D]")
    writer = DatasetWriter(out, n_parcels=len(table), dates=dates,
                           day_of_season=np.asarray(day_of_season(dates, settings.season_start), dtype=np.float32),
                           max_pixels=settings.max_pixels, classes=table.classes, meta=meta, overwrite=overwrite,
                           parcel_id_width=max(8, max(len(x) for x in table.parcel_ids)))
    status = np.empty(len(table), dtype=object)
    with writer:
        for i, idx in enumerate(chunks):
            try:
                part = open_dataset(folder.part(i))
            except ThermoCropError as exc:
                raise OutputError(f"The partition {folder.part(i)} cannot be read ({exc}); remove it and run again "
                                  "with --resume.") from None
            if not np.array_equal(part.parcel_ids, table.parcel_ids[idx]):
                check_partition(folder, i, idx, np.full(len(idx), -1))
            writer.write_rows(idx, part)
            status[idx] = part.status
            del part
        require_usable(status, "extracted", table.source)  # raising here leaves no dataset
    return Path(out), summary, folder


def gdd_partition(i: int, folder: RunFolder, parcels: PartitionParcels, weather: Any, *, dates: np.ndarray,
                  gdd_options: dict) -> None:
    """One partition of a GDD table: ``part-i.parquet`` with row and g0..gT-1 (float32, NaN without weather)."""
    from ..thermal.gdd import gdd_at_points

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
    columns = {"row": parcels.rows}
    columns.update({f"g{t}": gdd[:, t].astype(np.float32) for t in range(gdd.shape[1])})
    write_table(folder.part(i), columns)
    write_stats(folder, i, _task_stats(i, parcels, wall, cpu, parcel_dates=len(table) * len(dates)))


def gdd_partitioned(table: Any, weather: Any, dates: np.ndarray, *, run_folder: PathLike, cluster: ClusterOptions,
                    resume: bool = False, chunk_size: int = 20000, listener: Optional[PartitionListener] = None,
                    inputs: Sequence[PathLike] = (), **gdd_options: Any) -> tuple[np.ndarray, RunSummary, RunFolder]:
    """GDD ``(P, T)`` float32 of a ``ParcelTable`` at ``dates``, in partitions (see ``gdd.gdd_at_points``)."""
    from ..extract import spatial_chunks

    with EarlyClient(cluster, warm_up=("gdd",)) as early:
        chunks = spatial_chunks(table, chunk_size)
        fingerprint = {
            "kind": "gdd",
            "parcels": table.source if not os.path.exists(str(table.source)) else file_fingerprint(table.source),
            "parcel_ids": hashlib.sha256("\n".join(map(str, table.parcel_ids)).encode()).hexdigest(),
            "weather": _weather_fingerprint(weather, gdd_options),
            "dates": [str(d) for d in np.asarray(dates, dtype="datetime64[D]")],
            "options": repr(sorted(gdd_options.items())),
            "chunk_size": chunk_size,
        }
        folder = open_run_folder(run_folder, fingerprint=fingerprint, chunks=chunks, n_parcels=len(table),
                                 suffix=".parquet", resume=resume, inputs=inputs)
        arguments = [(PartitionParcels.of(table, idx), weather_for(weather, idx)) for idx in chunks]
        summary = run_partitions(gdd_partition, arguments, folder, early, listener=listener,
                                 shared={"dates": np.asarray(dates, dtype="datetime64[D]"), "gdd_options": gdd_options})
    gdd = np.full((len(table), len(dates)), np.nan, dtype=np.float32)
    for i, idx in enumerate(chunks):
        part = read_table(folder.part(i))
        check_partition(folder, i, idx, part["row"])
        gdd[idx] = np.stack([part[f"g{t}"] for t in range(len(dates))], axis=1)
    return gdd, summary, folder
