"""Write-side faults through QGIS, in the Processing API and headless ``qgis_process``: an output
that is the input, multi-layer GeoPackages, shapefile names, existing fields, geometry types,
M values, outputs that cannot be written, a full disk and a killed run."""

from __future__ import annotations

import os
import resource
import shutil
import signal
import subprocess
import time
from pathlib import Path

import numpy as np
import pytest

pytestmark = pytest.mark.qgis

ogr = pytest.importorskip("osgeo.ogr")
osr = pytest.importorskip("osgeo.osr")

X0, Y0 = 400000.0, 5500000.0
N_BIG = 10_000


def _square(x: float, y: float, side: float = 40.0) -> str:
    return f"POLYGON (({x} {y},{x + side} {y},{x + side} {y + side},{x} {y + side},{x} {y}))"


def _write_layers(path: Path, layers: dict[str, int], *, text_conf: bool = False) -> Path:
    srs = osr.SpatialReference()
    srs.ImportFromEPSG(32633)
    ds = ogr.Open(str(path), 1) if path.exists() else ogr.GetDriverByName("GPKG").CreateDataSource(str(path))
    for name, n in layers.items():
        layer = ds.CreateLayer(name, srs, ogr.wkbPolygon)
        layer.CreateField(ogr.FieldDefn("parcel_id", ogr.OFTString))
        if text_conf:
            layer.CreateField(ogr.FieldDefn("crop_conf", ogr.OFTString))
        ds.StartTransaction()
        for i in range(n):
            f = ogr.Feature(layer.GetLayerDefn())
            f.SetField("parcel_id", f"{name}{i}")
            f.SetGeometry(ogr.CreateGeometryFromWkt(_square(X0 + (i % 200) * 50.0, Y0 + (i // 200) * 50.0)))
            layer.CreateFeature(f)
        ds.CommitTransaction()
    ds = None
    return path


def _features(path: Path, layer: str | None = None) -> list[tuple]:
    ds = ogr.Open(str(path))
    lyr = ds.GetLayerByName(layer) if layer else ds.GetLayer(0)
    out = [(f.GetFID(), tuple(f.items().items()), f.GetGeometryRef().ExportToIsoWkt()) for f in lyr]
    ds = None
    return out


def _layers(path: Path) -> list[str]:
    ds = ogr.Open(str(path))
    names = [ds.GetLayer(i).GetName() for i in range(ds.GetLayerCount())]
    ds = None
    return names


def _fields(path: Path, layer: str | None = None) -> list[str]:
    ds = ogr.Open(str(path))
    defn = (ds.GetLayerByName(layer) if layer else ds.GetLayer(0)).GetLayerDefn()
    names = [defn.GetFieldDefn(i).GetName() for i in range(defn.GetFieldCount())]
    ds = None
    return names


def _hidden(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if p.name.startswith("."))


@pytest.fixture(scope="module")
def region(tmp_path_factory):
    """Three 30 x 30 px L1C scenes, three parcels (one outside), a station CSV, a 10k-parcel layer."""
    rasterio = pytest.importorskip("rasterio")
    from rasterio.transform import from_origin

    from thermocrop.core.scenes.bands import S2_BANDS

    root = tmp_path_factory.mktemp("qgis-writes")
    rng = np.random.default_rng(1)
    for date in ("20230412", "20230602", "20230720"):
        path = root / "scenes" / f"S2A_MSIL1C_{date}T100031_N0509_R122_T33UVP_{date}T110000.tif"
        path.parent.mkdir(exist_ok=True)
        with rasterio.open(path, "w", driver="GTiff", width=30, height=30, count=10, dtype="uint16",
                           crs="EPSG:32633", transform=from_origin(X0, Y0, 10, 10), nodata=0) as ds:
            ds.write(rng.integers(1500, 5000, size=(10, 30, 30), dtype=np.uint16))
            for i, b in enumerate(S2_BANDS, start=1):
                ds.set_band_description(i, b)
    srs = osr.SpatialReference()
    srs.ImportFromEPSG(32633)
    ds = ogr.GetDriverByName("GPKG").CreateDataSource(str(root / "parcels.gpkg"))
    layer = ds.CreateLayer("parcels", srs, ogr.wkbPolygon)
    layer.CreateField(ogr.FieldDefn("parcel_id", ogr.OFTString))
    for pid, (a, b) in {"p1": (13, 97), "p2": (113, 197), "p3": (1013, 1097)}.items():
        f = ogr.Feature(layer.GetLayerDefn())
        f.SetField("parcel_id", pid)
        f.SetGeometry(ogr.CreateGeometryFromWkt(_square(X0 + a, Y0 - b, b - a)))
        layer.CreateFeature(f)
    ds = None
    days = np.arange(np.datetime64("2023-01-01"), np.datetime64("2024-01-01"))
    (root / "weather.csv").write_text("date,tmin,tmax\n" + "".join(f"{d},2.0,12.0\n" for d in days))
    _write_layers(root / "big.gpkg", {"parcels": N_BIG})
    return root


def _feedback():
    """A Processing feedback that keeps its warnings."""
    from qgis.core import QgsProcessingFeedback

    class Keeping(QgsProcessingFeedback):
        def __init__(self):
            super().__init__()
            self.warnings: list[str] = []

        def pushWarning(self, text):  # noqa: N802 (QGIS API)
            self.warnings.append(text)
            super().pushWarning(text)

    return Keeping()


def _run(name: str, parameters: dict, feedback=None):
    import processing
    from qgis.core import QgsProcessingContext

    return processing.run(f"thermocrop:{name}", parameters, context=QgsProcessingContext(),
                          feedback=feedback or _feedback())


def _gdd(region: Path, parcels, out, **more) -> dict:
    return {"INPUT": str(parcels), "WEATHER": str(region / "weather.csv"), "DATES": "2023-05-01",
            "OUTPUT": str(out), **more}


def _classify(region: Path, parcels, out, **more) -> dict:
    return {"INPUT": str(parcels), "SCENE_FOLDER": str(region / "scenes"), "WEATHER": str(region / "weather.csv"),
            "OUTPUT": str(out), **more}


# -- the Processing API -----------------------------------------------------------------------

def test_output_equal_to_input_is_refused_by_any_name(provider, region, tmp_path):
    from qgis.core import QgsProcessingException

    parcels = _write_layers(tmp_path / "in.gpkg", {"parcels": 5, "roads": 2})
    before = parcels.read_bytes()
    (tmp_path / "link.gpkg").symlink_to(parcels)
    os.link(parcels, tmp_path / "hard.gpkg")
    (tmp_path / "sub").mkdir()
    outputs = [parcels, tmp_path / "sub" / ".." / "in.gpkg", tmp_path / "link.gpkg", tmp_path / "hard.gpkg",
               f"ogr:dbname='{parcels}' table=\"classified\" (geom)"]  # another layer of the same file
    for out in outputs:
        for name, parameters in (("classifyparcels", _classify(region, parcels, out)),
                                 ("parcelgdd", _gdd(region, f"{parcels}|layername=parcels", out))):
            with pytest.raises(QgsProcessingException, match="is the input"):
                _run(name, parameters)
    assert parcels.read_bytes() == before and _hidden(tmp_path) == []


def test_a_geopackage_output_gets_only_its_layer(provider, region, tmp_path):
    target = _write_layers(tmp_path / "target.gpkg", {"zeta": 3, "target": 4, "roads": 2})
    kept = {name: _features(target, name) for name in ("zeta", "roads")}
    result = _run("parcelgdd", _gdd(region, region / "parcels.gpkg", target))
    assert result["OUTPUT"] == f"{target}|layername=target"
    assert _layers(target) == ["zeta", "target", "roads"]  # replaced in place, other layers as they were
    assert "gdd_20230501" in _fields(target, "target") and len(_features(target, "target")) == 3
    assert {name: _features(target, name) for name in kept} == kept
    _run("parcelgdd", _gdd(region, region / "parcels.gpkg", f"ogr:dbname='{target}' table=\"zeta\" (geom)"))
    assert _layers(target) == ["zeta", "target", "roads"] and _features(target, "roads") == kept["roads"]
    assert "gdd_20230501" in _fields(target, "zeta") and _hidden(tmp_path) == []


def test_a_new_geopackage_with_dots_in_its_name_is_written_and_named_as_qgis_names_it(provider, region, tmp_path):
    target = tmp_path / "gdd.2023.v1.gpkg"  # QGIS names the layer after the name up to its first dot
    result = _run("parcelgdd", _gdd(region, region / "parcels.gpkg", target))
    assert _layers(target) == ["gdd"] and result["OUTPUT"] in (str(target), f"{target}|layername=gdd")
    assert "gdd_20230501" in _fields(target, "gdd") and _hidden(tmp_path) == []


def test_outputs_that_cannot_be_written_are_refused_before_any_work(provider, region, tmp_path):
    from qgis.core import QgsProcessingException

    (tmp_path / "taken.gpkg").mkdir()
    typed = _write_layers(tmp_path / "typed.gpkg", {"parcels": 3}, text_conf=True)
    cases = [(region / "parcels.gpkg", tmp_path / "out.xyz", "Cannot tell the format"),
             (region / "parcels.gpkg", tmp_path / "nowhere" / "out.gpkg", "does not exist; create it first"),
             (region / "parcels.gpkg", tmp_path / "taken.gpkg", "is a folder"),
             (region / "parcels.gpkg", "/proc/out.gpkg", "under /proc"),
             (typed, tmp_path / "o.gpkg", "already has a field 'crop_conf' of type string")]
    for parcels, out, said in cases:
        # No scene is read: the scene folder does not even hold scenes.
        with pytest.raises(QgsProcessingException, match=said):
            _run("classifyparcels", _classify(region, parcels, out, SCENE_FOLDER=str(tmp_path)))
        if "crop_conf" not in said:
            with pytest.raises(QgsProcessingException, match=said):
                _run("parcelgdd", _gdd(region, parcels, out))
    assert sorted(p.name for p in tmp_path.iterdir()) == ["taken.gpkg", "typed.gpkg"]


def test_reclassifying_a_shapefile_reports_and_keeps_its_field_names(provider, region, tmp_path):
    pytest.importorskip("torch")
    first, second = tmp_path / "first.shp", tmp_path / "second.shp"
    feedback = _feedback()
    assert _run("classifyparcels", _classify(region, region / "parcels.gpkg", first), feedback)["OUTPUT"] == str(first)
    assert _fields(first)[-5:] == ["crop_pred", "crop_conf", "crop_statu", "crop_set", "crop_set_s"]
    _run("classifyparcels", _classify(region, first, second))
    assert _fields(second) == _fields(first)  # no crop_sta_1, no stale crop_statu
    ds = ogr.Open(str(second))
    rows = {f["parcel_id"]: (f.IsFieldNull("crop_pred"), f["crop_statu"]) for f in ds.GetLayer(0)}
    ds = None
    assert rows["p3"] == (True, "outside_scenes") and rows["p1"] == (False, "ok")


def test_declared_geometry_type_is_the_stored_one_and_m_values_are_kept_or_reported(provider, region, tmp_path):
    srs = osr.SpatialReference()
    srs.ImportFromEPSG(32633)
    source = tmp_path / "odd.gpkg"
    ds = ogr.GetDriverByName("GPKG").CreateDataSource(str(source))
    mixed = ds.CreateLayer("mixed", srs, ogr.wkbPolygon)
    measured = ds.CreateLayer("measured", srs, ogr.wkbPolygonM)
    for layer, wkt in ((mixed, _square(X0, Y0)),
                       (mixed, f"MULTIPOLYGON ((({X0} {Y0},{X0 + 9} {Y0},{X0 + 9} {Y0 + 9},{X0} {Y0})),"
                               f"(({X0 + 20} {Y0},{X0 + 29} {Y0},{X0 + 29} {Y0 + 9},{X0 + 20} {Y0})))"),
                       (measured, f"POLYGON M (({X0} {Y0} 1,{X0 + 9} {Y0} 2,{X0 + 9} {Y0 + 9} 3,{X0} {Y0} 1))")):
        f = ogr.Feature(layer.GetLayerDefn())
        f.SetGeometry(ogr.CreateGeometryFromWkt(wkt))
        layer.CreateFeature(f)
    ds = None
    out = tmp_path / "mixed.gpkg"
    _run("parcelgdd", _gdd(region, f"{source}|layername=mixed", out))
    ds = ogr.Open(str(out))
    layer = ds.GetLayer(0)
    assert layer.GetGeomType() == ogr.wkbMultiPolygon
    assert {f.GetGeometryRef().GetGeometryType() for f in layer} == {ogr.wkbMultiPolygon}
    layer = ds = None
    out = tmp_path / "measured.gpkg"
    _run("parcelgdd", _gdd(region, f"{source}|layername=measured", out))
    ds = ogr.Open(str(out))
    feature = ds.GetLayer(0).GetNextFeature()
    ring = feature.GetGeometryRef().GetGeometryRef(0)
    assert [ring.GetM(i) for i in range(4)] == [1, 2, 3, 1]
    ring = feature = ds = None
    feedback = _feedback()
    _run("parcelgdd", _gdd(region, f"{source}|layername=measured", tmp_path / "measured.geojson"), feedback)
    assert any("M (measure) values" in w for w in feedback.warnings)


# -- headless qgis_process --------------------------------------------------------------------

@pytest.fixture(scope="module")
def qgis_process(tmp_path_factory):
    """``run(parameters list, limit=None) -> Popen`` of ``qgis_process.bin run thermocrop:...``."""
    from thermocrop.plugin.headless import enable_plugin, qgis_process_env, qgis_process_program

    profile = tmp_path_factory.mktemp("profile")
    enable_plugin(profile)
    env = qgis_process_env(profile)

    def start(algorithm: str, parameters: list[str], limit: int | None = None) -> subprocess.Popen:
        def restrict():
            if limit is not None:
                resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))
                signal.signal(signal.SIGXFSZ, signal.SIG_IGN)

        return subprocess.Popen([qgis_process_program(), "run", f"thermocrop:{algorithm}", "--", *parameters],
                                env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                preexec_fn=restrict)

    return start


def _said(proc: subprocess.Popen) -> tuple[int, str]:
    out, err = proc.communicate(timeout=600)
    return proc.returncode, out + err


def test_qgis_process_refuses_output_equal_to_input(qgis_process, region, tmp_path):
    parcels = Path(shutil.copy(region / "parcels.gpkg", tmp_path / "in.gpkg"))
    before = parcels.read_bytes()
    rc, said = _said(qgis_process("classifyparcels", [f"INPUT={parcels}", f"SCENE_FOLDER={region / 'scenes'}",
                                                      f"WEATHER={region / 'weather.csv'}", f"OUTPUT={parcels}"]))
    assert rc != 0 and "is the input" in said and "CLASSIFIED" not in said, said
    assert parcels.read_bytes() == before


def test_qgis_process_on_a_full_disk_leaves_no_file(qgis_process, region, tmp_path):
    runs = {name: qgis_process("parcelgdd", [f"INPUT={region / 'big.gpkg'}", f"WEATHER={region / 'weather.csv'}",
                                             "DATES=2023-05-01", f"OUTPUT={tmp_path / name}"], limit=1_000_000)
            for name in ("full.gpkg", "full.geojson")}
    for name, proc in runs.items():
        rc, said = _said(proc)
        assert rc != 0 and "the disk may be full" in said, (name, said)
    assert list(tmp_path.iterdir()) == []


def test_qgis_process_killed_while_writing_leaves_no_partial_file(qgis_process, region, tmp_path):
    out = tmp_path / "killed.gpkg"
    proc = qgis_process("parcelgdd", [f"INPUT={region / 'big.gpkg'}", f"WEATHER={region / 'weather.csv'}",
                                      "DATES=2023-05-01", f"OUTPUT={out}"])
    deadline, killed = time.monotonic() + 600, False
    while not killed and time.monotonic() < deadline and proc.poll() is None:
        try:
            writing = any(f.is_file() and f.stat().st_size > 0 for f in tmp_path.rglob("*"))
        except FileNotFoundError:
            writing = False
        if writing:
            proc.send_signal(signal.SIGKILL)
            killed = True
        time.sleep(0.005)
    proc.communicate()
    assert killed, "qgis_process finished before it could be killed"
    assert not out.exists()
    assert _hidden(tmp_path)  # its staging folder; the next run writing here removes it
    from thermocrop.cli.main import main

    assert main(["gdd", "--parcels", str(region / "parcels.gpkg"), "--weather", str(region / "weather.csv"),
                 "--dates", "2023-05-01", "--out", str(tmp_path / "next.gpkg")]) == 0
    assert _hidden(tmp_path) == []


# -- accuracy reports, names, other programs' transactions --------------------------------------

def _classified(path: Path) -> Path:
    """A classified GeoPackage (crop_pred on six parcels, crop on four)."""
    srs = osr.SpatialReference()
    srs.ImportFromEPSG(32633)
    ds = ogr.GetDriverByName("GPKG").CreateDataSource(str(path))
    layer = ds.CreateLayer("classified", srs, ogr.wkbPolygon)
    for name in ("crop_pred", "crop"):
        layer.CreateField(ogr.FieldDefn(name, ogr.OFTString))
    for i, (pred, truth) in enumerate([("wheat", "wheat"), ("wheat", "maize"), ("maize", "maize"), ("maize", None),
                                       ("wheat", None), ("maize", "maize")]):
        f = ogr.Feature(layer.GetLayerDefn())
        f.SetField("crop_pred", pred)
        if truth:
            f.SetField("crop", truth)
        f.SetGeometry(ogr.CreateGeometryFromWkt(_square(X0 + 50.0 * i, Y0)))
        layer.CreateFeature(f)
    ds = None
    return path


def _accuracy(layer, html, csv, **more) -> dict:
    return {"INPUT": str(layer), "PREDICTED_FIELD": "crop_pred", "REFERENCE_FIELD": "crop",
            "OUTPUT_HTML": str(html), "OUTPUT_CSV": str(csv), **more}


def test_accuracy_reports_never_replace_the_layer_or_each_other(provider, tmp_path):
    from qgis.core import QgsProcessingException

    layer = _classified(tmp_path / "classified.gpkg")
    before = layer.read_bytes()
    (tmp_path / "link.gpkg").symlink_to(layer)
    os.link(layer, tmp_path / "hard.gpkg")
    (tmp_path / "sub").mkdir()
    names = [layer, tmp_path / "sub" / ".." / "classified.gpkg", tmp_path / "link.gpkg", tmp_path / "hard.gpkg"]
    for name in names:
        for parameters in (_accuracy(layer, name, tmp_path / "r.csv"), _accuracy(layer, tmp_path / "r.html", name),
                           _accuracy(layer, tmp_path / "r.html", tmp_path / "r.csv", OUTPUT_MATRIX=str(name))):
            with pytest.raises(QgsProcessingException, match="is the input"):
                _run("accuracyassessment", parameters)
    for html, csv in ((tmp_path / "r.html", tmp_path / "r.html"), (tmp_path / "r.csv", tmp_path / "sub/../r.csv")):
        with pytest.raises(QgsProcessingException, match="OUTPUT_CSV .* and OUTPUT_HTML are the same file"):
            _run("accuracyassessment", _accuracy(layer, html, csv))
    long_name = tmp_path / ("r" * 250 + ".html")
    with pytest.raises(QgsProcessingException, match="bytes long"):
        _run("accuracyassessment", _accuracy(layer, long_name, tmp_path / "r.csv"))
    assert layer.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["classified.gpkg", "hard.gpkg", "link.gpkg", "sub"]
    result = _run("accuracyassessment", _accuracy(layer, tmp_path / "r.html", tmp_path / "r.csv"))
    assert result["SAMPLE_SIZE"] == 4 and result["OVERALL_ACCURACY"] == pytest.approx(3 / 4)
    assert (tmp_path / "r.csv").read_text().startswith("class,") and _hidden(tmp_path) == []


def test_qgis_process_refuses_a_report_over_its_input(qgis_process, tmp_path):
    layer = _classified(tmp_path / "classified.gpkg")
    before = layer.read_bytes()
    rc, said = _said(qgis_process("accuracyassessment", [f"INPUT={layer}", "PREDICTED_FIELD=crop_pred",
                                                         "REFERENCE_FIELD=crop", f"OUTPUT_HTML={layer}",
                                                         f"OUTPUT_CSV={tmp_path / 'r.csv'}"]))
    assert rc != 0 and "is the input" in said and "OVERALL_ACCURACY" not in said, said
    assert layer.read_bytes() == before and sorted(p.name for p in tmp_path.iterdir()) == ["classified.gpkg"]


def test_a_geopackage_in_another_programs_transaction_is_left_alone(provider, region, tmp_path):
    import sqlite3
    import sys

    from qgis.core import QgsProcessingException

    target = _write_layers(tmp_path / "target.gpkg", {"target": 4})
    with sqlite3.connect(target) as db:
        db.execute("CREATE TABLE notes (text TEXT)")
    holder = subprocess.Popen(
        [sys.executable, "-c", "import sqlite3, sys\n"
         "db = sqlite3.connect(sys.argv[1], isolation_level=None)\n"
         "db.execute('BEGIN IMMEDIATE'); db.execute(\"INSERT INTO notes VALUES ('mine')\")\n"
         "print('ready', flush=True); sys.stdin.readline(); db.execute('COMMIT')\n", str(target)],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "ready"
        with pytest.raises(QgsProcessingException, match="is in use: another program holds an open write"):
            _run("parcelgdd", _gdd(region, region / "parcels.gpkg", target))
    finally:
        holder.communicate("\n", timeout=30)
    with sqlite3.connect(target) as db:
        assert db.execute("SELECT text FROM notes").fetchall() == [("mine",)]
    assert "gdd_20230501" not in _fields(target, "target") and _hidden(tmp_path) == []
