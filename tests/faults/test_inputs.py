"""Fault cases on the input side: implausible temperatures, parcels without a usable CRS, scenes
of two seasons, numeric options out of range, runs that classify nothing, and checks made
before any scene is read. Files are small and written here."""

from __future__ import annotations

import argparse
import logging
import time
from pathlib import Path

import numpy as np
import pytest
import rasterio
from rasterio.transform import from_origin
from shapely.geometry import Point, box

from thermocrop.cli import main as cli
from thermocrop.cli.main import main
from thermocrop.core.errors import InputError, SceneError, WeatherError
from thermocrop.core.scenes.bands import S2_BANDS
from thermocrop.core.settings import ExtractionSettings, PixelSampling

gpd = pytest.importorskip("geopandas")
xr = pytest.importorskip("xarray")

CRS = "EPSG:32632"
X0, Y0 = 600000.0, 5400000.0  # about 48.7 N, 10.4 E
LON, LAT = 10.36, 48.74


def _scene(folder: Path, day: str, value: int = 2500) -> None:
    compact = day.replace("-", "")
    path = folder / f"S2A_MSIL1C_{compact}T103021_N0205_R108_T32UPU_{compact}T103021.tif"
    path.parent.mkdir(parents=True, exist_ok=True)
    with rasterio.open(path, "w", driver="GTiff", width=20, height=20, count=10, dtype="uint16", crs=CRS,
                       transform=from_origin(X0, Y0, 10, 10), nodata=0) as ds:
        ds.write(np.full((10, 20, 20), value, np.uint16))
        for i, b in enumerate(S2_BANDS, start=1):
            ds.set_band_description(i, b)


def _parcels(path: Path, crs=CRS) -> Path:
    gpd.GeoDataFrame({"parcel_id": ["a", "b"]},
                     geometry=[box(X0 + 10, Y0 - 90, X0 + 90, Y0 - 10), box(X0 + 110, Y0 - 190, X0 + 190, Y0 - 110)],
                     crs=crs).to_file(path)
    return path


def _weather_nc(path: Path, tmin_c, tmax_c, *, units="degC", lat_shift=0.0, year=2021) -> Path:
    days = np.arange(np.datetime64(f"{year}-01-01"), np.datetime64(f"{year}-12-31") + 1)
    lat = np.array([LAT - 0.1, LAT, LAT + 0.1]) + lat_shift
    lon = np.array([LON - 0.1, LON, LON + 0.1])
    shape = (days.size, 3, 3)
    attrs = {"units": units} if units else {}
    ds = xr.Dataset({"tn": (("time", "latitude", "longitude"), np.broadcast_to(np.asarray(tmin_c, np.float32)[..., None, None] if np.ndim(tmin_c) else np.float32(tmin_c), shape).astype(np.float32), attrs),
                     "tx": (("time", "latitude", "longitude"), np.broadcast_to(np.asarray(tmax_c, np.float32)[..., None, None] if np.ndim(tmax_c) else np.float32(tmax_c), shape).astype(np.float32), attrs)},
                    coords={"time": days.astype("datetime64[ns]"), "latitude": lat, "longitude": lon})
    ds.to_netcdf(path)
    return path


def _csv(path: Path, rows) -> Path:
    path.write_text("date,tmin,tmax\n" + "".join(f"{d},{lo},{hi}\n" for d, lo, hi in rows), encoding="utf-8")
    return path


def _year(year=2021):
    return np.arange(np.datetime64(f"{year}-01-01"), np.datetime64(f"{year}-12-31") + 1)


# -- item 7: temperatures -------------------------------------------------------------------


def test_kelvin_without_units_is_converted_and_said(tmp_path, caplog):
    from thermocrop.core.thermal.weather import read_daily_temperature

    seasonal = 5 + 10 * np.sin(np.arange(365) / 365 * 2 * np.pi)
    celsius = _weather_nc(tmp_path / "c.nc", seasonal - 4, seasonal + 4)
    kelvin = _weather_nc(tmp_path / "k.nc", seasonal - 4 + 273.15, seasonal + 4 + 273.15, units=None)
    args = ([X0 + 50], [Y0 - 50], CRS, "2021-01-01", "2021-12-31")
    with caplog.at_level(logging.WARNING, logger="thermocrop.core.thermal.weather"):
        from_k = read_daily_temperature(kelvin, *args)
    from_c = read_daily_temperature(celsius, *args)
    np.testing.assert_allclose(from_k.tmin, from_c.tmin, atol=1e-3)
    np.testing.assert_allclose(from_k.tmax, from_c.tmax, atol=1e-3)
    text = caplog.text
    assert "variable 'tn'" in text and "Kelvin" in text
    assert f"{seasonal.min() - 4 + 273.15:.1f}" in text  # the values seen


