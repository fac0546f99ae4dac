"""Benchmark: synthetic region generation, streaming strips versus whole scenes in memory.

Generates the same FR2 region twice, once writing each scene in 256-row strips (the
project's path) and once computing each scene in one piece (the baseline), and prints time,
peak traced memory and their ratios. The outputs must be identical.
"""

from __future__ import annotations

import hashlib
import os
import tempfile
import time
import tracemalloc
from pathlib import Path

os.environ.setdefault("PROJ_DATA", "/usr/share/proj")

from thermocrop.synth import generate as gen

PARCELS = 800
SIZE = 1536


def _run(out: Path, strip_rows: int) -> tuple[float, float, str]:
    gen.STRIP_ROWS = strip_rows
    tracemalloc.start()
    t0 = time.perf_counter()
    gen.generate_region("FR2", out, parcels=PARCELS, size=SIZE, seed=0, level="L2A")
    elapsed = time.perf_counter() - t0
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    digest = hashlib.sha256()
    for p in sorted((out / "scenes").glob("*.tif")):
        digest.update(p.read_bytes())
    return elapsed, peak / 2**20, digest.hexdigest()


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        s_time, s_mem, s_hash = _run(Path(tmp) / "stream", 256)
        w_time, w_mem, w_hash = _run(Path(tmp) / "whole", SIZE)
    print(f"FR2 L2A, {PARCELS} parcels, {SIZE} x {SIZE} px, 39 scenes")
    print(f"{'':24s}{'time (s)':>10s}{'peak (MiB)':>12s}")
    print(f"{'streaming (256 rows)':24s}{s_time:10.1f}{s_mem:12.0f}")
    print(f"{'whole scene (baseline)':24s}{w_time:10.1f}{w_mem:12.0f}")
    print(f"ratio baseline / streaming: time {w_time / s_time:.2f}x, peak memory {w_mem / s_mem:.2f}x")
    print(f"identical output: {s_hash == w_hash}")


if __name__ == "__main__":
    main()
