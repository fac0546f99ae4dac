"""The field-visit list: which parcels, in which order, where, and the CSV it writes."""

from __future__ import annotations

import csv

import geopandas as gpd
import pytest
from pyproj import Transformer
from shapely.geometry import Point, box

from thermocrop.core.errors import InputError, OutputError
from thermocrop.core.field_visits import FIELD_VISIT_COLUMNS, field_visits, write_field_visits


def _classified():
    rows = [("p1", "wheat", 0.6, "wheat|barley", 2), ("p2", "corn", 0.9, "corn", 1),
            ("p3", "wheat", 0.4, "wheat|barley|corn", 3), ("=1+1", "barley", 0.5, "barley|wheat", 2),
            ("p5", None, None, None, None), ("p6", "corn", 0.45, "corn", 1)]
    geometry = [box(500000 + 300 * i, 5400000, 500200 + 300 * i, 5400150) for i in range(len(rows))]
    return gpd.GeoDataFrame({"parcel_id": [r[0] for r in rows], "crop_pred": [r[1] for r in rows],
                             "crop_conf": [r[2] for r in rows], "crop_set": [r[3] for r in rows],
                             "crop_set_size": [r[4] for r in rows]}, geometry=geometry, crs="EPSG:32631")


def test_sets_of_several_classes_ranked_by_size_then_confidence(tmp_path):
    frame = _classified()
    visits = field_visits(frame, id_field="parcel_id")
    assert [v.parcel_id for v in visits] == ["p3", "=1+1", "p1"]
    assert [(v.set_size, v.confidence, v.classes) for v in visits] == [
        (3, 0.4, "wheat|barley|corn"), (2, 0.5, "barley|wheat"), (2, 0.6, "wheat|barley")]
    # With a threshold, a sure set below it is listed too, after the larger sets.
    below = field_visits(frame, id_field="parcel_id", below=0.5)
    assert [v.parcel_id for v in below] == ["p3", "=1+1", "p1", "p6"]
    # Each point lies inside its parcel (back in the layer's CRS by another route).
    back = Transformer.from_crs("EPSG:4326", "EPSG:32631", always_xy=True)
    shapes = dict(zip(frame["parcel_id"], frame.geometry))
    for visit in below:
        assert 2.9 < visit.lon < 3.1 and 48 < visit.lat < 49
        assert shapes[visit.parcel_id].contains(Point(*back.transform(visit.lon, visit.lat)))

    path = write_field_visits(below, tmp_path / "visits.csv")
    with open(path, newline="") as handle:
        rows = list(csv.reader(handle))
    assert tuple(rows[0]) == FIELD_VISIT_COLUMNS
    assert [r[0] for r in rows[1:]] == ["p3", "'=1+1", "p1", "p6"]  # inert for spreadsheets
    assert rows[1][1:5] == ["wheat", "0.4000", "wheat|barley|corn", "3"]
    assert float(rows[4][5]) == pytest.approx(below[3].lon, abs=1e-6)
    with pytest.raises(OutputError):
        write_field_visits(below, path)  # exists; not replaced without overwrite


def test_without_sets_the_confidence_decides_and_without_either_it_is_refused():
    frame = _classified().drop(columns=["crop_set", "crop_set_size"])
    with pytest.raises(InputError, match="no prediction sets"):
        field_visits(frame)
    visits = field_visits(frame, below=0.55)
    assert [(v.parcel_id, v.set_size, v.classes) for v in visits] == [("2", 0, ""), ("5", 0, ""), ("3", 0, "")]  # ids: the index
    with pytest.raises(InputError, match="no field crop_label"):
        field_visits(_classified(), label_field="crop_label")
