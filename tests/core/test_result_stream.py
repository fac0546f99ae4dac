"""A partitioned classification's output written from its run folder batch by batch: the same
fields as from the whole result in memory, in parcel order whatever order the partitions were
written in, and each batch reading only the partitions that hold its parcels (a run folder made
here by hand: 23 features, 19 of them classified, in 3 interleaved partitions of row groups of 2,
with prediction sets)."""

from __future__ import annotations

import threading

import numpy as np
import pandas as pd
import pytest
from shapely.geometry import box

from thermocrop.core.classify import labelled_result
from thermocrop.core.errors import CancelledError, NoUsableParcelsError, OutputError
from thermocrop.core.io.field_batches import FieldBatches, field_kind
from thermocrop.core.io.vector import write_with_fields
from thermocrop.core.result_columns import NOT_SELECTED, result_columns
from thermocrop.core.runs import result_stream
from thermocrop.core.runs.folder import open_run_folder, write_table
from thermocrop.core.runs.result_stream import PartitionedResult

gpd = pytest.importorskip("geopandas")
pq = pytest.importorskip("pyarrow.parquet")

CLASSES = ("maize", "wheat", "unknown")
FEATURES = 23
NAMES = {"label_field": "crop_pred", "conf_field": "crop_conf", "status_field": "crop_status", "probabilities": True}


@pytest.fixture
def run(tmp_path):
    """The run folder, its partitions written last to first, and the same result built in memory."""
    rng = np.random.default_rng(5)
    rows = np.array([k for k in range(FEATURES) if k not in (2, 9, 10, 17)])  # 4 features not selected
    n = len(rows)
    status = np.array(["ok" if k % 5 else "too_small" for k in range(n)], dtype=object)
    probabilities = rng.dirichlet(np.ones(len(CLASSES)), size=n).astype(np.float32)
    probabilities[status != "ok"] = np.nan
    ids = np.array([f"p{r:03d}" for r in rows])
    chunks = [np.arange(0, n, 3), np.arange(1, n, 3), np.arange(2, n, 3)]  # each spans the whole layer
    folder = open_run_folder(tmp_path / "run", fingerprint={"kind": "test"}, chunks=chunks, n_parcels=n,
                             suffix=".parquet", resume=False)
    for i in reversed(range(len(chunks))):
        idx = chunks[i]
        columns = {"row": idx, "parcel_id": ids[idx], "status": status[idx].astype(str)}
        columns.update({f"p{k}": probabilities[idx, k] for k in range(len(CLASSES))})
        write_table(folder.part(i), columns, row_group_size=2)
    expected = labelled_result(CLASSES, ids, rows, status, probabilities)
    # Prediction sets of the classes with a probability of at least 0.3, made for the whole result.
    best = np.nan_to_num(probabilities, nan=-1.0).max(axis=1)
    expected.sets = (probabilities >= 0.3 - 1e-9) | (probabilities == best[:, None])
    expected.sets[status != "ok"] = False
    expected.coverage = 0.9
    result = PartitionedResult(folder, chunks, rows, CLASSES)
    result.set_threshold, result.coverage = 0.7, 0.9
    return result, expected


def layer(tmp_path):
    geoms = [box(500000 + 100 * k, 4800000, 500080 + 100 * k, 4800080) for k in range(FEATURES)]
    frame = gpd.GeoDataFrame({"name": [f"n{k}" for k in range(FEATURES)]}, geometry=geoms, crs="EPSG:32631")
    path = tmp_path / "parcels.gpkg"
    frame.to_file(path, driver="GPKG")
    return path


def test_the_fields_made_batch_by_batch_equal_those_of_the_whole_result(run, monkeypatch):
    result, expected = run
    whole = result_columns(expected, FEATURES, **NAMES)
    for batch in (1, 4, 7, FEATURES):
        monkeypatch.setattr(result_stream, "OUTPUT_BATCH", batch)
        fields = result.columns(FEATURES, **NAMES)
        assert fields.names == list(whole)
        assert fields.kinds() == {name: field_kind(values) for name, values in whole.items()}
        got = {name: [] for name in fields.names}
        for start, values in fields:
            assert start % batch == 0
            for name in fields.names:
                got[name].extend(np.asarray(values[name]).tolist())
        for name, values in whole.items():
            np.testing.assert_array_equal(np.asarray(got[name], dtype=values.dtype), values, err_msg=name)
    assert whole["crop_status"][2] == NOT_SELECTED
    merged = result.merged()
    assert merged.parcel_ids.tolist() == expected.parcel_ids.tolist()
    np.testing.assert_array_equal(merged.probabilities, expected.probabilities)
    assert result.counts() == expected.counts()


