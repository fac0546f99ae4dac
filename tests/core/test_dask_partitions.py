"""Partitioned runs on a Dask LocalCluster: the same values as one process, a worker killed
mid-run, an interrupted run resumed, and the CLI's --workers / --scheduler with GeoParquet and
FlatGeobuf outputs. Small files written here: 4 scenes of 60 x 60 px, 40 parcels."""

from __future__ import annotations

import contextlib
import ctypes
import os
import shutil
import signal
import threading
import time

import numpy as np
import pandas as pd
import pytest
from shapely.geometry import box

from thermocrop.cli.main import EXIT_OUTPUT, main
from thermocrop.core.classify import classify_parcels, write_classification
from thermocrop.core.errors import CancelledError, InputError, OutputError, ThermoCropError
from thermocrop.core.io.geoparquet import write_geoparquet
from thermocrop.core.io.vector import write_with_fields
from thermocrop.core.model.bundle import default_bundle_path
from thermocrop.core.pixel_sets import open_dataset
from thermocrop.core.runs import partitions, result_stream
from thermocrop.core.runs.cluster import ClusterOptions, EarlyClient, cached_bundle, dask_client, start_fork_server
from thermocrop.core.runs.folder import default_run_folder
from thermocrop.core.runs.partitions import (
    PartitionListener,
    classify_partitioned,
    classify_partitions,
    release_freed_memory,
)
from thermocrop.core.scenes.product import decode_threads
from thermocrop.core.settings import PixelSampling

gpd = pytest.importorskip("geopandas")
distributed = pytest.importorskip("distributed")
pq = pytest.importorskip("pyarrow.parquet")

CRS = "EPSG:32631"
X0, Y0 = 500000.0, 4800000.0
CHUNK = 5  # 40 parcels -> 8 partitions


@pytest.fixture(scope="module")
def region(tmp_path_factory, write_scenes, write_station_weather) -> dict:
    root = tmp_path_factory.mktemp("dask")
    write_scenes(root / "scenes", size=60, seed=3)
    # 36 parcels on a 6 x 6 grid, listed column by column (so that layer order is not strip order),
    # plus one outside the scenes, one smaller than a pixel, and two more inside.
    geoms = [box(X0 + 100 * c + 12, Y0 - 100 * r - 88, X0 + 100 * c + 88, Y0 - 100 * r - 12)
             for c in range(6) for r in range(6)]
    geoms += [box(X0 - 900, Y0 + 100, X0 - 800, Y0 + 200), box(X0 + 301, Y0 - 309, X0 + 304, Y0 - 301),
              box(X0 + 20, Y0 - 590, X0 + 580, Y0 - 560), box(X0 + 560, Y0 - 580, X0 + 590, Y0 - 20)]
    gpd.GeoDataFrame({"parcel_id": [f"f{k:02d}" for k in range(len(geoms))], "area_ha": np.arange(len(geoms)) * 0.5},
                     geometry=geoms, crs=CRS).to_file(root / "parcels.gpkg", driver="GPKG")
    write_station_weather(root / "weather.csv")
    return {"root": root, "scenes": root / "scenes", "parcels": root / "parcels.gpkg", "weather": root / "weather.csv"}


@pytest.fixture(scope="module")
def cluster():
    """Two worker processes (one thread each); tests reach it through its scheduler address.

    Without Dask's MALLOC_TRIM_THRESHOLD_, which its nanny would leave in this process's
    environment, and so in the environment of every later local cluster of the session.
    """
    import dask
    from distributed import Client, LocalCluster

    environ = {k: v for k, v in dask.config.get("distributed.nanny.pre-spawn-environ").items()
               if k != "MALLOC_TRIM_THRESHOLD_"}
    with dask.config.set({"distributed.nanny.pre-spawn-environ": environ}):  # read as the nannies start
        cl = LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=":0")
    with cl, Client(cl) as client:
        yield client


@contextlib.contextmanager
def one_thread():
    """Run the model on one thread, as each worker does: the thread count changes the order of
    float additions in the model (by ~1e-8), so bit-for-bit comparisons need the same one."""
    import torch

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(threads)


@pytest.fixture(scope="module")
def one_process(region):
    with one_thread():
        return classify_parcels(region["parcels"], region["scenes"], region["weather"], chunk_size=CHUNK)


