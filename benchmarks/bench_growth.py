"""How the cost of a classification grows with the number of parcels: one process against a
partitioned run (``--workers 2``), at 10 thousand, 100 thousand and a million small generated
parcels (a few dates of scenes just large enough to hold them).

Each run is ``thermocrop classify`` in a process of its own (its peak memory is its own), writing
a GeoPackage. Printed per size and run: wall time, CPU seconds per parcel-date (one process: the
process's CPU time; partitioned: the client's plus the partitions' own records), the peak
resident memory of the process (the client, for a partitioned run) and of each worker, and the
load average before and after; then the ratios side by side: cost per parcel-date and client
memory against the smallest size, and partitioned CPU time against one process. Both runs use
the same chunks, so they write the same labels, which is checked.

    python benchmarks/bench_growth.py [--sizes 10000 100000 1000000] [--dates 4] [--workers 2] [--parquet]
                                      [--keep DIR] [--only one|many] [--reuse] [--plot growth.png]
                                      [--sample-partitions K]

The regions (parcels on a lattice, about 2 to 5 pixels a side; 10-band deflate scenes just
large enough to hold them), each run's output and its record are kept in ``--keep``: a rerun
does not generate a region again, and with ``--reuse`` it reads the runs already made instead of
running them again, so the sizes and kinds can be run one invocation at a time and tabled
together (the partitioned run of a size is made before its one-process run; ``--reuse`` makes a
run that has no record, so name ``--only many`` to table sizes whose one-process run was not
made). ``--sample-partitions K`` checks the labels of K partitions of such a size against a
one-process run of just their parcels. With ``--parquet``
the parcels are read from a GeoParquet copy of the layer (row groups of 65,536 parcels) and
the output is GeoParquet.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_extract import _peak_mb, make_region  # noqa: E402

PIXELS_PER_PARCEL_SIDE = 6
"""Lattice cell of one parcel, in pixels: parcels of about 2 to 5 pixels a side."""


def parquet_layer(folder: Path) -> Path:
    """The region's parcels as GeoParquet, written once beside the GeoPackage (streamed)."""
    from thermocrop.core.io.geoparquet import write_geoparquet

    path = folder / "parcels.parquet"
    if not path.exists():
        write_geoparquet(folder / "parcels.gpkg", {}, path)
    return path