def test_kelvin_labelled_as_celsius_is_refused_naming_the_values(tmp_path):
    from thermocrop.core.thermal.weather import read_daily_temperature

    path = _weather_nc(tmp_path / "w.nc", 275.0, 290.0, units="degC")
    with pytest.raises(WeatherError, match=r"variable 'tn'.*units 'degC'.*275\.0 to 275\.0 degrees C"):
        read_daily_temperature(path, [X0 + 50], [Y0 - 50], CRS, "2021-03-01", "2021-03-31")


def test_swapped_netcdf_variables_are_refused(tmp_path):
    from thermocrop.core.thermal.weather import read_daily_temperature

    path = _weather_nc(tmp_path / "w.nc", 12.0, 2.0)
    with pytest.raises(WeatherError, match=r"variable 'tn'.*above.*look swapped.*--tmin-var tx --tmax-var tn"):
        read_daily_temperature(path, [X0 + 50], [Y0 - 50], CRS, "2021-03-01", "2021-03-31")


def test_swapped_csv_columns_are_refused_and_a_few_odd_days_only_warned(tmp_path, caplog):
    from thermocrop.core.thermal.weather import read_daily_temperature

    swapped = _csv(tmp_path / "s.csv", [(d, 12.0, 2.0) for d in _year()])
    with pytest.raises(WeatherError, match=r"column 'tmin'.*100% of the days.*swapped.*--tmin-var tmax"):
        read_daily_temperature(swapped, [0.0], [0.0], CRS, "2021-01-01", "2021-06-30")
    odd = _csv(tmp_path / "o.csv", [(d, 12.0 if str(d) == "2021-02-03" else 2.0, 10.0) for d in _year()])
    with caplog.at_level(logging.WARNING, logger="thermocrop.core.thermal.weather"):
        weather = read_daily_temperature(odd, [0.0], [0.0], CRS, "2021-01-01", "2021-06-30")
    assert "2021-02-03" in caplog.text and weather.tmin[0, 33] == 12.0


def test_conflicting_duplicate_csv_days_are_refused_naming_lines(tmp_path):
    from thermocrop.core.thermal.weather import read_daily_temperature

    rows = [(d, 2.0, 12.0) for d in _year()]
    same = _csv(tmp_path / "same.csv", rows + [(np.datetime64("2021-03-05"), 2.0, 12.0)])
    assert read_daily_temperature(same, [0.0], [0.0], CRS, "2021-03-01", "2021-03-31").tmin.shape == (1, 31)
    clash = _csv(tmp_path / "clash.csv", rows + [(np.datetime64("2021-03-05"), 5.0, 12.0)])
    # 2021-03-05 is line 65 (header, then Jan 1 on line 2); the repeat is the last line, 367.
    with pytest.raises(WeatherError, match=r"2021-03-05 on lines 65 \(2/12\), 367 \(5/12\)"):
        read_daily_temperature(clash, [0.0], [0.0], CRS, "2021-03-01", "2021-03-31")


def test_a_missing_value_written_as_a_number_is_refused(tmp_path):
    from thermocrop.core.thermal.weather import read_daily_temperature

    rows = [(d, -999 if str(d) == "2021-03-10" else 2.0, 12.0) for d in _year()]
    with pytest.raises(WeatherError, match=r"line 70 \(2021-03-10: -999\).*left empty"):
        read_daily_temperature(_csv(tmp_path / "w.csv", rows), [0.0], [0.0], CRS, "2021-03-01", "2021-03-31")


def test_the_gap_warning_names_the_dates(tmp_path, caplog):
    from thermocrop.core.thermal.gdd import gdd_at_points

    rows = [(d, "" if "2021-03-01" <= str(d) <= "2021-03-10" else 2.0, 12.0) for d in _year()]
    with caplog.at_level(logging.WARNING, logger="thermocrop.core.thermal.gdd"):
        gdd = gdd_at_points(_csv(tmp_path / "w.csv", rows), [0.0], [0.0], CRS, ["2021-05-01"],
                            parcel_ids=["a"])
    assert np.isnan(gdd).all()
    assert "tmin missing from 2021-03-01 to 2021-03-10 (10 days)" in caplog.text and ": a" in caplog.text


