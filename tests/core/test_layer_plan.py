"""Partitions planned from a parcel layer file without holding its geometries: the same chunks
as a one-process run makes from the whole table, and each partition's parcels read back by
position or feature id as ``load_parcels`` gives them, from GeoPackage, shapefile and GeoParquet
layers (small files written here, read in batches of a few features)."""

from __future__ import annotations

import hashlib

import numpy as np
import pytest
from rasterio.transform import from_origin
from shapely.geometry import Polygon, box

from thermocrop.core.errors import InputError
from thermocrop.core.io.geoparquet import write_geoparquet
from thermocrop.core.parcels import load_parcels
from thermocrop.core.pixel_sampling import spatial_chunks
from thermocrop.core.runs import layer_plan
from thermocrop.core.runs.layer_plan import plan_layer
from thermocrop.core.scenes.product import Grid

gpd = pytest.importorskip("geopandas")

CRS = "EPSG:32631"
X0, Y0 = 500000.0, 4800000.0


def layer_frame(n: int = 23) -> "gpd.GeoDataFrame":
    """``n`` parcels in layer order that is not north-to-south, one a bow tie (repaired), one empty,
    and an integer field with NULLs in its last rows only."""
    rng = np.random.default_rng(11)
    geoms = []
    for _ in range(n):
        x, y = X0 + rng.uniform(0, 2000), Y0 - rng.uniform(0, 2000)
        geoms.append(box(x, y, x + rng.uniform(20, 80), y + rng.uniform(20, 80)))
    geoms[4] = Polygon([(X0 + 10, Y0 - 10), (X0 + 90, Y0 - 90), (X0 + 90, Y0 - 10), (X0 + 10, Y0 - 90)])
    geoms[7] = Polygon()
    code = [float(100 + k) if k < n - 3 else None for k in range(n)]
    return gpd.GeoDataFrame({"parcel_id": [f"f{k:02d}" for k in range(n)], "code": code}, geometry=geoms, crs=CRS)


@pytest.fixture(params=["gpkg", "shp", "parquet"])
def layer(request, tmp_path):
    frame = layer_frame()
    gpkg = tmp_path / "parcels.gpkg"
    frame.to_file(gpkg, driver="GPKG")
    if request.param == "gpkg":
        return gpkg
    if request.param == "shp":
        frame.to_file(tmp_path / "parcels.shp")
        return tmp_path / "parcels.shp"
    return write_geoparquet(gpkg, {}, tmp_path / "parcels.parquet")


def two_grids():
    """Two scene grids side by side, so that chunks are cut by tile as well as by strip."""
    return [Grid(CRS, from_origin(X0, Y0, 10, 10), 100, 200), Grid(CRS, from_origin(X0 + 1000, Y0, 10, 10), 100, 200)]


@pytest.mark.parametrize("id_field, selected", [(None, None), ("code", None), (None, ["f01", "f04", "f07", "f20",
                                                                                       "f21", "f09", "f13"])])
def test_plan_and_slices_equal_the_whole_table(layer, monkeypatch, id_field, selected):
    monkeypatch.setattr(layer_plan, "PLAN_BATCH", 5)  # several batches, the last ones with NULL codes
    table = load_parcels(layer, id_field=id_field, block_field=None, selected_ids=selected)
    plan = plan_layer(layer, id_field=id_field, selected_ids=selected)
    assert len(plan) == len(table)
    assert plan.rows.tolist() == table.rows.tolist()
    assert plan.usable.tolist() == (table.status == "").tolist()
    assert plan.ids_digest == hashlib.sha256("\n".join(table.parcel_ids).encode()).hexdigest()
    for grids in ([], two_grids()):
        expected = spatial_chunks(table, 3, grids)
        got = plan.chunks(3, grids)
        assert len(got) == len(expected) > 2
        assert all(np.array_equal(a, b) for a, b in zip(got, expected))
    for idx in plan.chunks(3, two_grids()):
        part = plan.slice(idx).table()
        assert part.parcel_ids.tolist() == table.parcel_ids[idx].tolist()
        assert part.rows.tolist() == table.rows[idx].tolist()
        assert part.status.tolist() == table.status[idx].tolist()
        assert part.source == table.source
        for g, h in zip(part.geometry, table.geometry.iloc[idx]):
            assert (g is None and h is None) or g.equals_exact(h, 0)


