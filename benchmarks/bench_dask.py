"""Classification in partitions on a Dask LocalCluster (``--workers 2``) against one process, on the
extraction benchmark's region (synthetic FR2 L2A, 5,000 parcels x 39 scenes of 3,000 x 3,000 px),
plus the cost model of ``docs/scale.md`` measured from the partitions' own records.

Each run is a process of its own (peak memory is its own; the cluster's start is timed with
it); the runs alternate and each keeps its best. A third run is the one process reading on one
thread (``GDAL_NUM_THREADS=1``: one scene at a time, GDAL on one thread), as one process ran
before it read on every core: the speed-up of ``--workers 2`` is printed against both. One more
untimed run of each measures the memory of all its processes together (client, fork server and
workers). All use the same chunks (``--chunk-size`` parcels), so they compute the same values,
which is checked.

    python benchmarks/bench_dask.py [--parcels 5000] [--size 3000] [--workers 2] [--chunk-size 500]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_extract import _peak_mb, _weather, make_synth_region  # noqa: E402


class TotalMemory:
    """Peak of the memory this process and all its descendants hold together, sampled every half
    second: the sum of their proportional set sizes (PSS: a page shared by n processes counts
    1/n in each), so pages a fork server shares with its workers count once."""

    def __init__(self) -> None:
        self.peak_mb = 0.0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)
        self._thread.start()

    @staticmethod
    def now_mb() -> float:
        import psutil

        return sum(_proc_mb(process.pid, "smaps_rollup", "Pss:")
                   for process in [psutil.Process(), *psutil.Process().children(recursive=True)])

    def _sample(self) -> None:
        while not self._stop.wait(0.5):
            self.peak_mb = max(self.peak_mb, self.now_mb())

    def stop(self) -> float:
        self.peak_mb = max(self.peak_mb, self.now_mb())
        self._stop.set()
        self._thread.join()
        return self.peak_mb


def _proc_mb(pid: int, name: str, field: str) -> float:
    """The kB ``field`` of ``/proc/<pid>/<name>`` in MiB (0 once the process has ended)."""
    with contextlib.suppress(OSError):
        for line in Path(f"/proc/{pid}/{name}").read_text().splitlines():
            if line.startswith(field):
                return int(line.split()[1]) / 1024.0
    return 0.0


def _fork_server_peak_mb() -> float:
    """Peak resident memory of the fork server the local cluster's workers came from (0 if none)."""
    import psutil

    for process in psutil.Process().children():
        with contextlib.suppress(psutil.Error):
            if "multiprocessing.forkserver" in " ".join(process.cmdline()):
                return _proc_mb(process.pid, "status", "VmHWM:")
    return 0.0


def worker_one(folder: Path, chunk_size: int, save: Path, sample: bool = False) -> dict:
    from thermocrop.core.classify import classify_parcels
    from thermocrop.core.scenes.local import find_scenes

    memory = TotalMemory() if sample else None
    t0 = time.perf_counter()
    scenes = find_scenes(folder / "scenes")
    result = classify_parcels(folder / "parcels.gpkg", scenes, _weather(folder), chunk_size=chunk_size)
    seconds = time.perf_counter() - t0
    np.savez(save, probabilities=result.probabilities, status=result.status)
    return {"seconds": seconds, "peak_mb": _peak_mb(), "cpu_s": time.process_time(),
            "total_mb": memory.stop() if memory else None}


def worker_dask(folder: Path, chunk_size: int, workers: int, save: Path, sample: bool = False) -> dict:
    from thermocrop.core.runs.cluster import ClusterOptions
    from thermocrop.core.runs.partitions import classify_partitioned
    from thermocrop.core.scenes.local import find_scenes

    run = Path(tempfile.mkdtemp(prefix="bench-dask-")) / "run"
    memory = TotalMemory() if sample else None
    t0, epoch = time.perf_counter(), time.time()
    scenes = find_scenes(folder / "scenes")
    result, summary, _ = classify_partitioned(folder / "parcels.gpkg", scenes, _weather(folder), run_folder=run,
                                              cluster=ClusterOptions(workers=workers, dashboard=":0"),
                                              chunk_size=chunk_size)
    seconds = time.perf_counter() - t0
    np.savez(save, probabilities=result.probabilities, status=result.status)
    per_worker: dict = {}
    for s in summary.stats:
        per_worker[s["pid"]] = max(per_worker.get(s["pid"], 0.0), s["peak_mb"])
    return {"seconds": seconds, "client_peak_mb": _peak_mb(), "worker_peak_mb": sorted(per_worker.values()),
            "partitions": summary.partitions, "stats": summary.stats, "epoch": epoch,
            "client_cpu_s": time.process_time(), "total_mb": memory.stop() if memory else None,
            "server_peak_mb": _fork_server_peak_mb()}