# -- item 8: CRS ----------------------------------------------------------------------------


def test_a_geopackage_with_an_undefined_crs_is_refused(tmp_path, capsys):
    from thermocrop.core.parcels import crs_problem, load_parcels

    path = _parcels(tmp_path / "nocrs.gpkg", crs=None)  # GeoPackage srs_id 0
    assert gpd.read_file(path).crs is not None  # GDAL reports "Undefined geographic SRS"
    with pytest.raises(InputError, match=r"nocrs.gpkg has an undefined coordinate reference system"):
        load_parcels(path)
    assert crs_problem('LOCAL_CS["Undefined Cartesian SRS",UNIT["metre",1]]')
    assert crs_problem(None) and crs_problem("EPSG:32632") is None and crs_problem("EPSG:4326") is None
    _scene(tmp_path / "scenes", "2021-05-01")
    rc = main(["classify", "--parcels", str(path), "--scenes", str(tmp_path / "scenes"), "--weather",
               str(_csv(tmp_path / "w.csv", [(d, 2, 12) for d in _year()])), "--out", str(tmp_path / "o.gpkg")])
    assert rc == cli.EXIT_INPUT and "undefined coordinate reference system" in capsys.readouterr().err
    assert not (tmp_path / "o.gpkg").exists()


# -- item 9: seasons ------------------------------------------------------------------------


def test_scenes_of_two_seasons_are_refused_naming_the_years(tmp_path):
    from thermocrop.core.scenes.local import find_scenes
    from thermocrop.core.scenes.seasons import select_season
    from thermocrop.core.thermal.gdd import SeasonStart

    for day in ("2017-04-01", "2017-06-01", "2018-04-01", "2018-05-01", "2018-06-01"):
        _scene(tmp_path / "s", day)
    scenes = find_scenes(tmp_path / "s")
    with pytest.raises(SceneError, match=r"2 seasons.*2017 \(2 dates, 2017-04-01 to 2017-06-01\) and 2018 "
                                         r"\(3 dates.*--season 2018"):
        select_season(scenes)
    assert [str(s.date) for s in select_season(scenes, season=2017)] == ["2017-04-01", "2017-06-01"]
    with pytest.raises(SceneError, match="No scene falls in season 2019"):
        select_season(scenes, season=2019)
    # A winter-crop season from the autumn before: one season counted from 1 September.
    autumn = tmp_path / "autumn"
    for day in ("2016-10-05", "2017-03-01", "2017-07-01"):
        _scene(autumn, day)
    found = find_scenes(autumn)
    assert len(select_season(found, SeasonStart.parse("09-01/-1"))) == 3
    with pytest.raises(SceneError, match=r"2016 \(1 dates.*and 2017.*09-01/-1"):
        select_season(found, SeasonStart.parse("01-01"))


def test_the_cli_refuses_mixed_seasons_and_takes_season(tmp_path, capsys):
    for day in ("2020-05-01", "2021-05-01"):
        _scene(tmp_path / "s", day)
    parcels = _parcels(tmp_path / "p.gpkg")
    days = np.arange(np.datetime64("2020-01-01"), np.datetime64("2021-12-31") + 1)
    weather = _csv(tmp_path / "w.csv", [(d, 2, 12) for d in days])
    common = ["gdd", "--parcels", str(parcels), "--weather", str(weather), "--scenes", str(tmp_path / "s")]
    assert main(common + ["--out", str(tmp_path / "a.csv")]) == cli.EXIT_INPUT
    assert "2020 (1 dates" in capsys.readouterr().err and not (tmp_path / "a.csv").exists()
    assert main(common + ["--season", "2021", "--out", str(tmp_path / "b.csv")]) == 0
    table = np.genfromtxt(tmp_path / "b.csv", delimiter=",", dtype=None, names=True, encoding="utf-8")
    assert table.dtype.names == ("parcel_id", "gdd_20210501")
    assert np.allclose(table["gdd_20210501"], 7.0 * 121)  # Jan 1 to May 1 2021 at (12 + 2) / 2


# -- item 10: numeric options ---------------------------------------------------------------


