"""Which layer of a multi-layer parcel file a run reads, and that the user is told."""

from __future__ import annotations

import logging

import pytest
from shapely.geometry import box

from thermocrop.core.preflight import check_inputs, parcel_layer_info

gpd = pytest.importorskip("geopandas")


def _write_two_layers(path):
    crs = "EPSG:32632"
    gpd.GeoDataFrame({"parcel_id": ["a", "b"]}, geometry=[box(0, 0, 50, 50), box(100, 0, 150, 50)],
                     crs=crs).to_file(path, layer="fields_2018", driver="GPKG")
    gpd.GeoDataFrame({"parcel_id": ["c", "d", "e"]}, geometry=[box(0, 0, 20, 20)] * 3,
                     crs=crs).to_file(path, layer="fields_2019", driver="GPKG")


def test_a_file_of_several_layers_says_which_is_read(tmp_path, caplog):
    path = tmp_path / "lpis.gpkg"
    _write_two_layers(path)
    assert parcel_layer_info(path)["layers"] == ["fields_2018", "fields_2019"]
    with caplog.at_level(logging.WARNING, logger="thermocrop.core.preflight"):
        checked = check_inputs(parcels=str(path))
    assert checked.parcel_count == 2
    said = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert len(said) == 1 and "holds 2 layers (fields_2018, fields_2019); the first, 'fields_2018', is read" in said[0]
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="thermocrop.core.preflight"):
        assert check_inputs(parcels=str(path), layer="fields_2019").parcel_count == 3
    assert not [r for r in caplog.records if r.levelno >= logging.WARNING]


def test_a_file_of_one_layer_says_nothing(tmp_path, caplog):
    path = tmp_path / "one.gpkg"
    gpd.GeoDataFrame({"parcel_id": ["a"]}, geometry=[box(0, 0, 50, 50)], crs="EPSG:32632").to_file(path)
    with caplog.at_level(logging.WARNING, logger="thermocrop.core.preflight"):
        check_inputs(parcels=str(path))
    assert not [r for r in caplog.records if r.levelno >= logging.WARNING]
