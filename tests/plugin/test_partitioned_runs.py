"""Partitioned runs from QGIS: Classify parcels, Export training data and Growing degree days per
parcel with their advanced parameters (local workers, scheduler, run folder, resume), and the
dock's Advanced group, against one-process runs of the same algorithms. The files are
``partition_region``'s (tests/plugin/conftest.py), 5 parcels per partition (8 partitions)."""

from __future__ import annotations

import numpy as np
import pytest
from shapely.geometry import box

pytestmark = pytest.mark.qgis
gpd = pytest.importorskip("geopandas")

CRS = "EPSG:32631"
CHUNK = 5
PARTITIONS = 8
ADVANCED = ("CHUNK_SIZE", "WORKERS", "SCHEDULER", "RUN_FOLDER", "RESUME")


def recording(cancel_when=None):
    """A ``QgsProcessingFeedback`` keeping its log lines (``infos``) and progress (``percents``);
    ``cancel_when(percent)`` is asked at every progress change and cancels when it says True."""
    from qgis.core import QgsProcessingFeedback

    class Feedback(QgsProcessingFeedback):
        def pushInfo(self, info):  # noqa: N802 (QGIS API)
            self.infos.append(info)
            super().pushInfo(info)

    feedback = Feedback()
    feedback.infos, feedback.percents = [], []

    def changed(percent):
        feedback.percents.append(percent)
        if cancel_when is not None and not feedback.isCanceled() and cancel_when(percent):
            feedback.cancel()

    feedback.progressChanged.connect(changed)
    return feedback


def _run(alg: str, params: dict, feedback=None):
    import processing
    from qgis.core import QgsProcessingContext

    return processing.run(alg, params, context=QgsProcessingContext(), feedback=feedback or recording())


def _classify(partition_region, out, **advanced):
    params = {"INPUT": partition_region["parcels"], "SCENE_FOLDER": partition_region["scenes"], "WEATHER": partition_region["weather"],
              "CHUNK_SIZE": CHUNK, "OUTPUT": str(out)}
    return {**params, **advanced}


def _labels(path) -> tuple[list, list, np.ndarray]:
    frame = gpd.read_file(path)
    return (frame["crop_pred"].fillna("").tolist(), frame["crop_status"].tolist(),
            frame["crop_conf"].to_numpy(dtype=float))


_PROVIDERS: list = []  # a Python provider must stay referenced while registered


@pytest.fixture(scope="module")
def one_process(partition_region, tmp_path_factory, qgis_app):
    """The classification of one process (no advanced parameter given)."""
    from qgis.core import QgsApplication

    from thermocrop.plugin.provider import ThermoCropProvider

    registry = QgsApplication.processingRegistry()
    if registry.providerById("thermocrop") is None:
        _PROVIDERS.append(ThermoCropProvider())
        registry.addProvider(_PROVIDERS[-1])
    out = tmp_path_factory.mktemp("one") / "classified.gpkg"
    _run("thermocrop:classifyparcels", _classify(partition_region, out))
    return _labels(out)


def assert_same_labels(got, expected):
    assert got[0] == expected[0]
    assert got[1] == expected[1]
    np.testing.assert_allclose(got[2], expected[2], rtol=1e-5)  # NaN where not classified, in both
    assert expected[1].count("ok") >= 30  # most parcels are classified, so the labels are compared


def test_the_advanced_parameters_of_the_three_algorithms(provider):
    for name in ("classifyparcels", "exporttrainingdata", "parcelgdd"):
        algorithm = provider.algorithm(name)
        for key in ADVANCED:
            definition = algorithm.parameterDefinition(key)
            assert definition is not None, (name, key)
            assert definition.flags() & definition.FlagAdvanced, (name, key)
            assert definition.help()  # the dialog and qgis_process help say what it does
        assert algorithm.parameterDefinition("WORKERS").defaultValue() == 1
        assert algorithm.parameterDefinition("RESUME").defaultValue() is False
        assert algorithm.parameterDefinition("CHUNK_SIZE").defaultValue() == 20000


