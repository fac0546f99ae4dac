"""PSE-TAE pixel-set folders written here from the format's description, imported and checked
value by value."""

import json

import geopandas as gpd
import netCDF4
import numpy as np
import pytest
from shapely.geometry import box

from thermocrop.cli.main import EXIT_INPUT, main
from thermocrop.core.errors import InputError
from thermocrop.core.pixel_sets import open_dataset
from thermocrop.core.scenes.bands import S2_BANDS
from thermocrop.training.importers.common import ParcelLayer
from thermocrop.training.importers.psetae import PsetaeFormat, import_psetae

ORDER = ("B02", "B03", "B04", "B08", "B05", "B06", "B07", "B8A", "B11", "B12")  # of the arrays
DATES = {"1": 20170408, "2": 20170102, "3": 20170725}  # index -> date, time axis not sorted
SIZES = {"10": 4, "2": 1, "33": 80, "7": 0}
DAYS = np.arange("2017-01-01", "2017-08-01", dtype="datetime64[D]")


def value(pid, t, c, s):
    return 50 + 900 * (int(pid) % 5) + 31 * t + 211 * c + 3 * s


def write_folder(root):
    (root / "DATA").mkdir(parents=True)
    (root / "META").mkdir()
    for pid, s in SIZES.items():
        t, c, p = np.meshgrid(np.arange(3), np.arange(10), np.arange(s), indexing="ij")
        np.save(root / "DATA" / f"{pid}.npy", value(pid, t, c, p).astype(np.int16))
    (root / "META" / "dates.json").write_text(json.dumps(DATES))
    (root / "META" / "labels.json").write_text(json.dumps({
        "label_44class": {"10": 3, "2": 17, "33": 3, "7": 3},
        "CODE_GROUP": {"10": "BTH", "2": "MIE", "33": "PPH", "7": "BTH"}}))
    return root


def write_weather(path):
    d = np.arange(DAYS.size)[:, None, None]
    tn = np.broadcast_to(-2.0 + 0.08 * d + np.array([0.0, 3.0])[None, None, :], (DAYS.size, 2, 2)).astype(np.float32)
    tx = (tn + 8.0).astype(np.float32)
    with netCDF4.Dataset(path, "w") as nc:
        for name, n in (("time", DAYS.size), ("lat", 2), ("lon", 2)):
            nc.createDimension(name, n)
        t = nc.createVariable("time", "f8", ("time",))
        t.units = "days since 2017-01-01"
        t[:] = np.arange(DAYS.size)
        for name, vals, units in (("lat", [45.0, 45.5], "degrees_north"), ("lon", [4.0, 4.5], "degrees_east")):
            v = nc.createVariable(name, "f8", (name,))
            v.units = units
            v[:] = vals
        for name, vals in (("tasmin", tn), ("tasmax", tx)):
            v = nc.createVariable(name, "f4", ("time", "lat", "lon"))
            v.units = "degC"
            v[:] = vals
    return tn[:, 0, 1], tx[:, 0, 1]  # the cell of the point below


