"""The thread budget of a run (core.threads): what fixes it, what measures it, and that a run
puts torch's and GDAL's settings back."""

from __future__ import annotations

import os
import subprocess
import sys
import time

import pytest

from thermocrop.core import threads
from thermocrop.core.threads import ThreadBudget, run_threads, thread_budget, usable_cpus


@pytest.fixture
def clean_env(monkeypatch):
    for name in ("THERMOCROP_THREADS", "OMP_NUM_THREADS", "GDAL_NUM_THREADS"):
        monkeypatch.delenv(name, raising=False)
    return monkeypatch


def test_the_environment_fixes_the_budget(clean_env):
    clean_env.setenv("THERMOCROP_THREADS", "1")
    assert thread_budget().threads == 1 and "THERMOCROP_THREADS" in thread_budget().reason
    clean_env.delenv("THERMOCROP_THREADS")
    clean_env.setenv("OMP_NUM_THREADS", "1")
    assert thread_budget().threads == 1 and thread_budget().reason == "OMP_NUM_THREADS=1"
    clean_env.setenv("OMP_NUM_THREADS", "999")
    assert thread_budget().threads == usable_cpus()


def test_without_measuring_every_cpu_but_those_kept_free(clean_env):
    cpus = usable_cpus()
    assert thread_budget(measure=False).threads == cpus
    assert thread_budget(reserve=1, measure=False).threads == max(1, cpus - 1)
    assert thread_budget(reserve=cpus + 5, measure=False).threads == 1


def test_the_idle_share_of_the_cpus_decides(clean_env):
    """Two readings of /proc/stat a quarter second apart: idle jiffies out of all of them."""
    cpus = os.cpu_count() or 1
    clean_env.setattr(threads.time, "sleep", lambda s: None)
    for idle, expected_share in ((0.0, 0.0), (120.0, 0.3), (400.0, 1.0)):
        pair = iter([(100.0, 1000.0), (100.0 + idle, 1000.0 + 400.0)])
        clean_env.setattr(threads, "_cpu_times", lambda pair=pair: next(pair))
        assert threads.idle_cpus() == pytest.approx(expected_share * cpus)
    # Busy: one thread; idle: every usable CPU.
    clean_env.setattr(threads, "idle_cpus", lambda seconds=0.25: 0.1)
    assert thread_budget().threads == 1
    clean_env.setattr(threads, "idle_cpus", lambda seconds=0.25: float(usable_cpus()))
    assert thread_budget().threads == usable_cpus()
    assert thread_budget(reserve=1).threads == max(1, usable_cpus() - 1)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="idle cores are measured from /proc/stat")
def test_a_machine_kept_busy_by_other_programs_gets_one_thread(clean_env):
    busy = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(usable_cpus() + 1)]
    try:
        time.sleep(0.5)
        budget = thread_budget()
    finally:
        for p in busy:
            p.kill()
            p.wait()
    assert budget.threads == 1, budget
    assert budget.idle is not None and budget.idle < 1.0


def test_a_run_sets_torch_and_gdal_threads_and_puts_them_back(clean_env):
    import rasterio
    import torch

    from thermocrop.core.scenes.product import decode_threads, decoding_threads

    before = torch.get_num_threads()
    with run_threads(ThreadBudget(1, 2, None, "test")):
        assert torch.get_num_threads() == 1 and decode_threads() == "1"
        with decoding_threads():
            assert rasterio.env.get_gdal_config("GDAL_NUM_THREADS", normalize=False) == "1"
    assert torch.get_num_threads() == before and threads.active_threads() is None
    # Nothing of the run stays in the environment or GDAL's configuration.
    assert "GDAL_NUM_THREADS" not in os.environ
    assert rasterio.env.get_gdal_config("GDAL_NUM_THREADS", normalize=False) is None
    with pytest.raises(RuntimeError), run_threads(ThreadBudget(1, 2, None, "test")):
        raise RuntimeError("a failed run")
    assert threads.active_threads() is None and torch.get_num_threads() == before


SYSTEM_OPENBLAS = [p for p in ("/lib/x86_64-linux-gnu/libopenblas.so.0", "/usr/lib/x86_64-linux-gnu/libopenblas.so.0",
                               "/usr/lib/aarch64-linux-gnu/libopenblas.so.0", "/usr/lib64/libopenblas.so.0")
                   if os.path.exists(p)]


@pytest.mark.skipif(not sys.platform.startswith("linux") or not SYSTEM_OPENBLAS,
                    reason="needs the system's OpenBLAS (Debian: libopenblas0) and /proc/self/maps")
def test_a_run_holds_an_openblas_the_program_loaded_to_one_thread(clean_env):
    """qgis_process links the system's OpenBLAS, which then takes torch's matrix products with a
    thread pool of its own: a run holds it to one thread and gives its number back."""
    import ctypes

    openblas = ctypes.CDLL(SYSTEM_OPENBLAS[0])
    openblas.openblas_set_num_threads(3)
    try:
        assert any(lib.openblas_get_num_threads() == 3 for lib in threads.loaded_openblas())
        with run_threads(ThreadBudget(2, 2, None, "test")):
            assert openblas.openblas_get_num_threads() == 1
        assert openblas.openblas_get_num_threads() == 3
        with pytest.raises(RuntimeError), run_threads(ThreadBudget(2, 2, None, "test")):
            raise RuntimeError("a failed run")
        assert openblas.openblas_get_num_threads() == 3
    finally:
        openblas.openblas_set_num_threads(1)