def test_classify_on_two_local_workers_equals_one_process(provider, partition_region, one_process, tmp_path):
    pytest.importorskip("distributed")
    out = tmp_path / "classified.gpkg"
    feedback = recording()
    _run("thermocrop:classifyparcels", _classify(partition_region, out, WORKERS=2), feedback)
    assert_same_labels(_labels(out), one_process)
    assert f"{PARTITIONS} partitions" in feedback.infos
    assert any(line.startswith(f"{PARTITIONS} partitions ({PARTITIONS} computed now") for line in feedback.infos)
    assert feedback.percents == sorted(feedback.percents) and feedback.percents[-1] == 100
    assert not (tmp_path / "classified.gpkg.parts").exists()  # removed once the output is written


@pytest.mark.slow
def test_qgis_process_runs_local_workers_from_qgis_python(partition_region, one_process, tmp_path):
    """Under qgis_process ``sys.executable`` is the first python3 on the PATH (here a pyenv shim,
    another Python): the workers must start from the interpreter QGIS runs on."""
    pytest.importorskip("distributed")
    from thermocrop.plugin.headless import run_algorithm

    out = tmp_path / "classified.gpkg"
    params = [("INPUT", partition_region["parcels"]), ("SCENE_FOLDER", partition_region["scenes"]),
              ("WEATHER", partition_region["weather"]), ("CHUNK_SIZE", str(CHUNK)), ("WORKERS", "2"),
              ("OUTPUT", str(out))]
    answer = run_algorithm("thermocrop:classifyparcels", params, tmp_path / "profile", timeout=600)
    assert answer["results"]["OUTPUT"] == str(out)
    assert_same_labels(_labels(out), one_process)


def test_a_run_cancelled_after_its_first_partition_is_resumed(provider, partition_region, one_process, tmp_path):
    """The run folder given, the partitions run here one after the other; the cancel comes as the
    first is written, and the user's file stays as it was until the resumed run replaces it."""
    from qgis.core import QgsProcessingException

    out = tmp_path / "classified.gpkg"
    gpd.GeoDataFrame({"note": ["the user's own file"]}, geometry=[box(0, 0, 1, 1)], crs=CRS).to_file(out)
    before = out.read_bytes()
    run_folder = tmp_path / "run"

    def written():
        return sorted(p.name for p in run_folder.glob("part-*.parquet")) if run_folder.is_dir() else []

    cancelling = recording(cancel_when=lambda percent: bool(written()))
    with pytest.raises(QgsProcessingException, match="Cancelled"):
        _run("thermocrop:classifyparcels", _classify(partition_region, out, RUN_FOLDER=str(run_folder)), cancelling)
    assert written() == ["part-00000.parquet"]
    assert out.read_bytes() == before
    assert any(str(run_folder) in line and "Resume" in line for line in cancelling.infos)

    # Without "Resume" the folder of the interrupted run is refused, and nothing is touched.
    with pytest.raises(QgsProcessingException, match="interrupted run"):
        _run("thermocrop:classifyparcels", _classify(partition_region, out, RUN_FOLDER=str(run_folder)))
    assert written() == ["part-00000.parquet"] and out.read_bytes() == before

    resuming = recording()
    _run("thermocrop:classifyparcels", _classify(partition_region, out, RUN_FOLDER=str(run_folder), RESUME=True), resuming)
    assert f"Resuming: 1 of {PARTITIONS} partitions already written" in resuming.infos
    assert_same_labels(_labels(out), one_process)
    assert not run_folder.exists()


@pytest.mark.parametrize("advanced, message", [
    ({"SCHEDULER": "http://10.0.0.5:8786"}, "is not tcp://HOST:PORT"),
    ({"SCHEDULER": "tcp://10.0.0.5"}, "is not tcp://HOST:PORT"),
    ({"SCHEDULER": "scheduler:99999"}, "is not tcp://HOST:PORT"),
    ({"SCHEDULER": "scheduler.example:8786", "WORKERS": 2}, "not both"),
    ({"RESUME": True}, "Resuming needs the run folder"),
])
def test_bad_cluster_choices_are_refused_before_the_run(provider, partition_region, tmp_path, advanced, message):
    from qgis.core import QgsProcessingException

    for name, params in (("classifyparcels", _classify(partition_region, "TEMPORARY_OUTPUT", **advanced)),
                         ("parcelgdd", {"INPUT": partition_region["parcels"], "WEATHER": partition_region["weather"],
                                        "DATES": "2023-06-01", "OUTPUT": "TEMPORARY_OUTPUT", **advanced})):
        with pytest.raises(QgsProcessingException, match=message):
            _run(f"thermocrop:{name}", params)
    assert list(tmp_path.iterdir()) == []


