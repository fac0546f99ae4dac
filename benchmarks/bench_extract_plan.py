"""What a partitioned extraction's client costs when it plans from the layer file, against an
earlier version of ThermoCrop that read the whole layer into the client.

Both runs are ``thermocrop extract --workers N`` on the same labelled region, each in a process
of its own started with the other version first on its import path, so the client's peak
resident memory (VmHWM), its wall and CPU time are its own. The earlier version is the
tree of a git revision (``--baseline REV``, unpacked with ``git archive``). Printed: per run, the
wall time, the client's CPU seconds, the partitions' CPU seconds, the client's peak memory, and
the load average before and after; then the ratios side by side (planned / earlier). The two
datasets are compared array by array.

    python benchmarks/bench_extract_plan.py --baseline REV [--region DIR] [--from DIR]
                                            [--parcels 100000] [--dates 4] [--workers 2]
                                            [--max-pixels 16] [--repeats 1]

The region (parcels with a crop code field, a class map, NULL codes and codes outside the map,
and a block field) is written once into ``--region``; ``--from`` takes the scenes, weather and
parcels of a region ``bench_growth.py`` made instead of generating them (the layer is copied
with the labels added).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_extract import _peak_mb, make_region  # noqa: E402

CODES = ["BTH", "MIS", "ORH", "CZH", "TRN", "PPH", "XYZ"]
"""Crop codes drawn for the parcels: XYZ is outside the class map; about 1 in 20 parcels has none."""

ARRAYS = ("pixels", "pixel_mask", "date_mask", "gdd", "labels", "parcel_ids", "blocks", "status")


def labelled_region(folder: Path, source: Path | None, n_parcels: int, n_dates: int) -> Path:
    """``folder`` with ``parcels.gpkg`` (fields parcel_id, code, block), scenes, weather and
    ``classes.csv``; written once."""
    done = folder / "labelled.json"
    if done.exists():
        return folder
    import geopandas as gpd

    if source is None:
        source = folder / "unlabelled"
        make_region(source, int(np.ceil(np.sqrt(n_parcels))) * 6, n_parcels, n_dates)
    folder.mkdir(parents=True, exist_ok=True)
    for name in ("scenes", "weather.csv"):
        if not (folder / name).exists():
            os.symlink(source / name, folder / name)
    frame = gpd.read_file(source / "parcels.gpkg")
    rng = np.random.default_rng(7)
    codes = np.array(CODES, dtype=object)[rng.integers(0, len(CODES), size=len(frame))]
    codes[rng.random(len(frame)) < 0.05] = None
    frame["code"] = codes
    frame["block"] = np.arange(len(frame)) // 5000
    if "parcel_id" not in frame.columns:
        frame["parcel_id"] = [f"p{k}" for k in range(len(frame))]
    frame[["parcel_id", "code", "block", "geometry"]].to_file(folder / "parcels.gpkg", driver="GPKG")
    (folder / "classes.csv").write_text(
        "code,class,name\nBTH,wheat,Wheat\nMIS,maize,Maize\nORH,barley,Barley\nCZH,rapeseed,Rapeseed\n"
        "TRN,sunflower,Sunflower\nPPH,grassland,Grassland\n", encoding="utf-8")
    done.write_text(json.dumps({"parcels": len(frame), "source": str(source)}), encoding="utf-8")
    return folder


def baseline_tree(rev: str, root: Path) -> Path:
    """The package of git revision ``rev`` unpacked under ``root/<rev>/thermocrop``; returns the
    folder to put on the import path."""
    parent = root / f"rev-{rev}"
    if not (parent / "thermocrop" / "__init__.py").exists():
        (parent / "thermocrop").mkdir(parents=True, exist_ok=True)
        repo = Path(__file__).resolve().parent.parent
        archive = subprocess.run(["git", "-C", str(repo), "archive", rev], check=True, capture_output=True).stdout
        subprocess.run(["tar", "-x", "-C", str(parent / "thermocrop")], input=archive, check=True)
    return parent


def child(folder: Path, out: Path, workers: int, max_pixels: int) -> dict:
    """Run ``thermocrop extract`` here and say what it cost (one JSON line on stdout)."""
    import thermocrop
    from thermocrop.app import runs
    from thermocrop.cli.main import main

    stats: list = []
    remove = runs.remove_run_folder

    def keep_stats(run):  # the partitions' records, read before their folder goes
        stats.extend(run.stats(10 ** 4))
        remove(run)

    runs.remove_run_folder = keep_stats
    args = ["extract", "--parcels", str(folder / "parcels.gpkg"), "--scenes", str(folder / "scenes"),
            "--weather", str(folder / "weather.csv"), "--out", str(out), "--label-field", "code",
            "--class-map", str(folder / "classes.csv"), "--max-pixels", str(max_pixels), "--workers", str(workers),
            "--missing-scl", "warn"]
    start = time.perf_counter()
    code = main(args)
    return {"code": code, "wall_s": time.perf_counter() - start, "client_cpu_s": time.process_time(),
            "client_peak_mb": _peak_mb(), "partition_cpu_s": sum(s["cpu_s"] for s in stats),
            "partitions": len(stats), "package": str(Path(thermocrop.__file__).parent)}


def run_one(tree: Path, folder: Path, out: Path, workers: int, max_pixels: int) -> dict:
    """One extraction in a process of its own, ``tree`` first on its import path."""
    shutil.rmtree(out, ignore_errors=True)
    log = out.with_suffix(".log")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tree), os.environ.get("PYTHONPATH", "")])}
    load = os.getloadavg()
    # Into a file, not a pipe: a local cluster's fork server, which outlives the run briefly,
    # would hold a pipe open.
    with open(log, "w", encoding="utf-8") as sink:
        code = subprocess.run([sys.executable, __file__, "--child", str(folder), str(out), str(workers),
                               str(max_pixels)], stdout=sink, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                              env=env, cwd=str(folder)).returncode
    lines = log.read_text(encoding="utf-8").strip().splitlines()
    if code != 0 or not lines or '"code": 0' not in lines[-1]:
        raise SystemExit(f"extract with {tree} failed:\n" + "\n".join(lines[-40:]))
    got = json.loads(lines[-1])
    got.update(load_before=load, load_after=os.getloadavg())
    return got


def same_datasets(a: Path, b: Path) -> bool:
    from thermocrop.core.pixel_sets import open_dataset

    x, y = open_dataset(a), open_dataset(b)
    return (tuple(x.classes) == tuple(y.classes)
            and all(np.array_equal(np.asarray(getattr(x, n)), np.asarray(getattr(y, n))) for n in ARRAYS))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--baseline", help="git revision of the earlier version")
    parser.add_argument("--region", default="/tmp/extractplan-bench/region")
    parser.add_argument("--from", dest="source", help="a bench_growth.py region to take scenes and parcels from")
    parser.add_argument("--parcels", type=int, default=100_000)
    parser.add_argument("--dates", type=int, default=4)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--max-pixels", type=int, default=16)
    parser.add_argument("--repeats", type=int, default=1, help="runs of each version, alternating")
    parser.add_argument("--child", nargs=4, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        folder, out, workers, max_pixels = args.child
        print(json.dumps(child(Path(folder), Path(out), int(workers), int(max_pixels))))
        return 0
    if not args.baseline:
        parser.error("--baseline REV is required")
    folder = labelled_region(Path(args.region), Path(args.source) if args.source else None, args.parcels, args.dates)
    trees = {"earlier": baseline_tree(args.baseline, folder.parent),
             "planned": Path(__file__).resolve().parent.parent.parent}
    records: dict[str, list] = {k: [] for k in trees}
    for r in range(args.repeats):
        for kind in (("earlier", "planned") if r % 2 == 0 else ("planned", "earlier")):
            got = run_one(trees[kind], folder, folder / f"out-{kind}", args.workers, args.max_pixels)
            records[kind].append(got)
            print(f"{kind:8s} wall {got['wall_s']:7.1f} s  client CPU {got['client_cpu_s']:6.1f} s  partitions CPU "
                  f"{got['partition_cpu_s']:7.1f} s  client peak {got['client_peak_mb']:6.0f} MB  load "
                  f"{got['load_before'][0]:.1f} -> {got['load_after'][0]:.1f}  ({got['package']})", flush=True)
    print(f"\n{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}: {args.parcels} parcels, {args.dates} dates, "
          f"--workers {args.workers}, --max-pixels {args.max_pixels}; best of {args.repeats}")
    print(f"{'':22s}{'earlier':>10s}{'planned':>10s}{'ratio':>8s}")
    for key, label in (("wall_s", "wall s"), ("client_cpu_s", "client CPU s"),
                       ("partition_cpu_s", "partitions CPU s"), ("client_peak_mb", "client peak MB")):
        before = min(g[key] for g in records["earlier"])
        after = min(g[key] for g in records["planned"])
        print(f"{label:22s}{before:10.1f}{after:10.1f}{after / before:8.2f}x")
    same = same_datasets(folder / "out-earlier", folder / "out-planned")
    print(f"same dataset: {'yes' if same else 'NO'}")
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
