"""The ``thermocrop gdd`` command on small files written here; GDD worked out by hand."""

from __future__ import annotations

import numpy as np
import pytest
import rasterio
from rasterio.transform import from_origin
from shapely.geometry import box

from thermocrop.cli.main import EXIT_INPUT, EXIT_OUTPUT, main
from thermocrop.core.scenes.bands import S2_BANDS

gpd = pytest.importorskip("geopandas")

CRS = "EPSG:32632"
X0, Y0 = 600000.0, 5300000.0


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    root = tmp_path_factory.mktemp("gdd")
    parcels = gpd.GeoDataFrame(
        {"lpis": ["a", "b"], "crop": ["corn", "meadow"]},
        geometry=[box(X0, Y0 - 100, X0 + 100, Y0), box(X0 + 200, Y0 - 300, X0 + 300, Y0 - 200)],
        crs=CRS,
    ).to_crs("EPSG:4326")
    parcels.to_file(root / "parcels.gpkg", driver="GPKG")
    # Autumn 2020 to summer 2021: tmin -2, tmax 10 before New Year (paper rule: (10 + 0) / 2 = 5
    # degree days), tmin 4, tmax 16 from Jan 1 (10 degree days).
    days = np.arange("2020-09-01", "2021-08-01", dtype="datetime64[D]")
    rows = [f"{d},{-2 if d < np.datetime64('2021-01-01') else 4},{10 if d < np.datetime64('2021-01-01') else 16}"
            for d in days]
    (root / "weather.csv").write_text("date,tmin,tmax\n" + "\n".join(rows) + "\n")
    for date in ("20210315", "20210601"):
        path = root / "scenes" / f"S2B_MSIL2A_{date}T103019_N0300_R108_T32TPT_{date}T120000.tif"
        path.parent.mkdir(exist_ok=True)
        with rasterio.open(path, "w", driver="GTiff", width=4, height=4, count=10, dtype="uint16", crs=CRS,
                           transform=from_origin(X0, Y0, 10, 10), nodata=0) as ds:
            ds.write(np.full((10, 4, 4), 1200, np.uint16))
            for i, b in enumerate(S2_BANDS, start=1):
                ds.set_band_description(i, b)
    return root


def test_dates_to_csv_with_an_autumn_season_start(files, tmp_path):
    out = tmp_path / "gdd.csv"
    rc = main(["gdd", "--parcels", str(files / "parcels.gpkg"), "--weather", str(files / "weather.csv"),
               "--dates", "2020-12-31", "2021-01-10", "--season-start", "09-01/-1", "--id-field", "lpis",
               "--out", str(out)])
    assert rc == 0
    table = np.genfromtxt(out, delimiter=",", dtype=None, names=True, encoding="utf-8")
    assert list(table.dtype.names) == ["lpis", "gdd_20201231", "gdd_20210110"]
    # Sep 1 to Dec 31: 122 days x 5; then 10 days x 10.
    assert list(table["lpis"]) == ["a", "b"]
    assert np.allclose(table["gdd_20201231"], 610.0) and np.allclose(table["gdd_20210110"], 710.0)


def test_scene_dates_to_a_geopackage_keeping_the_attributes(files, tmp_path):
    out = tmp_path / "gdd.gpkg"
    rc = main(["gdd", "--parcels", str(files / "parcels.gpkg"), "--weather", str(files / "weather.csv"),
               "--scenes", str(files / "scenes"), "--out", str(out)])
    assert rc == 0
    gdf = gpd.read_file(out)
    assert list(gdf["crop"]) == ["corn", "meadow"] and gdf.crs.to_epsg() == 4326
    # Season from Jan 1 2021: Mar 15 is day 74, Jun 1 day 152 (not a leap year), 10 a day.
    assert np.allclose(gdf["gdd_20210315"], 740.0) and np.allclose(gdf["gdd_20210601"], 1520.0)
    assert main(["gdd", "--parcels", str(files / "parcels.gpkg"), "--weather", str(files / "weather.csv"),
                 "--scenes", str(files / "scenes"), "--out", str(out)]) == EXIT_OUTPUT  # exists: refused


def test_without_dates_the_end_of_the_record(files, tmp_path, capsys):
    out = tmp_path / "season.csv"
    assert main(["gdd", "--parcels", str(files / "parcels.gpkg"), "--weather", str(files / "weather.csv"),
                 "--method", "average", "--t-base", "5", "--out", str(out)]) == 0
    assert "2021-07-31" in capsys.readouterr().out
    table = np.genfromtxt(out, delimiter=",", dtype=None, names=True, encoding="utf-8")
    # Jan 1 to Jul 31 2021: 212 days of max((4 + 16) / 2 - 5, 0) = 5.
    assert np.allclose(table["gdd_20210731"], 1060.0)


def test_dates_outside_the_record_are_an_error_naming_them(files, tmp_path, capsys):
    rc = main(["gdd", "--parcels", str(files / "parcels.gpkg"), "--weather", str(files / "weather.csv"),
               "--dates", "2021-08-03", "--out", str(tmp_path / "x.csv")])
    assert rc == EXIT_INPUT
    assert "2021-08-01 to 2021-08-03" in capsys.readouterr().err
    assert not (tmp_path / "x.csv").exists()


def test_an_earlier_runs_gdd_fields_are_written_empty(files, tmp_path, capsys):
    """GDD of other dates (or another base) from an earlier run would sit beside this run's with
    nothing to tell them apart: they are written empty, the user's fields kept."""
    first = tmp_path / "first.gpkg"
    assert main(["gdd", "--parcels", str(files / "parcels.gpkg"), "--weather", str(files / "weather.csv"),
                 "--dates", "2021-01-10", "2021-03-15", "--out", str(first)]) == 0
    again = tmp_path / "again.gpkg"
    assert main(["gdd", "--parcels", str(first), "--weather", str(files / "weather.csv"), "--t-base", "5",
                 "--dates", "2021-03-15", "--out", str(again)]) == 0
    assert "gdd_20210110 of" in capsys.readouterr().out
    back = gpd.read_file(again)
    assert back["gdd_20210110"].isna().all()
    assert back["gdd_20210315"].notna().all() and list(back["crop"]) == ["corn", "meadow"]
    # base 5 from 1 January to 15 March (74 days): tmin 4 (raised to the base), tmax 16 give
    # (16 + 5) / 2 - 5 = 5.5 degree days a day
    assert np.allclose(back["gdd_20210315"], 5.5 * 74)