def test_a_batch_reads_only_the_partitions_holding_its_parcels(run, monkeypatch):
    """The first 3 features' parcels are in partitions 0 and 1 alone: with partition 2 gone they are
    still made, and the batch that needs partition 2 then says which file is missing."""
    result, expected = run
    monkeypatch.setattr(result_stream, "OUTPUT_BATCH", 3)
    result.folder.part(2).unlink()
    fields = result.columns(FEATURES, **NAMES)
    first = fields.slice(0, 3)
    assert list(first["crop_status"]) == expected.status[:2].tolist() + [NOT_SELECTED]
    with pytest.raises(OutputError, match="part-00002"):
        fields.slice(3, 6)


@pytest.mark.parametrize("suffix", [".gpkg", ".parquet", ".shp"])
def test_a_layer_written_from_the_run_folder_equals_one_written_from_the_result(run, tmp_path, monkeypatch, suffix):
    result, expected = run
    monkeypatch.setattr(result_stream, "OUTPUT_BATCH", 5)
    parcels = layer(tmp_path)
    whole = result_columns(expected, FEATURES, **NAMES)
    if suffix == ".shp":  # field names of at most 10 characters; text fields as wide as they can be, then narrowed
        whole = {name[:10]: values for name, values in whole.items()}
        renamed = result.columns(FEATURES, **NAMES)
        assert renamed.declared and renamed.widest("crop_status") == len("invalid_geometry")
        streamed = FieldBatches([n[:10] for n in renamed.names], FEATURES, lambda a, b: {
            k[:10]: v for k, v in renamed.slice(a, b).items()}, batch_rows=5,
            kinds={n[:10]: kind for n, kind in renamed.kinds().items()},
            widths={n[:10]: renamed.widest(n) for n in renamed.names})
    else:
        streamed = result.columns(FEATURES, **NAMES)
    a = write_with_fields(parcels, whole, tmp_path / f"whole{suffix}")
    b = write_with_fields(parcels, streamed, tmp_path / f"streamed{suffix}")
    if suffix == ".parquet":
        assert pq.read_table(str(a)).equals(pq.read_table(str(b)), check_metadata=True)
        assert a.read_bytes() == b.read_bytes()
        return
    pd.testing.assert_frame_equal(gpd.read_file(a), gpd.read_file(b))
    if suffix == ".shp":  # the same bytes but for the date of the last change (header bytes 1 to 3)
        x, y = a.with_suffix(".dbf").read_bytes(), b.with_suffix(".dbf").read_bytes()
        assert x[:1] + x[4:] == y[:1] + y[4:]


def test_a_partition_that_cannot_be_read_while_writing_leaves_the_output_as_it_was(run, tmp_path, monkeypatch):
    """The fields of the first batches are written before the missing partition is needed; the
    output being replaced keeps its old bytes and nothing is left beside it."""
    result, _ = run
    monkeypatch.setattr(result_stream, "OUTPUT_BATCH", 3)
    parcels = layer(tmp_path)
    out = tmp_path / "out.gpkg"
    write_with_fields(parcels, {"crop_pred": np.full(FEATURES, "old", dtype=object)}, out)
    before = out.read_bytes()
    fields = result.columns(FEATURES, **NAMES)
    fields.kinds()  # the pass over every partition is made while they are all there
    result.folder.part(2).unlink()
    with pytest.raises(OutputError, match="part-00002"):
        write_with_fields(parcels, fields, out, overwrite=True)
    assert out.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.gpkg", "parcels.gpkg", "run"]


# -- written while the partitions run ---------------------------------------------------------

PARCELS = 1200
PARTS = [np.arange(0, 500), np.arange(500, 1000), np.arange(1000, PARCELS)]  # in layer order


class WatchedPartitions(result_stream.FinishedPartitions):
    """Says when the output waits for a partition that has not finished."""

    def __init__(self, finished):
        super().__init__(finished)
        self.done = set(finished)
        self.waiting = threading.Event()
        self.ending = threading.Event()

    def finish(self, i):
        self.done.add(i)
        super().finish(i)

    def wait(self, i):
        if i not in self.done:
            self.waiting.set()
        super().wait(i)

    def wait_end(self):
        self.ending.set()
        super().wait_end()


def write_part(folder, i, status, probabilities):
    idx = PARTS[i]
    columns = {"row": idx, "parcel_id": np.array([f"p{r:04d}" for r in idx]), "status": status[idx].astype(str)}
    columns.update({f"p{k}": probabilities[idx, k] for k in range(len(CLASSES))})
    write_table(folder.part(i), columns, row_group_size=64)