def test_ids_of_an_integer_field_with_nulls_read_as_by_the_whole_layer(tmp_path, monkeypatch):
    monkeypatch.setattr(layer_plan, "PLAN_BATCH", 4)
    frame = layer_frame(10)
    frame["code"] = [7, 8, 9, 10, 11, 12, 13, 14, None, 16]
    frame.to_file(tmp_path / "coded.gpkg", driver="GPKG")
    table = load_parcels(tmp_path / "coded.gpkg", id_field="code", block_field=None)
    assert table.parcel_ids[:2].tolist() == ["7.0", "8.0"]  # a float column over the whole layer
    plan = plan_layer(tmp_path / "coded.gpkg", id_field="code")
    assert plan.ids_digest == hashlib.sha256("\n".join(table.parcel_ids).encode()).hexdigest()
    assert plan.slice(np.array([0, 1, 9])).table().parcel_ids.tolist() == ["7.0", "8.0", "16.0"]


def test_planning_refuses_what_load_parcels_refuses(layer):
    with pytest.raises(InputError, match="has no id field 'crop'"):
        plan_layer(layer, id_field="crop")
    with pytest.raises(InputError, match="among the selected ids"):
        plan_layer(layer, selected_ids=["nowhere"])


def test_feature_ids_with_gaps_are_kept_one_by_one(tmp_path):
    """A GeoPackage whose features 1..n were not all kept (ids with gaps): the plan keeps each id,
    where a layer of ids 1..n keeps one number; both read each partition's own parcels."""
    from osgeo import ogr

    frame = layer_frame(12)
    frame.to_file(tmp_path / "whole.gpkg", driver="GPKG")
    frame.to_file(tmp_path / "gaps.gpkg", driver="GPKG")
    ds = ogr.Open(str(tmp_path / "gaps.gpkg"), 1)
    for fid in (3, 4, 9):
        assert ds.GetLayer(0).DeleteFeature(fid) == 0
    ds = None
    assert plan_layer(tmp_path / "whole.gpkg").fids == 1
    for path in (tmp_path / "whole.gpkg", tmp_path / "gaps.gpkg"):
        table = load_parcels(path, block_field=None)
        plan = plan_layer(path)
        idx = np.array([0, 2, 3, len(plan) - 1])
        assert plan.slice(idx).table().parcel_ids.tolist() == table.parcel_ids[idx].tolist()
    plan = plan_layer(tmp_path / "gaps.gpkg")
    assert isinstance(plan.fids, np.ndarray) and plan.fids[:4].tolist() == [1, 2, 5, 6]


def mixed_geometries() -> list:
    """Parcels that ``repair_geometries`` keeps, repairs or refuses, each with the box planning
    must give it (None: unusable), worked out by hand."""
    from shapely.geometry import GeometryCollection, LineString, MultiPolygon

    def at(x, y):  # a point of the layer, ``x`` east and ``y`` south of its corner
        return X0 + x, Y0 - y

    def box_at(x0, y0, x1, y1):
        return (X0 + x0, Y0 - y1, X0 + x1, Y0 - y0)

    square = Polygon([at(0, 0), at(40, 0), at(40, 40), at(0, 40)])
    holed = Polygon([at(100, 0), at(160, 0), at(160, 60), at(100, 60)],
                    [[at(120, 20), at(140, 20), at(140, 40), at(120, 40)]])
    two = MultiPolygon([box(*box_at(200, 0, 220, 20)), box(*box_at(240, 30, 250, 50))])
    # a spike out to x = 400 along a ring's edge: invalid; the repair keeps the square alone
    spike = Polygon([at(300, 0), at(340, 0), at(340, 20), at(400, 20), at(340, 20), at(340, 40), at(300, 40)])
    bow_tie = Polygon([at(500, 0), at(560, 60), at(560, 0), at(500, 60)])  # repaired into two triangles
    flat = Polygon([at(600, 0), at(620, 0), at(660, 0)])  # no area: nothing polygonal is left
    # valid, but only its polygon is a parcel: the line beyond it (to x = 900) is dropped
    mixed = GeometryCollection([box(*box_at(700, 0, 730, 30)), LineString([at(730, 0), at(900, 0)])])
    return [(square, box_at(0, 0, 40, 40)), (holed, box_at(100, 0, 160, 60)), (two, box_at(200, 0, 250, 50)),
            (spike, box_at(300, 0, 340, 40)), (bow_tie, box_at(500, 0, 560, 60)), (flat, None),
            (mixed, box_at(700, 0, 730, 30)), (Polygon(), None), (None, None)]


