"""Each use case reached from the command line, the Toolbox and the dock goes through the same
``app`` run function with an equal request.

A recording spy takes the place of the run function in every door's module (after checking
that the door holds ``app``'s own function), keeps the request and stops the run; the requests
are then compared. The parcels differ only in form (a file for the command line, the features
QGIS read for the others) and are compared by their geometries; the outputs differ by door
(a file, a Processing sink, the layer itself)."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import geopandas as gpd
import numpy as np
import pytest

import thermocrop
from thermocrop import app
from thermocrop.core.errors import ThermoCropError

pytestmark = pytest.mark.qgis

MODEL = Path(thermocrop.__file__).parent / "resources" / "models" / "default.tcm"


class Recorded(ThermoCropError):
    """Raised by the spy once it holds the request: the run itself is not what these tests test."""


@pytest.fixture
def spy(monkeypatch):
    """``spy(name, *modules) -> list``: the requests the doors in ``modules`` give ``app.<name>``."""

    def install(name: str, *modules) -> list:
        requests = []
        real = getattr(app, name)

        def record(request, progress=None):
            requests.append(request)
            raise Recorded(f"{name} called")

        assert callable(real)
        for module in modules:
            assert getattr(module, "app", None) is app, f"{module.__name__} does not call app.{name}"
        monkeypatch.setattr(app, name, record)
        return requests

    return install


def _processing(algorithm: str, parameters: dict) -> None:
    import processing
    from qgis.core import QgsProcessingContext, QgsProcessingException, QgsProcessingFeedback

    with pytest.raises(QgsProcessingException, match="called"):
        processing.run(algorithm, parameters, context=QgsProcessingContext(), feedback=QgsProcessingFeedback())


def _same_parcels(path: Path, *frames) -> None:
    """Every frame holds the parcels of the file at ``path``, in its order."""
    expected = gpd.read_file(path).geometry
    for frame in frames:
        assert len(frame) == len(expected)
        assert all(a.equals(b) for a, b in zip(frame.geometry, expected))


def test_classification_doors_build_one_request(provider, spy, tiny_region, tmp_path):
    from qgis.core import QgsVectorLayer, QgsVectorLayerFeatureSource

    from thermocrop.cli.commands import classify_command
    from thermocrop.cli.main import main
    from thermocrop.plugin import task as dock_task
    from thermocrop.plugin.algorithms import classify_parcels

    requests = spy("run_classification", classify_command, classify_parcels, dock_task)
    parcels, scenes, weather = tiny_region / "parcels.gpkg", tiny_region / "scenes", tiny_region / "weather.nc"

    assert main(["classify", "--parcels", str(parcels), "--scenes", str(scenes), "--weather", str(weather),
                 "--model", str(MODEL), "--out", str(tmp_path / "cli.gpkg"), "--missing-scl", "warn"]) != 0
    _processing("thermocrop:classifyparcels", {"INPUT": str(parcels), "SCENE_FOLDER": str(scenes),
                                               "WEATHER": str(weather), "MODEL": str(MODEL),
                                               "OUTPUT": str(tmp_path / "toolbox.gpkg")})
    layer = QgsVectorLayer(str(parcels), "parcels", "ogr")
    snapshot = dock_task.LayerSnapshot(QgsVectorLayerFeatureSource(layer), layer.crs(), layer.name(),
                                       layer.fields().names())
    params = dock_task.ClassificationParameters(parcels=snapshot, fids=[], scenes=[str(scenes)],
                                                weather=str(weather), model=str(MODEL))
    task = dock_task.ClassificationTask(params, on_done=None)
    assert task.run() is False and task.error == "run_classification called"
    # The task takes the request itself as well (its parcels the snapshot, read in the task).
    request = dock_task.classification_request(params)
    assert request.parcels.source is snapshot
    assert dock_task.ClassificationTask(request, on_done=None).run() is False

    cli, toolbox, dock, dock_request = requests
    assert dataclasses.replace(dock_request, parcels=None) == dataclasses.replace(dock, parcels=None)
    assert cli.parcels.source == str(parcels) and cli.output.path == str(tmp_path / "cli.gpkg")
    assert toolbox.output is None and dock.output is None  # a Processing sink; the layer's own fields
    _same_parcels(parcels, toolbox.parcels.source, dock.parcels.source, dock_request.parcels.source)
    common = [dataclasses.replace(r, parcels=None, output=None) for r in requests]
    assert common[0] == common[1] == common[2]
    assert cli.scenes.files == (str(scenes),) and cli.weather.path == str(weather) and cli.model == str(MODEL)
    assert cli.fields.coverage == 0.9  # the default of every door


@pytest.mark.parametrize("coverage", [0.75, None])
def test_classification_doors_ask_for_the_same_prediction_sets(provider, spy, tiny_region, tmp_path, coverage):
    from qgis.core import QgsVectorLayer, QgsVectorLayerFeatureSource

    from thermocrop.cli.commands import classify_command
    from thermocrop.cli.main import main
    from thermocrop.plugin import task as dock_task
    from thermocrop.plugin.algorithms import classify_parcels
    from thermocrop.plugin.dock import ThermoCropDock
    from thermocrop.plugin.dock.form import read_form

    requests = spy("run_classification", classify_command, classify_parcels, dock_task)
    parcels, scenes, weather = tiny_region / "parcels.gpkg", tiny_region / "scenes", tiny_region / "weather.nc"
    sets = ["--no-sets"] if coverage is None else ["--coverage", str(coverage)]
    assert main(["classify", "--parcels", str(parcels), "--scenes", str(scenes), "--weather", str(weather),
                 "--model", str(MODEL), "--out", str(tmp_path / "cli.gpkg"), "--missing-scl", "warn", *sets]) != 0
    _processing("thermocrop:classifyparcels", {"INPUT": str(parcels), "SCENE_FOLDER": str(scenes),
                                               "WEATHER": str(weather), "MODEL": str(MODEL),
                                               "PREDICTION_SETS": coverage is not None, "COVERAGE": coverage or 0.5,
                                               "OUTPUT": str(tmp_path / "toolbox.gpkg")})
    # The dock's form: its sets checkbox and coverage box give the task's coverage.
    dock = ThermoCropDock(restore=False)
    try:
        dock.prediction_sets.setChecked(coverage is not None)
        dock.coverage.setValue(coverage or 0.5)
        form_coverage = read_form(dock.inputs).coverage
    finally:
        dock.shutdown()
    assert form_coverage == coverage
    layer = QgsVectorLayer(str(parcels), "parcels", "ogr")
    snapshot = dock_task.LayerSnapshot(QgsVectorLayerFeatureSource(layer), layer.crs(), layer.name(),
                                       layer.fields().names())
    params = dock_task.ClassificationParameters(parcels=snapshot, fids=[], scenes=[str(scenes)],
                                                weather=str(weather), model=str(MODEL), coverage=form_coverage)
    assert dock_task.ClassificationTask(params, on_done=None).run() is False

    cli, toolbox, dock_request = requests
    assert cli.fields.coverage == coverage
    common = [dataclasses.replace(r, parcels=None, output=None) for r in requests]
    assert common[0] == common[1] == common[2]


def test_extraction_doors_build_one_request(provider, spy, tiny_region, tmp_path):
    from thermocrop.cli.commands import extract_command
    from thermocrop.cli.main import main
    from thermocrop.plugin.algorithms import export_training_data

    requests = spy("run_extraction", extract_command, export_training_data)
    parcels, scenes, weather = tiny_region / "parcels.gpkg", tiny_region / "scenes", tiny_region / "weather.nc"
    out = tmp_path / "dataset"

    assert main(["extract", "--parcels", str(parcels), "--scenes", str(scenes), "--weather", str(weather),
                 "--label-field", "crop", "--out", str(out), "--missing-scl", "warn"]) != 0
    _processing("thermocrop:exporttrainingdata", {"INPUT": str(parcels), "LABEL_FIELD": "crop",
                                                  "SCENE_FOLDER": str(scenes), "WEATHER": str(weather),
                                                  "OUTPUT": str(out)})

    cli, toolbox = requests
    _same_parcels(parcels, toolbox.parcels.source)
    assert dataclasses.replace(cli, parcels=None) == dataclasses.replace(toolbox, parcels=None)
    assert cli.label_field == "crop" and cli.block_field == "block" and cli.settings.sampling.max_pixels == 64


def test_gdd_doors_build_one_request_with_the_same_distance(provider, spy, tmp_path, tiny_region):
    from thermocrop.cli.commands import gdd_command
    from thermocrop.cli.main import main
    from thermocrop.plugin.algorithms import parcel_gdd

    requests = spy("run_gdd", gdd_command, parcel_gdd)
    parcels, weather = tiny_region / "parcels.gpkg", tiny_region / "weather.nc"

    assert main(["gdd", "--parcels", str(parcels), "--weather", str(weather), "--dates", "2017-04-01",
                 "2017-06-15", "--season-start", "10-01/-1", "--t-base", "4", "--max-distance-km", "12",
                 "--out", str(tmp_path / "gdd.csv")]) != 0
    _processing("thermocrop:parcelgdd", {"INPUT": str(parcels), "WEATHER": str(weather),
                                         "DATES": "2017-04-01, 2017-06-15", "SEASON_START": "10-01/-1",
                                         "T_BASE": 4.0, "MAX_DISTANCE_KM": 12.0,
                                         "OUTPUT": str(tmp_path / "gdd.gpkg")})
    # Without the option, the Toolbox takes the same default as the command line.
    _processing("thermocrop:parcelgdd", {"INPUT": str(parcels), "WEATHER": str(weather), "DATES": "2017-04-01",
                                         "OUTPUT": str(tmp_path / "gdd2.gpkg")})

    cli, toolbox, default = requests
    _same_parcels(parcels, toolbox.parcels.source)
    assert cli.out == str(tmp_path / "gdd.csv") and toolbox.out is None
    assert dataclasses.replace(cli, parcels=None, out=None) == dataclasses.replace(toolbox, parcels=None)
    assert cli.weather.max_distance_km == 12.0 and cli.weather.reader_options()["max_distance_m"] == 12000.0
    assert [str(d) for d in np.asarray(cli.dates, dtype="datetime64[D]")] == ["2017-04-01", "2017-06-15"]
    assert default.weather.max_distance_km == app.WeatherSpec().max_distance_km == 25.0


def test_calibration_doors_build_one_request(provider, spy, tiny_region, tmp_path):
    from qgis.core import QgsProject, QgsVectorLayer

    from thermocrop.cli.commands import calibrate_command
    from thermocrop.cli.main import main
    from thermocrop.core.classmap import ClassMap
    from thermocrop.plugin import calibrate_panel
    from thermocrop.plugin.algorithms import calibrate_model

    requests = spy("run_calibration", calibrate_command, calibrate_model, calibrate_panel)
    parcels, scenes, weather = tiny_region / "parcels.gpkg", tiny_region / "scenes", tiny_region / "weather.nc"
    out = str(tmp_path / "calibrated.tcm")

    assert main(["calibrate", str(MODEL), "--reference", str(parcels), "--label-field", "crop", "--class-map",
                 "france", "--scenes", str(scenes), "--weather", str(weather), "--out", out, "--overwrite",
                 "--missing-scl", "warn", "--method", "vector", "--gdd-floor", "400"]) != 0
    _processing("thermocrop:calibratemodel", {"INPUT": str(parcels), "LABEL_FIELD": "crop", "CLASS_MAP": 1,
                                              "SCENE_FOLDER": str(scenes), "WEATHER": str(weather),
                                              "MODEL": str(MODEL), "METHOD": 1, "GDD_FLOOR": 400, "OUTPUT": out})
    layer = QgsVectorLayer(str(parcels), "parcels", "ogr")
    QgsProject.instance().addMapLayer(layer)
    try:
        panel = calibrate_panel.CalibratePanel(lambda: (layer, "crop", "france"),
                                               lambda: ([str(scenes)], str(weather), str(MODEL)), lambda path: None)
        panel.method_box.setCurrentIndex(panel.method_box.findData("vector"))
        panel.floor_box.setValue(400)
        task = calibrate_panel.CalibrationTask(panel.request(out), on_done=None)
        assert task.run() is False and task.error == "run_calibration called"
    finally:
        QgsProject.instance().removeMapLayer(layer.id())

    cli, toolbox, dock = requests
    assert cli.reference.source == str(parcels) and cli.label_field == "crop"
    _same_parcels(parcels, toolbox.reference.source, dock.reference.source)
    assert list(toolbox.reference.source["crop"]) == list(gpd.read_file(parcels)["crop"].astype(str))
    # The Toolbox hands the class map loaded, the command line and the dock its name: the same table.
    assert toolbox.class_map == ClassMap.load("france") and cli.class_map == dock.class_map == "france"
    assert cli.method == toolbox.method == dock.method == "vector"
    assert cli.gdd_floor == toolbox.gdd_floor == dock.gdd_floor == 400.0
    same = [dataclasses.replace(r, reference=None, class_map=None) for r in requests]
    assert same[0] == same[1] == same[2]


def test_season_accuracy_doors_build_one_request(provider, spy, tiny_region, tmp_path):
    from qgis.core import QgsProject, QgsVectorLayer

    from thermocrop.cli.commands import inseason_command
    from thermocrop.cli.main import main
    from thermocrop.core.classmap import ClassMap
    from thermocrop.plugin import season_panel
    from thermocrop.plugin.algorithms import inseason_accuracy

    requests = spy("run_season_accuracy", inseason_command, inseason_accuracy, season_panel)
    parcels, scenes, weather = tiny_region / "parcels.gpkg", tiny_region / "scenes", tiny_region / "weather.nc"
    out = str(tmp_path / "inseason")

    assert main(["inseason", "--reference", str(parcels), "--label-field", "crop", "--class-map", "france",
                 "--scenes", str(scenes), "--weather", str(weather), "--model", str(MODEL), "--out", out,
                 "--overwrite", "--missing-scl", "warn"]) != 0
    _processing("thermocrop:inseasonaccuracy", {"INPUT": str(parcels), "LABEL_FIELD": "crop", "CLASS_MAP": 1,
                                                "SCENE_FOLDER": str(scenes), "WEATHER": str(weather),
                                                "MODEL": str(MODEL), "OUTPUT": out})
    layer = QgsVectorLayer(str(parcels), "parcels", "ogr")
    QgsProject.instance().addMapLayer(layer)
    try:
        panel = season_panel.SeasonPanel(lambda: (layer, "crop", "france"),
                                         lambda: ([str(scenes)], str(weather), str(MODEL)))
        task = season_panel.SeasonAccuracyTask(panel.request(out), on_done=None)
        assert task.run() is False and task.error == "run_season_accuracy called"
    finally:
        QgsProject.instance().removeMapLayer(layer.id())

    cli, toolbox, dock = requests
    assert cli.reference.source == str(parcels) and cli.label_field == "crop"
    _same_parcels(parcels, toolbox.reference.source, dock.reference.source)
    assert list(toolbox.reference.source["crop"]) == list(gpd.read_file(parcels)["crop"].astype(str))
    # The Toolbox hands the class map loaded, the command line and the dock its name: the same table.
    assert toolbox.class_map == ClassMap.load("france") and cli.class_map == dock.class_map == "france"
    same = [dataclasses.replace(r, reference=None, class_map=None) for r in requests]
    assert same[0] == same[1] == same[2]


def test_a_decided_threshold_without_decided_is_said(provider, spy, tiny_region, tmp_path, caplog):
    """A threshold given without asking for decisions was accepted without a word and wrote no
    decision fields, on the command line and in the Toolbox."""
    import processing
    from qgis.core import QgsProcessingContext, QgsProcessingException, QgsProcessingFeedback

    from thermocrop.cli.commands import classify_command
    from thermocrop.cli.main import main
    from thermocrop.plugin.algorithms import classify_parcels

    requests = spy("run_classification", classify_command, classify_parcels)
    parcels, scenes, weather = tiny_region / "parcels.gpkg", tiny_region / "scenes", tiny_region / "weather.nc"
    with caplog.at_level("WARNING"):
        assert main(["classify", "--parcels", str(parcels), "--scenes", str(scenes), "--weather", str(weather),
                     "--model", str(MODEL), "--out", str(tmp_path / "cli.gpkg"), "--decided-threshold", "0.7"]) != 0
    assert "--decided-threshold is used only with --decided" in caplog.text

    class Warnings(QgsProcessingFeedback):
        said: list = []

        def pushWarning(self, text):  # noqa: N802
            self.said.append(text)

    feedback = Warnings()
    with pytest.raises(QgsProcessingException, match="called"):
        processing.run("thermocrop:classifyparcels", {"INPUT": str(parcels), "SCENE_FOLDER": str(scenes),
                                                      "WEATHER": str(weather), "MODEL": str(MODEL),
                                                      "DECIDED_THRESHOLD": 0.7, "OUTPUT": str(tmp_path / "tb.gpkg")},
                       context=QgsProcessingContext(), feedback=feedback)
    assert any("DECIDED_THRESHOLD is used only with DECIDED" in w for w in feedback.said), feedback.said
    assert [r.fields.decided for r in requests] == [None, None]


def test_classification_as_of_a_date_and_decided_labels_reach_every_door(provider, spy, tiny_region, tmp_path):
    import datetime

    from qgis.core import QgsVectorLayer, QgsVectorLayerFeatureSource

    from thermocrop.cli.commands import classify_command
    from thermocrop.cli.main import main
    from thermocrop.plugin import task as dock_task
    from thermocrop.plugin.algorithms import classify_parcels
    from thermocrop.plugin.dock.form import read_form
    from thermocrop.plugin.dock.input_widgets import ClassifyInputs

    requests = spy("run_classification", classify_command, classify_parcels, dock_task)
    parcels, scenes, weather = tiny_region / "parcels.gpkg", tiny_region / "scenes", tiny_region / "weather.nc"
    assert main(["classify", "--parcels", str(parcels), "--scenes", str(scenes), "--weather", str(weather),
                 "--model", str(MODEL), "--out", str(tmp_path / "cli.gpkg"), "--missing-scl", "warn", "--as-of", "2021-06-30",
                 "--decided",
                 "--decided-threshold", "0.7"]) != 0
    _processing("thermocrop:classifyparcels", {"INPUT": str(parcels), "SCENE_FOLDER": str(scenes),
                                               "WEATHER": str(weather), "MODEL": str(MODEL), "AS_OF": "2021-06-30",
                                               "DECIDED": True, "DECIDED_THRESHOLD": 0.7,
                                               "OUTPUT": str(tmp_path / "toolbox.gpkg")})
    layer = QgsVectorLayer(str(parcels), "parcels", "ogr")
    # The dock's widgets give the date and the check box to the form.
    inputs = ClassifyInputs(say=lambda *a, **k: None)
    inputs.as_of_on.setChecked(True)
    inputs.as_of.setDate(inputs.as_of.date().fromString("2021-06-30", "yyyy-MM-dd"))
    inputs.decided.setChecked(True)
    form = read_form(inputs)
    assert form.as_of == datetime.date(2021, 6, 30) and form.decided
    assert {"crop_decided", "crop_decided_gdd"} <= set(form.field_kinds())
    snapshot = dock_task.LayerSnapshot(QgsVectorLayerFeatureSource(layer), layer.crs(), layer.name(),
                                       layer.fields().names())
    params = dock_task.ClassificationParameters(parcels=snapshot, fids=[], scenes=[str(scenes)], weather=str(weather),
                                                model=str(MODEL), as_of=form.as_of, decided=0.7)
    assert dock_task.ClassificationTask(params, on_done=None).run() is False

    cli, toolbox, dock = requests
    for request in requests:
        assert request.as_of == datetime.date(2021, 6, 30) and request.fields.decided == 0.7
    common = [dataclasses.replace(r, parcels=None, output=None) for r in requests]
    assert common[0] == common[1] == common[2]
    # A date the Toolbox cannot read is refused before anything runs.
    import processing
    from qgis.core import QgsProcessingContext, QgsProcessingException, QgsProcessingFeedback

    with pytest.raises(QgsProcessingException, match="YYYY-MM-DD"):
        processing.run("thermocrop:classifyparcels", {"INPUT": str(parcels), "SCENE_FOLDER": str(scenes),
                                                      "WEATHER": str(weather), "AS_OF": "30.6.2021",
                                                      "OUTPUT": str(tmp_path / "bad.gpkg")},
                       context=QgsProcessingContext(), feedback=QgsProcessingFeedback())
    assert len(requests) == 3


def test_partitioned_runs_are_asked_for_alike_from_the_command_line_and_the_toolbox(provider, spy, tiny_region,
                                                                                     tmp_path):
    from thermocrop.cli.commands import classify_command, extract_command, gdd_command
    from thermocrop.cli.main import main
    from thermocrop.plugin.algorithms import classify_parcels, export_training_data, parcel_gdd

    parcels, scenes, weather = tiny_region / "parcels.gpkg", tiny_region / "scenes", tiny_region / "weather.nc"
    run = str(tmp_path / "run")
    cli_options = ["--chunk-size", "7", "--workers", "3", "--run-folder", run, "--resume"]
    toolbox = {"CHUNK_SIZE": 7, "WORKERS": 3, "RUN_FOLDER": run, "RESUME": True}
    expected = app.ClusterSpec(workers=3, run_folder=run, resume=True)

    classify = spy("run_classification", classify_command, classify_parcels)
    assert main(["classify", "--parcels", str(parcels), "--scenes", str(scenes), "--weather", str(weather),
                 "--out", str(tmp_path / "cli.gpkg"), *cli_options]) != 0
    _processing("thermocrop:classifyparcels", {"INPUT": str(parcels), "SCENE_FOLDER": str(scenes),
                                               "WEATHER": str(weather), "OUTPUT": str(tmp_path / "toolbox.gpkg"),
                                               **toolbox})
    extract = spy("run_extraction", extract_command, export_training_data)
    assert main(["extract", "--parcels", str(parcels), "--scenes", str(scenes), "--weather", str(weather),
                 "--label-field", "crop", "--out", str(tmp_path / "dataset"), *cli_options]) != 0
    _processing("thermocrop:exporttrainingdata", {"INPUT": str(parcels), "LABEL_FIELD": "crop",
                                                  "SCENE_FOLDER": str(scenes), "WEATHER": str(weather),
                                                  "OUTPUT": str(tmp_path / "dataset"), **toolbox})
    gdd = spy("run_gdd", gdd_command, parcel_gdd)
    assert main(["gdd", "--parcels", str(parcels), "--weather", str(weather), "--dates", "2017-04-01",
                 "--out", str(tmp_path / "gdd.csv"), *cli_options]) != 0
    _processing("thermocrop:parcelgdd", {"INPUT": str(parcels), "WEATHER": str(weather), "DATES": "2017-04-01",
                                         "OUTPUT": str(tmp_path / "gdd.gpkg"), **toolbox})
    for requests in (classify, extract, gdd):
        cli, box = requests
        assert cli.cluster == box.cluster == expected
        assert cli.chunk_size == box.chunk_size == 7

    # Without a run folder the Toolbox names the command line's default, beside its output file.
    _processing("thermocrop:parcelgdd", {"INPUT": str(parcels), "WEATHER": str(weather), "DATES": "2017-04-01",
                                         "OUTPUT": str(tmp_path / "gdd.gpkg"), "SCHEDULER": "node-3:8786"})
    assert gdd[-1].cluster == app.ClusterSpec(scheduler="node-3:8786", run_folder=str(tmp_path / "gdd.gpkg.parts"))
