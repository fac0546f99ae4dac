"""Peak memory of classifying many tiny parcels: chunk buffers sized by the pixels parcels
cover ("fitted"), against the same run with each chunk held as one ``(n, T, C, max_pixels)``
array ("max_pixels", how extraction sized its buffers before).

Writes a region of tiny square parcels (about two pixels each) on a lattice, ``--dates``
10-band GeoTIFF scenes and a station CSV into a cache folder once, then runs each way in a
child process of its own, so that each peak RSS is its own. ``--stage extract`` (default)
runs classification's extraction loop (``iter_chunks`` over the layer in chunks of 20,000,
keeping per-parcel statuses and mean reflectances as classification keeps its results) without
the model; ``--stage classify`` runs ``classify_parcels`` with the shipped model, whose CPU
time on 64 pixel slots per parcel is far longer.

    python benchmarks/bench_memory.py [--parcels 20000 100000] [--dates 60] [--stage extract]
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

CRS = "EPSG:32632"
X0, Y0, RES = 600000.0, 5400000.0, 10.0
SPACING = 4
"""Lattice step in pixels between parcels."""


def make_region(folder: Path, n_parcels: int, n_dates: int) -> Path:
    """Tiny parcels (14 m squares: one to four pixel centres), scenes and weather, once."""
    import geopandas as gpd
    import rasterio
    from rasterio.transform import from_origin
    from shapely.geometry import box

    from thermocrop.core.scenes.bands import S2_BANDS

    done = folder / "done.json"
    if done.exists():
        return folder
    (folder / "scenes").mkdir(parents=True, exist_ok=True)
    side = int(np.ceil(np.sqrt(n_parcels)))
    size = side * SPACING + 8
    rng = np.random.default_rng(0)
    geoms = []
    for k in range(n_parcels):
        i, j = divmod(k, side)
        x = X0 + (4 + j * SPACING) * RES + rng.uniform(0, 10)
        y = Y0 - (4 + i * SPACING) * RES - rng.uniform(0, 10)
        geoms.append(box(x, y - 14.0, x + 14.0, y))
    gpd.GeoDataFrame({"parcel_id": [f"p{k}" for k in range(n_parcels)]}, geometry=geoms,
                     crs=CRS).to_file(folder / "parcels.gpkg")
    dates = np.datetime64("2021-03-01") + np.arange(n_dates) * 4
    rows, cols = np.mgrid[0:size, 0:size]
    pattern = ((rows // SPACING + cols // SPACING) % 7).astype(np.uint16)
    for t, day in enumerate(dates):
        name = f"S2A_MSIL1C_{str(day).replace('-', '')}T103021_N0205_R108_T32UPU_{str(day).replace('-', '')}T103021.tif"
        data = np.stack([1000 + 300 * b + 40 * (t % 9) + 50 * pattern for b in range(len(S2_BANDS))])
        with rasterio.open(folder / "scenes" / name, "w", driver="GTiff", width=size, height=size, count=10,
                           dtype="uint16", crs=CRS, transform=from_origin(X0, Y0, RES, RES), tiled=True,
                           compress="deflate", predictor=2) as ds:
            ds.write(data.astype(np.uint16))
            for b, band in enumerate(S2_BANDS, start=1):
                ds.set_band_description(b, band)
    days = np.arange(np.datetime64("2021-01-01"), np.datetime64("2021-12-31") + 1)
    with open(folder / "weather.csv", "w") as fh:
        fh.write("date,tmin,tmax\n")
        for d in days:
            season = np.sin((d - np.datetime64("2021-01-01")).astype(int) / 365 * 2 * np.pi - 1.8)
            fh.write(f"{d},{2 + 8 * season:.1f},{12 + 10 * season:.1f}\n")
    done.write_text(json.dumps({"parcels": n_parcels, "dates": n_dates, "size": size}))
    return folder


def extraction_loop(folder: Path) -> tuple[np.ndarray, np.ndarray]:
    """Classification's extraction loop without the model: statuses and mean reflectances."""
    from thermocrop.core import extract
    from thermocrop.core.extract import dataset_meta
    from thermocrop.core.parcels import load_parcels
    from thermocrop.core.scenes.local import find_scenes
    from thermocrop.core.settings import ExtractionSettings

    settings = ExtractionSettings()
    table = load_parcels(folder / "parcels.gpkg", block_field=None)
    scenes = find_scenes(folder / "scenes")
    meta = dataset_meta(table, scenes, folder / "weather.csv", settings, None)
    status = np.empty(len(table), dtype=object)
    mean = np.full((len(table), 10), np.nan, dtype=np.float32)
    for idx, ps in extract.iter_chunks(table, scenes, folder / "weather.csv", settings, (), meta, 20000):
        status[idx] = ps.status
        valid = ps.pixel_mask[:, :, None, :]
        mean[idx] = (ps.pixels * valid).sum(axis=(1, 3)) / np.maximum(valid.sum(axis=(1, 3)), 1)
    return status, mean