@pytest.mark.parametrize("kind", ["gpkg", "parquet"])
def test_valid_repaired_and_unusable_geometries_are_boxed_as_load_parcels_repairs_them(tmp_path, monkeypatch, kind):
    """Valid parcels are boxed from the file's own geometries, the others after repair: each box
    is the one worked out by hand and the one of ``load_parcels``' repaired geometry."""
    monkeypatch.setattr(layer_plan, "PLAN_BATCH", 4)  # valid, repaired and unusable ones in each batch
    cases = mixed_geometries() * 2
    frame = gpd.GeoDataFrame({"parcel_id": [f"m{k}" for k in range(len(cases))]},
                             geometry=[g for g, _ in cases], crs=CRS)
    path = tmp_path / "mixed.gpkg"
    frame.to_file(path, driver="GPKG")
    if kind == "parquet":
        path = write_geoparquet(path, {}, tmp_path / "mixed.parquet")
    plan = plan_layer(path)
    table = load_parcels(path, block_field=None)
    assert plan.usable.tolist() == [b is not None for _, b in cases] == (table.status == "").tolist()
    for k, (_, expected) in enumerate(cases):
        if expected is None:
            assert np.isnan(plan.bounds[k]).all()
        else:
            assert plan.bounds[k].tolist() == pytest.approx(expected, abs=1e-6)
            assert plan.bounds[k].tolist() == list(table.geometry.iloc[k].bounds)  # the same, to the bit
    assert plan.ids_digest == hashlib.sha256("\n".join(table.parcel_ids).encode()).hexdigest()
    assert all(np.array_equal(a, b) for a, b in zip(plan.chunks(4, two_grids()), spatial_chunks(table, 4, two_grids())))


def test_ids_of_a_datetime_field_are_the_text_fiona_gives(tmp_path, monkeypatch):
    """A date-and-time id field (Arrow types it as a timestamp): the ids are fiona's ISO text, a
    NULL one 'nan', as ``load_parcels``' features read by fiona give them."""
    import fiona

    monkeypatch.setattr(layer_plan, "PLAN_BATCH", 2)
    path = tmp_path / "dated.gpkg"
    schema = {"geometry": "Polygon", "properties": {"sown": "datetime"}}
    sown = ["2023-03-01T08:30:00", None, "2023-04-15T12:00:00", "2023-05-02T17:45:00", None]
    with fiona.open(path, "w", driver="GPKG", crs=CRS, schema=schema) as dst:
        for k, when in enumerate(sown):
            dst.write({"geometry": box(X0 + 100 * k, Y0 - 50, X0 + 100 * k + 40, Y0).__geo_interface__,
                       "properties": {"sown": when}})
    with fiona.open(path) as src:
        read = [f["properties"]["sown"] for f in src]
    ids = ["nan" if v is None else str(v) for v in read]
    assert ids[0] == "2023-03-01T08:30:00" and ids[1] == "nan"
    plan = plan_layer(path, id_field="sown")
    assert plan.ids_digest == hashlib.sha256("\n".join(ids).encode()).hexdigest()
    assert plan.slice(np.arange(5)).table().parcel_ids.tolist() == ids


def test_a_partition_of_a_layer_that_lost_rows_since_planning_says_so(layer):
    """A layer written anew with fewer parcels after the plan: a partition reaching past its end
    is refused with the same advice for every format (GeoParquet used to advise writing the file
    again, after pyarrow's own complaint about row group indices)."""
    plan = plan_layer(layer)
    last = next(idx for idx in plan.chunks(3) if max(idx) >= 10)  # a partition with parcels past row 10
    if layer.suffix == ".gpkg":
        layer_frame(10).to_file(layer, driver="GPKG")
    elif layer.suffix == ".shp":
        layer_frame(10).to_file(layer)
    else:
        layer_frame(10).to_file(layer.with_suffix(".gpkg"), driver="GPKG")
        write_geoparquet(layer.with_suffix(".gpkg"), {}, layer, overwrite=True)
    with pytest.raises(InputError, match="check that the layer has not changed since the run began"):
        plan.slice(last).table()