def assert_same_result(a, b):
    assert a.parcel_ids.tolist() == b.parcel_ids.tolist()
    assert a.status.tolist() == b.status.tolist()
    assert a.labels.tolist() == b.labels.tolist()
    np.testing.assert_array_equal(a.confidence, b.confidence)  # NaN where not ok, in both
    np.testing.assert_array_equal(a.probabilities, b.probabilities)


class KillBusyWorker(PartitionListener):
    """Kills the process of the first worker seen computing a partition (not its warm-up; from a thread that
    watches the scheduler from the moment the partitions are submitted)."""

    def __init__(self, client):
        self.client, self.killed, self.total, self.done = client, None, 0, 0

    def started(self, total, done, dashboard):
        self.total, self.dashboard = total, dashboard
        pids = self.client.run(os.getpid)  # worker address -> pid

        def watch():
            deadline = time.monotonic() + 120
            while self.killed is None and time.monotonic() < deadline:
                busy = [w for w, tasks in self.client.processing().items()
                        if w in pids and any(str(t).startswith("thermocrop-partition") for t in tasks)]
                if busy:
                    self.killed = pids[busy[0]]
                    os.kill(self.killed, signal.SIGKILL)
                time.sleep(0.01)

        self.watcher = threading.Thread(target=watch, daemon=True)
        self.watcher.start()

    def finished(self, index):
        self.done += 1


def test_partitions_survive_a_killed_worker_and_equal_one_process(region, cluster, one_process, tmp_path):
    listener = KillBusyWorker(cluster)
    result, summary, folder = classify_partitioned(
        region["parcels"], region["scenes"], region["weather"], chunk_size=CHUNK, run_folder=tmp_path / "run",
        cluster=ClusterOptions(scheduler=cluster.scheduler.address), listener=listener)
    listener.watcher.join()
    assert listener.killed is not None
    with pytest.raises(ProcessLookupError):
        os.kill(listener.killed, 0)  # the worker process is gone; its partitions ran elsewhere
    assert summary.partitions == listener.total == listener.done == 8 and summary.computed == 8
    assert len(list((tmp_path / "run").glob("part-*.parquet"))) == 8
    assert_same_result(result, one_process)
    statuses = dict(zip(result.parcel_ids, result.status))
    assert statuses["f36"] == "outside_scenes" and statuses["f37"] == "ok"  # the sub-pixel parcel is used
    assert summary.dashboard and summary.dashboard.startswith("http")


class StopAfter(PartitionListener):
    def __init__(self, n):
        self.n, self.done, self.resumed = n, 0, None

    def started(self, total, done, dashboard):
        self.resumed = done

    def finished(self, index):
        self.done += 1

    def cancelled(self):
        return self.done >= self.n


def test_an_interrupted_run_resumes_from_its_partitions(region, cluster, one_process, tmp_path):
    run = tmp_path / "run"
    options = ClusterOptions(scheduler=cluster.scheduler.address)
    stop = StopAfter(1)
    with pytest.raises(CancelledError):
        classify_partitioned(region["parcels"], region["scenes"], region["weather"], chunk_size=CHUNK,
                             run_folder=run, cluster=options, listener=stop, cancelled=stop.cancelled)
    assert (run / "run.json").exists() and list(run.glob("part-*.parquet"))  # kept for --resume
    # Without --resume the folder is not taken over; with other settings it is refused.
    with pytest.raises(OutputError, match="--resume"):
        classify_partitioned(region["parcels"], region["scenes"], region["weather"], chunk_size=CHUNK,
                             run_folder=run, cluster=options)
    with pytest.raises(OutputError, match="other inputs or settings"):
        classify_partitioned(region["parcels"], region["scenes"], region["weather"], chunk_size=CHUNK, run_folder=run,
                             cluster=options, resume=True, sampling=PixelSampling(min_pixels=2))
    # Partitions still running when a run stops may land afterwards, so the count is checked on
    # a second run folder holding exactly three partitions, as a run stopped there leaves it.
    other = tmp_path / "other"
    classify_partitioned(region["parcels"], region["scenes"], region["weather"], chunk_size=CHUNK,
                         run_folder=other, cluster=options)
    for part in sorted(other.glob("part-*.parquet"))[3:]:
        part.unlink()
    again = StopAfter(99)
    result, summary, _ = classify_partitioned(region["parcels"], region["scenes"], region["weather"],
                                              chunk_size=CHUNK, run_folder=other, cluster=options, resume=True,
                                              listener=again)
    assert again.resumed == summary.resumed == 3
    assert summary.computed == again.done == 5
    assert_same_result(result, one_process)
    # The interrupted run itself finishes with --resume too.
    result, summary, _ = classify_partitioned(region["parcels"], region["scenes"], region["weather"],
                                              chunk_size=CHUNK, run_folder=run, cluster=options, resume=True)
    assert summary.resumed >= 1 and summary.resumed + summary.computed == 8
    assert_same_result(result, one_process)


