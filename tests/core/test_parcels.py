"""Reading a parcel layer's labels: a label field must hold labels."""

from __future__ import annotations

import pytest


def test_a_label_field_without_any_value_is_refused_naming_it(tmp_path):
    """Training from a label field that is empty for every parcel failed only after every scene was
    extracted, with "has no class list; extract it with --label-field"."""
    import geopandas as gpd
    from shapely.geometry import box

    from thermocrop.core.errors import InputError
    from thermocrop.core.parcels import load_parcels

    path = tmp_path / "fields.gpkg"
    gpd.GeoDataFrame({"parcel_id": ["a", "b", "c"], "crop": [None, None, None], "name": ["x", "y", "z"]},
                     geometry=[box(i * 100, 0, i * 100 + 50, 50) for i in range(3)], crs="EPSG:32632").to_file(path)
    with pytest.raises(InputError, match=r"no parcel has a value in the label field 'crop' \(3 parcels, all empty\)"):
        load_parcels(path, id_field="parcel_id", label_field="crop")
    assert sorted(load_parcels(path, id_field="parcel_id", label_field="name").classes) == ["x", "y", "z"]


def test_a_frame_read_elsewhere_is_named_by_its_name_in_messages():
    """Layers the desktop reads reach the core as GeoDataFrames: messages said "GeoDataFrame field
    'CODE_CULTU': 4 parcels have 1 codes that preset france does not map"."""
    import geopandas as gpd
    from shapely.geometry import box

    from thermocrop.core.errors import InputError
    from thermocrop.core.parcels import load_parcels

    frame = gpd.GeoDataFrame({"parcel_id": ["a", "b"], "crop": [None, None]},
                             geometry=[box(0, 0, 50, 50), box(100, 0, 150, 50)], crs="EPSG:32632")
    frame.attrs["name"] = "ref codes"
    with pytest.raises(InputError, match=r"^ref codes: no parcel has a value in the label field 'crop'"):
        load_parcels(frame, id_field="parcel_id", label_field="crop")
