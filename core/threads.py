"""One budget of threads for a run: scene decoding (GDAL and the reader threads) and torch share
the cores this process may use, and a machine that other programs keep busy gets fewer threads.

Threads that wait for a core they cannot have cost far more than they bring: on two cores that
other work kept busy, a classification with the default threads (torch and GDAL each starting
one per core, spinning while they wait for each other) took 4-5 times as long as the same run
on one thread. So before a run the cores left idle by other programs are measured over a short
interval (``/proc/stat`` on Linux), and the run takes that many threads, at least one and at
most the CPUs it may run on less those a door keeps for itself (the QGIS plugin keeps one for
the interface).

``THERMOCROP_THREADS`` fixes the budget; ``GDAL_NUM_THREADS`` / ``OMP_NUM_THREADS`` set by
the user (or by Dask in its workers) are kept as they are.

A program may bring a BLAS of its own that takes torch's matrix products: ``qgis_process`` links
the system's OpenBLAS (through GDAL), which then answers torch's calls instead of the BLAS built
into torch, with a pool of one thread per core beside torch's. The two pools wait for each other
spinning, so during a run every OpenBLAS already loaded in the process is held to one thread
(the run's threads are torch's) and put back afterwards.
"""

from __future__ import annotations

import contextlib
import ctypes
import logging
import os
import sys
import time
from dataclasses import dataclass
from typing import Iterator, Optional

log = logging.getLogger(__name__)

THREADS_ENV = "THERMOCROP_THREADS"
"""A fixed thread budget for every run of this process (a whole number)."""

MEASURE_SECONDS = 0.25
"""How long the idle cores are measured before a run."""


def usable_cpus() -> int:
    """The CPUs this process may run on."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # no CPU affinity on this platform (Windows, macOS)
        return os.cpu_count() or 1


def _cpu_times() -> Optional[tuple[float, float]]:
    """(idle, total) jiffies of all CPUs from ``/proc/stat``; None where it cannot be read."""
    try:
        with open("/proc/stat", encoding="ascii") as fh:
            fields = fh.readline().split()
    except OSError:
        return None
    if not fields or fields[0] != "cpu":
        return None
    values = [float(v) for v in fields[1:]]
    idle = values[3] + (values[4] if len(values) > 4 else 0.0)  # idle + iowait
    return idle, sum(values[:8])


def idle_cpus(seconds: float = MEASURE_SECONDS) -> Optional[float]:
    """The cores left idle by every program over ``seconds`` (this process sleeps meanwhile);
    None where the system does not say (not Linux)."""
    if not sys.platform.startswith("linux"):
        return None
    first = _cpu_times()
    if first is None:
        return None
    time.sleep(seconds)
    second = _cpu_times()
    if second is None or second[1] <= first[1]:
        return None
    share = (second[0] - first[0]) / (second[1] - first[1])
    return max(0.0, min(1.0, share)) * (os.cpu_count() or 1)


@dataclass(frozen=True)
class ThreadBudget:
    """The threads a run takes and why.

    Attributes:
        threads: torch threads, GDAL decoding threads and reader threads of the run.
        cpus: the CPUs the process may run on.
        idle: the idle cores measured (None: not measured).
        reason: how the number was chosen, for the log.
    """

    threads: int
    cpus: int
    idle: Optional[float]
    reason: str


def _env_threads(name: str) -> Optional[int]:
    value = os.environ.get(name, "").strip()
    if not value:
        return None
    if value.upper() == "ALL_CPUS":
        return usable_cpus()
    try:
        return max(1, int(value))
    except ValueError:
        return None


def thread_budget(reserve: int = 0, measure: bool = True) -> ThreadBudget:
    """The threads of the next run.

    Args:
        reserve: CPUs kept free for the caller (the QGIS interface keeps one), where there are more.
        measure: measure the idle cores (False: take every usable CPU less ``reserve``).
    """
    cpus = usable_cpus()
    fixed = _env_threads(THREADS_ENV)
    if fixed is not None:
        return ThreadBudget(min(fixed, cpus), cpus, None, f"{THREADS_ENV}={fixed}")
    for name in ("OMP_NUM_THREADS", "GDAL_NUM_THREADS"):
        given = _env_threads(name)
        if given is not None:
            return ThreadBudget(min(given, cpus), cpus, None, f"{name}={os.environ[name].strip()}")
    ceiling = max(1, cpus - max(0, reserve))
    idle = idle_cpus() if measure else None
    if idle is None:
        return ThreadBudget(ceiling, cpus, None, f"{cpus} CPUs" + (f", {reserve} kept free" if reserve else ""))
    # Round half-idle cores up: a core at 60 % idle still gives a thread most of its time.
    threads = max(1, min(ceiling, int(idle + 0.4)))
    return ThreadBudget(threads, cpus, idle, f"{idle:.1f} of {cpus} CPUs idle"
                        + (f", {reserve} kept free" if reserve else ""))


def loaded_openblas() -> list:
    """The OpenBLAS libraries already loaded in this process (``ctypes.CDLL`` handles that answer
    ``openblas_get_num_threads`` / ``openblas_set_num_threads``); none is loaded here. Empty where
    the process's libraries cannot be listed (not Linux)."""
    try:
        with open("/proc/self/maps", encoding="utf-8", errors="replace") as fh:
            paths = {line.split(None, 5)[5].strip() for line in fh if len(line.split(None, 5)) == 6}
    except OSError:
        return []
    found = []
    for path in sorted(p for p in paths if p.startswith("/") and "blas" in os.path.basename(p).lower()):
        try:
            library = ctypes.CDLL(path, mode=os.RTLD_NOLOAD)
        except (OSError, AttributeError):  # gone since, or no RTLD_NOLOAD on this platform
            continue
        if hasattr(library, "openblas_set_num_threads") and hasattr(library, "openblas_get_num_threads"):
            found.append(library)
    return found


