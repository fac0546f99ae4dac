"""Dask clusters for partitioned runs: where partitions run (``ClusterOptions``), a client whose
cluster starts while the run is prepared (``EarlyClient``), the fork server local workers start
from, and the settings and environment workers get.

The runs themselves (plan, partitions, merge) are in :mod:`.partitions`, their folders in
:mod:`.folder`. On a cluster of several machines the run folder, the scenes, the weather file and
the model must be at the same paths on every worker (a shared file system).
"""

from __future__ import annotations

import contextlib
import functools
import logging
import os
import time
from dataclasses import dataclass
from typing import Any, Iterator, Optional

from ..errors import InputError

log = logging.getLogger(__name__)

_CORE = __package__.rsplit(".", 1)[0]
"""``thermocrop.core``: the modules workers import are named from it."""

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


WARM_UP_MODULES = {"gdd": ("thermal.gdd",), "extract": ("pixel_sets", "extract"),
                   "classify": ("pixel_sets", "extract", "classify")}
"""What a partition of each kind imports (with torch, rasterio, geopandas and pyarrow under them)."""


def warm_up_worker(kind: str, bundle: Optional[tuple] = None) -> None:
    """Import what a partition of ``kind`` needs, and load the model bundle ``(path, mtime)``
    a classification's partitions will use."""
    import importlib

    for name in WARM_UP_MODULES[kind]:
        importlib.import_module(f"{_CORE}.{name}")
    if bundle is not None:
        cached_bundle(*bundle)


PRELOAD_MODULES = ("distributed", "dask", "msgpack", "cloudpickle", "tornado", "toolz", "numpy", "pandas", "lz4",
                   "torch", "safetensors", "rasterio", "shapely", "pyproj", "geopandas", "pyarrow.parquet", "xarray",
                   "netCDF4", "scipy.spatial", f"{_CORE}.model.bundle", f"{_CORE}.classify",
                   f"{_CORE}.pixel_sets", f"{_CORE}.extract", f"{_CORE}.thermal.gdd", f"{_CORE}.thermal.weather",
                   f"{_CORE}.runs.partitions")
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


@functools.lru_cache(maxsize=2)
def cached_bundle(path: str, mtime: float) -> Any:
    """A worker's model bundle, loaded once per process (``mtime`` tells a changed file apart)."""
    from ..model.bundle import load_bundle

    return load_bundle(path)
