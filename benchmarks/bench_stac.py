"""Bytes read when classifying from a STAC catalogue: 2,000 parcels over 40 dates.

A loopback server (``tests/remote/loopback.py``) publishes 40 dated Sentinel-2 L2A items in
Earth Search's layout whose 11 assets each are COGs of a quarter of a tile (5,490 px at 10 m,
2,745 px at 20 m, 512-px blocks, deflate); 2,000 parcels of 1-3 ha lie in a 7 km x 7 km block
of farmland near its centre. ``classify_parcels`` runs on the items twice, each time with a
new reader and GDAL's in-memory cache emptied, as two separate runs would; the server counts
every byte it sends.

Printed beside the bytes of the first run:

- the bytes of the COG blocks that hold parcel pixels (on each asset's own grid), from the
  files' TileByteCounts: reading should cost at most 1.5x these;
- the bytes of the whole assets: reading should cost at most 10 % of them;
- the bytes of the second run, which the block cache should bring to zero.

Run: ``.venv/bin/python benchmarks/bench_stac.py [--work DIR] [--keep]``.
"""

from __future__ import annotations

import argparse
import importlib.util
import shutil
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
SIZE_10M = 5490
BLOCK = 512
VARIANTS = 2
DATES = 40
PARCELS = (50, 40)  # columns x rows of fields
X0, Y0 = 399960.0, 5400000.0  # a UTM 31N tile corner
CRS = "EPSG:32631"