def test_one_process_resume_without_a_cluster(region, one_process, tmp_path):
    stop = StopAfter(2)
    with one_thread(), pytest.raises(CancelledError):
        classify_partitioned(region["parcels"], region["scenes"], region["weather"], chunk_size=CHUNK,
                             run_folder=tmp_path / "run", cluster=ClusterOptions(), cancelled=stop.cancelled,
                             listener=stop)
    assert len(list((tmp_path / "run").glob("part-*.parquet"))) == 2
    with one_thread():  # partitions run here, in this process
        result, summary, _ = classify_partitioned(region["parcels"], region["scenes"], region["weather"],
                                                  chunk_size=CHUNK, run_folder=tmp_path / "run",
                                                  cluster=ClusterOptions(), resume=True)
    assert (summary.resumed, summary.computed) == (2, 6)
    assert_same_result(result, one_process)


def test_an_output_written_while_the_partitions_run_survives_a_cancel_and_resumes(region, one_process, tmp_path):
    """The output (a shapefile: text fields narrowed once written) is written from the run folder as
    partitions finish; a cancel leaves the existing output as it was, and the resumed run writes
    the same file as a one-process run."""
    out = tmp_path / "out.shp"
    write_with_fields(region["parcels"], {"crop_pred": np.full(40, "old", dtype=object)}, out)
    before = {p.name: p.read_bytes() for p in tmp_path.glob("out.*")}

    def output(result):
        return write_classification(region["parcels"], result, out, overwrite=True, probabilities=True)

    stop = StopAfter(3)
    with one_thread(), pytest.raises(CancelledError):
        classify_partitions(region["parcels"], region["scenes"], region["weather"], chunk_size=CHUNK,
                            run_folder=tmp_path / "run", cluster=ClusterOptions(), cancelled=stop.cancelled,
                            listener=stop, output=output)
    assert {p.name: p.read_bytes() for p in tmp_path.glob("out.*")} == before
    assert not list(tmp_path.glob(".thermocrop-partial.*"))
    with one_thread():
        result, summary, _ = classify_partitions(region["parcels"], region["scenes"], region["weather"],
                                                 chunk_size=CHUNK, run_folder=tmp_path / "run",
                                                 cluster=ClusterOptions(), resume=True, output=output)
    assert (summary.resumed, summary.computed) == (3, 5) and result.written == out
    assert result.counts() == one_process.counts()
    one = write_classification(region["parcels"], one_process, tmp_path / "one.shp", probabilities=True)
    pd.testing.assert_frame_equal(gpd.read_file(one), gpd.read_file(out))
    x, y = one.with_suffix(".dbf").read_bytes(), out.with_suffix(".dbf").read_bytes()
    assert x[:1] + x[4:] == y[:1] + y[4:]  # the same table but for the date of the last change
    assert one.read_bytes() == out.read_bytes()


class ReverseLayerAfterFirst(PartitionListener):
    """Writes the parcel layer anew, its parcels in reverse order (as a new export of the same
    parcels could), once the first partition is written."""

    def __init__(self, path):
        self.path, self.changed = path, False

    def finished(self, index):
        if not self.changed:
            staged = self.path.with_name("new-" + self.path.name)
            gpd.read_file(self.path).iloc[::-1].to_file(staged, driver="GPKG")
            os.replace(staged, self.path)
            self.changed = True


