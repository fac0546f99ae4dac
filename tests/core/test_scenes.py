"""Scene discovery and reading on small GeoTIFFs written here: layouts, dates, offsets, SCL."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import rasterio
from rasterio.transform import from_origin
from rasterio.windows import Window

from thermocrop.core.errors import SceneError
from thermocrop.core.scenes.bands import BANDS_10M, BANDS_20M, S2_BANDS
from thermocrop.core.scenes.local import find_scenes
from thermocrop.core.scenes.naming import band_name, date_from_name
from thermocrop.core.scenes.product import decode_threads, decoding_threads
from thermocrop.core.scenes.radiometry import to_reflectance

CRS = "EPSG:32632"
X0, Y0 = 500000.0, 5300000.0


def write_tif(path: Path, data: np.ndarray, res: float = 10.0, descriptions=None, tags=None) -> Path:
    """Write ``data (C, H, W)`` uint16 as a tiled GeoTIFF with nodata 0."""
    path.parent.mkdir(parents=True, exist_ok=True)
    c, h, w = data.shape
    with rasterio.open(path, "w", driver="GTiff", width=w, height=h, count=c, dtype=data.dtype, crs=CRS,
                       transform=from_origin(X0, Y0, res, res), nodata=0) as ds:
        ds.write(data)
        for i, d in enumerate(descriptions or [], start=1):
            ds.set_band_description(i, d)
        if tags:
            ds.update_tags(**tags)
    return path


def bands_cube(h: int = 8, w: int = 8, base: int = 2000) -> np.ndarray:
    """(10, h, w) DNs, band c holds base + 100 c + pixel index."""
    pix = np.arange(h * w, dtype=np.uint16).reshape(h, w)
    return np.stack([base + 100 * c + pix for c in range(10)]).astype(np.uint16)


def test_band_names_from_descriptions_tokens_and_aliases():
    assert band_name("B4, central wavelength 665 nm") == "B04"
    assert band_name("B8A") == "B8A"
    assert band_name("b11") == "B11"
    assert band_name("nir08") == "B8A"
    assert band_name("SCL") == "SCL"
    assert band_name("red") == "B04"
    assert band_name("elevation") is None


def test_dates_from_names_including_leap_day():
    assert date_from_name("S2A_MSIL2A_20170615T101031_N0205_R022_T33UVP_20170620T101030") == np.datetime64("2017-06-15")
    assert date_from_name("S2A_31UFU_20240229_0_L2A") == np.datetime64("2024-02-29")
    # 2023 is not a leap year: the impossible date is skipped, the next valid one used.
    assert date_from_name("x_20230229_y_20230301") == np.datetime64("2023-03-01")
    assert date_from_name("scene") is None


def test_multiband_file_with_baseline_offset_and_scl_sidecar(tmp_path):
    name = "S2B_MSIL2A_20220615T103029_N0400_R108_T32TMT_20220615T140000"
    write_tif(tmp_path / f"{name}.tif", bands_cube(), descriptions=S2_BANDS)
    scl = np.full((1, 8, 8), 4, dtype=np.uint8)
    scl[0, :2, :] = 9
    write_tif(tmp_path / f"{name}_SCL.tif", scl, descriptions=["SCL"])
    scenes = find_scenes(tmp_path)
    assert len(scenes) == 1
    (product,) = scenes[0].products
    assert scenes[0].date == np.datetime64("2022-06-15")
    assert product.level == "L2A" and product.offset == -1000
    assert product.scl is not None and product.scl.path.endswith("_SCL.tif")
    with product.open() as reader:
        dn, scl_read = reader.read(Window(0, 0, 8, 8))
    values, valid = to_reflectance(dn, product.offset, scl_read)
    # Band B04 is the third band: 2000 + 200 + pixel index - 1000.
    assert values[2, 3, 5] == 2000 + 200 + (3 * 8 + 5) - 1000
    assert not valid[:2].any() and valid[2:].all()


def test_old_baseline_has_no_offset_and_override_wins(tmp_path):
    name = "S2A_MSIL1C_20190510T103031_N0207_R108_T32TMT_20190510T124000"
    write_tif(tmp_path / f"{name}.tif", bands_cube(), descriptions=S2_BANDS)
    (scene,) = find_scenes(tmp_path)
    assert scene.products[0].offset == 0 and scene.level == "L1C" and scene.products[0].scl is None
    (scene,) = find_scenes(tmp_path, offset=-1000)
    assert scene.products[0].offset == -1000


def test_offset_and_date_from_gdal_metadata(tmp_path):
    write_tif(tmp_path / "tile.tif", bands_cube(), descriptions=S2_BANDS,
              tags={"ACQUISITION_DATE": "2023-07-01T10:20:00", "BOA_ADD_OFFSET": "-1000"})
    (scene,) = find_scenes(tmp_path / "tile.tif")
    assert scene.date == np.datetime64("2023-07-01")
    assert scene.products[0].offset == -1000


def test_per_band_files_20m_resampled_bilinearly(tmp_path):
    folder = tmp_path / "S2A_31UFU_20240229_0_L2A"
    h10 = 16
    for i, b in enumerate(BANDS_10M):
        write_tif(folder / f"{b}.tif", np.full((1, h10, h10), 1000 + i, dtype=np.uint16))
    # 20 m bands: a ramp linear in x and y, so that bilinear interpolation is exact inside.
    h20 = h10 // 2
    xs = X0 + 20 * (np.arange(h20) + 0.5)
    ys = Y0 - 20 * (np.arange(h20) + 0.5)
    ramp = lambda x, y: 2000 + (x - X0) * 2 + (Y0 - y) * 1  # noqa: E731
    grid20 = ramp(xs[None, :], ys[:, None])
    for b in BANDS_20M:
        write_tif(folder / f"{b}.tif", grid20[None].astype(np.uint16), res=20.0)
    (scene,) = find_scenes(tmp_path)
    (product,) = scene.products
    assert scene.date == np.datetime64("2024-02-29") and product.level == "L2A"
    assert product.grid.resolution == 10.0 and product.grid.width == h10
    with product.open() as reader:
        dn, scl = reader.read(Window(0, 0, h10, h10))
    assert scl is None
    xs10 = X0 + 10 * (np.arange(h10) + 0.5)
    ys10 = Y0 - 10 * (np.arange(h10) + 0.5)
    expected = ramp(xs10[None, :], ys10[:, None])
    inner = (slice(2, h10 - 2), slice(2, h10 - 2))
    b05 = S2_BANDS.index("B05")
    np.testing.assert_allclose(dn[b05][inner], expected[inner], atol=1.0)
    assert (dn[S2_BANDS.index("B03")] == 1001).all()


def test_two_products_one_date_make_one_scene(tmp_path):
    a = "S2A_MSIL2A_20230701T103031_N0509_R108_T32TMT_20230701T120000"
    b = "S2A_MSIL2A_20230701T103031_N0509_R108_T32TMT_20230701T130000"
    write_tif(tmp_path / f"{a}.tif", bands_cube(), descriptions=S2_BANDS)
    write_tif(tmp_path / "copy" / f"{b}.tif", bands_cube(), descriptions=S2_BANDS)
    write_tif(tmp_path / "S2A_MSIL2A_20230711T103031_N0509_R108_T32TMT_20230711T120000.tif", bands_cube(),
              descriptions=S2_BANDS)
    scenes = find_scenes([tmp_path, tmp_path / f"{a}.tif"])
    assert [str(s.date) for s in scenes] == ["2023-07-01", "2023-07-11"]
    assert [p.name for p in scenes[0].products] == [a, b]


def test_band_order_for_files_without_descriptions(tmp_path):
    path = write_tif(tmp_path / "S2A_31UFU_20230701_0_L2A.tif", bands_cube())
    with pytest.raises(SceneError, match="band order"):
        find_scenes(path)
    order = list(reversed(S2_BANDS))
    (scene,) = find_scenes(path, band_order=order)
    assert scene.products[0].bands["B02"].index == 10


def test_missing_band_and_missing_date_are_clear_errors(tmp_path):
    write_tif(tmp_path / "a" / "S2A_31UFU_20230701_0_L2A.tif", bands_cube()[:9], descriptions=S2_BANDS[:9])
    with pytest.raises(SceneError, match="lacks bands B12"):
        find_scenes(tmp_path / "a")
    write_tif(tmp_path / "b" / "tile.tif", bands_cube(), descriptions=S2_BANDS)
    with pytest.raises(SceneError, match="acquisition date"):
        find_scenes(tmp_path / "b")
    with pytest.raises(SceneError, match="does not exist"):
        find_scenes(tmp_path / "nothing")


def test_level_filter_and_preference(tmp_path):
    write_tif(tmp_path / "S2A_MSIL1C_20230701T103031_N0509_R108_T32TMT_20230701T120000.tif", bands_cube(),
              descriptions=S2_BANDS)
    write_tif(tmp_path / "S2A_MSIL2A_20230711T103031_N0509_R108_T32TMT_20230711T120000.tif", bands_cube(),
              descriptions=S2_BANDS)
    assert [s.level for s in find_scenes(tmp_path)] == ["L2A"]
    assert [s.level for s in find_scenes(tmp_path, level="L1C")] == ["L1C"]


def test_decode_threads_follow_gdal_then_omp_then_the_cpus_this_process_may_use(monkeypatch):
    import os

    monkeypatch.delenv("GDAL_NUM_THREADS", raising=False)
    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    assert decode_threads() == str(cpus)
    monkeypatch.setenv("OMP_NUM_THREADS", "1")  # what Dask sets in each worker process
    assert decode_threads() == "1"
    monkeypatch.setenv("GDAL_NUM_THREADS", "ALL_CPUS")  # the user's own GDAL setting wins
    assert decode_threads() == "ALL_CPUS"
    # The setting holds inside the environment only, and what was there before comes back.
    monkeypatch.delenv("GDAL_NUM_THREADS")
    with rasterio.Env(GDAL_NUM_THREADS="3"):
        with decoding_threads():
            assert rasterio.env.get_gdal_config("GDAL_NUM_THREADS", normalize=False) == "1"
            with decoding_threads(2):
                assert rasterio.env.get_gdal_config("GDAL_NUM_THREADS", normalize=False) == "2"
        assert rasterio.env.get_gdal_config("GDAL_NUM_THREADS", normalize=False) == "3"
    assert rasterio.env.get_gdal_config("GDAL_NUM_THREADS", normalize=False) is None


def test_to_reflectance_hand_computed():
    dn = np.array([[0, 500, 1500, 3000], [10, 600, 1600, 0]], dtype=np.uint16)
    scl = np.array([4, 4, 8, 5], dtype=np.uint8)
    values, valid = to_reflectance(dn, -1000, scl)
    assert values.tolist() == [[0, 0, 500, 2000], [0, 0, 600, 0]]
    assert valid.tolist() == [False, True, False, False]


def test_safe_folder_read_from_its_granule_band_files(tmp_path):
    # A trimmed .SAFE (no product metadata GDAL's SENTINEL2 driver accepts): the band files
    # inside the granule are used. The files are GeoTIFFs under .jp2 names; GDAL goes by content.
    safe = tmp_path / "S2B_MSIL2A_20220301T103029_N0400_R108_T32TMT_20220301T140000.SAFE"
    img = safe / "GRANULE" / "L2A_T32TMT_A026000_20220301T103029" / "IMG_DATA"
    for i, b in enumerate(BANDS_10M):
        write_tif(img / "R10m" / f"T32TMT_20220301T103029_{b}_10m.jp2", np.full((1, 8, 8), 3000 + i, np.uint16))
        # The 20 m folder repeats the 10 m bands at 20 m; the finest copy must be used.
        write_tif(img / "R20m" / f"T32TMT_20220301T103029_{b}_20m.jp2", np.full((1, 4, 4), 9, np.uint16), res=20.0)
    for b in BANDS_20M:
        write_tif(img / "R20m" / f"T32TMT_20220301T103029_{b}_20m.jp2", np.full((1, 4, 4), 4000, np.uint16), res=20.0)
    scl = np.full((1, 4, 4), 4, np.uint8)
    scl[0, 0, 0] = 8
    write_tif(img / "R20m" / "T32TMT_20220301T103029_SCL_20m.jp2", scl, res=20.0)
    (scene,) = find_scenes(tmp_path)
    (product,) = scene.products
    assert scene.date == np.datetime64("2022-03-01") and product.level == "L2A" and product.offset == -1000
    assert product.grid.resolution == 10.0
    with product.open() as reader:
        dn, scl_read = reader.read(Window(0, 0, 8, 8))
    values, valid = to_reflectance(dn, product.offset, scl_read)
    assert values[S2_BANDS.index("B03"), 5, 5] == 3001 - 1000
    assert values[S2_BANDS.index("B12"), 5, 5] == 4000 - 1000
    # The cloudy 20 m SCL pixel covers the four 10 m pixels beneath it.
    assert valid.sum() == 64 - 4 and not valid[:2, :2].any()


def _safe_product(root: Path) -> Path:
    """A small L2A .SAFE with just the metadata GDAL's SENTINEL2 driver needs (8 x 8 px tile)."""
    name = "S2A_MSIL2A_20220301T103029_N0400_R108_T32TMT_20220301T140000.SAFE"
    granule = "L2A_T32TMT_A026000_20220301T103029"
    safe = root / name
    img = safe / "GRANULE" / granule / "IMG_DATA"
    entries = []
    for i, b in enumerate(BANDS_10M):
        write_tif(img / "R10m" / f"T32TMT_20220301T103029_{b}_10m.jp2", np.full((1, 8, 8), 3000 + i, np.uint16))
        entries.append(f"R10m/T32TMT_20220301T103029_{b}_10m")
    for i, b in enumerate(BANDS_20M):
        write_tif(img / "R20m" / f"T32TMT_20220301T103029_{b}_20m.jp2",
                  np.full((1, 4, 4), 4000 + i, np.uint16), res=20.0)
        entries.append(f"R20m/T32TMT_20220301T103029_{b}_20m")
    scl = np.full((1, 4, 4), 4, np.uint16)
    scl[0, 3, 3] = 3
    write_tif(img / "R20m" / "T32TMT_20220301T103029_SCL_20m.jp2", scl, res=20.0)
    entries.append("R20m/T32TMT_20220301T103029_SCL_20m")
    files = "".join(f"<IMAGE_FILE>GRANULE/{granule}/IMG_DATA/{e}</IMAGE_FILE>" for e in entries)
    (safe / "MTD_MSIL2A.xml").write_text(
        '<?xml version="1.0" encoding="UTF-8"?>'
        '<n1:Level-2A_User_Product xmlns:n1="https://psd-14.sentinel2.eo.esa.int/PSD/User_Product_Level-2A.xsd">'
        "<n1:General_Info><Product_Info><PRODUCT_START_TIME>2022-03-01T10:30:29.024Z</PRODUCT_START_TIME>"
        f"<PRODUCT_URI>{name}</PRODUCT_URI><PROCESSING_LEVEL>Level-2A</PROCESSING_LEVEL>"
        "<PRODUCT_TYPE>S2MSI2A</PRODUCT_TYPE><PROCESSING_BASELINE>04.00</PROCESSING_BASELINE>"
        '<Query_Options completeSingleTile="true"><PRODUCT_FORMAT>SAFE_COMPACT</PRODUCT_FORMAT></Query_Options>'
        f'<Product_Organisation><Granule_List><Granule imageFormat="JPEG2000">{files}</Granule></Granule_List>'
        "</Product_Organisation></Product_Info></n1:General_Info></n1:Level-2A_User_Product>",
        encoding="utf-8",
    )
    geopos = "".join(
        f'<Size resolution="{r}"><NROWS>{n}</NROWS><NCOLS>{n}</NCOLS></Size>'
        f'<Geoposition resolution="{r}"><ULX>{X0:.0f}</ULX><ULY>{Y0:.0f}</ULY><XDIM>{r}</XDIM><YDIM>-{r}</YDIM>'
        "</Geoposition>"
        for r, n in ((10, 8), (20, 4), (60, 2))
    )
    (safe / "GRANULE" / granule / "MTD_TL.xml").write_text(
        '<?xml version="1.0" encoding="UTF-8"?><n1:Level-2A_Tile_ID xmlns:n1="https://psd-14.sentinel2.eo.esa.int/'
        'PSD/S2_PDI_Level-2A_Tile_Metadata.xsd"><n1:Geometric_Info><Tile_Geocoding>'
        f"<HORIZONTAL_CS_CODE>{CRS}</HORIZONTAL_CS_CODE>{geopos}</Tile_Geocoding></n1:Geometric_Info>"
        "</n1:Level-2A_Tile_ID>",
        encoding="utf-8",
    )
    return safe


