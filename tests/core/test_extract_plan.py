"""A partitioned extraction planned from the layer file: labels, blocks and classes kept batch by
batch equal what ``load_parcels`` gives the whole layer, and the dataset written equals the
one-process extraction's and that of a partitioned run sent a ``ParcelTable`` (GeoPackage and
GeoParquet, labels outside the class map, NULL labels and blocks, a repaired and an empty
geometry), also after a cancel and a resume. Small files written here: 4 scenes of 60 x 60 px,
34 parcels."""

from __future__ import annotations

import shutil

import numpy as np
import pytest
from shapely.geometry import Polygon, box

from thermocrop.core.errors import CancelledError, ThermoCropError
from thermocrop.core.extract import extract_to_dataset
from thermocrop.core.io.geoparquet import write_geoparquet
from thermocrop.core.parcels import STATUS_INVALID_GEOMETRY, ParcelFields, load_parcels
from thermocrop.core.pixel_sets import open_dataset
from thermocrop.core.runs import layer_plan, partitions
from thermocrop.core.runs.cluster import ClusterOptions
from thermocrop.core.runs.extraction import extract_partitioned
from thermocrop.core.runs.layer_plan import id_hashes, plan_layer
from thermocrop.core.runs.partitions import PartitionListener
from thermocrop.core.settings import ExtractionSettings, PixelSampling

gpd = pytest.importorskip("geopandas")
pytest.importorskip("pyarrow")

CRS = "EPSG:32631"
X0, Y0 = 500000.0, 4800000.0
CHUNK = 6  # 34 parcels -> 6 partitions
ARRAYS = ("pixels", "pixel_mask", "date_mask", "gdd", "labels", "parcel_ids", "blocks", "status")
# Codes 11 and 12 are mapped, 21 too but only five of the 34 parcels carry it (fewer than
# MIN_PARCELS), 99 is not in the map; None and "" are no label.
CODES = ["11", "12", "11", None, "99", "12", "21", "11", "", "12", "11", "21"]
MIN_PARCELS = 6