def child(folder: Path, parcels: Path, out: Path, workers: int, chunk_size: int) -> dict:
    """Run ``thermocrop classify`` here and say what it cost (one JSON line on stdout).

    A partitioned run's plan (the partition of every parcel) is kept beside the output as
    ``<name>.plan.npy``, for :func:`sample_check`."""
    from thermocrop.app import runs
    from thermocrop.cli.main import main

    stats: list = []
    remove = runs.remove_run_folder

    def keep_stats(folder):  # the partitions' records and plan, read before their folder goes
        stats.extend(folder.stats(10 ** 6 // max(chunk_size, 1) + 10 ** 4))
        shutil.copyfile(folder.path / "plan.npy", out.with_suffix(".plan.npy"))
        remove(folder)

    runs.remove_run_folder = keep_stats
    args = ["classify", "--parcels", str(parcels), "--scenes", str(folder / "scenes"),
            "--weather", str(folder / "weather.csv"), "--out", str(out), "--chunk-size", str(chunk_size),
            "--missing-scl", "warn"]
    if workers > 1:
        args += ["--workers", str(workers)]
    start = time.perf_counter()
    code = main(args)
    wall = time.perf_counter() - start
    workers_peak: dict = {}
    for s in stats:
        workers_peak[s["pid"]] = max(workers_peak.get(s["pid"], 0.0), s["peak_mb"])
    return {"code": code, "wall_s": wall, "client_cpu_s": time.process_time(), "client_peak_mb": _peak_mb(),
            "partition_cpu_s": sum(s["cpu_s"] for s in stats), "partitions": len(stats),
            "worker_peak_mb": sorted(workers_peak.values()),
            **{f"partition_{key}": sum(s.get(key, 0) for s in stats)
               for key in ("read_cpu_s", "window_pixels", "extract_cpu_s", "predict_cpu_s")}}


def print_partition_costs(rows: list, parcel_dates: dict) -> None:
    """The partitioned runs' CPU time split: the client's seconds (start-up, planning, writing)
    and the partitions' own cost per parcel-date, with the decoding of scene windows per million
    window pixels (per band) and the model's share, against the smallest size. Records made
    before these were kept show '-'."""
    many = [(n, got["many"]) for n, got, _ in rows if "many" in got]
    if not many:
        return
    print(f"\npartitioned runs: {'parcels':>9s} {'client CPU s':>12s} {'partitions us/parcel-date':>26s} "
          f"{'x smallest':>10s} {'decode s/Mpx':>12s} {'model us/parcel-date':>21s}")
    first = None
    for n, r in many:
        own = 1e6 * r["partition_cpu_s"] / parcel_dates[n]
        first = first or own
        pixels = r.get("partition_window_pixels")
        decode = f"{r['partition_read_cpu_s'] / (pixels / 1e6):.3f}" if pixels else "-"
        model = (f"{1e6 * r['partition_predict_cpu_s'] / parcel_dates[n]:.1f}"
                 if r.get("partition_predict_cpu_s") else "-")
        print(f"{'':17s} {n:9d} {r['client_cpu_s']:12.1f} {own:26.1f} {own / first:10.2f} {decode:>12s} "
              f"{model:>21s}")


def _run(*args: str) -> dict:
    # Into a file, not a pipe: a local cluster's fork server, which outlives the run briefly,
    # would hold a pipe open.
    log = Path(args[2]).with_suffix(".log")
    with open(log, "w", encoding="utf-8") as out:
        code = subprocess.run([sys.executable, __file__, "--child", *args], stdout=out, stderr=subprocess.STDOUT,
                              stdin=subprocess.DEVNULL).returncode
    lines = log.read_text(encoding="utf-8").strip().splitlines()
    if code != 0 or not lines or '"code": 0' not in lines[-1]:
        raise SystemExit(f"child {args} failed:\n" + "\n".join(lines[-40:]))
    return json.loads(lines[-1])


def _same_labels(a: Path, b: Path) -> bool:
    import geopandas as gpd

    if a.suffix == ".parquet":
        x, y = gpd.read_parquet(a), gpd.read_parquet(b)
    else:
        x, y = gpd.read_file(a, ignore_geometry=True), gpd.read_file(b, ignore_geometry=True)
    return (x["crop_status"].tolist() == y["crop_status"].tolist()
            and x["crop_pred"].fillna("").tolist() == y["crop_pred"].fillna("").tolist())


def _record(folder: Path, kind: str, suffix: str, workers: int, chunk_size: int, reuse: bool) -> dict:
    """One run's figures: measured now in a process of its own, or read back with ``reuse``.

    The output and a JSON record of the run are kept in ``folder/runs`` (the output is what the
    labels are compared on), with the load average before and after the run.
    """
    runs_dir = folder / "runs"
    runs_dir.mkdir(exist_ok=True)
    name = f"{kind}-w{workers}-c{chunk_size}{suffix}"
    out, record = runs_dir / name, runs_dir / (name + ".json")
    if reuse and record.exists() and out.exists():
        return json.loads(record.read_text(encoding="utf-8"))
    out.unlink(missing_ok=True)
    load = os.getloadavg()
    parcels = folder / f"parcels{suffix}"
    got = _run(str(folder), str(parcels), str(out), str(workers if kind == "many" else 1), str(chunk_size))
    got.update(kind=kind, workers=workers, output=str(out), load_before=load, load_after=os.getloadavg(),
               date=time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()))
    record.write_text(json.dumps(got), encoding="utf-8")
    return got


def sample_check(folder: Path, many: dict, k: int, chunk_size: int, reuse: bool = False) -> list[dict]:
    """The partitioned run's labels of ``k`` of its partitions (drawn with a fixed seed) against a
    one-process run of just their parcels, each partition's parcels written as a GeoParquet
    layer of their own (one chunk: the partition the partitioned run made of them).

    Pixels are drawn by their place on the scene grid and the model sees one parcel at a time in
    its batches, so a parcel's label does not depend on the other parcels of its run. With
    ``reuse`` a one-process run already made (its record beside its output) is read back."""
    import pyarrow.parquet as pq

    from thermocrop.core.io.geoparquet import GeoParquetLayer, write_geoparquet

    out = Path(many["output"])
    plan = np.load(out.with_suffix(".plan.npy"))
    partitions = np.sort(np.random.default_rng(0).choice(plan.max() + 1, size=min(k, plan.max() + 1), replace=False))
    checks = []
    for i in partitions:
        rows = np.flatnonzero(plan == i)
        subset = folder / "runs" / f"sample-{i:05d}.parquet"
        got_out = subset.with_name(subset.stem + "-one.parquet")
        record = got_out.with_suffix(".json")
        if reuse and record.exists() and got_out.exists():
            checks.append(json.loads(record.read_text(encoding="utf-8")))
            continue
        if not subset.exists():
            write_geoparquet(GeoParquetLayer(folder / "parcels.parquet").read(rows=rows), {}, subset)
        got_out.unlink(missing_ok=True)
        got = _run(str(folder), str(subset), str(got_out), "1", str(max(chunk_size, len(rows))))
        got.update(partition=int(i), parcels=int(len(rows)), output=str(got_out), load=os.getloadavg())
        record.write_text(json.dumps(got), encoding="utf-8")
        checks.append(got)
    if out.exists():
        whole = pq.read_table(out, columns=["parcel_id", "crop_status", "crop_pred"])
        for got in checks:
            rows = np.flatnonzero(plan == got["partition"])
            one = pq.read_table(got["output"], columns=["parcel_id", "crop_status", "crop_pred"])
            got["same"] = all(one.column(c).to_pylist() == whole.column(c).take(rows).to_pylist()
                              for c in ("parcel_id", "crop_status", "crop_pred"))
            print(f"partition {got['partition']}: {len(rows)} parcels, same labels as one process: {got['same']}",
                  file=sys.stderr)
    return checks


def _plot(rows: list, dates: int, path: Path) -> None:
    """Wall time, CPU time per parcel-date and peak memory against the number of parcels, as a PNG."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 3, figsize=(13, 4))
    for kind, style, label in (("one", "o-", "one process"), ("many", "s-", "partitioned")):
        sizes = [n for n, got, _ in rows if kind in got]
        runs = [got[kind] for n, got, _ in rows if kind in got]
        if not sizes:
            continue
        cpu = [1e6 * (r["client_cpu_s"] + r["partition_cpu_s"]) / (n * dates) for n, r in zip(sizes, runs)]
        axes[0].plot(sizes, [r["wall_s"] for r in runs], style, label=label)
        axes[1].plot(sizes, cpu, style, label=label)
        axes[2].plot(sizes, [r["client_peak_mb"] for r in runs], style,
                     label="one process" if kind == "one" else "partitioned: client")
        if kind == "many":
            axes[2].plot(sizes, [max(r["worker_peak_mb"] or [0]) for r in runs], "^--",
                         label="partitioned: largest worker")
    for ax, title in zip(axes, ("wall time (s)", "CPU time per parcel-date (us)", "peak resident memory (MB)")):
        ax.set_xscale("log")
        ax.set_xlabel("parcels")
        ax.set_title(title)
        ax.grid(True, which="both", alpha=0.3)
        ax.legend()
    axes[0].set_yscale("log")
    axes[1].set_ylim(bottom=0)
    axes[2].set_ylim(bottom=0)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=100)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000, 1_000_000])
    parser.add_argument("--dates", type=int, default=4)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--chunk-size", type=int, default=20000)
    parser.add_argument("--keep", "--cache", dest="keep", default="/tmp/thermocrop-bench-growth",
                        help="folder keeping the generated regions, the runs' outputs and their records")
    parser.add_argument("--only", choices=["one", "many"], help="run only one kind of run")
    parser.add_argument("--reuse", action="store_true",
                        help="read the records of runs already made in --keep instead of running them again")
    parser.add_argument("--plot", help="write the curves to this PNG")
    parser.add_argument("--parquet", action="store_true", help="GeoParquet parcels in and out")
    parser.add_argument("--sample-partitions", type=int, default=0, metavar="K",
                        help="check the partitioned run's labels of K partitions of a size run without one "
                             "process against a one-process run of just their parcels (GeoParquet)")
    parser.add_argument("--child", nargs=5, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        folder, parcels, out, workers, chunk = args.child
        print(json.dumps(child(Path(folder), Path(parcels), Path(out), int(workers), int(chunk))))
        return 0
    rows, samples = [], {}
    suffix = ".parquet" if args.parquet else ".gpkg"
    for n in args.sizes:
        size = int(math.ceil(math.sqrt(n))) * PIXELS_PER_PARCEL_SIDE
        t0 = time.perf_counter()
        folder = make_region(Path(args.keep) / f"n{n}-d{args.dates}", size, n, args.dates)
        if args.parquet:
            parquet_layer(folder)
        print(f"{n} parcels: region ready in {time.perf_counter() - t0:.0f} s ({folder})", file=sys.stderr)
        got = {}
        for kind in ("many", "one"):  # the partitioned run first: the larger sizes may stop there
            if args.only in (None, kind):
                got[kind] = _record(folder, kind, suffix, args.workers, args.chunk_size, args.reuse)
            elif args.reuse:
                record = folder / "runs" / f"{kind}-w{args.workers}-c{args.chunk_size}{suffix}.json"
                if record.exists():
                    got[kind] = json.loads(record.read_text(encoding="utf-8"))
            if kind in got:
                print(f"{n} parcels: {json.dumps(got[kind])}", file=sys.stderr)
        same = _same_labels(Path(got["one"]["output"]), Path(got["many"]["output"])) if len(got) == 2 else None
        if args.sample_partitions and args.parquet and "many" in got and "one" not in got:
            samples[n] = sample_check(folder, got["many"], args.sample_partitions, args.chunk_size, args.reuse)
        rows.append((n, got, same))
    parcel_dates = {n: n * args.dates for n, _, _ in rows}
    print(f"{'parcels':>9s} {'run':>12s} {'wall s':>8s} {'CPU us/parcel-date':>19s} {'client MB':>10s} "
          f"{'workers MB':>14s} {'same labels':>11s} {'load avg':>10s}")
    per = {}
    for n, got, same in rows:
        for kind, r in got.items():
            cpu = r["client_cpu_s"] + r["partition_cpu_s"]
            per[(n, kind)] = (cpu / parcel_dates[n], r["client_peak_mb"])
            peaks = ", ".join(f"{p:.0f}" for p in r["worker_peak_mb"]) or "-"
            label = "one process" if kind == "one" else f"--workers {args.workers}"
            load = f"{r['load_before'][0]:.1f}-{r['load_after'][0]:.1f}"
            print(f"{n:9d} {label:>12s} {r['wall_s']:8.1f} {1e6 * cpu / parcel_dates[n]:19.1f} "
                  f"{r['client_peak_mb']:10.0f} {peaks:>14s} {str(same) if same is not None else '-':>11s} "
                  f"{load:>10s}")
    print_partition_costs(rows, parcel_dates)
    for n, checks in samples.items():
        print(f"\n{n} parcels: the partitioned run's labels of {len(checks)} partitions against one process "
              "on just their parcels:")
        for c in checks:
            cpu = 1e6 * c["client_cpu_s"] / (c["parcels"] * args.dates)
            print(f"  partition {c['partition']:5d}: {c['parcels']} parcels, one process {c['wall_s']:.1f} s, "
                  f"{cpu:.1f} CPU us/parcel-date, {c['client_peak_mb']:.0f} MB; same labels: {c.get('same')}")
    first = rows[0][0]
    print("\nratios against the smallest size (cost per parcel-date; client peak memory):")
    for n, got, _ in rows:
        parts = []
        for kind in got:
            if (first, kind) not in per:
                continue
            cpu, mb = per[(n, kind)]
            parts.append(f"{kind}: cost {cpu / per[(first, kind)][0]:.2f}x, memory {mb / per[(first, kind)][1]:.2f}x")
        if len(got) == 2:
            parts.append(f"partitioned/one CPU {per[(n, 'many')][0] / per[(n, 'one')][0]:.2f}x")
        print(f"  {n:9d}: " + "; ".join(parts))
    if len(rows) > 1:
        (n0, got0, _), (n1, got1, _) = rows[0], rows[-1]
        for kind in set(got0) & set(got1):
            grow = (got1[kind]["client_peak_mb"] - got0[kind]["client_peak_mb"]) * 2 ** 20 / (n1 - n0)
            print(f"client memory growth {kind}: {grow:.0f} bytes per parcel from {n0} to {n1}")
    if args.plot:
        _plot(rows, args.dates, Path(args.plot))
    return 0


if __name__ == "__main__":
    os.environ.setdefault("PYTHONHASHSEED", "0")
    raise SystemExit(main())