def test_safe_folder_through_gdal_sentinel2_driver(tmp_path):
    _safe_product(tmp_path)
    (scene,) = find_scenes(tmp_path)
    (product,) = scene.products
    assert product.bands["B02"].path.startswith("SENTINEL2_L2A:")
    assert product.scl is not None and product.scl.path.startswith("SENTINEL2_L2A:")
    assert scene.date == np.datetime64("2022-03-01") and product.level == "L2A" and product.offset == -1000
    assert product.grid.resolution == 10.0 and product.grid.width == 8
    with product.open() as reader:
        dn, scl = reader.read(Window(0, 0, 8, 8))
    values, valid = to_reflectance(dn, product.offset, scl)
    assert values[S2_BANDS.index("B04"), 0, 0] == 3002 - 1000
    assert values[S2_BANDS.index("B11"), 4, 4] == 4004 - 1000
    # Cloud shadow in the last 20 m SCL pixel masks the 2 x 2 10 m pixels under it.
    assert valid.sum() == 60 and not valid[6:, 6:].any()


def test_zipped_safe_product(tmp_path):
    import shutil

    safe = _safe_product(tmp_path / "unzipped")
    archive = shutil.make_archive(str(tmp_path / "zips" / safe.stem), "zip", root_dir=safe.parent, base_dir=safe.name)
    (scene,) = find_scenes(archive)
    (product,) = scene.products
    assert scene.date == np.datetime64("2022-03-01") and product.offset == -1000
    with product.open() as reader:
        dn, scl = reader.read(Window(0, 0, 8, 8))
    assert dn[S2_BANDS.index("B08"), 7, 7] == 3003 and scl[7, 7] == 3