@pytest.mark.parametrize("streamed", [True, False])
def test_a_layer_that_changes_while_the_partitions_run_gives_no_output(region, tmp_path, streamed):
    """Partitions read their parcels from the file by position: those read after the change would
    be other parcels than the plan's (the labels of one parcel given to another, exit code 0).
    The run now stops before anything is published, naming the file; an existing output stays."""
    layer = tmp_path / "parcels.gpkg"
    shutil.copy(region["parcels"], layer)
    out = tmp_path / "out.gpkg"
    write_with_fields(layer, {"crop_pred": np.full(40, "old", dtype=object)}, out)
    before = out.read_bytes()

    def output(result):
        return write_classification(layer, result, out, overwrite=True)

    with one_thread(), pytest.raises(InputError, match=r"parcel layer .*parcels\.gpkg changed while the run ran"):
        classify_partitions(str(layer), region["scenes"], region["weather"], chunk_size=CHUNK,
                            run_folder=tmp_path / "run", cluster=ClusterOptions(),
                            listener=ReverseLayerAfterFirst(layer), output=output if streamed else None)
    assert out.read_bytes() == before
    assert not list(tmp_path.glob(".thermocrop-partial.*"))


def test_an_output_that_fails_stops_the_partitions(region, tmp_path):
    def output(result):
        raise OutputError("the disk is full")

    with one_thread(), pytest.raises(OutputError, match="the disk is full"):
        classify_partitions(region["parcels"], region["scenes"], region["weather"], chunk_size=CHUNK,
                            run_folder=tmp_path / "run", cluster=ClusterOptions(), output=output)
    assert len(list((tmp_path / "run").glob("part-*.parquet"))) < 8


def test_partitions_read_their_own_parcels_from_a_geoparquet_layer_or_a_table(region, cluster, one_process, tmp_path):
    """A layer file is planned from its bounding boxes and each partition reads its parcels from
    it (a GeoParquet layer of row groups of 7 here); a GeoDataFrame is sent in pieces. Both give
    the one-process result."""
    import pyarrow.parquet as pq

    frame = gpd.read_file(region["parcels"])
    parquet = tmp_path / "parcels.parquet"
    pq.write_table(pq.read_table(str(write_geoparquet(region["parcels"], {}, tmp_path / "one.parquet"))),
                   str(parquet), row_group_size=7)
    options = ClusterOptions(scheduler=cluster.scheduler.address)
    for n, parcels in enumerate((parquet, frame)):
        result, summary, _ = classify_partitioned(parcels, region["scenes"], region["weather"], chunk_size=CHUNK,
                                                  run_folder=tmp_path / f"run{n}", cluster=options)
        assert summary.computed == 8
        assert_same_result(result, one_process)


@pytest.mark.parametrize("suffix", [".gpkg", ".parquet"])
def test_an_output_written_from_the_run_folder_in_batches_equals_the_one_process_output(region, tmp_path, suffix,
                                                                                      monkeypatch):
    """8 partitions of row groups of 2 parcels, the output's fields made 3 features at a time: the
    same file as a one-process run writes (with the decision dates and the probability fields)."""
    monkeypatch.setattr(partitions, "PART_ROW_GROUP", 2)
    monkeypatch.setattr(result_stream, "OUTPUT_BATCH", 3)
    with one_thread():
        one = classify_parcels(region["parcels"], region["scenes"], region["weather"], chunk_size=CHUNK, decided=0.05)
        streamed, summary, _ = classify_partitions(region["parcels"], region["scenes"], region["weather"],
                                                   chunk_size=CHUNK, run_folder=tmp_path / "run",
                                                   cluster=ClusterOptions(), decided=0.05)
    assert summary.computed == 8
    assert pq.ParquetFile(str(tmp_path / "run" / "part-00000.parquet")).num_row_groups > 1
    assert streamed.counts() == one.counts()
    a = write_classification(region["parcels"], one, tmp_path / f"one{suffix}", probabilities=True)
    b = write_classification(region["parcels"], streamed, tmp_path / f"many{suffix}", probabilities=True)
    if suffix == ".parquet":
        assert a.read_bytes() == b.read_bytes()
    else:
        x, y = gpd.read_file(a), gpd.read_file(b)
        assert "crop_decided" in x.columns and x["crop_decided"].notna().any()
        pd.testing.assert_frame_equal(x, y)
        assert field_types(a) == field_types(b)


