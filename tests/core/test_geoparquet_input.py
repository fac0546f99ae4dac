"""GeoParquet as an input: parcel layers read row group by row group through pyarrow (this GDAL
has no Parquet driver), the same parcels as from a GeoPackage, clear errors for files that are
not GeoParquet, and ``classify --parcels layer.parquet`` end to end. Small files written here."""

from __future__ import annotations

import json

import numpy as np
import pytest
from shapely.geometry import Polygon, box

from thermocrop.cli.main import main
from thermocrop.core.errors import InputError
from thermocrop.core.io.geoparquet import GeoParquetLayer, write_geoparquet
from thermocrop.core.io.source_layer import feature_count, source_field_kinds
from thermocrop.core.parcels import load_parcels
from thermocrop.core.preflight import parcel_layer_info

gpd = pytest.importorskip("geopandas")
pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")

CRS = "EPSG:32631"
X0, Y0 = 500000.0, 4800000.0


def parcel_frame() -> "gpd.GeoDataFrame":
    """14 parcels: a 4 x 3 grid, a self-intersecting bow tie (repaired on reading), an empty one."""
    geoms = [box(X0 + 100 * c + 12, Y0 - 100 * r - 88, X0 + 100 * c + 88, Y0 - 100 * r - 12)
             for r in range(3) for c in range(4)]
    geoms.append(Polygon([(X0 + 10, Y0 - 410), (X0 + 90, Y0 - 490), (X0 + 90, Y0 - 410), (X0 + 10, Y0 - 490)]))
    geoms.append(Polygon())
    n = len(geoms)
    return gpd.GeoDataFrame({"parcel_id": [f"p{k:02d}" for k in range(n)], "crop": ["wheat", "maize"] * (n // 2),
                             "area_ha": np.arange(n) * 0.25}, geometry=geoms, crs=CRS)


def write_with_pyarrow(frame, path, *, crs=None, row_group_size=5, geo=None):
    """``frame`` as GeoParquet written by pyarrow itself: WKB column ``geom``, ``crs`` as given
    (PROJJSON dict or WKT text) in the 'geo' metadata, or ``geo`` as the metadata whole."""
    table = pa.table({"parcel_id": frame["parcel_id"].tolist(), "crop": frame["crop"].tolist(),
                      "area_ha": frame["area_ha"].to_numpy(), "geom": [g.wkb for g in frame.geometry]})
    if geo is None:
        geo = {"version": "1.0.0", "primary_column": "geom",
               "columns": {"geom": {"encoding": "WKB", "geometry_types": [], "crs": crs}}}
    if geo is not False:
        table = table.replace_schema_metadata({b"geo": json.dumps(geo).encode()})
    pq.write_table(table, str(path), row_group_size=row_group_size)
    return path


def assert_same_parcels(a, b):
    assert a.parcel_ids.tolist() == b.parcel_ids.tolist()
    assert a.rows.tolist() == b.rows.tolist()
    assert a.status.tolist() == b.status.tolist()
    assert a.labels.tolist() == b.labels.tolist() and a.classes == b.classes
    assert a.geometry.crs == b.geometry.crs
    for g, h in zip(a.geometry, b.geometry):
        assert (g is None and h is None) or g.equals_exact(h, 0)


@pytest.fixture()
def gpkg(tmp_path):
    path = tmp_path / "parcels.gpkg"
    parcel_frame().to_file(path, driver="GPKG")
    return path


def test_parquet_written_by_the_project_reads_as_the_geopackage(gpkg, tmp_path):
    out = write_geoparquet(gpkg, {}, tmp_path / "parcels.parquet")
    a = load_parcels(gpkg, label_field="crop", selected_ids=["p01", "p12", "p13", "p05"])
    b = load_parcels(out, label_field="crop", selected_ids=["p01", "p12", "p13", "p05"])
    assert_same_parcels(a, b)
    assert b.status.tolist() == ["", "", "", "invalid_geometry"]  # the bow tie repaired, the empty one refused
    assert feature_count(out) == 14
    assert source_field_kinds(out) == {"parcel_id": "string", "crop": "string", "area_ha": "real"}


@pytest.mark.parametrize("crs_as", ["projjson", "wkt"])
def test_parquet_written_by_pyarrow_in_row_groups(gpkg, tmp_path, crs_as):
    from pyproj import CRS as ProjCRS

    crs = json.loads(ProjCRS(CRS).to_json()) if crs_as == "projjson" else ProjCRS(CRS).to_wkt()
    path = write_with_pyarrow(parcel_frame(), tmp_path / "parcels.parquet", crs=crs, row_group_size=5)
    layer = GeoParquetLayer(path)
    assert layer.file.num_row_groups == 3 and layer.row_group_starts().tolist() == [0, 5, 10, 14]
    assert_same_parcels(load_parcels(gpkg), load_parcels(path))
    # Rows of two row groups out of three: only those groups are read, rows keep their numbers.
    some = layer.read(columns=["parcel_id"], rows=np.array([1, 3, 11, 12]))
    assert some.index.tolist() == [1, 3, 11, 12] and list(some.columns) == ["parcel_id", "geom"]
    assert some["parcel_id"].tolist() == ["p01", "p03", "p11", "p12"]
    info = parcel_layer_info(path)
    expected = gpd.read_file(gpkg)
    assert info["count"] == 14 and info["fields"] == ["parcel_id", "crop", "area_ha"]
    np.testing.assert_allclose(info["bounds"], expected.total_bounds)


def test_frames_in_slices_of_row_groups_keep_file_order_and_row_numbers(tmp_path):
    frame = parcel_frame()
    layer = GeoParquetLayer(write_with_pyarrow(frame, tmp_path / "parcels.parquet", crs=None, row_group_size=5))
    whole = list(layer.frames(["parcel_id"]))
    assert [len(f) for f in whole] == [5, 5, 4]  # one frame per row group
    sliced = list(layer.frames(["parcel_id"], rows=2))
    assert [len(f) for f in sliced] == [2, 2, 1, 2, 2, 1, 2, 2]  # slices never span two row groups
    assert [f.index[0] for f in sliced] == [0, 2, 4, 5, 7, 9, 10, 12]
    rows = [i for f in sliced for i in f.index]
    assert rows == list(range(len(frame)))
    assert [p for f in sliced for p in f["parcel_id"]] == frame["parcel_id"].tolist()
    for f in sliced:
        for k, g in zip(f.index, f.geometry):
            assert g.equals_exact(frame.geometry.iloc[k], 0) or (g.is_empty and frame.geometry.iloc[k].is_empty)


def test_parquet_without_a_crs_entry_is_lon_lat_and_with_null_has_none(tmp_path):
    geo = {"version": "1.0.0", "primary_column": "geom", "columns": {"geom": {"encoding": "WKB"}}}
    path = write_with_pyarrow(parcel_frame(), tmp_path / "default.parquet", geo=geo)
    assert GeoParquetLayer(path).crs.to_string() == "OGC:CRS84"  # the specification's default
    path = write_with_pyarrow(parcel_frame(), tmp_path / "none.parquet", crs=None)
    with pytest.raises(InputError, match="none.parquet has no coordinate reference system"):
        load_parcels(path)


@pytest.mark.parametrize("geo, says", [
    (False, "without GeoParquet's 'geo' metadata"),
    ({"version": "1.0.0", "columns": {}}, "does not name its geometry column"),
    ({"version": "1.0.0", "primary_column": "geometry", "columns": {"geometry": {"encoding": "WKB"}}},
     "names 'geometry' as its geometry column, but it has no such column"),
    ({"version": "1.0.0", "primary_column": "geom", "columns": {"geom": {"encoding": "point"}}},
     "stores its geometries as 'point'"),
])
def test_parquet_that_is_not_readable_geoparquet_is_refused_naming_the_file(tmp_path, geo, says):
    path = write_with_pyarrow(parcel_frame(), tmp_path / "bad.parquet", geo=geo)
    with pytest.raises(InputError, match=f"bad.parquet .*{says}".replace("(", r"\(").replace(")", r"\)")):
        load_parcels(path)


def test_a_text_file_named_parquet_and_broken_wkb_are_refused(tmp_path):
    path = tmp_path / "notes.parquet"
    path.write_text("parcel_id,geometry\n", encoding="utf-8")
    with pytest.raises(InputError, match="notes.parquet cannot be read as Parquet"):
        load_parcels(path)
    table = pa.table({"parcel_id": ["a"], "geom": [b"\x01\x03\x00"]})
    geo = {"version": "1.0.0", "primary_column": "geom", "columns": {"geom": {"encoding": "WKB", "crs": None}}}
    pq.write_table(table.replace_schema_metadata({b"geo": json.dumps(geo).encode()}), str(tmp_path / "wkb.parquet"))
    with pytest.raises(InputError, match="wkb.parquet holds a geometry that is not valid WKB between rows 0 and 0"):
        load_parcels(tmp_path / "wkb.parquet")


def test_cli_classify_reads_geoparquet_parcels_as_it_reads_the_geopackage(gpkg, tmp_path, write_scenes,
                                                                          write_station_weather):
    from pyproj import CRS as ProjCRS

    scenes = write_scenes(tmp_path / "scenes", size=50, seed=5)
    write_station_weather(tmp_path / "weather.csv")
    parquet = write_with_pyarrow(parcel_frame(), tmp_path / "parcels.parquet", crs=ProjCRS(CRS).to_wkt(),
                                 row_group_size=4)
    common = ["--scenes", str(scenes), "--weather", str(tmp_path / "weather.csv")]
    assert main(["classify", "--parcels", str(gpkg), "--out", str(tmp_path / "a.gpkg"), *common]) == 0
    assert main(["classify", "--parcels", str(parquet), "--out", str(tmp_path / "b.gpkg"), *common]) == 0
    assert main(["classify", "--parcels", str(parquet), "--out", str(tmp_path / "c.parquet"), *common]) == 0
    a = gpd.read_file(tmp_path / "a.gpkg")
    for b in (gpd.read_file(tmp_path / "b.gpkg"), gpd.read_parquet(tmp_path / "c.parquet")):
        assert b["parcel_id"].tolist() == a["parcel_id"].tolist()
        assert b["crop_status"].tolist() == a["crop_status"].tolist()
        assert b["crop_pred"].fillna("-").tolist() == a["crop_pred"].fillna("-").tolist()
        np.testing.assert_allclose(b["crop_conf"].to_numpy(float), a["crop_conf"].to_numpy(float), rtol=1e-6)
        assert b["area_ha"].tolist() == a["area_ha"].tolist()
    assert (a["crop_status"] == "ok").sum() == 13


def test_cli_gdd_reads_geoparquet_parcels_and_writes_them_back_as_geoparquet(gpkg, tmp_path, write_station_weather):
    write_station_weather(tmp_path / "weather.csv")
    parquet = write_with_pyarrow(parcel_frame(), tmp_path / "parcels.parquet", crs=json.loads(
        gpd.GeoSeries([], crs=CRS).crs.to_json()), row_group_size=3)
    common = ["--weather", str(tmp_path / "weather.csv"), "--dates", "2023-05-01", "2023-07-01"]
    assert main(["gdd", "--parcels", str(gpkg), "--out", str(tmp_path / "a.csv"), *common]) == 0
    assert main(["gdd", "--parcels", str(parquet), "--out", str(tmp_path / "b.csv"), *common]) == 0
    assert (tmp_path / "b.csv").read_bytes() == (tmp_path / "a.csv").read_bytes()
    assert main(["gdd", "--parcels", str(parquet), "--out", str(tmp_path / "b.parquet"), *common]) == 0
    back = pq.ParquetFile(str(tmp_path / "b.parquet"))
    assert back.metadata.num_row_groups == 5  # written row group by row group, as read
    frame = gpd.read_parquet(tmp_path / "b.parquet")
    table = np.genfromtxt(tmp_path / "a.csv", delimiter=",", skip_header=1, usecols=(1, 2))
    np.testing.assert_allclose(frame[["gdd_20230501", "gdd_20230701"]].to_numpy(float), table)
    assert frame["parcel_id"].tolist() == parcel_frame()["parcel_id"].tolist()
    assert frame.crs == gpd.read_file(gpkg).crs


@pytest.mark.parametrize("suffix", [".gpkg", ".shp", ".csv"])
def test_a_geoparquet_layer_is_written_to_an_ogr_format_row_group_by_row_group(tmp_path, monkeypatch, suffix):
    """GeoParquet in, an OGR format out: the layer is copied row group by row group (never read
    whole), its integers with NULLs stay integers, and a layer of polygons and a multipolygon is
    declared multi, its polygons made multi, as from a GeoPackage declared ``Polygon``."""
    from osgeo import ogr
    from shapely import wkt
    from shapely.geometry import MultiPolygon

    from thermocrop.core.io.vector import write_with_fields

    frame = parcel_frame().iloc[:12]
    geoms = list(frame.geometry)
    geoms[5] = MultiPolygon([geoms[5], box(X0 + 900, Y0 - 900, X0 + 950, Y0 - 850)])
    geoms[7] = None
    codes = [None if k % 5 == 0 else 1000 + k for k in range(12)]
    table = pa.table({"parcel_id": frame["parcel_id"].tolist(), "code": pa.array(codes, pa.int64()),
                      "irrigated": [k % 3 == 0 for k in range(12)], "area_ha": frame["area_ha"].to_numpy(),
                      "geom": [None if g is None else g.wkb for g in geoms]})
    geo = {"version": "1.0.0", "primary_column": "geom",
           "columns": {"geom": {"encoding": "WKB", "geometry_types": [], "crs": None}}}
    parquet = tmp_path / "parcels.parquet"
    pq.write_table(table.replace_schema_metadata({b"geo": json.dumps(geo).encode()}), str(parquet), row_group_size=5)

    def whole(*args, **kwargs):
        raise AssertionError("the layer was read whole")

    monkeypatch.setattr(GeoParquetLayer, "read", whole)
    monkeypatch.setattr(GeoParquetLayer, "frames", whole)
    out = write_with_fields(parquet, {"crop_conf": np.linspace(0, 1, 12)}, tmp_path / f"out{suffix}")
    ds = ogr.Open(str(out))
    layer = ds.GetLayer(0)
    defn = layer.GetLayerDefn()
    kinds = {defn.GetFieldDefn(i).GetName(): defn.GetFieldDefn(i).GetType() for i in range(defn.GetFieldCount())}
    rows = []
    for feature in layer:
        geometry = feature.GetGeometryRef()
        rows.append((feature.GetField("parcel_id"), feature.GetField("code"), feature.GetField("crop_conf"),
                     None if geometry is None else (geometry.GetGeometryType(), wkt.loads(geometry.ExportToWkt()))))
    if suffix != ".csv":
        assert kinds["code"] in (ogr.OFTInteger64, ogr.OFTInteger) and kinds["crop_conf"] == ogr.OFTReal
    if suffix == ".gpkg":  # a shapefile has one type for polygons and multipolygons
        assert layer.GetGeomType() == ogr.wkbMultiPolygon
    layer = ds = None
    assert [r[0] for r in rows] == frame["parcel_id"].tolist()
    assert [None if r[1] in (None, "") else int(r[1]) for r in rows] == codes  # CSV: NULL as an empty cell
    np.testing.assert_allclose([float(r[2]) for r in rows], np.linspace(0, 1, 12))
    for (_, _, _, got), expected in zip(rows, geoms):
        if expected is None:
            assert got is None
            continue
        assert got[1].equals(expected) and (suffix == ".shp" or got[0] == ogr.wkbMultiPolygon)


@pytest.mark.parametrize("suffix", [".gpkg", ".parquet"])
def test_added_fields_are_made_a_batch_at_a_time_within_a_row_group(gpkg, tmp_path, suffix):
    """A row group of the input larger than the fields' batches: the fields are asked for a batch
    at a time (never the whole row group) and written as if made at once."""
    from thermocrop.core.io.field_batches import FieldBatches

    source = gpkg if suffix == ".gpkg" else write_with_pyarrow(parcel_frame(), tmp_path / "in.parquet", crs=CRS,
                                                               row_group_size=10)
    conf = np.linspace(0.0, 1.0, 14)
    pred = np.array([None if k % 4 == 0 else f"c{k}" for k in range(14)], dtype=object)
    asked = []

    def make(start, stop):
        asked.append((start, stop))
        return {"crop_conf": conf[start:stop], "crop_pred": pred[start:stop]}

    out = write_geoparquet(source, FieldBatches(["crop_conf", "crop_pred"], 14, make, batch_rows=3),
                           tmp_path / "out.parquet")
    assert max(stop - start for start, stop in asked) == 3
    assert sorted(asked) == asked and asked[0][0] == 0 and asked[-1][1] == 14
    back = pq.read_table(out)
    assert back.column("crop_conf").to_pylist() == conf.tolist()
    assert back.column("crop_pred").to_pylist() == pred.tolist()
    assert back.column("parcel_id").to_pylist() == parcel_frame()["parcel_id"].tolist()


def _with_geo_bytes(path, raw):
    """A one-parcel Parquet file whose 'geo' metadata is ``raw`` as given (any bytes)."""
    table = pa.table({"parcel_id": ["a"], "geom": [box(X0, Y0 - 50, X0 + 50, Y0).wkb]})
    pq.write_table(table.replace_schema_metadata({b"geo": raw}), str(path))
    return path


@pytest.mark.parametrize("name, raw", [
    pytest.param("deep", b"[" * 100_000 + b"]" * 100_000, id="deep"),  # beyond the JSON parser's nesting
    *(pytest.param(name, json.dumps({"version": "1.0.0", "primary_column": "geom", "columns": {"geom": entry}}).encode(),
                   id=name) for name, entry in [("entry_text", "WKB"), ("entry_null", None), ("entry_list", ["WKB"])]),
])
def test_geo_metadata_nested_too_deep_or_without_a_column_entry_is_refused_naming_the_file(tmp_path, name, raw):
    path = _with_geo_bytes(tmp_path / f"{name}.parquet", raw)
    for read in (GeoParquetLayer, load_parcels, parcel_layer_info):
        with pytest.raises(InputError, match=rf"{name}\.parquet has GeoParquet 'geo' metadata that does not name its "
                                             "geometry column"):
            read(path)


@pytest.mark.parametrize("name, values, kind", [
    ("hex", [g.wkb_hex for g in parcel_frame().geometry[:4]], "string"),  # what shapely would still decode
    ("wkt", [g.wkt for g in parcel_frame().geometry[:4]], "string"),
    ("geoarrow", [{"x": 1.0, "y": 2.0}] * 4, "struct<x: double, y: double>"),
    ("numbers", [1, 2, 3, 4], "int64"),
])
def test_a_geometry_column_labelled_wkb_that_holds_no_bytes_is_refused_before_anything_is_written(
        tmp_path, name, values, kind):
    from thermocrop.core.io.vector import write_with_fields

    table = pa.table({"parcel_id": ["a", "b", "c", "d"], "geom": values})
    geo = {"version": "1.0.0", "primary_column": "geom", "columns": {"geom": {"encoding": "WKB", "crs": None}}}
    path = tmp_path / f"{name}.parquet"
    pq.write_table(table.replace_schema_metadata({b"geo": json.dumps(geo).encode()}), str(path))
    says = rf"{name}\.parquet declares WKB geometries, but its column 'geom' holds {kind.replace('<', '.')}, not binary"
    for read in (load_parcels, parcel_layer_info):
        with pytest.raises(InputError, match=says):
            read(path)
    for suffix in (".gpkg", ".parquet"):  # copied row group by row group, or with pyarrow
        out = tmp_path / f"out{suffix}"
        with pytest.raises(InputError, match=says):
            write_with_fields(path, {"crop_conf": np.zeros(4)}, out)
        assert not out.exists() and sorted(p.name for p in tmp_path.iterdir()) == [f"{name}.parquet"]


def test_a_damaged_row_group_of_the_input_is_named_as_the_input_not_as_a_full_disk(tmp_path):
    """A column chunk that cannot be decoded (its page header overwritten) in the second row
    group: the geometries still read, so the fault shows only when the whole rows are copied."""
    from thermocrop.core.io.vector import write_with_fields

    path = write_with_pyarrow(parcel_frame().iloc[:6], tmp_path / "damaged.parquet", crs=CRS, row_group_size=3)
    chunk = pq.ParquetFile(str(path)).metadata.row_group(1).column(1)  # 'crop'
    start = chunk.dictionary_page_offset if chunk.has_dictionary_page else chunk.data_page_offset
    data = bytearray(path.read_bytes())
    data[start:start + chunk.total_compressed_size] = b"\xff" * chunk.total_compressed_size
    path.write_bytes(bytes(data))
    assert GeoParquetLayer(path).bounds() is not None
    for suffix in (".parquet", ".gpkg"):
        out = tmp_path / f"out{suffix}"
        with pytest.raises(InputError, match=r"Parcel file .*damaged\.parquet cannot be read \(row group 1"):
            write_with_fields(path, {"crop_conf": np.zeros(6)}, out)
        assert not out.exists()


def test_an_unsigned_integer_beyond_64_bit_integers_is_named_when_copied_to_an_ogr_format(tmp_path):
    """Parquet's unsigned 64-bit integers reach 2**64 - 1, OGR's integers 2**63 - 1: values
    within both copy as integers, one beyond is refused naming field, value and row."""
    from osgeo import ogr

    from thermocrop.core.io.vector import write_with_fields

    frame = parcel_frame().iloc[:8]
    big = [7, 2 ** 63 - 1, None, 0, 12, 2 ** 64 - 1, 3, 4]
    table = pa.table({"parcel_id": frame["parcel_id"].tolist(), "big": pa.array(big, pa.uint64()),
                      "geom": [g.wkb for g in frame.geometry]})
    geo = {"version": "1.0.0", "primary_column": "geom", "columns": {"geom": {"encoding": "WKB", "crs": None}}}
    path = tmp_path / "unsigned.parquet"
    pq.write_table(table.replace_schema_metadata({b"geo": json.dumps(geo).encode()}), str(path), row_group_size=3)
    out = tmp_path / "out.gpkg"
    with pytest.raises(InputError, match=rf"Field 'big' of parcel file .*unsigned\.parquet holds {2 ** 64 - 1} at row 5"):
        write_with_fields(path, {"crop_conf": np.zeros(8)}, out)
    assert not out.exists()
    pq.write_table(table.slice(0, 5).replace_schema_metadata({b"geo": json.dumps(geo).encode()}), str(path),
                   row_group_size=3)
    write_with_fields(path, {"crop_conf": np.zeros(5)}, out)
    ds = ogr.Open(str(out))
    layer = ds.GetLayer(0)
    assert layer.GetLayerDefn().GetFieldDefn(layer.GetLayerDefn().GetFieldIndex("big")).GetType() == ogr.OFTInteger64
    assert [f.GetField("big") for f in layer] == big[:5]
    layer = ds = None


def test_fields_whose_names_differ_only_in_case_are_refused_before_any_work_for_ogr_outputs(tmp_path, capsys):
    """Parquet tells 'parcel_id' from 'Parcel_ID'; the GeoPackage a GeoParquet layer is copied
    through on its way to an OGR output does not (the copy used to fail after the whole run
    with 'the disk may be full'). A GeoParquet output keeps both; a GeoJSON layer with 'a' and
    'A' is refused for a GeoPackage output alike."""
    from thermocrop.cli.main import EXIT_OUTPUT
    from thermocrop.core.errors import OutputError
    from thermocrop.core.io.vector import write_with_fields

    frame = parcel_frame().iloc[:4]
    table = pa.table({"parcel_id": frame["parcel_id"].tolist(), "Parcel_ID": ["w", "x", "y", "z"],
                      "geom": [g.wkb for g in frame.geometry]})
    geo = {"version": "1.0.0", "primary_column": "geom", "columns": {"geom": {"encoding": "WKB", "crs": None}}}
    path = tmp_path / "cased.parquet"
    pq.write_table(table.replace_schema_metadata({b"geo": json.dumps(geo).encode()}), str(path))
    says = r"cased\.parquet has the fields 'parcel_id' and 'Parcel_ID', whose names differ only in case"
    for suffix in (".gpkg", ".shp", ".fgb", ".csv"):
        out = tmp_path / f"out{suffix}"
        with pytest.raises(OutputError, match=says + r".*or write a GeoParquet output"):
            write_with_fields(path, {"crop_conf": np.zeros(4)}, out)
        assert not out.exists()
    back = pq.read_table(str(write_with_fields(path, {"crop_conf": np.zeros(4)}, tmp_path / "out.parquet")))
    assert back.column("Parcel_ID").to_pylist() == ["w", "x", "y", "z"]
    assert back.column("parcel_id").to_pylist() == frame["parcel_id"].tolist()
    # the command line refuses before reading a scene or a temperature (neither exists here)
    assert main(["classify", "--parcels", str(path), "--out", str(tmp_path / "map.fgb"), "--scenes",
                 str(tmp_path / "no-scenes"), "--weather", str(tmp_path / "no-weather.csv")]) == EXIT_OUTPUT
    assert "whose names differ only in case" in capsys.readouterr().err
    geojson = tmp_path / "cased.geojson"
    geojson.write_text(json.dumps({"type": "FeatureCollection", "features": [{
        "type": "Feature", "properties": {"a": "x", "A": "y"},
        "geometry": {"type": "Polygon", "coordinates": [[[0, 0], [1, 0], [1, 1], [0, 0]]]}}]}), encoding="utf-8")
    with pytest.raises(OutputError, match=r"'a' and 'A', whose names differ only in case; a GPKG file cannot"):
        write_with_fields(geojson, {"crop_conf": np.zeros(1)}, tmp_path / "a.gpkg")
    assert not (tmp_path / "a.gpkg").exists()
    write_with_fields(geojson, {"crop_conf": np.zeros(1)}, tmp_path / "a.fgb")  # FlatGeobuf keeps both


def test_a_crs_that_names_a_file_for_proj_to_read_is_refused(tmp_path):
    """A PROJ string can make PROJ open any local file: '+init=FILE:KEY' reads FILE as an init
    file (here one the test writes, which PROJ would read as UTM 31N), '+nadgrids=' a grid,
    also inside WKT's PROJ4 extension. The 'geo' metadata of a data file may name none."""
    from pyproj import CRS as ProjCRS

    init = tmp_path / "elsewhere" / "defs"
    init.parent.mkdir()
    init.write_text("<utm> +proj=utm +zone=31 +datum=WGS84 +units=m +no_defs <>\n", encoding="utf-8")
    assert ProjCRS.from_user_input(f"+init={init}:utm").to_epsg() == 32631  # what PROJ would make of it
    wkt = ProjCRS("EPSG:4326").to_wkt("WKT1_GDAL")[:-1] + ',EXTENSION["PROJ4","+proj=longlat +nadgrids=/x.gsb"]]'
    for name, crs in (("init", f"+init={init}:utm"), ("grid", "+proj=longlat +datum=WGS84 +nadgrids=@/x.gsb"),
                      ("wkt", wkt)):
        path = write_with_pyarrow(parcel_frame(), tmp_path / f"{name}.parquet", crs=crs)
        for read in (GeoParquetLayer, load_parcels, parcel_layer_info):
            with pytest.raises(InputError, match=rf"{name}\.parquet has a CRS in its 'geo' metadata that names a file"):
                read(path)
    assert GeoParquetLayer(write_with_pyarrow(parcel_frame(), tmp_path / "ok.parquet", crs=json.loads(
        ProjCRS(CRS).to_json()))).crs.to_epsg() == 32631


def test_a_field_fid_that_holds_no_integers_is_refused_only_where_qgis_writes_the_geopackage(tmp_path):
    """QGIS's writer takes a field 'fid' for a GeoPackage's feature ids, so the Toolbox's checks
    refuse one of another kind before any work; ThermoCrop's own writer (the command line) names
    the feature id column otherwise and keeps the field in every format
    (``test_a_field_fid_keeps_its_values_in_every_output_format``)."""
    from thermocrop.core.errors import OutputError
    from thermocrop.core.io.vector import check_vector_output, replaced_fields

    kinds = {"crop_conf": "real"}
    target = check_vector_output(tmp_path / "out.gpkg", fields=list(kinds))
    with pytest.raises(OutputError, match=r"texts\.shp has a string field 'fid'; a GeoPackage keeps its feature ids"):
        replaced_fields({"parcel_id": "string", "fid": "string"}, target, kinds, source="The parcel layer texts.shp")
    assert replaced_fields({"fid": "integer"}, target, kinds) == []
    assert replaced_fields({"fid": "string"}, target, kinds, fid_kept_as_field=True) == []
    for suffix in (".shp", ".fgb", ".parquet"):
        assert replaced_fields({"fid": "string"}, check_vector_output(tmp_path / f"out{suffix}", fields=list(kinds)),
                               kinds, through_geopackage=True) == []


def test_a_field_ogc_fid_is_refused_for_a_sqlite_output_where_gdal_would_hide_it(tmp_path):
    """GDAL reads a SQLite file's column OGC_FID as its feature ids even where the layer's feature
    id column has another name, so a field of that name would be written and never read back: a
    SQLite output refuses it before any work, other formats keep it."""
    from osgeo import ogr

    from thermocrop.core.errors import OutputError
    from thermocrop.core.io.vector import check_vector_output, replaced_fields

    # What GDAL does with such a column, seen directly.
    path = tmp_path / "seen.sqlite"
    data = ogr.GetDriverByName("SQLite").CreateDataSource(str(path))
    layer = data.CreateLayer("seen", geom_type=ogr.wkbPolygon, options=["FID=fid_other"])
    for name in ("OGC_FID", "crop"):
        layer.CreateField(ogr.FieldDefn(name, ogr.OFTInteger))
    feature = ogr.Feature(layer.GetLayerDefn())
    feature["OGC_FID"], feature["crop"] = 42, 7
    layer.CreateFeature(feature)
    feature = layer = None
    data = None  # closed: written
    data = ogr.Open(str(path))
    defn = data.GetLayer(0).GetLayerDefn()
    assert [defn.GetFieldDefn(i).GetName() for i in range(defn.GetFieldCount())] == ["crop"]
    defn = data = None

    kinds = {"crop_conf": "real"}
    sqlite = check_vector_output(tmp_path / "out.sqlite", fields=list(kinds))
    with pytest.raises(OutputError, match=r"field 'ogc_fid' would be written to the SQLite file .*out\.sqlite"):
        replaced_fields({"parcel_id": "string", "ogc_fid": "integer"}, sqlite, kinds)
    named = check_vector_output(tmp_path / "named.sqlite", fields=["OGC_FID"])
    with pytest.raises(OutputError, match="'OGC_FID' would be written"):
        replaced_fields({"parcel_id": "string"}, named, {"OGC_FID": "real"})
    assert replaced_fields({"parcel_id": "string"}, sqlite, kinds) == []
    for suffix in (".gpkg", ".shp", ".fgb", ".parquet"):
        assert replaced_fields({"OGC_FID": "integer"}, check_vector_output(tmp_path / f"out{suffix}", fields=list(kinds)),
                               kinds) == []


def test_a_field_named_as_a_geopackage_geometry_column_is_written_beside_the_geometry(tmp_path, write_scenes,
                                                                                     write_station_weather):
    """A field 'geom' is what a GeoPackage written here names its geometry column: a shapefile's
    field 'GEOM' made ``classify --out x.gpkg`` fail after the whole run ('duplicate column
    name', 'the disk may be full'), a GeoParquet layer's 'geom' every OGR output (it goes through
    a GeoPackage). The geometry column now takes a name no field has; the field keeps its values."""
    scenes = write_scenes(tmp_path / "scenes", size=50, seed=5)
    weather = write_station_weather(tmp_path / "weather.csv")
    frame = parcel_frame().iloc[:12]
    texts = [f"g{k}" for k in range(12)]
    shapefile = tmp_path / "fields.shp"
    frame.assign(GEOM=texts).to_file(shapefile)
    table = pa.table({"parcel_id": frame["parcel_id"].tolist(), "geom": texts,
                      "geometry": [g.wkb for g in frame.geometry]})
    geo = {"version": "1.0.0", "primary_column": "geometry",
           "columns": {"geometry": {"encoding": "WKB", "crs": json.loads(frame.crs.to_json())}}}
    parquet = tmp_path / "fields.parquet"
    pq.write_table(table.replace_schema_metadata({b"geo": json.dumps(geo).encode()}), str(parquet))
    common = ["--scenes", str(scenes), "--weather", str(weather)]
    for source, name, out in ((shapefile, "GEOM", "a.gpkg"), (parquet, "geom", "b.gpkg"), (parquet, "geom", "c.shp"),
                              (parquet, "geom", "d.sqlite")):
        assert main(["classify", "--parcels", str(source), "--out", str(tmp_path / out), *common]) == 0, out
        back = gpd.read_file(tmp_path / out)
        assert back[name].tolist() == texts, out
        assert back["parcel_id"].tolist() == frame["parcel_id"].tolist()
        assert (back["crop_statu" if out.endswith(".shp") else "crop_status"] == "ok").sum() == 12  # 10 bytes
        assert all(g.equals(h) for g, h in zip(back.geometry, frame.geometry)), out  # a shapefile turns rings


@pytest.mark.parametrize("values", [[4, 5, 6, 1, 2, 3], [7, 3, 7, None, -2, 12], ["a", "b", "c", "d", "e", "f"]],
                         ids=["distinct", "repeated", "texts"])
def test_a_field_fid_keeps_its_values_in_every_output_format(tmp_path, values):
    """A GeoPackage names its feature id column 'fid'. An integer field 'fid' of a GeoParquet
    layer (or a GeoDataFrame) became the feature ids of the GeoPackage it is copied through, so
    a shapefile, FlatGeobuf or CSV output lacked it; in a GeoPackage output such a field (a
    shapefile's too) became the feature ids, and repeated or NULL values failed the write after
    the run. The feature id column now takes a name no field has: 'fid' is a field like any
    other, with its values (repeated, NULL, text) in every format."""
    from thermocrop.core.io.vector import write_with_fields

    frame = parcel_frame().iloc[:6].assign(fid=values)
    table = pa.table({"fid": values, "parcel_id": frame["parcel_id"].tolist(),
                      "geom": [g.wkb for g in frame.geometry]})
    geo = {"version": "1.0.0", "primary_column": "geom",
           "columns": {"geom": {"encoding": "WKB", "crs": json.loads(frame.crs.to_json())}}}
    parquet = tmp_path / "fids.parquet"
    pq.write_table(table.replace_schema_metadata({b"geo": json.dumps(geo).encode()}), str(parquet))
    shapefile = tmp_path / "fids.shp"
    frame.to_file(shapefile)
    expected = list(values)
    for source in (parquet, frame, shapefile):
        kind = "frame" if source is frame else source.suffix[1:]
        for suffix in (".gpkg", ".shp", ".fgb", ".geojson", ".parquet"):
            out = tmp_path / f"{kind}{suffix}"
            write_with_fields(source, {"crop_conf": np.linspace(0, 1, 6)}, out)
            back = gpd.read_parquet(out) if suffix == ".parquet" else gpd.read_file(out)
            back = back.set_index("parcel_id").loc[frame["parcel_id"]]  # FlatGeobuf orders features in space
            got = [None if v is None or v != v else (int(v) if isinstance(values[0], int) else v) for v in back["fid"]]
            assert got == expected, (kind, suffix)
            np.testing.assert_allclose(back["crop_conf"].to_numpy(float), np.linspace(0, 1, 6))
    # written into an existing GeoPackage beside another layer, the field stays a field too
    other = tmp_path / "two.gpkg"
    frame[["parcel_id", "geometry"]].to_file(other, layer="other", driver="GPKG")
    write_with_fields(parquet, {"crop_conf": np.zeros(6)}, other, out_layer="classified", overwrite=True)
    back = gpd.read_file(other, layer="classified")
    assert [None if v != v or v is None else v for v in back["fid"]] == [v for v in values]
    assert len(gpd.read_file(other, layer="other")) == 6


@pytest.mark.parametrize("suffix", [".shp", ".geojson"])
def test_a_layer_without_a_geometry_column_name_is_written_as_geoparquet(tmp_path, suffix):
    """Shapefiles and GeoJSON name no geometry column; GDAL's Arrow stream calls it
    'wkb_geometry'. The GeoParquet output used to look for 'geometry', found none and wrote
    nothing ('lacks ['geometry'] after writing'), for classify and gdd alike."""
    frame = parcel_frame().iloc[:12]
    source = tmp_path / f"parcels{suffix}"
    frame.to_file(source)
    out = write_geoparquet(source, {"crop_conf": np.linspace(0, 1, 12)}, tmp_path / "out.parquet")
    back = gpd.read_parquet(out)
    expected = gpd.read_file(source)
    assert back.crs == expected.crs and back["parcel_id"].tolist() == expected["parcel_id"].tolist()
    assert all(g.equals_exact(h, 0) for g, h in zip(back.geometry, expected.geometry))
    np.testing.assert_allclose(back["crop_conf"].to_numpy(float), np.linspace(0, 1, 12))
    layer = GeoParquetLayer(out)
    assert layer.geometry_column in pq.ParquetFile(str(out)).schema_arrow.names


def test_the_extent_is_that_of_every_geometry_across_row_groups_and_broken_wkb_is_named_by_row(tmp_path):
    """The preflight's extent (taken from each geometry's WKB envelope) equals shapely's bounds of
    the same geometries: polygons, a multipolygon reaching furthest east and north in a later row
    group, a geometry that is None and an empty one that count for nothing."""
    import pandas as pd
    from shapely.geometry import MultiPolygon

    far = MultiPolygon([box(X0 + 700, Y0 - 50, X0 + 730, Y0 + 60), box(X0 - 35, Y0 - 999, X0 - 20, Y0 - 980)])
    extra = gpd.GeoDataFrame({"parcel_id": ["p99"], "crop": ["wheat"], "area_ha": [9.0]}, geometry=[far], crs=CRS)
    frame = gpd.GeoDataFrame(pd.concat([parcel_frame(), extra], ignore_index=True), crs=CRS)
    path = write_with_pyarrow(frame, tmp_path / "extent.parquet", crs=CRS, row_group_size=4)
    table = pq.read_table(str(path))
    wkb = table.column("geom").to_pylist()
    wkb[3] = None
    path = tmp_path / "extent-none.parquet"
    pq.write_table(table.set_column(3, "geom", pa.array(wkb, pa.binary())), str(path), row_group_size=4)
    shapes = [g for k, g in enumerate(frame.geometry) if k != 3 and not g.is_empty]
    expected = (min(g.bounds[0] for g in shapes), min(g.bounds[1] for g in shapes),
                max(g.bounds[2] for g in shapes), max(g.bounds[3] for g in shapes))
    assert expected == (X0 - 35, Y0 - 999, X0 + 730, Y0 + 60)
    assert GeoParquetLayer(path).bounds() == expected
    assert parcel_layer_info(path)["bounds"] == expected

    wkb[9] = b"\x01\x03\x00"
    pq.write_table(table.set_column(3, "geom", pa.array(wkb, pa.binary())), str(tmp_path / "broken.parquet"),
                   row_group_size=4)
    with pytest.raises(InputError, match="broken.parquet holds a geometry that is not valid WKB at row 9"):
        GeoParquetLayer(tmp_path / "broken.parquet").bounds()


def test_extended_wkb_with_an_srid_is_read_for_the_extent_and_the_copy_as_the_layer_reads_it(tmp_path):
    """PostGIS's extended WKB (an SRID after the type) is what some exports hold; the layer's
    reader (shapely) takes it, and so do the preflight's extent and the copy for OGR outputs,
    which read WKB through OGR: the same bounds and geometries as the plain WKB file."""
    from osgeo import ogr
    from shapely import wkb as shapely_wkb

    from thermocrop.core.io.geoparquet import copy_to_geopackage

    frame = parcel_frame()
    plain = write_with_pyarrow(frame, tmp_path / "plain.parquet", crs=CRS, row_group_size=4)
    table = pq.read_table(str(plain))
    extended = [shapely_wkb.dumps(g, srid=32631) for g in frame.geometry]
    assert extended[0][4] & 0x20 and extended[0][1:5] != table.column("geom")[0].as_py()[1:5]  # the SRID flag
    assert ogr.CreateGeometryFromWkb(extended[0]) is None  # OGR alone refuses it
    path = tmp_path / "ewkb.parquet"
    pq.write_table(table.set_column(3, "geom", pa.array(extended, pa.binary())), str(path), row_group_size=4)

    assert GeoParquetLayer(path).bounds() == GeoParquetLayer(plain).bounds()
    assert_same_parcels(load_parcels(path), load_parcels(plain))
    counts = [copy_to_geopackage(GeoParquetLayer(p), tmp_path / f"{p.stem}.gpkg", "copy") for p in (plain, path)]
    assert counts == [len(frame)] * 2
    copies = [gpd.read_file(tmp_path / f"{p.stem}.gpkg") for p in (plain, path)]
    assert all(a.equals_exact(b, 0) if a is not None else b is None
               for a, b in zip(copies[0].geometry, copies[1].geometry))


def test_features_without_a_geometry_are_refused_before_the_run_for_a_flatgeobuf_output(gpkg, tmp_path, capsys,
                                                                                       write_station_weather):
    """GDAL's FlatGeobuf writer drops a feature without a geometry (or with an empty one): the
    run used to end in "holds 13 features after writing instead of 14; the disk may be full". It
    is now refused before any work, naming the first such feature; other formats keep it."""
    from osgeo import ogr

    from thermocrop.core.io.source_layer import first_feature_without_geometry

    # What GDAL does with such features, seen directly.
    probe = tmp_path / "probe.fgb"
    data = ogr.GetDriverByName("FlatGeobuf").CreateDataSource(str(probe))
    layer = data.CreateLayer("probe", geom_type=ogr.wkbPolygon)
    for wkt in ("POLYGON ((0 0,1 0,1 1,0 0))", None, "POLYGON EMPTY"):
        feature = ogr.Feature(layer.GetLayerDefn())
        if wkt:
            feature.SetGeometry(ogr.CreateGeometryFromWkt(wkt))
        layer.CreateFeature(feature)
    feature = layer = None
    data = None
    data = ogr.Open(str(probe))
    assert data.GetLayer(0).GetFeatureCount() == 1
    data = None

    frame = parcel_frame()
    empty = int(np.flatnonzero(frame.geometry.is_empty)[0])
    parquet = write_with_pyarrow(frame, tmp_path / "parcels.parquet", crs=CRS, row_group_size=4)
    assert first_feature_without_geometry(gpkg) == f"feature id {empty + 1}"  # GeoPackage ids from 1
    assert first_feature_without_geometry(parquet) == f"row {empty}"
    assert first_feature_without_geometry(frame) == f"row {empty}"
    whole = frame[~frame.geometry.is_empty]
    assert first_feature_without_geometry(whole) is None
    assert first_feature_without_geometry(write_with_pyarrow(whole, tmp_path / "whole.parquet", crs=CRS)) is None

    write_station_weather(tmp_path / "weather.csv")
    common = ["--weather", str(tmp_path / "weather.csv"), "--dates", "2023-05-01", "2023-07-01"]
    for source, where in ((gpkg, f"feature id {empty + 1}"), (parquet, f"row {empty}")):
        capsys.readouterr()
        out = tmp_path / f"{source.stem}.fgb"
        assert main(["gdd", "--parcels", str(source), "--out", str(out), *common]) != 0
        said = capsys.readouterr().err
        assert f"has features without a geometry (the first at {where})" in said and "GeoPackage (.gpkg)" in said
        assert "disk may be full" not in said and not out.exists()
    whole.to_file(tmp_path / "whole.gpkg", driver="GPKG")
    assert main(["gdd", "--parcels", str(tmp_path / "whole.gpkg"), "--out", str(tmp_path / "whole.fgb"), *common]) == 0
    assert len(gpd.read_file(tmp_path / "whole.fgb")) == len(whole)
    assert main(["gdd", "--parcels", str(gpkg), "--out", str(tmp_path / "kept.gpkg"), *common]) == 0
    assert len(gpd.read_file(tmp_path / "kept.gpkg")) == len(frame)
