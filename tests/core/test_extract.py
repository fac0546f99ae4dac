"""Pixel extraction on a small UTM scene stack written here, parcels given in EPSG:4326.

Pixel values are checked against an independent route: ``rasterio.mask`` on one parcel.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import rasterio
import rasterio.mask
from rasterio.transform import from_origin
from shapely.geometry import MultiPolygon, Polygon, box

from thermocrop.core.crops import CROP_CLASSES
from thermocrop.core.errors import CancelledError, SceneError
from thermocrop.core.extract import extract_pixel_sets, extract_to_dataset
from thermocrop.core.parcels import ParcelFields
from thermocrop.core.pixel_sets import open_dataset
from thermocrop.core.progress import Progress
from thermocrop.core.scenes.bands import BANDS_10M, BANDS_20M, S2_BANDS
from thermocrop.core.settings import ExtractionSettings, PixelSampling

gpd = pytest.importorskip("geopandas")
# Growing degree days and weather reading come from core.thermal.gdd / core.thermal.weather.
pytest.importorskip("thermocrop.core.thermal.gdd")
pytest.importorskip("thermocrop.core.thermal.weather")

CRS = "EPSG:32632"
X0, Y0, RES, SIZE = 500000.0, 5300000.0, 10.0, 60
NAME = "S2A_MSIL2A_{d}T103031_N{b}_R108_T32TMT_{d}T{p}"
T_MIN, T_MAX = 5.0, 15.0  # constant weather: (15 + 5) / 2 = 10 degree days a day


def _write(path: Path, data: np.ndarray, res: float = RES, descriptions=None) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    c, h, w = data.shape
    with rasterio.open(path, "w", driver="GTiff", width=w, height=h, count=c, dtype=data.dtype, crs=CRS,
                       transform=from_origin(X0, Y0, res, res), nodata=0, tiled=True, blockxsize=16,
                       blockysize=16) as ds:
        ds.write(data)
        for i, d in enumerate(descriptions or [], start=1):
            ds.set_band_description(i, d)
    return path


def _dn(rng: np.random.Generator) -> np.ndarray:
    return rng.integers(1100, 9000, size=(10, SIZE, SIZE), dtype=np.uint16)


def _px(col0: float, row0: float, col1: float, row1: float) -> Polygon:
    """A box given in (fractional) pixel coordinates of the scene grid, in UTM metres."""
    return box(X0 + col0 * RES, Y0 - row1 * RES, X0 + col1 * RES, Y0 - row0 * RES)


def _parcels_utm() -> dict[str, object]:
    bowtie = Polygon([(X0 + 302, Y0 - 402), (X0 + 398, Y0 - 498), (X0 + 398, Y0 - 402), (X0 + 302, Y0 - 498)])
    return {
        "big": _px(2.3, 2.3, 14.7, 12.7),  # 13 x 11 = 143 pixel centres: sampled down to S
        "small": _px(20.3, 2.3, 24.7, 6.7),  # 5 x 5 = 25 pixels
        "half_out": _px(-5.5, 20.3, 4.7, 23.7),  # west part outside the scenes; 5 x 4 inside
        "outside": _px(-30.0, 20.0, -20.0, 30.0),
        "subpixel": _px(40.1, 40.1, 40.4, 40.4),  # 3 m x 3 m, no pixel centre inside
        "multi": MultiPolygon([_px(30.3, 2.3, 32.7, 4.7), _px(36.3, 2.3, 38.7, 4.7)]),  # 2 x 9 pixels
        "bowtie": bowtie,  # self-intersecting
        "cloudy": _px(45.3, 45.3, 55.7, 55.7),
        "left": _px(5.3, 40.3, 9.7, 44.7),  # in the half that one scene leaves without data
    }


@pytest.fixture(scope="module")
def region(tmp_path_factory):
    """Scenes (four multi-band dates, one date in two products, one per-band 20 m product),
    parcels in EPSG:4326 and a CSV weather station."""
    root = tmp_path_factory.mktemp("region")
    rng = np.random.default_rng(7)
    scenes = root / "scenes"
    cubes = {}

    def multi(date: str, baseline: str, proc: str, cube: np.ndarray, scl=None) -> None:
        name = NAME.format(d=date, b=baseline, p=proc)
        _write(scenes / f"{name}.tif", cube, descriptions=S2_BANDS)
        if scl is not None:
            _write(scenes / f"{name}_SCL.tif", scl[None].astype(np.uint8), descriptions=["SCL"])
        cubes[name] = cube

    # Leap day, old baseline (no offset).
    multi("20240229", "0205", "120000", _dn(rng))
    # Baseline 05.10: DNs carry +1000, SCL clouds over the 'cloudy' parcel.
    scl = np.full((SIZE, SIZE), 4, dtype=np.uint8)
    scl[44:57, 44:57] = 9
    multi("20240510", "0510", "120000", _dn(rng), scl)
    # Two products on 2024-06-20: the first has no data in the left half, the second fills it.
    first = _dn(rng)
    first[:, :, : SIZE // 2] = 0
    multi("20240620", "0510", "120000", first, np.full((SIZE, SIZE), 4))
    multi("20240620", "0510", "130000", _dn(rng), np.full((SIZE, SIZE), 4))
    # A scene whose left half is nodata, alone on its date.
    halfnd = _dn(rng)
    halfnd[:, :, : SIZE // 2] = 0
    multi("20240705", "0510", "120000", halfnd)
    # Per-band files (10 m and 20 m) in an Earth Search style product folder.
    folder = scenes / "S2B_32TMT_20240801_0_L2A"
    for b in BANDS_10M:
        _write(folder / f"{b}.tif", rng.integers(1100, 9000, size=(1, SIZE, SIZE), dtype=np.uint16))
    for b in BANDS_20M:
        _write(folder / f"{b}.tif", rng.integers(1100, 9000, size=(1, SIZE // 2, SIZE // 2), dtype=np.uint16),
               res=20.0)

    shapes = {**_parcels_utm(), "empty": Polygon()}
    utm = gpd.GeoDataFrame(
        {"parcel_id": list(shapes), "crop": ["corn", "meadow", "winter_wheat", "corn", "meadow",
                                             "corn", "bogus", "winter_wheat", "corn", "corn"],
         "block": np.arange(10)},
        geometry=list(shapes.values()), crs=CRS,
    )
    utm.to_crs("EPSG:4326").to_file(root / "parcels.gpkg", driver="GPKG")

    days = np.arange(np.datetime64("2024-01-01"), np.datetime64("2024-12-31"))
    lines = ["date,tmin,tmax"] + [f"{d},{T_MIN},{T_MAX}" for d in days]
    (root / "weather.csv").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return {"root": root, "scenes": scenes, "parcels": root / "parcels.gpkg", "weather": root / "weather.csv",
            "cubes": cubes, "utm": utm}


@pytest.fixture(scope="module")
def extracted(region):
    return extract_pixel_sets(region["parcels"], region["scenes"], region["weather"],
                              settings=ExtractionSettings(sampling=PixelSampling(max_pixels=64, seed=3)),
                              fields=ParcelFields(label_field="crop", classes=CROP_CLASSES))


def _row(ps, pid: str) -> int:
    return int(np.flatnonzero(ps.parcel_ids == pid)[0])


def _masked_pixels(path: Path, geom, offset: int) -> set[tuple[int, ...]]:
    """The independent route: every pixel of one parcel through rasterio.mask."""
    with rasterio.open(path) as ds:
        data, _ = rasterio.mask.mask(ds, [geom], crop=True, filled=False, all_touched=False)
    inside = ~np.ma.getmaskarray(data).any(axis=0)
    values = data.data[:, inside].astype(np.int64) + offset
    return {tuple(v) for v in values.T}


def test_dates_statuses_and_labels(extracted):
    ps = extracted
    assert [str(d) for d in ps.dates] == ["2024-02-29", "2024-05-10", "2024-06-20", "2024-07-05", "2024-08-01"]
    status = dict(zip(ps.parcel_ids, ps.status))
    assert status == {"big": "ok", "small": "ok", "half_out": "ok", "outside": "outside_scenes",
                      "subpixel": "ok", "multi": "ok", "bowtie": "ok", "cloudy": "ok", "left": "ok",
                      "empty": "invalid_geometry"}
    assert ps.labels[_row(ps, "big")] == CROP_CLASSES.index("corn")
    assert ps.labels[_row(ps, "bowtie")] == -1  # 'bogus' is not in the fixed class list
    assert ps.blocks[_row(ps, "cloudy")] == 7
    assert ps.pixels.shape == (10, 5, 10, 64)
    assert not ps.date_mask[_row(ps, "outside")].any()


def test_pixel_values_match_rasterio_mask(region, extracted):
    ps = extracted
    name = NAME.format(d="20240510", b="0510", p="120000")
    path = region["scenes"] / f"{name}.tif"
    utm = region["utm"].set_index("parcel_id").geometry
    for pid, expected_count in (("big", 64), ("small", 25)):
        i = _row(ps, pid)
        got = ps.pixels[i, 1][:, ps.pixel_mask[i, 1]]
        truth = _masked_pixels(path, utm[pid], -1000)
        assert got.shape[1] == expected_count
        assert {tuple(v) for v in got.T.astype(np.int64)} <= truth
        if pid == "small":
            assert len(truth) == 25 and {tuple(v) for v in got.T.astype(np.int64)} == truth
    # A multipolygon: both parts, 18 pixels; a half-outside parcel: only the pixels inside.
    assert ps.pixel_mask[_row(ps, "multi"), 0].sum() == 18
    i = _row(ps, "half_out")
    assert ps.pixel_mask[i, 0].sum() == 5 * 4  # columns 0..4 inside, rows 20..23
    truth = _masked_pixels(region["scenes"] / f"{NAME.format(d='20240229', b='0205', p='120000')}.tif",
                           utm["half_out"], 0)
    assert {tuple(v) for v in ps.pixels[i, 0][:, ps.pixel_mask[i, 0]].T.astype(np.int64)} == truth


def test_subpixel_and_self_intersecting_parcels(region, extracted):
    ps = extracted
    i = _row(ps, "subpixel")
    assert ps.pixel_mask[i, 0].sum() == 1
    cube = region["cubes"][NAME.format(d="20240229", b="0205", p="120000")]
    assert ps.pixels[i, 0, :, ps.pixel_mask[i, 0]].ravel().tolist() == cube[:, 40, 40].tolist()
    # The bow tie's two triangles hold pixel centres; repaired, it yields them, not nothing.
    assert ps.pixel_mask[_row(ps, "bowtie"), 0].sum() > 20


def test_clouds_nodata_and_two_products(region, extracted):
    ps = extracted
    cloudy, left, big = _row(ps, "cloudy"), _row(ps, "left"), _row(ps, "big")
    assert ps.date_mask[cloudy].tolist() == [True, False, True, True, True]
    # 2024-07-05 has no data in the left half: 'left' loses that date, 'cloudy' keeps it.
    assert ps.date_mask[left].tolist() == [True, True, True, False, True]
    # 2024-06-20: the first product has no data on the left, the second fills it; on the
    # right the first product wins.
    first = region["cubes"][NAME.format(d="20240620", b="0510", p="120000")]
    second = region["cubes"][NAME.format(d="20240620", b="0510", p="130000")]
    mask = ps.pixel_mask[left, 2]
    assert mask.sum() == 25
    got = {tuple(v) for v in ps.pixels[left, 2][:, mask].T.astype(np.int64)}
    assert got == {tuple(v) for v in (second[:, 40:45, 5:10].reshape(10, -1).T.astype(np.int64) - 1000)}
    mask = ps.pixel_mask[cloudy, 2]
    got = {tuple(v) for v in ps.pixels[cloudy, 2][:, mask].T.astype(np.int64)}
    truth = {tuple(v) for v in (first[:, 45:56, 45:56].reshape(10, -1).T.astype(np.int64) - 1000)}
    assert mask.sum() == 64 and got <= truth
    # Masked slots hold zeros.
    assert (ps.pixels[big][~np.broadcast_to(ps.pixel_mask[big][:, None, :], ps.pixels[big].shape)] == 0).all()


def test_per_band_20m_product(region, extracted):
    ps = extracted
    i = _row(ps, "small")
    folder = region["scenes"] / "S2B_32TMT_20240801_0_L2A"
    with rasterio.open(folder / "B04.tif") as ds:
        b04 = ds.read(1)
    got = set(ps.pixels[i, 4, S2_BANDS.index("B04")][ps.pixel_mask[i, 4]].tolist())
    assert got == set(b04[2:7, 20:25].ravel().tolist())
    # 20 m values are bilinear mixes of the 20 m pixels around: within their range.
    with rasterio.open(folder / "B11.tif") as ds:
        b11 = ds.read(1)[0:5, 9:14]
    vals = ps.pixels[i, 4, S2_BANDS.index("B11")][ps.pixel_mask[i, 4]]
    assert vals.min() >= b11.min() and vals.max() <= b11.max()


def test_gdd_and_day_of_season_by_hand(extracted):
    ps = extracted
    days = np.array([59, 130, 171, 186, 213], dtype=np.float32)  # days since 2024-01-01, leap year
    np.testing.assert_allclose(ps.day_of_season, days)
    ok = ps.status == "ok"
    daily = (T_MAX + T_MIN) / 2
    expected = np.broadcast_to(daily * (days + 1), ps.gdd[ok].shape)
    np.testing.assert_allclose(ps.gdd[ok], expected, rtol=1e-5)


def test_sampling_is_seeded_and_chunking_changes_nothing(region, extracted, tmp_path):
    out = extract_to_dataset(region["parcels"], region["scenes"], region["weather"], tmp_path / "ds", chunk_size=3,
                             settings=ExtractionSettings(sampling=PixelSampling(max_pixels=64, seed=3)),
                             fields=ParcelFields(label_field="crop"))
    ds = open_dataset(out)
    for name in ("pixels", "pixel_mask", "date_mask", "gdd", "blocks"):
        np.testing.assert_array_equal(getattr(ds, name), getattr(extracted, name), err_msg=name)
    # Without a fixed list the classes are the labels found, 'bogus' among them.
    assert ds.classes == ("bogus", "corn", "meadow", "winter_wheat")
    assert [ds.classes[k] for k in ds.labels] == ["corn", "meadow", "winter_wheat", "corn", "meadow",
                                                  "corn", "bogus", "winter_wheat", "corn", "corn"]
    np.testing.assert_array_equal(ds.relabel(CROP_CLASSES, unseen="drop").labels, extracted.labels)
    assert ds.parcel_ids.tolist() == extracted.parcel_ids.tolist()
    assert ds.status.tolist() == extracted.status.tolist()
    other = extract_pixel_sets(region["parcels"], region["scenes"], region["weather"],
                               settings=ExtractionSettings(sampling=PixelSampling(max_pixels=64, seed=4)))
    i = _row(other, "big")
    assert not np.array_equal(other.pixels[i], extracted.pixels[i])


@pytest.fixture
def deflate_scenes(region, tmp_path):
    """DEFLATE copies of the region's scenes in 16 px blocks (a parcel's window spans several)."""
    import shutil

    import rasterio.shutil

    scenes = tmp_path / "scenes"
    shutil.copytree(region["scenes"], scenes)
    for path in scenes.rglob("*.tif"):
        rasterio.shutil.copy(path, path.with_suffix(".deflate"), driver="GTiff", compress="deflate", tiled=True,
                             blockxsize=16, blockysize=16)
        path.with_suffix(".deflate").replace(path)
    return scenes


def _recording_reads(monkeypatch) -> list:
    """Patch ProductReader.read to record (thread, GDAL_NUM_THREADS) of every read."""
    import threading

    from thermocrop.core.scenes.product import ProductReader

    seen = []
    read = ProductReader.read

    def recording(self, window):
        seen.append((threading.current_thread().name,
                     rasterio.env.get_gdal_config("GDAL_NUM_THREADS", normalize=False)))
        return read(self, window)

    monkeypatch.setattr(ProductReader, "read", recording)
    return seen


def _read_threads() -> list:
    import threading

    return [t for t in threading.enumerate() if t.name.startswith("thermocrop-read")]


def test_scenes_read_on_several_threads_give_the_same_pixel_sets(region, extracted, deflate_scenes, monkeypatch):
    seen = _recording_reads(monkeypatch)
    monkeypatch.delenv("GDAL_NUM_THREADS", raising=False)
    monkeypatch.setenv("OMP_NUM_THREADS", "4")
    ps = extract_pixel_sets(region["parcels"], deflate_scenes, region["weather"],
                            settings=ExtractionSettings(sampling=PixelSampling(max_pixels=64, seed=3)),
                            fields=ParcelFields(label_field="crop", classes=CROP_CLASSES))
    # Four scene threads, each decoding on one GDAL thread; the setting ends with the reads.
    assert len({name for name, _ in seen}) > 1 and all(name.startswith("thermocrop-read") for name, _ in seen)
    assert {threads for _, threads in seen} == {"1"}
    assert rasterio.env.get_gdal_config("GDAL_NUM_THREADS") is None and not _read_threads()
    for name in ("pixels", "pixel_mask", "date_mask", "gdd"):
        np.testing.assert_array_equal(getattr(ps, name), getattr(extracted, name), err_msg=name)
    assert ps.status.tolist() == extracted.status.tolist()
    # One thread (as in a Dask worker): scenes in this thread, GDAL on one thread, same values.
    seen.clear()
    monkeypatch.setenv("OMP_NUM_THREADS", "1")
    one = extract_pixel_sets(region["parcels"], deflate_scenes, region["weather"],
                             settings=ExtractionSettings(sampling=PixelSampling(max_pixels=64, seed=3)),
                             fields=ParcelFields(label_field="crop", classes=CROP_CLASSES))
    assert {name for name, _ in seen} == {"MainThread"} and {threads for _, threads in seen} == {"1"}
    np.testing.assert_array_equal(one.pixels, extracted.pixels)
    # A single scene: read on the calling thread, GDAL decoding its blocks on the threads.
    seen.clear()
    monkeypatch.setenv("OMP_NUM_THREADS", "4")
    first = sorted(p for p in deflate_scenes.glob("*.tif") if not p.stem.endswith("_SCL"))[0]
    extract_pixel_sets(region["parcels"], [first], region["weather"],
                       settings=ExtractionSettings(sampling=PixelSampling(max_pixels=64, seed=3)))
    assert {name for name, _ in seen} == {"MainThread"} and {threads for _, threads in seen} == {"4"}


def test_scene_threads_follow_the_decoding_threads(region, monkeypatch):
    import os

    from thermocrop.core.extract import scene_threads
    from thermocrop.core.scenes.local import find_scenes

    scenes = find_scenes(region["scenes"])
    monkeypatch.setenv("GDAL_NUM_THREADS", "ALL_CPUS")
    assert scene_threads(scenes) == len(os.sched_getaffinity(0))
    for value, threads in (("3", 3), ("0", 1), ("many", 1)):
        monkeypatch.setenv("GDAL_NUM_THREADS", value)
        assert scene_threads(scenes) == threads


def test_a_damaged_scene_read_on_a_thread_stops_the_run_with_its_name(region, deflate_scenes, monkeypatch):
    monkeypatch.setenv("OMP_NUM_THREADS", "3")
    damaged = sorted(p for p in deflate_scenes.glob("*.tif") if not p.stem.endswith("_SCL"))[2]
    data = damaged.read_bytes()
    damaged.write_bytes(data[: len(data) // 2])  # blocks cut off half-way through the file
    with pytest.raises(SceneError, match=damaged.stem):
        extract_pixel_sets(region["parcels"], deflate_scenes, region["weather"],
                           settings=ExtractionSettings(sampling=PixelSampling(max_pixels=64, seed=3)))
    assert not _read_threads()


def test_cancellation_writes_nothing(region, tmp_path):
    calls = []

    def cancelled() -> bool:
        calls.append(1)
        return len(calls) > 3

    with pytest.raises(CancelledError):
        extract_to_dataset(region["parcels"], region["scenes"], region["weather"], tmp_path / "ds",
                           progress=Progress(cancelled=cancelled))
    assert list(tmp_path.iterdir()) == []


def test_parcels_read_from_the_tile_that_covers_them_most(region, tmp_path):
    # Two overlapping tiles of one date on different grids: the second starts 40 pixels east.
    rng = np.random.default_rng(11)
    west = rng.integers(1100, 9000, size=(10, SIZE, SIZE), dtype=np.uint16)
    east = rng.integers(1100, 9000, size=(10, SIZE, SIZE), dtype=np.uint16)
    for name, cube, x0 in (("S2A_MSIL1C_20240601T103031_N0205_R108_T32TMT_20240601T1", west, X0),
                           ("S2A_MSIL1C_20240601T103031_N0205_R108_T32TNT_20240601T1", east, X0 + 40 * RES)):
        with rasterio.open(tmp_path / f"{name}.tif", "w", driver="GTiff", width=SIZE, height=SIZE, count=10,
                           dtype="uint16", crs=CRS, transform=from_origin(x0, Y0, RES, RES), nodata=0) as ds:
            ds.write(cube)
            for i, b in enumerate(S2_BANDS, start=1):
                ds.set_band_description(i, b)
    parcels = gpd.GeoDataFrame(
        {"parcel_id": ["west_only", "east_only", "mostly_east"]},
        geometry=[_px(5.3, 5.3, 7.7, 7.7), _px(80.3, 5.3, 82.7, 7.7), _px(57.3, 20.3, 66.7, 22.7)],
        crs=CRS,
    ).to_crs("EPSG:4326")
    ps = extract_pixel_sets(parcels, tmp_path, region["weather"])
    assert ps.n_dates == 1 and ps.status.tolist() == ["ok", "ok", "ok"]

    def got(i):
        return {tuple(v) for v in ps.pixels[i, 0][:, ps.pixel_mask[i, 0]].T.tolist()}

    assert got(0) == {tuple(v) for v in west[:, 5:8, 5:8].reshape(10, -1).T.tolist()}
    assert got(1) == {tuple(v) for v in east[:, 5:8, 40:43].reshape(10, -1).T.tolist()}
    # Columns 57..66 of the west grid: the west tile holds 3 of them, the east tile all 10
    # (its columns 17..26), so the parcel is read from the east tile alone.
    assert got(2) == {tuple(v) for v in east[:, 20:23, 17:27].reshape(10, -1).T.tolist()}


def test_min_pixels_marks_small_parcels(region):
    ps = extract_pixel_sets(region["parcels"], region["scenes"], region["weather"],
                            settings=ExtractionSettings(sampling=PixelSampling(max_pixels=8, min_pixels=4)))
    status = dict(zip(ps.parcel_ids, ps.status))
    assert status["subpixel"] == "too_small" and status["small"] == "ok"
    assert not ps.date_mask[_row(ps, "subpixel")].any()
    # With 8 slots a 25-pixel parcel keeps 8 pixels a date; the 18-pixel multipolygon too.
    assert ps.pixel_mask[_row(ps, "small"), 0].sum() == 8
    assert ps.pixel_mask[_row(ps, "multi"), 0].sum() == 8


def _tile(path: Path, cube: np.ndarray, x0: float = X0, scl=None) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with rasterio.open(path, "w", driver="GTiff", width=cube.shape[2], height=cube.shape[1], count=10,
                       dtype="uint16", crs=CRS, transform=from_origin(x0, Y0, RES, RES), nodata=0) as ds:
        ds.write(cube)
        for i, b in enumerate(S2_BANDS, start=1):
            ds.set_band_description(i, b)
    if scl is not None:
        with rasterio.open(path.with_name(path.stem + "_SCL.tif"), "w", driver="GTiff", width=scl.shape[1],
                           height=scl.shape[0], count=1, dtype="uint8", crs=CRS,
                           transform=from_origin(x0, Y0, RES, RES)) as ds:
            ds.write(scl[None])


def test_other_tiles_fill_the_dates_the_preferred_tile_lacks(region, tmp_path):
    # Two tiles on different grids, the east one 40 pixels east; a parcel in their overlap is
    # covered equally by both, so the first grid is preferred. On 06-11 the preferred tile has
    # no data there (outside the swath), on 06-21 it was not downloaded: the east tile serves.
    rng = np.random.default_rng(5)
    cubes = {}
    for date in ("20240601", "20240611", "20240621"):
        for tile, x0 in (("T32TMT", X0), ("T32TNT", X0 + 40 * RES)):
            if tile == "T32TMT" and date == "20240621":
                continue
            cube = rng.integers(1100, 9000, size=(10, SIZE, SIZE), dtype=np.uint16)
            if tile == "T32TMT" and date == "20240611":
                cube[:, :, 40:] = 0
            cubes[date, tile] = cube
            _tile(tmp_path / f"S2A_MSIL1C_{date}T103031_N0205_R108_{tile}_{date}T1.tif", cube, x0)
    parcels = gpd.GeoDataFrame({"parcel_id": ["overlap"]}, geometry=[_px(45.3, 20.3, 49.7, 23.7)], crs=CRS)
    ps = extract_pixel_sets(parcels, tmp_path, region["weather"])
    assert ps.status.tolist() == ["ok"] and ps.date_mask[0].tolist() == [True, True, True]

    def got(t):
        return {tuple(v) for v in ps.pixels[0, t][:, ps.pixel_mask[0, t]].T.tolist()}

    # Rows 20..23, columns 45..49 of the west grid are columns 5..9 of the east grid.
    assert got(0) == {tuple(v) for v in cubes["20240601", "T32TMT"][:, 20:24, 45:50].reshape(10, -1).T.tolist()}
    for t, date in ((1, "20240611"), (2, "20240621")):
        assert got(t) == {tuple(v) for v in cubes[date, "T32TNT"][:, 20:24, 5:10].reshape(10, -1).T.tolist()}


def test_dates_with_too_few_clear_pixels_are_dropped(region, tmp_path):
    # A 10 x 10 pixel parcel: 40 of its pixels under cloud on 06-01, all of them on 06-11.
    # A second parcel is clouded on both dates: no clear date at all.
    rng = np.random.default_rng(9)
    scl_a = np.full((SIZE, SIZE), 4, dtype=np.uint8)
    scl_a[10:14, 10:20] = 8
    scl_a[30:40, 30:40] = 9
    scl_b = np.full((SIZE, SIZE), 4, dtype=np.uint8)
    scl_b[10:20, 10:20] = 3
    scl_b[30:40, 30:40] = 10
    for date, scl in (("20240601", scl_a), ("20240611", scl_b)):
        _tile(tmp_path / f"{NAME.format(d=date, b='0510', p='120000')}.tif",
              rng.integers(1100, 9000, size=(10, SIZE, SIZE), dtype=np.uint16), scl=scl)
    parcels = gpd.GeoDataFrame({"parcel_id": ["part", "overcast"]},
                               geometry=[_px(10.3, 10.3, 19.7, 19.7), _px(30.3, 30.3, 39.7, 39.7)], crs=CRS)
    for fraction, part_dates in ((0.5, [True, False]), (0.6, [True, False]), (0.61, [False, False])):
        ps = extract_pixel_sets(parcels, tmp_path, region["weather"],
                                settings=ExtractionSettings(sampling=PixelSampling(max_pixels=128,
                                                                                   min_valid_fraction=fraction)))
        assert ps.date_mask[0].tolist() == part_dates, fraction
        assert ps.status.tolist() == ["ok" if any(part_dates) else "no_clear_date", "no_clear_date"]
        # Kept dates hold exactly the 60 clear pixels; dropped ones and masked slots nothing.
        assert ps.pixel_mask[0].sum(axis=1).tolist() == [60 if d else 0 for d in part_dates]
        assert not ps.pixel_mask[1].any() and not ps.pixels[1].any()


def test_overlapping_parcels_each_get_every_pixel_they_cover(region, tmp_path):
    # Two squares overlapping by a 4 x 6 pixel band, a field inside another, a field given
    # twice, and one alone: the expectation is each polygon rasterised on its own
    # (rasterio.features.geometry_mask), compared with the first date's cube.
    from rasterio.features import geometry_mask

    rng = np.random.default_rng(21)
    cube = rng.integers(1100, 9000, size=(10, SIZE, SIZE), dtype=np.uint16)
    _tile(tmp_path / "S2A_MSIL1C_20240601T103031_N0205_R108_T32TMT_20240601T1.tif", cube)
    shapes = {
        "west": _px(2.3, 2.3, 10.7, 10.7),  # 9 x 9 pixels
        "east": _px(6.3, 4.3, 15.7, 9.7),  # 10 x 6, its columns 6..10 shared with 'west'
        "outer": _px(20.3, 20.3, 31.7, 31.7),  # 12 x 12
        "inner": _px(24.3, 24.3, 27.7, 27.7),  # 4 x 4, all inside 'outer'
        "twice_a": _px(40.3, 5.3, 44.7, 9.7),
        "twice_b": _px(40.3, 5.3, 44.7, 9.7),
        "alone": _px(40.3, 40.3, 45.7, 44.7),
    }
    parcels = gpd.GeoDataFrame({"parcel_id": list(shapes)}, geometry=list(shapes.values()), crs=CRS)
    ps = extract_pixel_sets(parcels, tmp_path, region["weather"],
                            settings=ExtractionSettings(sampling=PixelSampling(max_pixels=256)))
    assert ps.status.tolist() == ["ok"] * len(shapes)
    transform = from_origin(X0, Y0, RES, RES)
    for i, (pid, geom) in enumerate(shapes.items()):
        inside = geometry_mask([geom], out_shape=(SIZE, SIZE), transform=transform, invert=True)
        expected = sorted(map(tuple, cube[:, inside].T.tolist()))
        got = sorted(map(tuple, ps.pixels[i, 0][:, ps.pixel_mask[i, 0]].T.tolist()))
        assert len(got) == int(inside.sum()), pid
        assert got == expected, pid
    assert ps.pixel_mask[0, 0].sum() == 81 and ps.pixel_mask[1, 0].sum() == 60
    assert ps.pixel_mask[2, 0].sum() == 144 and ps.pixel_mask[3, 0].sum() == 16


def test_overlaps_sample_the_same_pixels_whatever_the_chunks(region, tmp_path):
    # With fewer slots than pixels the draw of an overlapping parcel is that of the same
    # parcel alone in the layer, so chunks that split overlapping parcels change nothing.
    rng = np.random.default_rng(22)
    _tile(tmp_path / "scenes" / "S2A_MSIL1C_20240601T103031_N0205_R108_T32TMT_20240601T1.tif",
          rng.integers(1100, 9000, size=(10, SIZE, SIZE), dtype=np.uint16))
    shapes = [_px(2.3, 2.3, 20.7, 20.7), _px(10.3, 10.3, 30.7, 30.7), _px(35.3, 35.3, 50.7, 50.7)]
    parcels = gpd.GeoDataFrame({"parcel_id": ["a", "b", "c"]}, geometry=shapes, crs=CRS)
    together = extract_pixel_sets(parcels, tmp_path / "scenes", region["weather"],
                                  settings=ExtractionSettings(sampling=PixelSampling(max_pixels=16, seed=5)))
    for i in range(3):
        one = extract_pixel_sets(parcels.iloc[[i]], tmp_path / "scenes", region["weather"],
                                 settings=ExtractionSettings(sampling=PixelSampling(max_pixels=16, seed=5)))
        assert np.array_equal(one.pixels[0], together.pixels[i]) and np.array_equal(one.pixel_mask[0],
                                                                                      together.pixel_mask[i])
    extract_to_dataset(parcels, tmp_path / "scenes", region["weather"], tmp_path / "ds", chunk_size=1,
                       settings=ExtractionSettings(sampling=PixelSampling(max_pixels=16, seed=5)))
    ds = open_dataset(tmp_path / "ds")
    assert np.array_equal(np.asarray(ds.pixels), together.pixels)


def test_values_that_are_no_reflectance_are_counted_masked_and_give_a_status(region, tmp_path, caplog):
    # 06-01 is a float file: parcel 'few' holds NaN, infinity, a negative value and 70000 (which
    # uint16 would clamp to a bright 65535) in 4 of its 9 pixels, 'broken' is NaN throughout.
    # 06-11 is uint16: 'broken' is saturated (65535) throughout, 'one' in 1 of its 4 pixels.
    import logging

    rng = np.random.default_rng(31)
    first = rng.integers(1100, 9000, size=(10, SIZE, SIZE)).astype(np.float32)
    first[0, 10, 10], first[1, 10, 11], first[2, 11, 10], first[9, 12, 12] = np.nan, np.inf, -5.0, 70000.0
    first[:, 30:32, 30:32] = np.nan
    second = rng.integers(1100, 9000, size=(10, SIZE, SIZE), dtype=np.uint16)
    second[:, 30:32, 30:32] = 65535
    second[4, 40, 41] = 65535
    _write(tmp_path / "S2A_MSIL1C_20240601T103031_N0205_R108_T32TMT_20240601T1.tif", first, descriptions=S2_BANDS)
    _write(tmp_path / "S2A_MSIL1C_20240611T103031_N0205_R108_T32TMT_20240611T1.tif", second, descriptions=S2_BANDS)
    parcels = gpd.GeoDataFrame({"parcel_id": ["few", "broken", "one"]},
                               geometry=[_px(10.3, 10.3, 12.7, 12.7), _px(30.3, 30.3, 31.7, 31.7),
                                         _px(40.3, 40.3, 41.7, 41.7)], crs=CRS)
    with caplog.at_level(logging.WARNING):
        ps = extract_pixel_sets(parcels, tmp_path, region["weather"],
                                settings=ExtractionSettings(sampling=PixelSampling(max_pixels=16)))
    assert ps.status.tolist() == ["ok", "invalid_values", "ok"]
    bad = {(10, 10), (10, 11), (11, 10), (12, 12)}
    clear = [(r, c) for r in range(10, 13) for c in range(10, 13) if (r, c) not in bad]
    got = sorted(map(tuple, ps.pixels[0, 0][:, ps.pixel_mask[0, 0]].T.tolist()))
    assert got == sorted(tuple(first[:, r, c].astype(int).tolist()) for r, c in clear)
    assert ps.pixel_mask[0, 1].sum() == 9 and ps.pixel_mask[2, 1].sum() == 3
    assert not ps.date_mask[1].any()
    name = "S2A_MSIL1C_20240601T103031_N0205_R108_T32TMT_20240601T1"
    assert f"{name} ({tmp_path / name}.tif): pixels under the parcels hold values" in caplog.text
    assert "(1 above 65535, 1 negative, 6 not finite)" in caplog.text and "(5 saturated (65535))" in caplog.text
    assert "3 parcels of GeoDataFrame have pixel values that are no reflectance" in caplog.text
    assert "few (4 of 18), broken (8 of 8), one (1 of 8)" in caplog.text


def test_a_float_scene_of_ordinary_values_reads_as_its_uint16_twin(region, tmp_path):
    rng = np.random.default_rng(32)
    cube = rng.integers(1100, 9000, size=(10, SIZE, SIZE), dtype=np.uint16)
    name = "S2A_MSIL1C_20240601T103031_N0205_R108_T32TMT_20240601T1.tif"
    _write(tmp_path / "u" / name, cube, descriptions=S2_BANDS)
    _write(tmp_path / "f" / name, cube.astype(np.float32), descriptions=S2_BANDS)
    parcels = gpd.GeoDataFrame({"parcel_id": ["a"]}, geometry=[_px(5.3, 5.3, 20.7, 20.7)], crs=CRS)
    as_int = extract_pixel_sets(parcels, tmp_path / "u", region["weather"])
    as_float = extract_pixel_sets(parcels, tmp_path / "f", region["weather"])
    assert np.array_equal(as_int.pixels, as_float.pixels) and np.array_equal(as_int.pixel_mask, as_float.pixel_mask)