BAD_OPTIONS = [
    ["classify", "--chunk-size", "-5"], ["classify", "--chunk-size", "0"], ["classify", "--min-pixels", "0"],
    ["classify", "--offset", "1e9"], ["classify", "--season", "18"],
    ["extract", "--max-pixels", "0"], ["extract", "--max-pixels", "5000"], ["extract", "--seed", "-1"],
    ["extract", "--min-valid-fraction", "1.5"], ["extract", "--min-valid-fraction", "nan"],
    ["extract", "--chunk-size", "2.5"], ["extract", "--season-start", "13-01"],
    ["gdd", "--t-base", "nan"], ["gdd", "--t-cap", "inf"], ["gdd", "--t-base", "20", "--t-cap", "10"],
    ["gdd", "--max-distance-km", "0"], ["gdd", "--max-distance-km", "-3"], ["gdd", "--dates", "2021-02-30"],
    ["train", "--epochs", "0"], ["train", "--batch-size", "-1"], ["train", "--lr", "0"], ["train", "--lr", "nan"],
    ["train", "--sample-dates", "0"], ["train", "--device", "gpu"],
    ["evaluate", "--seed", "-3"], ["experiment", "--jobs", "0"], ["experiment", "--steps-per-epoch", "0"],
    ["synth", "--parcels", "3"], ["synth", "--size", "-10"], ["synth", "--year", "99999"],
]
REQUIRED = {
    "classify": ["--parcels", "p", "--scenes", "s", "--weather", "w", "--out", "o"],
    "extract": ["--parcels", "p", "--scenes", "s", "--weather", "w", "--out", "o"],
    "gdd": ["--parcels", "p", "--weather", "w", "--out", "o"],
    "train": ["--data", "d", "--out", "o"],
    "evaluate": ["--model", "m", "--data", "d"],
    "experiment": ["--regions", "r", "--out", "o"],
    "synth": ["--region", "FR2", "--out", "o"],
}


@pytest.mark.parametrize("argv", BAD_OPTIONS, ids=[" ".join(a) for a in BAD_OPTIONS])
def test_numeric_options_out_of_range_are_usage_errors(argv, tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)  # nothing may be created, here or anywhere
    with pytest.raises(SystemExit) as info:
        main([argv[0]] + REQUIRED[argv[0]] + argv[1:])
    assert info.value.code == cli.EXIT_USAGE
    err = capsys.readouterr().err
    assert argv[-2] in err or "--t-cap" in err
    assert list(tmp_path.iterdir()) == []


def test_toolbox_and_command_line_share_the_ranges():
    from thermocrop.cli.options import bounded
    from thermocrop.core.limits import LIMITS

    for name, limit in LIMITS.items():
        parse = bounded(name)
        assert parse(str(limit.high)) == limit.high
        with pytest.raises(argparse.ArgumentTypeError):
            parse(str(limit.high + 1))


# -- item 11: nothing classified, exit code and summary ---------------------------------------


def test_a_weather_grid_far_away_classifies_nothing_and_exits_4(tmp_path, capsys):
    _scene(tmp_path / "s", "2021-05-01")
    _scene(tmp_path / "s", "2021-06-01")
    parcels = _parcels(tmp_path / "p.gpkg")
    weather = _weather_nc(tmp_path / "far.nc", 2.0, 12.0, lat_shift=20.0)
    out = tmp_path / "out.gpkg"
    rc = main(["classify", "--parcels", str(parcels), "--scenes", str(tmp_path / "s"), "--weather", str(weather),
               "--out", str(out)])
    err = capsys.readouterr().err
    assert rc == cli.EXIT_NOTHING and "2 parcels: 2 no_weather (no usable temperatures" in err
    assert not out.exists()


def test_a_point_layer_classifies_nothing_and_exits_4(tmp_path, capsys):
    _scene(tmp_path / "s", "2021-05-01")
    parcels = tmp_path / "points.gpkg"
    gpd.GeoDataFrame({"parcel_id": ["a", "b"]}, geometry=[Point(X0 + 50, Y0 - 50), Point(X0 + 150, Y0 - 150)],
                     crs=CRS).to_file(parcels)
    rc = main(["classify", "--parcels", str(parcels), "--scenes", str(tmp_path / "s"), "--weather",
               str(_csv(tmp_path / "w.csv", [(d, 2, 12) for d in _year()])), "--out", str(tmp_path / "o.gpkg")])
    assert rc == cli.EXIT_NOTHING and "2 invalid_geometry" in capsys.readouterr().err