@pytest.fixture(scope="module")
def region(tmp_path_factory, write_scenes, write_station_weather) -> dict:
    root = tmp_path_factory.mktemp("extract-plan")
    write_scenes(root / "scenes", size=60, seed=5)
    # 32 parcels on a grid listed column by column (layer order is not strip order), a
    # self-intersecting bow tie (repaired on reading) and an empty polygon (invalid_geometry).
    geoms = [box(X0 + 70 * c + 8, Y0 - 70 * r - 62, X0 + 70 * c + 62, Y0 - 70 * r - 8)
             for c in range(8) for r in range(4)]
    geoms += [Polygon([(X0 + 10, Y0 - 410), (X0 + 90, Y0 - 490), (X0 + 90, Y0 - 410), (X0 + 10, Y0 - 490)]),
              Polygon()]
    n = len(geoms)
    frame = gpd.GeoDataFrame({
        "parcel_id": [f"field-{k}" + "x" * (k % 5) for k in range(n)],
        "code": [CODES[k % len(CODES)] for k in range(n)],
        "block": [None if k % 7 == 3 else k // 9 for k in range(n)],
    }, geometry=geoms, crs=CRS)
    frame.to_file(root / "parcels.gpkg", driver="GPKG")
    write_geoparquet(root / "parcels.gpkg", {}, root / "parcels.parquet")
    (root / "map.csv").write_text("code,class,name\n11,wheat,Wheat\n12,barley,Barley\n21,maize,Maize\n",
                                  encoding="utf-8")
    write_station_weather(root / "weather.csv")
    return {"root": root, "scenes": root / "scenes", "gpkg": root / "parcels.gpkg",
            "parquet": root / "parcels.parquet", "weather": root / "weather.csv", "map": root / "map.csv"}


@pytest.fixture
def small_batches(monkeypatch):
    """Plan 7 features at a time, so labels, blocks and ids span several batches."""
    monkeypatch.setattr(layer_plan, "PLAN_BATCH", 7)


def fields_of(region) -> ParcelFields:
    return ParcelFields(label_field="code", class_map=str(region["map"]), min_parcels=MIN_PARCELS)


@pytest.mark.parametrize("layer", ["gpkg", "parquet"])
@pytest.mark.parametrize("case", ["class map", "names", "class list", "no labels"])
def test_the_plan_keeps_the_labels_and_blocks_load_parcels_gives(region, small_batches, layer, case):
    fields = {"class map": fields_of(region),
              "names": ParcelFields(label_field="code"),
              "class list": ParcelFields(label_field="code", classes=["12", "11", "42"]),
              "no labels": ParcelFields(block_field="block")}[case]
    table = load_parcels(region[layer], label_field=fields.label_field, classes=fields.classes,
                         class_map=fields.class_map, min_parcels=fields.min_parcels)
    plan = plan_layer(region[layer], fields=fields)
    kept = plan.attributes
    assert plan.classes == table.classes and plan.class_summary == table.class_summary
    assert kept.labels.dtype == np.int16 and kept.labels.tolist() == table.labels.tolist()
    assert kept.blocks.dtype == np.int32 and kept.blocks.tolist() == table.blocks.tolist()
    assert kept.id_hashes.tolist() == id_hashes(table.parcel_ids).tolist()
    assert plan.id_width == max(len(i) for i in table.parcel_ids) == 12
    assert plan.usable.tolist() == (table.status != STATUS_INVALID_GEOMETRY).tolist()
    idx = np.array([1, 4, 6, 33])
    part = plan.slice(idx).table(plan.classes)
    assert part.parcel_ids.tolist() == table.parcel_ids[idx].tolist()
    assert part.labels.tolist() == table.labels[idx].tolist() and part.blocks.tolist() == table.blocks[idx].tolist()


def test_the_class_map_case_holds_what_it_is_meant_to(region):
    """The labels of the layer by hand: codes 11 -> wheat, 12 -> barley, 21 (five parcels) and 99
    -> unknown, None and "" unlabelled."""
    plan = plan_layer(region["gpkg"], fields=fields_of(region))
    codes = [CODES[k % len(CODES)] for k in range(34)]
    names = {"11": "wheat", "12": "barley", "21": "unknown", "99": "unknown"}
    assert plan.classes == ("barley", "unknown", "wheat")
    expected = [plan.classes.index(names[c]) if c else -1 for c in codes]
    assert plan.attributes.labels.tolist() == expected
    assert plan.class_summary["unmapped_codes"] == {"99": codes.count("99")}
    assert plan.class_summary["rare_classes"] == {"maize": codes.count("21")} == {"maize": 5}
    assert plan.attributes.blocks.tolist() == [-1 if k % 7 == 3 else k // 9 for k in range(34)]


def _assert_same_dataset(a_path, b_path):
    a, b = open_dataset(a_path), open_dataset(b_path)
    for name in ARRAYS:
        np.testing.assert_array_equal(np.asarray(getattr(a, name)), np.asarray(getattr(b, name)), err_msg=name)
    assert tuple(a.classes) == tuple(b.classes)
    same_meta = {k: v for k, v in a.meta.items() if k != "parcels"}
    assert same_meta == {k: v for k, v in b.meta.items() if k != "parcels"}


def _extract(region, layer, out, **options):
    return extract_partitioned(layer, region["scenes"], region["weather"], out, chunk_size=CHUNK,
                               settings=ExtractionSettings(sampling=PixelSampling(max_pixels=8)),
                               fields=fields_of(region), **options)


@pytest.fixture(scope="module")
def one_process(region, tmp_path_factory):
    out = tmp_path_factory.mktemp("one") / "dataset"
    extract_to_dataset(region["gpkg"], region["scenes"], region["weather"], out, chunk_size=CHUNK,
                       settings=ExtractionSettings(sampling=PixelSampling(max_pixels=8)), fields=fields_of(region))
    return out


def test_a_planned_extraction_equals_one_process_and_a_table_sent_in_pieces(region, one_process, small_batches,
                                                                           monkeypatch, tmp_path):
    dataset = open_dataset(one_process)
    assert {"ok", STATUS_INVALID_GEOMETRY} <= set(dataset.status.tolist())
    assert {-1, 0, 1, 2} == set(dataset.labels.tolist()) and -1 in dataset.blocks.tolist()
    table = load_parcels(region["gpkg"], label_field="code", class_map=str(region["map"]), min_parcels=MIN_PARCELS)
    _, summary, _ = _extract(region, table, tmp_path / "table", run_folder=tmp_path / "run-table",
                             cluster=ClusterOptions())
    _assert_same_dataset(one_process, tmp_path / "table")

    def whole_layer(*args, **kwargs):
        raise AssertionError("the client read the whole layer")

    monkeypatch.setattr(partitions, "parcel_table", whole_layer)
    _, summary, _ = _extract(region, region["gpkg"], tmp_path / "planned", run_folder=tmp_path / "run-planned",
                             cluster=ClusterOptions())
    assert summary.computed == summary.partitions == 6
    _assert_same_dataset(one_process, tmp_path / "planned")
    # GeoParquet read by row groups, on two worker processes.
    _extract(region, region["parquet"], tmp_path / "parquet", run_folder=tmp_path / "run-parquet",
             cluster=ClusterOptions(workers=2, dashboard=":0"))
    _assert_same_dataset(one_process, tmp_path / "parquet")


class StopAfter(PartitionListener):
    def __init__(self, n):
        self.n, self.done = n, 0

    def finished(self, index):
        self.done += 1

    def cancelled(self):
        return self.done >= self.n


def test_a_cancelled_planned_extraction_resumes_to_the_same_dataset(region, one_process, tmp_path):
    stop = StopAfter(2)
    with pytest.raises(CancelledError):
        _extract(region, region["gpkg"], tmp_path / "out", run_folder=tmp_path / "run", cluster=ClusterOptions(),
                 listener=stop, cancelled=stop.cancelled)
    assert not (tmp_path / "out").exists()
    assert len([p for p in (tmp_path / "run").glob("part-*") if p.is_dir()]) == 2
    _, summary, _ = _extract(region, region["gpkg"], tmp_path / "out", run_folder=tmp_path / "run",
                             cluster=ClusterOptions(), resume=True)
    assert (summary.resumed, summary.computed) == (2, 4)
    _assert_same_dataset(one_process, tmp_path / "out")


def test_a_partition_holding_other_parcels_is_refused(region, tmp_path):
    _extract(region, region["gpkg"], tmp_path / "first", run_folder=tmp_path / "run", cluster=ClusterOptions())
    shutil.rmtree(tmp_path / "run" / "part-00000")
    shutil.copytree(tmp_path / "run" / "part-00001", tmp_path / "run" / "part-00000")
    with pytest.raises(ThermoCropError, match="other parcels"):
        _extract(region, region["gpkg"], tmp_path / "second", run_folder=tmp_path / "run", cluster=ClusterOptions(),
                 resume=True)
    assert not (tmp_path / "second").exists()
