"""Classification on a machine that other programs keep busy: the run's thread budget
(``core.threads``: it measures the idle cores first) against every CPU (what torch and GDAL take
by default, ``THERMOCROP_THREADS`` = the CPU count) and one thread, side by side; and the same on
the machine as it is, to show the budget costs nothing when the cores are free.

The load is ``--load`` processes spinning on the CPU for the whole loaded part. Every run is a
``thermocrop classify`` process of its own; the runs alternate and each setting keeps its best.
All settings write the same labels (checked).

    python benchmarks/bench_busy.py [--parcels 600] [--load 4] [--rounds 2]
"""

from __future__ import annotations

import argparse
import contextlib
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

SETTINGS = {"budget (default)": None, "every CPU": "all", "one thread": "1"}


@contextlib.contextmanager
def busy(processes: int):
    """``processes`` programs spinning on the CPU while the block runs."""
    spinning = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(processes)]
    try:
        time.sleep(1.0)
        yield
    finally:
        for p in spinning:
            p.kill()
            p.wait()


def classify(region: Path, out: Path, threads) -> float:
    env = dict(os.environ)
    for name in ("THERMOCROP_THREADS", "OMP_NUM_THREADS", "GDAL_NUM_THREADS"):
        env.pop(name, None)
    if threads == "all":
        env["THERMOCROP_THREADS"] = str(len(os.sched_getaffinity(0)))
    elif threads is not None:
        env["THERMOCROP_THREADS"] = threads
    start = time.perf_counter()
    subprocess.run([sys.executable, "-m", "thermocrop.cli.main", "classify", "--parcels", str(region / "parcels.gpkg"),
                    "--scenes", str(region / "scenes"), "--weather", str(region / "weather.nc"), "--no-sets",
                    "--out", str(out), "--overwrite"], env=env, check=True, capture_output=True)
    return time.perf_counter() - start


def labels(path: Path) -> list:
    import geopandas as gpd

    return gpd.read_file(path)["crop_pred"].tolist()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--parcels", type=int, default=600)
    parser.add_argument("--load", type=int, default=4, help="spinning processes of the loaded part")
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args()
    from thermocrop.synth import generate_region

    with tempfile.TemporaryDirectory() as tmp:
        region = Path(tmp) / "region"
        generate_region("FR2", region, parcels=args.parcels, seed=1, level="L1C")
        results = {}
        for part, load in (("machine as it is", 0), (f"{args.load} spinning processes", args.load)):
            best = {name: float("inf") for name in SETTINGS}
            written = {}
            with busy(load) if load else contextlib.nullcontext():
                for _ in range(args.rounds):
                    for name, threads in SETTINGS.items():
                        out = Path(tmp) / f"{len(written)}.gpkg"
                        best[name] = min(best[name], classify(region, out, threads))
                        written[name] = out
            first = labels(next(iter(written.values())))
            assert all(labels(p) == first for p in written.values()), "the settings wrote different labels"
            results[part] = best
        cpus = len(os.sched_getaffinity(0))
        print(f"classify, {args.parcels} parcels x 39 scenes, {cpus} CPUs, best of {args.rounds} (s); "
              "ratio = one thread's time / this setting's (above 1: faster than one thread)")
        print("| machine | " + " | ".join(SETTINGS) + " |")
        print("|---|" + "---|" * len(SETTINGS))
        for part, best in results.items():
            one = best["one thread"]
            print(f"| {part} | " + " | ".join(f"{best[n]:.1f} ({one / best[n]:.2f}x)" for n in SETTINGS) + " |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