def test_per_band_files_named_after_stac_assets_found_by_glob(tmp_path):
    # Earth Search assets saved under their STAC names: red.tif, nir08.tif, scl.tif ...
    assets = {"B02": "blue", "B03": "green", "B04": "red", "B08": "nir", "B05": "rededge1", "B06": "rededge2",
              "B07": "rededge3", "B8A": "nir08", "B11": "swir16", "B12": "swir22"}
    folder = tmp_path / "S2B_32TMT_20230805_0_L2A"
    for i, b in enumerate(S2_BANDS):
        res, size = (10.0, 8) if b in BANDS_10M else (20.0, 4)
        write_tif(folder / f"{assets[b]}.tif", np.full((1, size, size), 1500 + 10 * i, np.uint16), res=res)
    scl = np.full((1, 4, 4), 4, np.uint8)
    scl[0, 1, 2] = 10  # cirrus over 10 m rows 2-3, columns 4-5
    write_tif(folder / "scl.tif", scl, res=20.0)
    (scene,) = find_scenes(str(tmp_path / "*" / "*.tif"))
    (product,) = scene.products
    assert scene.date == np.datetime64("2023-08-05") and product.name == folder.name
    assert Path(product.bands["B8A"].path).name == "nir08.tif" and Path(product.scl.path).name == "scl.tif"
    with product.open() as reader:
        dn, scl_read = reader.read(Window(0, 0, 8, 8))
    values, valid = to_reflectance(dn, product.offset, scl_read)
    assert product.offset == 0 and values[:, 0, 0].tolist() == [1500 + 10 * i for i in range(10)]
    assert valid.sum() == 60 and not valid[2:4, 4:6].any()