def field_types(path) -> list:
    from osgeo import ogr

    ds = ogr.Open(str(path))
    defn = ds.GetLayer(0).GetLayerDefn()
    return [(defn.GetFieldDefn(i).GetName(), defn.GetFieldDefn(i).GetTypeName()) for i in range(defn.GetFieldCount())]


def test_a_partitioned_run_without_a_model_uses_the_model_shipped_for_the_scenes_level(region, tmp_path):
    import shutil

    # The region's products as L2A (their names say the level).
    scenes = tmp_path / "scenes"
    scenes.mkdir()
    for path in region["scenes"].glob("*.tif"):
        shutil.copyfile(path, scenes / path.name.replace("MSIL1C", "MSIL2A"))
    with one_thread():
        result, summary, folder = classify_partitioned(region["parcels"], scenes, region["weather"], chunk_size=CHUNK,
                                                       run_folder=tmp_path / "run", cluster=ClusterOptions())
        shipped = classify_parcels(region["parcels"], scenes, region["weather"], default_bundle_path("L2A"),
                                   chunk_size=CHUNK)
        l1c = classify_parcels(region["parcels"], scenes, region["weather"], default_bundle_path("L1C"),
                               chunk_size=CHUNK)
    assert summary.computed == 8
    assert_same_result(result, shipped)
    ok = result.status == "ok"
    assert ok.sum() > 30 and not np.array_equal(result.probabilities[ok], l1c.probabilities[ok])
    assert not any("reflectance differ" in w for w in result.warnings)


def nulls_as_none(column) -> list:
    return [None if v is None or v != v else v for v in column.tolist()]


def _cli(region, command, out, *extra):
    args = [command, "--parcels", str(region["parcels"]), "--weather", str(region["weather"]), "--out", str(out)]
    if command != "gdd":
        args += ["--scenes", str(region["scenes"]), "--chunk-size", str(CHUNK)]
    return main(args + list(extra))


def test_cli_classify_on_a_scheduler_writes_geoparquet_and_flatgeobuf(region, cluster, tmp_path, capsys):
    address = cluster.scheduler.address
    with one_thread():
        assert _cli(region, "classify", tmp_path / "one.gpkg") == 0
    assert _cli(region, "classify", tmp_path / "many.parquet", "--scheduler", address) == 0
    printed = capsys.readouterr()
    assert "Dask dashboard: http" in printed.out and "8 partitions (8 computed now" in printed.out
    assert "8/8" in printed.err  # the progress bar counts partitions
    assert not default_run_folder(tmp_path / "many.parquet").exists()  # removed once the output is written
    assert _cli(region, "classify", tmp_path / "many.fgb", "--scheduler", address) == 0
    one = gpd.read_file(tmp_path / "one.gpkg")
    for name in ("many.parquet", "many.fgb"):
        if name.endswith(".parquet"):
            many = gpd.read_parquet(tmp_path / name)
        else:  # FlatGeobuf stores features in its spatial index's (Hilbert) order: match them by id
            many = gpd.read_file(tmp_path / name).set_index("parcel_id", drop=False).loc[one["parcel_id"]]
            many = many.reset_index(drop=True)
        assert many.crs == one.crs
        assert many["parcel_id"].tolist() == one["parcel_id"].tolist()
        assert many["area_ha"].tolist() == one["area_ha"].tolist()
        assert many["crop_status"].tolist() == one["crop_status"].tolist()
        assert nulls_as_none(many["crop_pred"]) == nulls_as_none(one["crop_pred"])  # NULL where not ok
        assert nulls_as_none(many["crop_pred"]).count(None) == 1
        np.testing.assert_array_equal(many["crop_conf"].to_numpy(dtype=float), one["crop_conf"].to_numpy(dtype=float))
        assert all(a.equals(b) for a, b in zip(many.geometry, one.geometry))