def _run(args: list[str], **environ: str) -> dict:
    out = subprocess.run([sys.executable, __file__, *args], capture_output=True, text=True, check=True,
                         env={**os.environ, **environ})
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--size", type=int, default=3000)
    parser.add_argument("--parcels", type=int, default=5000)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--chunk-size", type=int, default=500, help="parcels per chunk / partition, both runs")
    parser.add_argument("--repeats", type=int, default=1, help="alternating runs of each (best kept)")
    parser.add_argument("--cache", default="/tmp/thermocrop-bench-extract")
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    parser.add_argument("--folder", help=argparse.SUPPRESS)
    parser.add_argument("--save", help=argparse.SUPPRESS)
    parser.add_argument("--sample-memory", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()

    if args.worker:
        folder, save = Path(args.folder), Path(args.save)
        if args.worker == "one":
            result = worker_one(folder, args.chunk_size, save, args.sample_memory)
        else:
            result = worker_dask(folder, args.chunk_size, args.workers, save, args.sample_memory)
        print(json.dumps(result))
        return 0

    folder = make_synth_region(Path(args.cache) / f"synth_s{args.size}_p{args.parcels}", args.size, args.parcels)
    n_scenes = len([p for p in (folder / "scenes").glob("*.tif") if not p.stem.endswith("_SCL")])
    load_before = os.getloadavg()
    print(f"region: {args.parcels} parcels, {n_scenes} scenes of {args.size} x {args.size} px ({folder}); "
          f"{os.cpu_count()} CPUs, load average {load_before[0]:.1f} at the start")
    tmp = Path(tempfile.mkdtemp(prefix="bench-dask-"))
    common = ["--folder", str(folder), "--chunk-size", str(args.chunk_size), "--workers", str(args.workers)]
    ones, singles, dasks = [], [], []
    for _ in range(args.repeats):
        ones.append(_run(["--worker", "one", "--save", str(tmp / "one.npz"), *common]))
        # The one process as it ran before it read on every core: one scene at a time, GDAL on one thread.
        singles.append(_run(["--worker", "one", "--save", str(tmp / "single.npz"), *common], GDAL_NUM_THREADS="1"))
        dasks.append(_run(["--worker", "dask", "--save", str(tmp / "dask.npz"), *common]))
    # Memory of all processes together, in one more run of each: sampling it costs the client
    # CPU time (most for the cluster's four processes), so the timed runs above do not.
    sampled = [_run(["--worker", kind, "--save", str(tmp / "sampled.npz"), "--sample-memory", *common])["total_mb"]
               for kind in ("one", "dask")]
    one = min(ones, key=lambda r: r["seconds"])
    single = min(singles, key=lambda r: r["seconds"])
    many = min(dasks, key=lambda r: r["seconds"])
    a, b = np.load(tmp / "one.npz"), np.load(tmp / "dask.npz")
    same = np.array_equal(a["status"], b["status"]) and np.array_equal(
        np.nan_to_num(a["probabilities"], nan=-1).argmax(axis=1), np.nan_to_num(b["probabilities"], nan=-1).argmax(axis=1))
    # Decoding threads change no value: bit for bit, the model runs on the same threads in both.
    c = np.load(tmp / "single.npz")
    same_single = all(np.array_equal(a[k], c[k], equal_nan=k == "probabilities") for k in ("probabilities", "status"))
    # Probabilities are equal bit for bit with the same torch thread count; one process uses
    # every core, a worker one thread, which changes the order of float additions.
    diff = float(np.nanmax(np.abs(a["probabilities"] - b["probabilities"]), initial=0.0))
    load_after = os.getloadavg()

    print(f"{'run':40s} {'seconds':>9s} {'peak MB':>26s}")
    print(f"{'one process':40s} {one['seconds']:9.1f} {one['peak_mb']:26.0f}")
    print(f"{'one process, decoding on one thread':40s} {single['seconds']:9.1f} {single['peak_mb']:26.0f}")
    peaks = ", ".join(f"{p:.0f}" for p in many["worker_peak_mb"])
    label = f"--workers {args.workers} (LocalCluster, {many['partitions']} partitions)"
    print(f"{label:40s} {many['seconds']:9.1f} {('workers ' + peaks):>26s}   (client {many['client_peak_mb']:.0f})")
    if args.repeats > 1:
        print("every run (seconds): one process " + ", ".join(f"{r['seconds']:.1f}" for r in ones)
              + "; one decoding thread " + ", ".join(f"{r['seconds']:.1f}" for r in singles)
              + f"; --workers {args.workers} " + ", ".join(f"{r['seconds']:.1f}" for r in dasks))
    print(f"speed-up: {one['seconds'] / many['seconds']:.2f}x (aim >= 1.7x); against one process decoding on one "
          f"thread {single['seconds'] / many['seconds']:.2f}x; one process, all threads against one decoding "
          f"thread: {single['seconds'] / one['seconds']:.2f}x")
    print(f"largest worker peak / one process: {max(many['worker_peak_mb']) / one['peak_mb']:.2f} (aim <= 1.0)")
    print(f"all processes together (PSS, peak of samples every 0.5 s, one more untimed run of each): one process "
          f"{sampled[0]:.0f} MB, --workers {args.workers} {sampled[1]:.0f} MB (client, fork server, workers; the fork "
          f"server's own peak {many['server_peak_mb']:.0f} MB)")
    print(f"same statuses and labels: {same}; largest difference of a probability: {diff:.2g}; one process with one "
          f"decoding thread equal bit for bit: {same_single}")
    print(f"load average {load_before[0]:.1f} before, {load_after[0]:.1f} after (1-minute)")

    # Where the partitioned run's wall time went, from the partitions' own records.
    stats = many["stats"]
    first = min(s["start_time"] for s in stats) - many["epoch"]
    last = max(s["end_time"] for s in stats) - many["epoch"]
    workers = {}
    for s in stats:
        busy = workers.setdefault(s["pid"], [0.0, 0.0, 0.0])
        busy[0] += s["wall_s"]
        busy[1] += s["cpu_s"]
        busy[2] = max(busy[2], s["end_time"] - many["epoch"])
    print(f"one process: {one['cpu_s']:.1f} CPU s in {one['seconds']:.1f} s; decoding on one thread "
          f"{single['cpu_s']:.1f} CPU s in {single['seconds']:.1f} s")
    print(f"--workers {args.workers}: first partition started at {first:.1f} s (layer read, cluster start, warm-up), "
          f"last ended at {last:.1f} s, result merged at {many['seconds']:.1f} s; client process "
          f"{many['client_cpu_s']:.1f} CPU s")
    for pid, (wall, cpu, end) in workers.items():
        print(f"  worker {pid}: partitions {wall:.1f} s ({cpu:.1f} CPU s), its last ended at {end:.1f} s")

    # The cost model, from the partitions' own records.
    total = {k: sum(s.get(k, 0) for s in stats) for k in
             ("cpu_s", "read_cpu_s", "extract_cpu_s", "predict_cpu_s", "windows", "window_pixels", "parcel_dates",
              "parcels")}
    scene_bytes = sum(p.stat().st_size for p in (folder / "scenes").glob("*.tif"))
    decoded = total["window_pixels"] * (10 * 2 + 1)  # 10 uint16 bands + the uint8 SCL per pixel
    full = n_scenes * args.size * args.size * (10 * 2 + 1)
    rest = total["cpu_s"] - total["read_cpu_s"]
    print("cost model (CPU seconds summed over partitions):")
    print(f"  scene windows read: {total['windows']:.0f}, {total['window_pixels'] / 1e6:.0f} Mpx decoded "
          f"({total['window_pixels'] / (n_scenes * args.size ** 2):.2f}x the scenes' pixels)")
    print(f"  decoding: {total['read_cpu_s']:.1f} s = {total['read_cpu_s'] / total['windows'] * 1e3:.1f} ms per window, "
          f"{total['read_cpu_s'] / total['window_pixels'] * 1e6 * 1e3:.2f} ms per Mpx")
    print(f"  the rest (rasterise, gather, GDD, model): {rest:.1f} s = {rest / total['parcel_dates'] * 1e6:.0f} us "
          f"per parcel-date (model alone {total['predict_cpu_s'] / total['parcel_dates'] * 1e6:.0f} us)")
    print(f"  bytes: {decoded / 2**30:.2f} GiB decoded of {full / 2**30:.2f} GiB of pixels; files on disk "
          f"{scene_bytes / 2**30:.2f} GiB")
    return 0


if __name__ == "__main__":
    sys.exit(main())