def test_scl_as_a_band_of_the_multiband_file(tmp_path):
    cube = np.concatenate([bands_cube(), np.full((1, 8, 8), 5, np.uint16)])
    cube[10, 7, 0] = 8  # medium-probability cloud
    cube[10, 0, 7] = 1  # defective
    write_tif(tmp_path / "S2A_MSIL2A_20230615T103031_N0509_R108_T32TMT_20230615T120000.tif", cube,
              descriptions=list(S2_BANDS) + ["SCL"])
    (scene,) = find_scenes(tmp_path)
    (product,) = scene.products
    assert product.scl.index == 11 and product.level == "L2A"
    with product.open() as reader:
        dn, scl = reader.read(Window(0, 0, 8, 8))
    values, valid = to_reflectance(dn, product.offset, scl)
    assert (~valid).sum() == 2 and not valid[7, 0] and not valid[0, 7]
    assert values[9, 4, 4] == 2000 + 900 + 36 - 1000


def test_nodata_other_than_zero_is_masked(tmp_path):
    cube = bands_cube()
    cube[3, 5, 6] = 65535
    path = tmp_path / "S2A_31UFU_20230701_0_L2A.tif"
    path.parent.mkdir(parents=True, exist_ok=True)
    with rasterio.open(path, "w", driver="GTiff", width=8, height=8, count=10, dtype="uint16", crs=CRS,
                       transform=from_origin(X0, Y0, 10, 10), nodata=65535) as ds:
        ds.write(cube)
        for i, d in enumerate(S2_BANDS, start=1):
            ds.set_band_description(i, d)
    (scene,) = find_scenes(path)
    with scene.products[0].open() as reader:
        dn, _ = reader.read(Window(0, 0, 8, 8))
    _, valid = to_reflectance(dn, 0)
    assert valid.sum() == 63 and not valid[5, 6]