def test_cli_extract_and_gdd_partitioned_equal_one_process(region, cluster, tmp_path, capsys):
    address = cluster.scheduler.address
    assert _cli(region, "extract", tmp_path / "one") == 0
    assert _cli(region, "extract", tmp_path / "many", "--scheduler", address) == 0
    a, b = open_dataset(tmp_path / "one"), open_dataset(tmp_path / "many")
    for name in ("pixels", "pixel_mask", "date_mask", "gdd", "labels", "parcel_ids", "blocks", "status"):
        np.testing.assert_array_equal(getattr(a, name), getattr(b, name), err_msg=name)
    assert (a.meta, a.classes) == (b.meta, b.classes)
    dates = ["--dates", "2023-04-12", "2023-07-20"]
    assert _cli(region, "gdd", tmp_path / "one.csv", *dates) == 0
    # --workers 2: a LocalCluster started by the command itself.
    assert _cli(region, "gdd", tmp_path / "many.csv", *dates, "--workers", "2", "--chunk-size", "7") == 0
    assert (tmp_path / "many.csv").read_bytes() == (tmp_path / "one.csv").read_bytes()
    assert "6 partitions" in capsys.readouterr().out


def test_cli_refuses_a_run_folder_left_by_an_interrupted_run(region, tmp_path, capsys):
    run = default_run_folder(tmp_path / "out.gpkg")
    run.mkdir()
    (run / "run.json").write_text('{"format": "thermocrop-run", "version": 1, "partitions": 8}', encoding="utf-8")
    assert _cli(region, "classify", tmp_path / "out.gpkg", "--workers", "2") == EXIT_OUTPUT
    assert "--resume" in capsys.readouterr().err
    assert not (tmp_path / "out.gpkg").exists()


def _worker_variables(names):
    with dask_client(ClusterOptions(workers=2, dashboard=":0")) as client:
        return list(client.run(lambda: tuple(os.environ.get(n) for n in names)).values())


def test_local_workers_start_without_dasks_trim_setting_unless_the_user_sets_one(monkeypatch):
    # Dask's default starts workers with MALLOC_TRIM_THRESHOLD_=65536 (and one-thread numeric
    # libraries); ThermoCrop's local cluster keeps the latter and leaves the former out.
    import dask

    assert "MALLOC_TRIM_THRESHOLD_" in dask.config.get("distributed.nanny.pre-spawn-environ")
    monkeypatch.delenv("MALLOC_TRIM_THRESHOLD_", raising=False)
    names = ("MALLOC_TRIM_THRESHOLD_", "OMP_NUM_THREADS")
    assert _worker_variables(names) == [(None, "1"), (None, "1")]
    monkeypatch.setenv("MALLOC_TRIM_THRESHOLD_", "131072")
    assert _worker_variables(names) == [("131072", "1"), ("131072", "1")]


def _profiling(client):
    return sorted(client.run(lambda dask_worker: "profile" in dask_worker.periodic_callbacks).values())


def test_local_workers_run_without_dasks_profiler(monkeypatch):
    # Dask's own LocalCluster samples every worker's stack every 10 ms; ThermoCrop's does not.
    from distributed import Client, LocalCluster

    # Dask's nanny sets its worker variables in this process's environment; undone after.
    monkeypatch.setenv("MALLOC_TRIM_THRESHOLD_", "65536")

    with LocalCluster(n_workers=1, threads_per_worker=1, processes=True, dashboard_address=":0") as cl:
        with Client(cl) as client:
            assert _profiling(client) == [True]
    with dask_client(ClusterOptions(workers=2, dashboard=":0")) as client:
        assert _profiling(client) == [False, False]


def _forked_with_libraries(client):
    """Per worker: forked from the fork server, and torch, rasterio and geopandas imported.

    A lambda travels by value, so running it does not import this module (and its libraries).
    """
    import sys

    import psutil

    return list(client.run(lambda: (
        "multiprocessing.forkserver" in " ".join(psutil.Process(os.getppid()).cmdline()),
        all(m in sys.modules for m in ("torch", "rasterio", "geopandas")))).values())