@pytest.fixture
def running(tmp_path, monkeypatch):
    """A run of 1,200 parcels in 3 partitions of consecutive parcels, the first two finished; the
    whole result in memory; the parcel layer; an existing output."""
    monkeypatch.setattr(result_stream, "OUTPUT_BATCH", 50)
    rng = np.random.default_rng(8)
    status = np.array(["ok" if k % 7 else "too_small" for k in range(PARCELS)], dtype=object)
    probabilities = rng.dirichlet(np.ones(len(CLASSES)), size=PARCELS).astype(np.float32)
    probabilities[status != "ok"] = np.nan
    folder = open_run_folder(tmp_path / "run", fingerprint={"kind": "test"}, chunks=PARTS, n_parcels=PARCELS,
                             suffix=".parquet", resume=False)
    for i in (0, 1):
        write_part(folder, i, status, probabilities)
    rows = np.arange(PARCELS)
    result = PartitionedResult(folder, PARTS, rows, CLASSES)
    result.finished = WatchedPartitions([0, 1])
    expected = labelled_result(CLASSES, [f"p{r:04d}" for r in rows], rows, status, probabilities)
    geoms = [box(500000 + 10 * k, 4800000, 500008 + 10 * k, 4800008) for k in range(PARCELS)]
    parcels = tmp_path / "parcels.gpkg"
    gpd.GeoDataFrame({"name": [f"n{k}" for k in range(PARCELS)]}, geometry=geoms, crs="EPSG:32631").to_file(parcels)
    out = tmp_path / "out.csv"
    out.write_text("an earlier output\n", encoding="utf-8")
    return result, expected, parcels, out, (status, probabilities)


def start_writing(result, parcels, out):
    written = {}

    def write():
        try:
            written["path"] = write_with_fields(parcels, result.columns(PARCELS, **NAMES), out, overwrite=True)
        except Exception as exc:  # looked at by the test
            written["error"] = exc

    thread = threading.Thread(target=write, daemon=True)
    thread.start()
    assert result.finished.waiting.wait(120), "the output never waited for the last partition"
    return thread, written


def complete_lines(path) -> list:
    text = path.read_text(encoding="utf-8")
    return text[:text.rfind("\n") + 1].splitlines()


def test_the_output_holds_the_first_partitions_rows_before_the_last_one_finishes(running, tmp_path):
    """Written beside the existing output while the last partition runs: the staged file already
    holds rows of the finished partitions, in parcel order, and none of the last one's; once it
    finishes, the output equals one written from the whole result and replaces the old one."""
    result, expected, parcels, out, arrays = running
    thread, written = start_writing(result, parcels, out)
    staged = list(tmp_path.glob(".thermocrop-partial.*/out.csv"))
    assert len(staged) == 1
    partial = complete_lines(staged[0])
    assert out.read_text(encoding="utf-8") == "an earlier output\n"  # the user's file, untouched meanwhile
    write_part(result.folder, 2, *arrays)
    result.finished.finish(2)
    # Every row is written; the output waits for the run to end well before taking its name.
    assert result.finished.ending.wait(120)
    assert thread.is_alive() and out.read_text(encoding="utf-8") == "an earlier output\n"
    result.finished.end()
    thread.join(120)
    assert written == {"path": out}
    whole = write_with_fields(parcels, result_columns(expected, PARCELS, **NAMES), tmp_path / "whole.csv")
    final = whole.read_text(encoding="utf-8").splitlines()
    assert out.read_text(encoding="utf-8").splitlines() == final
    assert 1 + 100 < len(partial) <= 1 + 1000  # the header, then rows of partitions 0 and 1 only
    assert partial == final[:len(partial)]
    assert result.status_counts() == {"ok": int((arrays[0] == "ok").sum()),
                                      "too_small": int((arrays[0] == "too_small").sum())}
    assert not list(tmp_path.glob(".thermocrop-partial.*"))


@pytest.mark.parametrize("last_written", [False, True])
def test_a_run_that_stops_while_its_output_is_written_leaves_the_old_output(running, tmp_path, last_written):
    """Stopped while the output waits for the last partition, or once every row is written (a run
    cancelled as its last partition finished): nothing is published, nothing is left beside."""
    result, _, parcels, out, arrays = running
    thread, written = start_writing(result, parcels, out)
    if last_written:
        write_part(result.folder, 2, *arrays)
        result.finished.finish(2)
        assert result.finished.ending.wait(120)
    result.finished.stop("the run was cancelled")
    thread.join(120)
    assert isinstance(written["error"], CancelledError) and "the run was cancelled" in str(written["error"])
    assert out.read_text(encoding="utf-8") == "an earlier output\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.csv", "parcels.gpkg", "run"]


def test_an_output_refused_once_counted_is_not_published(running, tmp_path):
    """``require`` sees the parcels counted by status as the batches were made, before publishing."""
    result, _, parcels, out, arrays = running
    seen = []

    def refuse(statuses):
        seen.append(statuses)
        raise NoUsableParcelsError("refused")

    result.require = refuse
    thread, written = start_writing(result, parcels, out)
    write_part(result.folder, 2, *arrays)
    result.finished.finish(2)
    result.finished.end()
    thread.join(120)
    assert isinstance(written["error"], NoUsableParcelsError)
    assert seen == [{"ok": int((arrays[0] == "ok").sum()), "too_small": int((arrays[0] == "too_small").sum())}]
    assert out.read_text(encoding="utf-8") == "an earlier output\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.csv", "parcels.gpkg", "run"]