def test_gdd_and_training_data_in_partitions_equal_one_process(provider, partition_region, tmp_path):
    from thermocrop.core.pixel_sets import open_dataset

    gdd = {"INPUT": partition_region["parcels"], "WEATHER": partition_region["weather"], "DATES": "2023-04-12, 2023-07-20",
           "CHUNK_SIZE": CHUNK}
    _run("thermocrop:parcelgdd", {**gdd, "OUTPUT": str(tmp_path / "gdd1.gpkg")})
    feedback = recording()
    _run("thermocrop:parcelgdd", {**gdd, "RUN_FOLDER": str(tmp_path / "gdd-run"),
                                  "OUTPUT": str(tmp_path / "gdd2.gpkg")}, feedback)
    assert f"{PARTITIONS} partitions" in feedback.infos
    one, parted = gpd.read_file(tmp_path / "gdd1.gpkg"), gpd.read_file(tmp_path / "gdd2.gpkg")
    for field in ("gdd_20230412", "gdd_20230720"):
        assert one[field].notna().sum() >= 38
        np.testing.assert_allclose(parted[field].to_numpy(dtype=float), one[field].to_numpy(dtype=float))
    assert not (tmp_path / "gdd-run").exists()

    extract = {"INPUT": partition_region["parcels"], "LABEL_FIELD": "crop", "SCENE_FOLDER": partition_region["scenes"],
               "WEATHER": partition_region["weather"], "MAX_PIXELS": 8, "CHUNK_SIZE": CHUNK}
    first = _run("thermocrop:exporttrainingdata", {**extract, "OUTPUT": str(tmp_path / "one")})["OUTPUT"]
    second = _run("thermocrop:exporttrainingdata", {**extract, "RUN_FOLDER": str(tmp_path / "extract-run"),
                                                    "OUTPUT": str(tmp_path / "parted")})["OUTPUT"]
    a, b = open_dataset(first), open_dataset(second)
    assert a.parcel_ids.tolist() == b.parcel_ids.tolist() and a.status.tolist() == b.status.tolist()
    assert list(a.classes) == list(b.classes) and a.labels.tolist() == b.labels.tolist()
    np.testing.assert_array_equal(np.asarray(a.pixels), np.asarray(b.pixels))
    np.testing.assert_array_equal(np.asarray(a.gdd), np.asarray(b.gdd))
    assert (np.asarray(a.pixel_mask).sum()) > 0
    assert not (tmp_path / "extract-run").exists()


@pytest.fixture
def dock(qgis_app, partition_region, tmp_path):
    """A dock (nothing remembered) on a copy of the parcels, the region's scenes and weather."""
    import shutil

    from qgis.core import QgsProject, QgsSettings, QgsVectorLayer

    from thermocrop.plugin.dock import ThermoCropDock

    QgsSettings().remove("thermocrop/dock")
    path = tmp_path / "parcels.gpkg"
    shutil.copy(partition_region["parcels"], path)
    layer = QgsVectorLayer(str(path), "parcels", "ogr")
    QgsProject.instance().addMapLayer(layer)
    widget = ThermoCropDock(restore=False)
    widget.add_scene_paths([partition_region["scenes"]])
    widget.weather.setFilePath(partition_region["weather"])
    widget.layer_combo.setLayer(layer)
    widget.confirm_overwrite = lambda names: True
    yield widget
    widget.shutdown()
    widget.deleteLater()
    QgsProject.instance().removeAllMapLayers()
    QgsSettings().remove("thermocrop/dock")