def test_folder_values_dates_labels_and_cli(tmp_path, capsys):
    folder = write_folder(tmp_path / "pse")
    tn, tx = write_weather(tmp_path / "w.nc")
    args = ["import", "psetae", str(folder), "--weather", str(tmp_path / "w.nc"), "--point", "4.45", "45.05",
            "--band-order", ",".join(ORDER), "--max-pixels", "16", "--out", str(tmp_path / "ds")]
    assert main(args) == EXIT_INPUT  # two nomenclatures: which one?
    assert "choose one with --nomenclature" in capsys.readouterr().err
    (tmp_path / "map.csv").write_text("code,class\nBTH,winter_wheat\nMIE,corn\n")
    assert main(args + ["--nomenclature", "CODE_GROUP", "--class-map", str(tmp_path / "map.csv")]) == 0
    ps = open_dataset(tmp_path / "ds")
    assert ps.parcel_ids.tolist() == ["2", "7", "10", "33"]
    assert [str(d) for d in ps.dates] == ["2017-01-02", "2017-04-08", "2017-07-25"]
    assert ps.classes == ("corn", "unknown", "winter_wheat")
    assert [ps.classes[i] for i in ps.labels] == ["corn", "winter_wheat", "winter_wheat", "unknown"]
    old_t = [1, 0, 2]  # sorted date -> position on the arrays' time axis
    for row, pid in enumerate(ps.parcel_ids):
        s = SIZES[pid]
        if s == 0:
            assert ps.status[row] == "too_small" and not ps.pixel_mask[row].any()
            continue
        for t in range(3):
            expect = np.array([[value(pid, old_t[t], ORDER.index(b), p) for p in range(s)] for b in S2_BANDS])
            got = ps.pixels[row, t]
            if s <= 16:
                assert (got[:, :s] == expect).all() and ps.pixel_mask[row, t].sum() == s
            else:
                cols = {int(np.flatnonzero((expect == got[:, [k]]).all(axis=0))[0]) for k in range(16)}
                assert len(cols) == 16
    expect = [sum(max((min(float(tx[d]), 30.0) + max(float(tn[d]), 0.0)) / 2.0, 0.0) for d in range(p + 1))
              for p in (1, 97, 205)]
    np.testing.assert_allclose(ps.gdd[0], expect, rtol=1e-5)
    assert ps.day_of_season.tolist() == [1.0, 97.0, 205.0]


def test_layer_blocks_station_weather_and_errors(tmp_path):
    folder = write_folder(tmp_path / "pse")
    days = DAYS.astype(str)
    (tmp_path / "st.csv").write_text("date,tmin,tmax\n" + "".join(f"{d},1.0,9.0\n" for d in days))
    layer = gpd.GeoDataFrame({"pid": [33, 10, 2, 7], "blk": [5, 6, 5, 6]},
                             geometry=[box(i * 100, 0, i * 100 + 50, 50) for i in range(4)], crs="EPSG:2154")
    layer.to_file(tmp_path / "p.gpkg", driver="GPKG")
    out = import_psetae(folder, tmp_path / "ds", weather=tmp_path / "st.csv",
                        layer=ParcelLayer(path=tmp_path / "p.gpkg", join_field="pid", block_field="blk"),
                        source=PsetaeFormat(nomenclature="label_44class", band_order=ORDER,
                                            value_scale=20000.0))  # values are reflectance x 20000
    ps = open_dataset(out)
    assert ps.blocks.tolist() == [5, 6, 6, 5]
    assert ps.classes == ("17", "3") and ps.labels.tolist() == [0, 1, 1, 1]
    assert ps.pixels[0, 0, 0, 0] == np.floor(value("2", 1, 0, 0) / 2 + 0.5)  # 1881 -> 940.5 -> 941
    np.testing.assert_allclose(ps.gdd[2], [5.0 * 2, 5.0 * 98, 5.0 * 206])
    with pytest.raises(InputError, match="ten bands"):
        import_psetae(folder, tmp_path / "x", weather=tmp_path / "st.csv",
                      source=PsetaeFormat(nomenclature="CODE_GROUP", band_order=ORDER[:9]))
    with pytest.raises(InputError, match="needs the parcels' locations"):
        import_psetae(folder, tmp_path / "x", weather=tmp_path / "w.nc", source=PsetaeFormat(nomenclature="CODE_GROUP"))
    np.save(folder / "DATA" / "2.npy", np.zeros((2, 10, 3), np.int16))
    with pytest.raises(InputError, match="2.npy holds an array of shape"):
        import_psetae(folder, tmp_path / "x", weather=tmp_path / "st.csv",
                      source=PsetaeFormat(nomenclature="CODE_GROUP"))
    assert not (tmp_path / "x").exists()