def test_local_workers_are_forked_from_a_server_with_the_libraries_imported(monkeypatch):
    # Without a warm-up task, a worker has torch, rasterio and geopandas because the server it
    # was forked from imported them; once the workers' environment changes, workers start as
    # new interpreters (which import only what Dask needs) with the new values.
    monkeypatch.delenv("MALLOC_TRIM_THRESHOLD_", raising=False)
    with dask_client(ClusterOptions(workers=2, dashboard=":0")) as client:
        assert _forked_with_libraries(client) == [(True, True), (True, True)]
        # One worker per core: each decodes its windows on one thread (Dask's OMP_NUM_THREADS).
        assert list(client.run(decode_threads).values()) == ["1", "1"]
    monkeypatch.setenv("MALLOC_TRIM_THRESHOLD_", "131072")
    with dask_client(ClusterOptions(workers=2, dashboard=":0")) as client:
        assert _forked_with_libraries(client) == [(False, False), (False, False)]
        assert list(client.run(lambda: os.environ.get("MALLOC_TRIM_THRESHOLD_")).values()) == ["131072", "131072"]
    monkeypatch.delenv("MALLOC_TRIM_THRESHOLD_")
    with dask_client(ClusterOptions(workers=2, dashboard=":0")) as client:
        assert _forked_with_libraries(client) == [(True, True), (True, True)]


def _children():
    import psutil

    return {p.pid for p in psutil.Process().children(recursive=True)
            if p.is_running() and p.status() != psutil.STATUS_ZOMBIE}


def test_early_client_warms_workers_up_with_the_model_and_closes_its_cluster(region, tmp_path, monkeypatch):
    path = str(default_bundle_path())
    # The fork server (and multiprocessing's resource tracker) live as long as this process.
    monkeypatch.delenv("MALLOC_TRIM_THRESHOLD_", raising=False)
    assert start_fork_server()
    before = _children()
    with EarlyClient(ClusterOptions(workers=2, dashboard=":0"), warm_up=("classify", (path, os.stat(path).st_mtime))) \
            as early:
        client = early.client()
        workers = list(client.scheduler_info()["workers"])
        assert len(workers) == 2 and len(_children() - before) >= 2
        # A worker runs one task at a time, in order: these run after its warm-up.
        loaded = [client.submit(lambda: cached_bundle.cache_info().currsize, workers=[w], pure=False) for w in workers]
        assert [f.result() for f in loaded] == [1, 1]
    assert not _children() - before

    # A run that fails before its partitions (here, reading the layer) closes the cluster it started.
    with pytest.raises(ThermoCropError, match="missing.gpkg"):
        classify_partitioned(tmp_path / "missing.gpkg", region["scenes"], region["weather"], chunk_size=CHUNK,
                             run_folder=tmp_path / "run", cluster=ClusterOptions(workers=2, dashboard=":0"))
    assert not _children() - before
    assert not (tmp_path / "run").exists()