def test_the_dock_reads_its_advanced_group_into_the_request(dock, tmp_path):
    from thermocrop.app import ClusterSpec
    from thermocrop.plugin.dock.form import read_form
    from thermocrop.plugin.task import classification_request

    assert dock.cluster.isCollapsed() and read_form(dock.inputs).cluster == ClusterSpec()
    dock.cluster.workers.setValue(3)
    assert read_form(dock.inputs).cluster == ClusterSpec(workers=3)
    # A run folder is named beside the new layer file, as the command line names it.
    dock.output_file.setFilePath(str(tmp_path / "out.gpkg"))
    params = dock.parameters()
    assert params.cluster == ClusterSpec(workers=3, run_folder=str(tmp_path / "out.gpkg.parts"))
    assert classification_request(params).cluster == params.cluster
    # Into the layer's own fields: beside the layer's file.
    dock.in_place.setChecked(True)
    assert dock.parameters().cluster.run_folder == str(tmp_path / "parcels.gpkg.parts")

    dock.cluster.scheduler.setText("https://node-1:8786")
    assert read_form(dock.inputs).problem().startswith("The Dask scheduler address 'https://node-1:8786' is not")
    assert dock.parameters() is None and "is not tcp://HOST:PORT" in dock.message.text()
    dock.cluster.scheduler.setText("node-1:8786")
    assert "not both" in read_form(dock.inputs).problem()
    dock.cluster.workers.setValue(1)
    assert read_form(dock.inputs).problem() is None

    # Remembered for the next session (the resume only for this run).
    dock.cluster.resume.setChecked(True)
    dock.save_settings()
    from thermocrop.plugin.dock import ThermoCropDock

    again = ThermoCropDock()
    try:
        assert again.inputs.cluster.spec() == ClusterSpec(scheduler="node-1:8786")
        assert not again.cluster.isCollapsed()
    finally:
        again.shutdown()


def test_a_dock_run_cancelled_after_its_partition_is_resumed(dock, one_process, tmp_path):
    """The dock's task (run here, in this thread) with a run folder: a cancel as the partition is
    written leaves the partition and no file; with "Resume" the run takes it up."""
    from thermocrop.plugin.task import ClassificationTask

    out, run_folder = tmp_path / "classified.gpkg", tmp_path / "run"
    dock.output_file.setFilePath(str(out))
    dock.cluster.run_folder.setFilePath(str(run_folder))
    params = dock.parameters()
    assert params.cluster.run_folder == str(run_folder)
    task = ClassificationTask(params, on_done=None)

    def cancel_once_written(percent):
        if list(run_folder.glob("part-*.parquet")):
            task.cancel()

    task.progressChanged.connect(cancel_once_written)
    assert task.run() is False and task.cancelled
    assert [p.name for p in run_folder.glob("part-*.parquet")] == ["part-00000.parquet"]
    assert not out.exists()

    dock.cluster.resume.setChecked(True)
    task = ClassificationTask(dock.parameters(), on_done=None)
    assert task.run() is True, task.error
    assert task.written == str(out) and not run_folder.exists()
    assert_same_labels(_labels(out), one_process)


def test_the_dock_as_of_a_date_leaves_the_shipped_model_to_the_run(dock):
    """Without a model of the user's, a run as of a date is given no model, so that the run can
    choose the shipped in-season model early in the season (``app.season_status``); a model
    chosen by the user is kept."""
    import datetime
    from pathlib import Path

    from qgis.PyQt.QtCore import QDate

    import thermocrop
    from thermocrop.plugin.task import classification_request

    assert dock.parameters().bundle is not None  # the whole season: the model the preflight loaded
    dock.inputs.as_of_on.setChecked(True)
    dock.inputs.as_of.setDate(QDate(2021, 5, 30))
    params = dock.parameters()
    assert params.as_of == datetime.date(2021, 5, 30) and params.bundle is None
    request = classification_request(params)
    assert request.model is None and request.as_of == params.as_of
    model = Path(thermocrop.__file__).parent / "resources" / "models" / "default_fast.tcm"
    dock.inputs.model.setFilePath(str(model))
    assert classification_request(dock.parameters()).model is not None