# -- item 14: checked before any scene is read ------------------------------------------------


@pytest.mark.parametrize("problem", ["missing weather", "kelvin as celsius", "damaged model", "no id field"])
def test_problems_are_found_before_any_scene_is_read(problem, tmp_path, capsys, monkeypatch):
    from thermocrop.core import extract
    from thermocrop.core.scenes import product as scenes

    def never(*args, **kwargs):
        raise AssertionError("a scene was read before the inputs were checked")

    monkeypatch.setattr(extract, "_read_chunk", never)
    monkeypatch.setattr(scenes.ProductReader, "read", never)
    _scene(tmp_path / "s", "2021-05-01")
    weather = _weather_nc(tmp_path / "w.nc", 2.0, 12.0)
    argv = ["classify", "--parcels", str(_parcels(tmp_path / "p.gpkg")), "--scenes", str(tmp_path / "s"),
            "--out", str(tmp_path / "o.gpkg")]
    if problem == "missing weather":
        argv += ["--weather", str(tmp_path / "nope.nc")]
    elif problem == "kelvin as celsius":
        argv += ["--weather", str(_weather_nc(tmp_path / "k.nc", 275.0, 290.0))]
    elif problem == "damaged model":
        (tmp_path / "m.tcm").write_bytes(b"\x10\x00\x00\x00\x00\x00\x00\x00{not json}")
        argv += ["--weather", str(weather), "--model", str(tmp_path / "m.tcm")]
    else:
        argv += ["--weather", str(weather), "--id-field", "lpis_id"]
    assert main(argv) == cli.EXIT_INPUT
    err = capsys.readouterr().err
    assert {"missing weather": "nope.nc does not exist", "kelvin as celsius": "units 'degC'",
            "damaged model": "m.tcm", "no id field": "no id field 'lpis_id'"}[problem] in err


# -- smaller: null geometries, memory ------------------------------------------------------


def test_null_geometries_make_no_library_noise(tmp_path, capfd, caplog):
    from thermocrop.core.parcels import load_parcels

    path = tmp_path / "nulls.gpkg"
    gpd.GeoDataFrame({"parcel_id": ["a", "b", "c"]}, geometry=[box(X0, Y0 - 50, X0 + 50, Y0), None, None],
                     crs=CRS).to_file(path)
    with caplog.at_level(logging.DEBUG):
        table = load_parcels(path)
    assert table.status.tolist() == ["", "invalid_geometry", "invalid_geometry"]
    assert "hGeom" not in caplog.text and "hGeom" not in "".join(capfd.readouterr())
    assert "2 parcels have unusable geometries" in caplog.text


def test_chunk_buffers_follow_the_pixels_parcels_cover(tmp_path, monkeypatch):
    from thermocrop.core import extract
    from thermocrop.core.extract import extract_pixel_sets, iter_chunks
    from thermocrop.core.parcels import load_parcels
    from thermocrop.core.scenes.local import find_scenes

    for k, day in enumerate(("2021-05-01", "2021-06-01")):
        _scene(tmp_path / "s", day, value=2000 + 100 * k)
    # A field of 64 pixel centres and two of one pixel each.
    gpd.GeoDataFrame({"parcel_id": ["big", "t1", "t2"]},
                     geometry=[box(X0 + 10, Y0 - 90, X0 + 90, Y0 - 10), box(X0 + 101, Y0 - 109, X0 + 109, Y0 - 101),
                               box(X0 + 121, Y0 - 129, X0 + 129, Y0 - 121)], crs=CRS).to_file(tmp_path / "p.gpkg")
    weather = _csv(tmp_path / "w.csv", [(d, 2, 12) for d in _year()])
    whole = extract_pixel_sets(tmp_path / "p.gpkg", tmp_path / "s", weather,
                               settings=ExtractionSettings(sampling=PixelSampling(max_pixels=16)))
    settings = ExtractionSettings(sampling=PixelSampling(max_pixels=16, scl_invalid=()))
    table = load_parcels(tmp_path / "p.gpkg")
    # Room for two one-slot parcels (2 dates x 10 bands x 2 bytes each) per dense array.
    monkeypatch.setattr(extract, "DENSE_BYTES", 2 * 1 * 2 * 10 * 2)
    groups = list(iter_chunks(table, find_scenes(tmp_path / "s"), weather, settings, (), {}, 100))
    shapes = {tuple(table.parcel_ids[idx]): ps.pixels.shape for idx, ps in groups}
    # Grouped by pixel count: the two tiny fields take one slot each, the large one 16.
    assert shapes == {("t1", "t2"): (2, 2, 10, 1), ("big",): (1, 2, 10, 16)}
    for idx, ps in groups:
        s = ps.pixels.shape[3]
        np.testing.assert_array_equal(ps.pixels, whole.pixels[idx][..., :s])
        np.testing.assert_array_equal(ps.pixel_mask, whole.pixel_mask[idx][..., :s])
        assert not whole.pixel_mask[idx][..., s:].any()
        np.testing.assert_array_equal(ps.gdd, whole.gdd[idx])
        assert ps.status.tolist() == whole.status[idx].tolist() == ["ok"] * len(idx)


