"""A GeoPackage output in WAL mode (as QGIS leaves one it stored a style in) can be written again."""

from __future__ import annotations

import contextlib
import sqlite3

import geopandas as gpd
import numpy as np
from shapely.geometry import box

from thermocrop.core.io.vector import write_with_fields


def _connect(path, read_only: bool = False):
    """A connection closed on leaving the block (sqlite3's own block only commits)."""
    uri = f"file:{path}?mode=ro" if read_only else f"file:{path}"
    return contextlib.closing(sqlite3.connect(uri, uri=True, isolation_level=None))


def _journal_mode(path) -> str:
    with _connect(path) as db:
        return db.execute("PRAGMA journal_mode").fetchone()[0]


def test_rewriting_a_layer_of_a_wal_geopackage_succeeds(tmp_path):
    parcels = gpd.GeoDataFrame({"parcel_id": ["a", "b", "c"]},
                               geometry=[box(i, 0, i + 1, 1) for i in range(3)], crs="EPSG:32631")
    out = tmp_path / "out.gpkg"
    write_with_fields(parcels, {"crop_pred": np.array(["corn", "meadow", "corn"], dtype=object)}, out)
    with _connect(out) as db:  # what QGIS does to a GeoPackage it writes a style into
        assert db.execute("PRAGMA journal_mode=WAL").fetchone()[0] == "wal"
        db.execute("CREATE TABLE layer_styles (id INTEGER PRIMARY KEY, f_table_name TEXT, styleName TEXT)")
        db.execute("INSERT INTO layer_styles (f_table_name, styleName) VALUES ('out', 'thermocrop')")

    # No program holds the file open: no write-ahead log beside it until this run reads it.
    assert not (tmp_path / "out.gpkg-wal").exists()
    for run, labels in enumerate((["meadow", "corn", "corn"], ["corn", "corn", "meadow"])):
        assert _journal_mode(out) == "wal"
        write_with_fields(parcels, {"crop_pred": np.array(labels, dtype=object)}, out, overwrite=True)
        back = gpd.read_file(out, layer="out")
        assert back["crop_pred"].tolist() == labels, run
        with _connect(out, read_only=True) as db:
            assert db.execute("SELECT f_table_name, styleName FROM layer_styles").fetchall() == [
                ("out", "thermocrop")]