def test_release_freed_memory_hands_freed_heap_pages_back():
    # 64 KiB blocks stay on glibc's heap (below its mmap threshold); freeing all but the last
    # leaves ~190 MB of free pages below a block in use, which glibc keeps until trimmed.
    import ctypes.util

    if "libc.so" not in (ctypes.util.find_library("c") or ""):
        pytest.skip("glibc only")

    def resident_mb():
        return int(open("/proc/self/statm").read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20

    blocks = [bytearray(64 * 1024) for _ in range(3000)]
    for b in blocks:
        b[::4096] = b"x" * len(b[::4096])  # touch every page
    keep = blocks[-1]
    del blocks
    held = resident_mb()
    release_freed_memory()
    assert held - resident_mb() > 100
    assert len(keep) == 64 * 1024


def test_release_freed_memory_hands_pyarrows_unused_pool_pages_back():
    # Arrow arrays freed stay in pyarrow's pool (mimalloc or jemalloc) until it is told to let
    # them go: some 190 MB of text arrays here, one kept.
    pa = pytest.importorskip("pyarrow")

    def resident_mb():
        return int(open("/proc/self/statm").read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20

    arrays = [pa.array(np.arange(i, i + 8000)).cast(pa.string()) for i in range(3000)]
    keep = arrays[-1]
    del arrays
    held = resident_mb()
    ctypes.CDLL("libc.so.6").malloc_trim(0)  # glibc's heap is not where they are
    assert held - resident_mb() < 50
    release_freed_memory()
    assert held - resident_mb() > 100
    assert keep.to_pylist()[:2] == ["2999", "3000"]


def test_dask_variables_carry_the_local_clusters_settings_to_other_processes():
    import json
    import subprocess
    import sys
    from pathlib import Path

    from thermocrop.core.runs.cluster import cluster_config, dask_variables

    settings = {k: v for k, v in cluster_config().items() if k != "distributed.nanny.pre-spawn-environ"}
    keys = sorted(settings)
    code = "import dask, distributed, json, sys; print(json.dumps([dask.config.get(k) for k in sys.argv[1:]]))"
    default = subprocess.run([sys.executable, "-c", code, *keys], capture_output=True, text=True, check=True)
    assert json.loads(default.stdout) != [settings[k] for k in keys]  # Dask's own defaults differ
    given = subprocess.run([sys.executable, "-c", code, *keys], env={**os.environ, **dask_variables()},
                           capture_output=True, text=True, check=True)
    assert json.loads(given.stdout) == [settings[k] for k in keys]
    docs = (Path(__file__).resolve().parents[2] / "docs" / "scale.md").read_text(encoding="utf-8")
    for name, value in dask_variables().items():  # the cluster recipes list the same variables
        assert f"{name}={value}" in docs
        assert f"name: {name}, value: " in docs


def _touch_part(i, folder, value, *, pause):
    time.sleep(pause)
    folder.part(i).write_text(str(value), encoding="utf-8")


def test_partitions_are_sent_a_few_ahead_of_the_workers_not_all_at_once(tmp_path):
    """Each partition's inputs are made when it is sent, and no more are sent than twice the
    cluster's threads ahead of those finished, so the client never holds every partition's inputs;
    every partition still runs once, and a run with fewer partitions than that sends them all."""
    from distributed import LocalCluster

    from thermocrop.core.runs.folder import RunFolder

    class Inputs:  # the partitions' arguments, counting how many were made
        def __init__(self, n):
            self.n, self.made = n, []

        def __len__(self):
            return self.n

        def __getitem__(self, i):
            self.made.append(i)
            ahead.append(len(self.made) - len(finished))
            return (i * 10,)

    class Finished(PartitionListener):
        def finished(self, i):
            finished.append(i)

    with LocalCluster(n_workers=1, threads_per_worker=2, processes=False, dashboard_address=":0") as cl, \
            EarlyClient(ClusterOptions(scheduler=cl.scheduler_address)) as early:
        for n, most in ((13, 4), (3, 3)):
            finished, ahead = [], []
            folder = RunFolder(tmp_path / f"run{n}", ".txt")
            folder.path.mkdir()
            inputs = Inputs(n)
            summary = partitions.run_partitions(_touch_part, inputs, folder, early, listener=Finished(),
                                                shared={"pause": 0.05})
            assert sorted(inputs.made) == list(range(n)) and sorted(finished) == list(range(n))
            assert max(ahead) == most  # 2 threads: 4 ahead at most
            assert [folder.part(i).read_text(encoding="utf-8") for i in range(n)] == [str(i * 10) for i in range(n)]
            assert summary.computed == n


def _timed_part(i, folder, value, *, pause):
    start = time.monotonic()
    time.sleep(pause)
    folder.part(i).write_text(f"{start} {time.monotonic()}", encoding="utf-8")


def test_workers_that_join_a_running_cluster_get_partitions_before_one_finishes(tmp_path):
    """A cluster that grows while the run goes (adaptive, batch queues): the window is looked at
    again while no partition finishes, so the new workers' threads start partitions at once."""
    from distributed import LocalCluster

    from thermocrop.core.runs.folder import RunFolder

    n, pause = 12, 3.0
    with LocalCluster(n_workers=1, threads_per_worker=1, processes=False, dashboard_address=":0") as cl, \
            EarlyClient(ClusterOptions(scheduler=cl.scheduler_address)) as early:
        client = early.client()
        assert partitions.submission_window(client) == 4  # one thread: 4 ahead at first
        grow = threading.Timer(0.3, cl.scale, args=(8,))
        grow.start()
        folder = RunFolder(tmp_path / "run", ".txt")
        folder.path.mkdir()
        partitions.run_partitions(_timed_part, [(i,) for i in range(n)], folder, early, shared={"pause": pause})
        grow.join()
        assert partitions.submission_window(client) == 16
    times = [tuple(map(float, folder.part(i).read_text(encoding="utf-8").split())) for i in range(n)]
    first_end = min(end for _, end in times)
    started_before = sum(start < first_end for start, _ in times)
    assert started_before > 4, sorted(round(s - min(t[0] for t in times), 1) for s, _ in times)