def test_every_kind_of_failure_has_its_exit_code():
    from thermocrop.core import errors

    cases = {errors.WeatherError("x"): cli.EXIT_INPUT, errors.BundleError("x"): cli.EXIT_INPUT,
             errors.NoUsableParcelsError("x"): cli.EXIT_NOTHING, errors.OutputError("x"): cli.EXIT_OUTPUT,
             errors.ExtractionError("x"): cli.EXIT_FAILED, errors.CancelledError("x"): cli.EXIT_INTERRUPTED,
             KeyboardInterrupt(): cli.EXIT_INTERRUPTED, RuntimeError("x"): cli.EXIT_INTERNAL}
    assert {type(e).__name__: cli.exit_code(e) for e in cases} == {type(e).__name__: c for e, c in cases.items()}
    assert len(set(cases.values())) == 6 and cli.EXIT_USAGE not in cases.values()


def test_the_reliability_page_lists_the_exit_codes_of_the_cli():
    """docs/reliability.md's table of exit codes holds exactly the codes cli/main.py defines."""
    import re

    page = (Path(__file__).resolve().parents[2] / "docs" / "reliability.md").read_text()
    section = page.split("## Exit codes", 1)[1].split("\n## ", 1)[0]
    documented = {int(code) for code in re.findall(r"^\| (\d+) \|", section, re.M)}
    assert documented == set(cli.EXIT_CODES)
    assert (cli.EXIT_USAGE, cli.EXIT_INPUT, cli.EXIT_NOTHING, cli.EXIT_OUTPUT, cli.EXIT_FAILED,
            cli.EXIT_INTERRUPTED) == (2, 3, 4, 5, 6, 130)


# -- messages that point at the real cause: parcel files ---------------------------------------


def _unreadable_parcels(tmp_path: Path) -> dict[str, tuple[Path, object, str]]:
    """Parcel files that cannot be used, with the layer asked for and what the message must say."""
    good = _parcels(tmp_path / "good.gpkg")
    empty = tmp_path / "empty.gpkg"
    gpd.GeoDataFrame({"parcel_id": []}, geometry=[], crs=CRS).to_file(empty, layer="fields_2021")
    not_vector = tmp_path / "notes.gpkg"
    not_vector.write_text("these are not parcels", encoding="utf-8")
    cut = tmp_path / "cut.gpkg"
    cut.write_bytes(b"")
    shp = _parcels(tmp_path / "shape.shp")
    shp.with_suffix(".shx").unlink()
    return {
        "missing": (tmp_path / "nope.gpkg", None,
                    f"Parcel file {tmp_path / 'nope.gpkg'} does not exist (file not found)"),
        "empty layer": (empty, None, f"Parcel layer 'fields_2021' of {empty} has no features"),
        "no such layer": (good, "fields", f"{good} has no layer 'fields'; its layers are 'good'"),
        "not a vector file": (not_vector, None, "GDAL cannot read as a vector layer"),
        "zero bytes": (cut, None, "is empty (0 bytes)"),
        "shapefile without .shx": (shp, None, "lacks its .shx file"),
    }


@pytest.mark.parametrize("case", ["missing", "empty layer", "no such layer", "not a vector file", "zero bytes",
                                  "shapefile without .shx"])