def child(folder: Path, way: str, stage: str) -> None:
    """Run one way and print the peak RSS (MB) and time as JSON."""
    from thermocrop.core import extract
    from thermocrop.core.classify import classify_parcels

    if way == "max_pixels":
        # Before: each chunk held as one dense array with max_pixels slots per parcel.
        extract.DENSE_BYTES = 1 << 62
        whole, groups = extract.iter_chunks, extract.chunk_groups
        extract.iter_chunks = lambda *a, **k: whole(*a, **{**k, "full_slots": True})
        extract.chunk_groups = lambda *a, **k: groups(*a, **{**k, "full_slots": True})
        import thermocrop.core.classify as classify_module
        classify_module.chunk_groups = extract.chunk_groups
    t0 = time.perf_counter()
    if stage == "classify":
        result = classify_parcels(folder / "parcels.gpkg", folder / "scenes", folder / "weather.csv")
        status, check = result.status, result.labels.tolist()
    else:
        status, mean = extraction_loop(folder)
        check = np.round(mean, 3).tolist()
    seconds = time.perf_counter() - t0
    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0
    ok = int((np.asarray(status) == "ok").sum())
    print(json.dumps({"way": way, "peak_mb": peak_mb, "seconds": seconds, "ok": ok, "check": check}))


def measure(folder: Path, way: str, stage: str) -> dict:
    out = subprocess.run([sys.executable, __file__, "--child", str(folder), way, stage], capture_output=True,
                         text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--parcels", type=int, nargs="+", default=[20000, 100000])
    parser.add_argument("--dates", type=int, default=60)
    parser.add_argument("--cache", default=str(Path(tempfile.gettempdir()) / "thermocrop-bench"))
    parser.add_argument("--ways", nargs="+", default=["fitted", "max_pixels"])
    parser.add_argument("--stage", choices=("extract", "classify"), default="extract")
    parser.add_argument("--child", nargs=3, metavar=("FOLDER", "WAY", "STAGE"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(Path(args.child[0]), args.child[1], args.child[2])
        return
    print(f"stage: {args.stage}")
    print(f"{'parcels':>8} {'dates':>5}  {'way':<11} {'peak RSS MB':>11} {'seconds':>8} {'ok':>7}")
    for n in args.parcels:
        folder = make_region(Path(args.cache) / f"memory_{n}_{args.dates}", n, args.dates)
        runs = {}
        for way in args.ways:
            runs[way] = measure(folder, way, args.stage)
            r = runs[way]
            print(f"{n:>8} {args.dates:>5}  {way:<11} {r['peak_mb']:>11.0f} {r['seconds']:>8.1f} {r['ok']:>7}",
                  flush=True)
        if len(runs) == 2:
            a, b = runs["fitted"], runs["max_pixels"]
            same = a["check"] == b["check"]
            print(f"{n:>8} {args.dates:>5}  ratio       {b['peak_mb'] / a['peak_mb']:>10.1f}x "
                  f"less memory; same {'labels' if args.stage == 'classify' else 'mean reflectances'}: {same}",
                  flush=True)


if __name__ == "__main__":
    main()