def test_float_rasters_of_digital_numbers_read_and_of_fractions_refused(tmp_path):
    write_tif(tmp_path / "dn" / "S2A_31UFU_20230701_0_L2A.tif", bands_cube().astype(np.float32),
              descriptions=S2_BANDS)
    (scene,) = find_scenes(tmp_path / "dn")
    with scene.products[0].open() as reader:
        dn, _ = reader.read(Window(0, 0, 8, 8))
    assert dn[1, 2, 3] == 2000 + 100 + 19
    fractions = (bands_cube() / 10000.0).astype(np.float32)
    bad = write_tif(tmp_path / "frac" / "S2A_31UFU_20230701_0_L2A.tif", fractions, descriptions=S2_BANDS)
    with pytest.raises(SceneError, match=r"S2A_31UFU_20230701_0_L2A\.tif holds floating-point reflectance"):
        find_scenes(bad)


@pytest.mark.parametrize("baseline, offset", [("04.00", -1000), ("05.09", -1000), ("03.01", 0)])
def test_offset_from_processing_baseline_metadata(tmp_path, baseline, offset):
    write_tif(tmp_path / "S2A_31UFU_20230701_0_L2A.tif", bands_cube(), descriptions=S2_BANDS,
              tags={"PROCESSING_BASELINE": baseline})
    (scene,) = find_scenes(tmp_path)
    assert scene.products[0].offset == offset