def test_an_unusable_parcel_file_is_named_with_its_cause(case, tmp_path, capsys):
    from thermocrop.core.parcels import load_parcels

    path, layer, said = _unreadable_parcels(tmp_path)[case]
    with pytest.raises(InputError) as caught:
        load_parcels(path, layer=layer)
    assert said in str(caught.value)
    assert "Null layer" not in str(caught.value) and "not recognized" not in str(caught.value)
    if layer is not None:  # the command line reads the first layer
        return
    # The command line says the same before any scene is read.
    _scene(tmp_path / "s", "2021-05-01")
    argv = ["classify", "--parcels", str(path), "--scenes", str(tmp_path / "s"), "--weather",
            str(_csv(tmp_path / "w.csv", [(d, 2, 12) for d in _year()])), "--out", str(tmp_path / "o.gpkg")]
    assert main(argv) == cli.EXIT_INPUT
    assert said in capsys.readouterr().err


# -- a file's own metadata against its name ----------------------------------------------------


def _tagged_scene(path: Path, tags: dict, crs=CRS, descriptions=S2_BANDS, count=10) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    with rasterio.open(path, "w", driver="GTiff", width=20, height=20, count=count, dtype="uint16", crs=crs,
                       transform=from_origin(X0, Y0, 10, 10), nodata=0) as ds:
        ds.write(np.full((count, 20, 20), 2500, np.uint16))
        for i, b in enumerate(descriptions, start=1):
            ds.set_band_description(i, b)
        ds.update_tags(**tags)
    return path


def test_metadata_that_contradicts_the_name_wins_and_both_are_named(tmp_path, caplog):
    from thermocrop.core.scenes.local import find_scenes

    name = "S2A_MSIL1C_20210501T103021_N0205_R108_T32UPU_20210501T103021.tif"
    path = _tagged_scene(tmp_path / "a" / name, {"ACQUISITION_DATE": "2021-05-03T10:30:21",
                                                 "PROCESSING_LEVEL": "Level-2A", "BOA_ADD_OFFSET": "-1000"})
    with caplog.at_level(logging.WARNING):
        (scene,) = find_scenes(path)
    (product,) = scene.products
    assert (scene.date, product.level, product.offset) == (np.datetime64("2021-05-03"), "L2A", -1000)
    said = [r.getMessage() for r in caplog.records if "its name says" in r.getMessage()]
    assert len(said) == 3 and all(str(path) in m for m in said)
    assert any("date 2021-05-01 but its metadata (ACQUISITION_DATE) says 2021-05-03" in m for m in said)
    assert any("level L1C but its metadata (PROCESSING_LEVEL) says L2A" in m for m in said)
    assert any("baseline offset 0 but its metadata" in m and "says -1000" in m for m in said)


def test_a_consistent_file_raises_no_warning_and_the_file_written_time_is_no_acquisition_date(tmp_path, caplog):
    from thermocrop.core.scenes.local import find_scenes

    name = "S2A_MSIL2A_20210501T103021_N0400_R108_T32UPU_20210501T103021.tif"
    path = _tagged_scene(tmp_path / name, {"ACQUISITION_DATE": "2021-05-01", "PROCESSING_LEVEL": "Level-2A",
                                           "BOA_ADD_OFFSET": "-1000", "TIFFTAG_DATETIME": "2023:02:11 09:00:00"})
    with caplog.at_level(logging.WARNING):
        (scene,) = find_scenes(path)
    assert scene.date == np.datetime64("2021-05-01") and "its name says" not in caplog.text


def test_band_files_whose_description_contradicts_their_name_are_read_by_description(tmp_path, caplog):
    from thermocrop.core.scenes.local import find_scenes

    folder = tmp_path / "S2B_32UPU_20210501_0_L1C"
    for band in S2_BANDS:
        described = {"B04": "B08", "B08": "B04"}.get(band, band)  # B04.tif and B08.tif swapped
        _tagged_scene(folder / f"{band}.tif", {}, descriptions=[described], count=1)
    with caplog.at_level(logging.WARNING):
        (scene,) = find_scenes(folder)
    bands = scene.products[0].bands
    assert Path(bands["B04"].path).name == "B08.tif" and Path(bands["B08"].path).name == "B04.tif"
    assert f"{folder / 'B04.tif'}: its name says band B04 but its metadata (band description) says B08" in caplog.text


