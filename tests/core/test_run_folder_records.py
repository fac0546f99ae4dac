"""A partitioned run's folder whose records were damaged on disk (core.runs.folder): a
``run.json`` or a partition's cost record that is not what ThermoCrop wrote ends in a named
refusal or is left out, never in a traceback. Small real run folders written here."""

from __future__ import annotations

import json

import numpy as np
import pytest

from thermocrop.core.errors import OutputError
from thermocrop.core.runs.folder import RUN_FORMAT, RUN_VERSION, RunFolder, open_run_folder
from thermocrop.core.runs.partitions import RunSummary

CHUNKS = [np.array([0, 1]), np.array([2, 3]), np.array([4])]


def _interrupted(tmp_path, record, written=(0, 2)):
    """A run folder left by an interrupted run: ``record`` as its run.json (text as given, or
    JSON), partitions ``written`` there."""
    path = tmp_path / "out.gpkg.parts"
    path.mkdir()
    (path / "run.json").write_text(record if isinstance(record, str) else json.dumps(record), encoding="utf-8")
    for i in written:
        (path / f"part-{i:05d}.parquet").write_bytes(b"PAR1")
    return path


def _open(path, resume):
    return open_run_folder(path, fingerprint={"kind": "classify"}, chunks=CHUNKS, n_parcels=5, suffix=".parquet",
                           resume=resume)


@pytest.mark.parametrize("partitions", ["eight", [8], 8.5, None, True])
def test_a_run_record_whose_partition_count_is_no_whole_number_still_says_how_to_go_on(tmp_path, partitions):
    path = _interrupted(tmp_path, {"format": RUN_FORMAT, "version": RUN_VERSION, "partitions": partitions})
    with pytest.raises(OutputError, match=r"holds an interrupted run \(2 partitions written\); continue it with "
                                          "--resume, or remove that folder"):
        _open(path, resume=False)


def test_the_partitions_written_are_counted_from_the_files(tmp_path):
    path = _interrupted(tmp_path, {"format": RUN_FORMAT, "version": RUN_VERSION, "partitions": 3}, written=(1,))
    with pytest.raises(OutputError, match=r"\(1 of 3 partitions written\)"):
        _open(path, resume=False)


def test_a_run_record_nested_too_deep_is_no_run_folder(tmp_path):
    path = _interrupted(tmp_path, "[" * 100_000 + "]" * 100_000)
    for resume in (False, True):
        with pytest.raises(OutputError, match="exists and is not a ThermoCrop run folder"):
            _open(path, resume=resume)


@pytest.mark.parametrize("fingerprint", [["kind", "classify"], "classify", 3])
def test_a_run_record_whose_fingerprint_is_no_mapping_is_not_resumed(tmp_path, fingerprint):
    path = _interrupted(tmp_path, {"format": RUN_FORMAT, "version": RUN_VERSION, "partitions": 3,
                                   "fingerprint": fingerprint})
    with pytest.raises(OutputError, match=r"run\.json of the run in .* is damaged .*Remove that folder"):
        _open(path, resume=True)


def test_damaged_cost_records_are_left_out_of_the_run_summary(tmp_path):
    folder = RunFolder(tmp_path, ".parquet")
    (tmp_path / "part-00000.json").write_text(json.dumps({"cpu_s": 1.5, "windows": 4}), encoding="utf-8")
    (tmp_path / "part-00001.json").write_text("[" * 100_000 + "]" * 100_000, encoding="utf-8")
    (tmp_path / "part-00002.json").write_text(json.dumps([1, 2]), encoding="utf-8")
    (tmp_path / "part-00003.json").write_text(json.dumps({"cpu_s": "lots", "windows": 2}), encoding="utf-8")
    stats = folder.stats(4)
    assert stats == [{"cpu_s": 1.5, "windows": 4}, {"cpu_s": "lots", "windows": 2}]
    cost = RunSummary(partitions=4, computed=4, resumed=0, dashboard=None, stats=stats).cost()
    assert cost["cpu_s"] == 1.5 and cost["windows"] == 6.0


def test_an_empty_write_ahead_log_is_no_change_of_a_layer_but_one_with_content_is(tmp_path):
    """A GeoPackage in WAL mode (as QGIS leaves one after storing a style) gets an empty '-wal'
    file beside it while anything has it open, even to read; a run that recorded the layer
    without it and checks it with it (or the other way) used to be refused as a changed layer.
    A log holding a change is still a change."""
    import sqlite3

    import geopandas as gpd
    from shapely.geometry import box

    from thermocrop.core.runs import fingerprint

    layer = tmp_path / "parcels.gpkg"
    gpd.GeoDataFrame({"parcel_id": ["a", "b"]}, geometry=[box(0, 0, 1, 1), box(2, 0, 3, 1)],
                     crs="EPSG:32631").to_file(layer, driver="GPKG")
    with sqlite3.connect(layer) as db:
        assert db.execute("PRAGMA journal_mode=WAL").fetchone() == ("wal",)
    closed = fingerprint.input_fingerprints([layer])
    reader = sqlite3.connect(layer)
    reader.execute("SELECT count(*) FROM parcels").fetchone()  # a reader: the log appears, empty
    wal = tmp_path / "parcels.gpkg-wal"
    assert wal.exists() and wal.stat().st_size == 0
    reading = fingerprint.input_fingerprints([layer])
    assert str(wal.resolve()) in reading and str(wal.resolve()) not in closed
    assert fingerprint.changed_files(closed, reading) == [] and fingerprint.same_inputs(closed, reading)
    writer = sqlite3.connect(layer)
    writer.execute("CREATE TABLE notes (note TEXT)")
    writer.execute("INSERT INTO notes VALUES ('changed')")
    writer.commit()  # held in the log while the reader keeps it from being checkpointed
    assert wal.stat().st_size > 0
    assert fingerprint.changed_files(closed, fingerprint.input_fingerprints([layer])) == [f"{wal.resolve()} (new)"]
    assert not fingerprint.same_inputs(closed, fingerprint.input_fingerprints([layer]))
    writer.close()
    reader.close()