def _loopback():
    """The test servers, loaded from their file (the benchmark is not a test package)."""
    spec = importlib.util.spec_from_file_location("loopback", ROOT / "tests" / "remote" / "loopback.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules["loopback"] = module
    spec.loader.exec_module(module)
    return module


def make_parcels(path: Path):
    """2,000 rectangular fields of 10-18 x 12-20 pixels with 2-pixel margins, in a block near
    the middle of the grid. Returns the GeoDataFrame."""
    import geopandas as gpd
    from shapely.geometry import box

    rng = np.random.default_rng(1)
    cols, rows = PARCELS
    c0, r0 = 2300, 2350  # top-left pixel of the block
    geoms, ids = [], []
    for j in range(rows):
        for i in range(cols):
            w, h = rng.integers(10, 19), rng.integers(12, 21)
            x = X0 + 10 * (c0 + i * 20)
            y = Y0 - 10 * (r0 + j * 22)
            geoms.append(box(x + 3.0, y - 10 * h + 3.0, x + 10 * w - 3.0, y - 3.0))
            ids.append(f"F{j:02d}{i:02d}")
    gdf = gpd.GeoDataFrame({"parcel_id": ids}, geometry=geoms, crs=CRS)
    gdf.to_file(path, driver="GPKG")
    return gdf


def make_variant(folder: Path, k: int, parcels, loop) -> None:
    """One acquisition's 11 COGs: smooth landscape plus noise, each field its own value."""
    from affine import Affine
    from rasterio.features import rasterize
    from rasterio.transform import from_origin
    from scipy.ndimage import zoom

    rng = np.random.default_rng(100 + k)
    transform = from_origin(X0, Y0, 10, 10)
    field_id = rasterize(((g, i + 1) for i, g in enumerate(parcels.geometry)), out_shape=(SIZE_10M, SIZE_10M),
                         transform=transform, fill=0, dtype="int32")
    for band, res in loop.BAND_RES.items():
        n = SIZE_10M // (res // 10)
        if band == "SCL":
            coarse = rng.integers(0, 10, size=(n // 64 + 1, n // 64 + 1))
            scl = np.where(zoom(coarse, 64, order=0)[:n, :n] < 8, 4, 9).astype(np.uint8)  # vegetation / cloud
            loop.write_raster(folder / "SCL.tif", scl, transform * Affine.scale(2), CRS, blocksize=BLOCK)
            continue
        coarse = rng.normal(2500 + 150 * k, 600, size=(n // 128 + 2, n // 128 + 2))
        land = zoom(coarse, 128, order=1)[:n, :n]
        values = land + rng.normal(0, 40, size=(n, n))
        ids = field_id if res == 10 else field_id[::2, ::2]
        field_values = rng.normal(2000 + 300 * k, 500, size=len(parcels) + 1)
        inside = ids > 0
        values[inside] = field_values[ids[inside]] + rng.normal(0, 25, size=int(inside.sum()))
        array = np.clip(values, 1, 10000).astype(np.uint16)
        t = transform if res == 10 else transform * Affine.scale(2)
        loop.write_raster(folder / f"{band}.tif", array, t, CRS, blocksize=BLOCK)


def block_bytes(path: Path, needed: np.ndarray) -> tuple[int, int]:
    """Compressed bytes of the blocks of a COG holding ``needed`` pixels (bool on its grid),
    and of all its full-resolution blocks, from its TileByteCounts."""
    from osgeo import gdal

    ds = gdal.Open(str(path))
    band = ds.GetRasterBand(1)
    bw, bh = band.GetBlockSize()
    nbx, nby = (ds.RasterXSize + bw - 1) // bw, (ds.RasterYSize + bh - 1) // bh
    holding = total = 0
    for y in range(nby):
        for x in range(nbx):
            size = int(band.GetMetadataItem(f"BLOCK_SIZE_{x}_{y}", "TIFF") or 0)
            total += size
            if needed[y * bh:(y + 1) * bh, x * bw:(x + 1) * bw].any():
                holding += size
    return holding, total


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--work", type=Path, help="work folder (default: a temporary one)")
    parser.add_argument("--keep", action="store_true", help="keep the work folder")
    args = parser.parse_args()
    loop = _loopback()
    work = args.work or Path(tempfile.mkdtemp(prefix="bench-stac-"))
    work.mkdir(parents=True, exist_ok=True)
    try:
        return run(work, loop)
    finally:
        if not args.keep and args.work is None:
            shutil.rmtree(work, ignore_errors=True)


def run(work: Path, loop) -> int:
    import datetime as dt

    import pystac
    from osgeo import gdal
    from rasterio.features import rasterize
    from rasterio.transform import from_origin

    from thermocrop.core.classify import classify_parcels
    from thermocrop.core.scenes.stac import reader_for, scenes_from_items

    t0 = time.perf_counter()
    parcels = make_parcels(work / "parcels.gpkg")
    variants = work / "variants"
    for k in range(VARIANTS):
        if not (variants / str(k) / "SCL.tif").exists():
            make_variant(variants / str(k), k, parcels, loop)
    # Daily temperatures of the season, one station.
    days = np.arange(np.datetime64("2024-01-01"), np.datetime64("2025-01-01"))
    doy = np.arange(days.size)
    mean = 10 + 9 * np.sin(2 * np.pi * (doy - 105) / 365)
    with open(work / "weather.csv", "w") as handle:
        handle.write("date,tmin,tmax\n")
        for d, m in zip(days, mean):
            handle.write(f"{d},{m - 5:.1f},{m + 5:.1f}\n")
    print(f"scenes written in {time.perf_counter() - t0:.0f} s")

    # The COG blocks holding parcel pixels, per band grid (the same for every date).
    cover = rasterize(((g, 1) for g in parcels.geometry), out_shape=(SIZE_10M, SIZE_10M),
                      transform=from_origin(X0, Y0, 10, 10), fill=0, dtype="uint8").astype(bool)
    cover20 = cover.reshape(SIZE_10M // 2, 2, SIZE_10M // 2, 2).any(axis=(1, 3))
    holding = {}
    for k in range(VARIANTS):
        for band, res in loop.BAND_RES.items():
            holding[(k, band)] = block_bytes(variants / str(k) / f"{band}.tif", cover if res == 10 else cover20)

    root = work / "served"
    dates = [dt.date(2024, 3, 1) + dt.timedelta(days=5 * i) for i in range(DATES)]
    window_bytes = whole_bytes = 0
    with loop.LoopbackServer(root) as server:
        items = []
        for t, date in enumerate(dates):
            k = t % VARIANTS
            folder = root / f"S2A_31UDQ_{date:%Y%m%d}_0_L2A"
            folder.mkdir(parents=True, exist_ok=True)
            assets = {}
            for band, res in loop.BAND_RES.items():
                link = folder / f"{band}.tif"
                if not link.exists():
                    link.symlink_to(variants / str(k) / f"{band}.tif")
                window_bytes += holding[(k, band)][0]
                whole_bytes += link.stat().st_size
                n = SIZE_10M // (res // 10)
                entry = {"href": f"{server.url}/files/{folder.name}/{band}.tif", "type": loop.COG_TYPE,
                         "proj:shape": [n, n], "proj:transform": [res, 0, X0, 0, -res, Y0],
                         "roles": ["data", "reflectance"],
                         "raster:bands": [{"nodata": 0, "data_type": "uint8" if band == "SCL" else "uint16",
                                           "spatial_resolution": res, "scale": 0.0001, "offset": 0}]}
                name = loop.EARTH_SEARCH_NAMES[band]
                if band != "SCL":
                    entry["eo:bands"] = [{"name": name, "common_name": name}]
                assets[name] = entry
            items.append(pystac.Item.from_dict({
                "type": "Feature", "stac_version": "1.0.0", "id": folder.name, "collection": "sentinel-2-l2a",
                "bbox": [1.6, 48.7, 2.4, 49.2], "geometry": None,
                "properties": {"datetime": f"{date}T10:50:00Z", "eo:cloud_cover": 10.0, "proj:epsg": 32631,
                               "s2:processing_baseline": "05.10", "earthsearch:boa_offset_applied": True},
                "assets": assets, "links": []}))
        collection = pystac.ItemCollection(items)

        runs = []
        for _ in range(2):
            gdal.VSICurlClearCache()  # a new process would start with GDAL's memory cache empty
            server.reset_counters()
            start = time.perf_counter()
            reader = reader_for(collection, cache_dir=work / "cache")
            scenes = scenes_from_items(collection, reader=reader)
            result = classify_parcels(work / "parcels.gpkg", scenes, work / "weather.csv")
            runs.append((time.perf_counter() - start, server.counters.total_bytes("/files/"),
                         server.counters.total_requests("/files/"), result))
    (t1, b1, r1, res1), (t2, b2, r2, res2) = runs
    assert np.array_equal(res1.labels, res2.labels)
    ok = int((res1.status == "ok").sum())
    print(f"{len(parcels):,} parcels x {DATES} dates, {ok:,} classified; {DATES * 11} assets of "
          f"{whole_bytes / 1e9:.2f} GB in all")
    print(f"{'what':<44} {'MB':>9} {'requests':>9} {'seconds':>8}")
    print(f"{'first run: bytes read over HTTP':<44} {b1 / 1e6:9.1f} {r1:9d} {t1:8.1f}")
    print(f"{'COG blocks holding parcel pixels':<44} {window_bytes / 1e6:9.1f}")
    print(f"{'whole assets':<44} {whole_bytes / 1e6:9.1f}")
    print(f"{'second run (block cache): bytes read':<44} {b2 / 1e6:9.1f} {r2:9d} {t2:8.1f}")
    print(f"read / blocks holding parcels: {b1 / window_bytes:.2f}x (target <= 1.5x)")
    print(f"read / whole assets: {100 * b1 / whole_bytes:.1f} % (target <= 10 %)")
    print(f"second run: {b2} bytes in {r2} requests (target 0)")
    return 0 if b1 <= 1.5 * window_bytes and b1 <= 0.1 * whole_bytes and b2 == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