def test_a_tile_name_in_another_utm_zone_than_the_georeferencing_is_said(tmp_path, caplog):
    from thermocrop.core.scenes.local import find_scenes

    name = "S2A_MSIL1C_20210501T103021_N0205_R108_T32UPU_20210501T103021.tif"
    path = _tagged_scene(tmp_path / name, {}, crs="EPSG:32631")
    with caplog.at_level(logging.WARNING):
        find_scenes(path)
    assert (f"{path}: its name says tile 32UPU (UTM zone 32 north) but it is georeferenced in UTM zone 31 north"
            in caplog.text)


def test_an_interrupt_a_library_swallows_still_stops_the_run(tiny_region, tmp_path, monkeypatch, capsys):
    """Ctrl-C that lands where a library loses the exception (numpy 1.x's object comparisons, the
    import of GDAL's module) let the run go on and write its output with exit 0. Remembered, it
    stops the run at the next progress report: exit 130, nothing written."""
    import os
    import signal

    from thermocrop.app import runs

    real = runs.resolve_scenes

    def swallowing(*args, **kwargs):
        try:
            os.kill(os.getpid(), signal.SIGINT)
            time.sleep(0.5)  # the handler runs here
        except KeyboardInterrupt:
            pass  # what the library did
        return real(*args, **kwargs)

    monkeypatch.setattr(runs, "resolve_scenes", swallowing)
    out = tmp_path / "out.gpkg"
    code = cli.main(["classify", "--parcels", str(tiny_region / "parcels.gpkg"), "--scenes",
                     str(tiny_region / "scenes"), "--weather", str(tiny_region / "weather.nc"), "--out", str(out)])
    assert code == cli.EXIT_INTERRUPTED
    assert "interrupted" in capsys.readouterr().err
    assert not out.exists() and list(tmp_path.iterdir()) == []
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler  # the handler of before is back


@pytest.mark.parametrize("suffix", [".gpkg", ".parquet"])
@pytest.mark.parametrize("command", ["classify", "gdd"])
def test_an_empty_layer_is_named_before_anything_is_read(tiny_region, tmp_path, capsys, suffix, command):
    """A layer with no feature: said so by its name (classify read every scene first and named a
    GeoDataFrame; gdd failed with an IndexError; an empty GeoParquet file was called damaged)."""
    import geopandas as gpd

    empty = tmp_path / f"empty{suffix}"
    frame = gpd.read_file(tiny_region / "parcels.gpkg").iloc[:0]
    frame.to_parquet(empty) if suffix == ".parquet" else frame.to_file(empty)
    args = {"classify": ["--scenes", str(tiny_region / "nowhere")], "gdd": ["--dates", "2023-05-01"]}[command]
    out = tmp_path / "out.gpkg"
    code = cli.main([command, "--parcels", str(empty), "--weather", str(tiny_region / "weather.nc"), *args,
                     "--out", str(out)])
    assert code == cli.EXIT_INPUT
    assert f"Parcel layer 'empty' of {empty} has no features" in capsys.readouterr().err
    assert not out.exists()


@pytest.mark.parametrize("shipped", ["default.tcm", "default_fast.tcm", "inseason.tcm"])
@pytest.mark.parametrize("command", [
    ["train", "--data", "{data}", "--epochs", "1"],
    ["calibrate", "--dataset", "{data}"],
    ["inseason", "--data", "{data}", "--model", "{other}", "--out", "{folder}", "--record"],
])
def test_no_command_writes_over_a_shipped_model(tmp_path, capsys, command, shipped):
    """Every run without a model uses the shipped models: train, calibrate --dataset and inseason
    --record wrote over them with --overwrite (calibrate --reference already refused). Refused by
    path and through a link, before any dataset is read (the dataset here does not exist)."""
    from thermocrop.core.model.shipped import SHIPPED_MODELS

    target = SHIPPED_MODELS / shipped
    before = target.read_bytes()
    link = tmp_path / "mine.tcm"
    link.symlink_to(target)
    for out in (target, link):
        args = [a.format(data=tmp_path / "no_dataset", other=tmp_path / "other.tcm", folder=tmp_path / "ins")
                for a in command]
        out_option = [] if command[0] == "inseason" else ["--out"]
        code = cli.main([*args, *out_option, str(out), "--overwrite"])
        assert code == cli.EXIT_OUTPUT, command
        assert f"is the model {shipped} shipped with ThermoCrop" in capsys.readouterr().err
    assert target.read_bytes() == before