@contextlib.contextmanager
def openblas_threads(count: int) -> Iterator[None]:
    """Hold every OpenBLAS loaded in this process to ``count`` threads in the block, then give
    each its own number back."""
    held = [(library, library.openblas_get_num_threads()) for library in loaded_openblas()]
    for library, _ in held:
        library.openblas_set_num_threads(count)
    if held:
        log.info("OpenBLAS loaded by the program held to %d thread(s) for the run", count)
    try:
        yield
    finally:
        for library, previous in held:
            library.openblas_set_num_threads(previous)


_ACTIVE: list[int] = []
"""The budgets of the runs in progress in this process, innermost last."""


def active_threads() -> Optional[int]:
    """The thread budget of the run in progress (:func:`run_threads`), or None outside a run."""
    return _ACTIVE[-1] if _ACTIVE else None


@contextlib.contextmanager
def run_threads(budget: ThreadBudget) -> Iterator[ThreadBudget]:
    """Run the block with ``budget``: torch's intra-op threads are set to ``budget.threads`` and
    put back afterwards, and the decoding threads (``core.scenes.product.decode_threads``, which
    GDAL's threads and the reader threads of ``core.extract`` follow) are taken from
    :func:`active_threads`. An OpenBLAS the program loaded is held to one thread meanwhile
    (:func:`openblas_threads`). No environment variable or GDAL option is set, so nothing of the
    run stays in the process's GDAL configuration."""
    try:
        import torch
    except ImportError:  # a run without a model (GDD) before torch is installed
        torch = None
    previous_torch = torch.get_num_threads() if torch is not None else None
    _ACTIVE.append(budget.threads)
    if torch is not None:
        torch.set_num_threads(budget.threads)
    log.info("Threads: %d (%s)", budget.threads, budget.reason)
    try:
        with openblas_threads(1):
            yield budget
    finally:
        _ACTIVE.pop()
        if torch is not None and previous_torch is not None:
            torch.set_num_threads(previous_torch)
