"""ThermoCrop the way an analyst runs it: the zip from ``make package`` installed into a fresh QGIS
profile, *Install missing packages* run in the QGIS desktop, then QGIS started again with nothing
of the test environment on the path (tests/plugin/installed_qgis.py) and, in that one session, a
synthetic region classified, a model trained (a tiny budget), a loopback STAC catalogue searched
and the result assessed, each through the dock and through the algorithm's Processing dialog, every
algorithm of the provider run from its dialog as a user pressing Run does. The seconds each step
took are printed (``pytest -s``) and written to ``timings.json`` in the test's folder."""

from __future__ import annotations

import ast
import json
import re
import shutil
import subprocess
import sys
import time
from importlib import metadata
from pathlib import Path

import pytest
from installed_qgis import SCRIPT_HEAD, analyst_environment, qgis_python, run_qgis
from test_catalog import CLOUDS, _Catalogue

pytestmark = [pytest.mark.qgis, pytest.mark.slow]

DESKTOP_SCRIPT = SCRIPT_HEAD + r"""
import importlib
from qgis.core import QgsProject, QgsVectorLayer
from qgis.PyQt.QtWidgets import QApplication, QMessageBox, QTextEdit

ARGS = json.loads(os.environ["THERMOCROP_ARGS"])
report = {"timings": {}, "dialogs": {}, "modal": []}


def timed(name, action):
    start = time.monotonic()
    try:
        return action()
    finally:
        report["timings"][name] = round(time.monotonic() - start, 2)


def labels(path):
    layer = QgsVectorLayer(path, "read back", "ogr")
    assert layer.isValid(), path
    return {str(f["parcel_id"]): [f["crop_pred"], f["crop_conf"], f["crop_status"]] for f in layer.getFeatures()}


def close_modal_boxes():
    # A message box would wait for a click forever: note its text and close it.
    box = QApplication.activeModalWidget()
    if isinstance(box, QMessageBox):
        report["modal"].append(box.text())
        box.reject()


watchdog = QTimer()
watchdog.timeout.connect(close_modal_boxes)
watchdog.start(500)


def run_dialog(algorithm_id, params, timeout=600):
    # As a user does: open the algorithm's dialog with the values filled in and press Run.
    import processing
    from processing.tools import dataobjects

    dialog = processing.createAlgorithmDialog(algorithm_id, params)
    dialog.show()
    QgsApplication.processEvents()
    # The check Run makes, done first: its refusal would be a message box.
    chosen = dialog.createProcessingParameters()
    ok, message = dialog.algorithm().checkParameterValues(chosen, dataobjects.createContext())
    assert ok, (algorithm_id, message)
    finished = []
    dialog.algorithmFinished.connect(lambda success, results: finished.append((success, dict(results))))
    dialog.runButton().click()
    wait_for(lambda: finished, timeout)
    success, results = finished[0]
    log = dialog.findChild(QTextEdit, "txtLog")
    entry = {"success": success, "results": {k: v for k, v in results.items()
                                             if isinstance(v, (str, int, float, bool))},
             "log": log.toPlainText()[-3000:] if log is not None else ""}
    report["dialogs"][algorithm_id] = entry
    dialog.close()
    dialog.deleteLater()
    assert success, (algorithm_id, entry["log"])
    return entry["results"]


def environment():
    plugin = plugins["thermocrop"]
    report["missing"] = [r.module for r in plugin.missing]
    report["sys_path"] = list(sys.path)
    report["plugin_file"] = sys.modules["thermocrop"].__file__
    from thermocrop.plugin import dependencies as deps
    report["modules"] = {}
    for req in deps.REQUIREMENTS:
        try:
            report["modules"][req.module] = importlib.import_module(req.module).__file__
        except Exception as exc:
            report["modules"][req.module] = "FAILED %s: %s" % (type(exc).__name__, exc)
    import typing_extensions
    report["typing_extensions"] = typing_extensions.__file__
    report["algorithms"] = sorted(a.id() for a in QgsApplication.processingRegistry().providerById(
        "thermocrop").algorithms())


def classify(dock, layer):
    result = timed("classify (Classify parcels dialog)", lambda: run_dialog("thermocrop:classifyparcels", {
        "INPUT": ARGS["parcels"], "SCENE_FOLDER": ARGS["scenes"], "WEATHER": ARGS["weather"],
        "OUTPUT": ARGS["out"] + "/processing.gpkg"}))
    report["processing"] = labels(result["OUTPUT"])

    def in_dock():
        dock.layer_combo.setLayer(layer)
        dock.add_scene_paths([ARGS["scenes"]])
        dock.weather.setFilePath(ARGS["weather"])
        dock.confirm_overwrite = lambda names: True
        report["dock_started"] = dock.start() is not None
        wait_for(lambda: dock.task is None, 600)

    timed("classify (dock)", in_dock)
    report["dock_message"] = dock.message.text()
    output = dock.output_layer
    report["dock_output"] = output.source().split("|")[0] if output is not None else None
    report["dock"] = labels(report["dock_output"]) if output is not None else {}


def train(dock, layer):
    out = ARGS["out"]
    timed("export training data (dialog)", lambda: run_dialog("thermocrop:exporttrainingdata", {
        "INPUT": ARGS["parcels"], "LABEL_FIELD": "crop", "SCENE_FOLDER": ARGS["scenes"],
        "WEATHER": ARGS["weather"], "MAX_PIXELS": 4, "OUTPUT": out + "/dataset"}))
    timed("train (Train model dialog)", lambda: run_dialog("thermocrop:trainmodel", {
        "DATASETS": out + "/dataset", "VARIANT": 1, "EPOCHS": 1, "STEPS": 3, "BATCH_SIZE": 8, "DEVICE": 1,
        "OUTPUT": out + "/dialog_model.tcm"}))

    panel = dock.train_panel
    dock.tabs.setCurrentIndex(dock.tabs.indexOf(panel.parentWidget().parentWidget()))
    panel.set_layer(layer, "crop")
    panel.epochs.setValue(1)
    panel.steps.setValue(3)
    panel.batch_size.setValue(8)
    panel.output.setFilePath(out + "/dock_model.tcm")

    def in_dock():
        task = panel.train()
        assert task is not None, panel.status.text()
        wait_for(lambda: panel.task is None, 600)
        return task

    task = timed("train (dock Train tab)", in_dock)
    report["train_dock"] = {"bundle": task.bundle_path and str(task.bundle_path), "error": task.error,
                            "status": panel.status.text(), "model_chosen": dock.model.filePath(),
                            "step_s": task.estimate.step_s if task.estimate is not None else None}


def search(dock):
    result = timed("search (Search a catalogue dialog)", lambda: run_dialog("thermocrop:searchcatalog", {
        "INPUT": ARGS["parcels"], "CATALOG": 3, "URL": ARGS["stac"], "SEASON": 2017, "MAX_CLOUD": 60,
        "OUTPUT": ARGS["out"] + "/items.json"}))
    report["search_items"] = result["OUTPUT"]
    timed("growing degree days (dialog)", lambda: run_dialog("thermocrop:parcelgdd", {
        "INPUT": ARGS["parcels"], "STAC_ITEMS": result["OUTPUT"], "WEATHER": ARGS["weather"],
        "OUTPUT": ARGS["out"] + "/gdd.gpkg"}))

    catalog = dock.catalog
    dock.tabs.setCurrentIndex(0)
    catalog.setChecked(True)
    catalog.catalog.setCurrentIndex(3)
    catalog.url.setText(ARGS["stac"])
    catalog.season.setValue(2017)
    catalog.max_cloud.setValue(60)

    def in_dock():
        assert catalog.search() is not None
        wait_for(lambda: catalog.task is None, 300)

    timed("search (dock)", in_dock)
    report["search_dock"] = {"rows": [catalog.results.item(i).text() for i in range(catalog.results.count())],
                             "summary": catalog.summary.text(), "items": catalog.items_path,
                             "scene_paths": dock.scene_paths()}
    catalog.setChecked(False)


def assess(dock):
    out = ARGS["out"]
    report["accuracy_dialog"] = timed("assess (Accuracy assessment dialog)", lambda: run_dialog(
        "thermocrop:accuracyassessment", {
            "INPUT": out + "/processing.gpkg", "PREDICTED_FIELD": "crop_pred", "REFERENCE_FIELD": "crop",
            "OUTPUT_HTML": out + "/accuracy.html", "OUTPUT_CSV": out + "/accuracy.csv",
            "OUTPUT_MATRIX": out + "/matrix.csv"}))
    report["calibrate_dialog"] = timed("calibrate (Calibrate model dialog)", lambda: run_dialog(
        "thermocrop:calibratemodel", {
            "INPUT": ARGS["parcels"], "LABEL_FIELD": "crop", "SCENE_FOLDER": ARGS["scenes"],
            "WEATHER": ARGS["weather"], "OUTPUT": out + "/calibrated.tcm"}))
    report["inseason_dialog"] = timed("in-season accuracy (In-season accuracy dialog)", lambda: run_dialog(
        "thermocrop:inseasonaccuracy", {
            "INPUT": ARGS["parcels"], "LABEL_FIELD": "crop", "SCENE_FOLDER": ARGS["scenes"],
            "WEATHER": ARGS["weather"], "OUTPUT": out + "/inseason"}))
    accuracy = dock.accuracy_widget
    dock.tabs.setCurrentIndex(dock.tabs.indexOf(accuracy.parentWidget().parentWidget()))
    accuracy.set_layer(dock.output_layer, "crop_pred", "crop")

    def in_dock():
        assert accuracy.assess() is not None, accuracy.status.text()
        wait_for(lambda: accuracy.task is None, 300)

    timed("assess (dock Accuracy tab)", in_dock)
    sample = accuracy.report.sample if accuracy.report is not None else None
    report["accuracy_dock"] = {"status": accuracy.status.text(),
                               "n": sample.n if sample else None,
                               "overall": sample.overall_accuracy if sample else None}


def run():
    try:
        timed("start-up checks", environment)
        plugin = plugins["thermocrop"]
        layer = QgsVectorLayer(ARGS["dock_parcels"], "parcels", "ogr")
        QgsProject.instance().addMapLayer(layer)
        plugin.action.setChecked(True)
        dock = plugin.dock
        classify(dock, layer)
        train(dock, layer)
        search(dock)
        assess(dock)
    except Exception:
        report["error"] = traceback.format_exc()
    finish(report)


QTimer.singleShot(1000, run)
"""


def _name(dist) -> str:
    return re.sub(r"[-_.]+", "-", dist.metadata["Name"]).lower()


def _inside(path: str, folder: Path) -> bool:
    return Path(path).resolve().is_relative_to(folder.resolve())


def test_installer_in_qgis_installs_what_the_plugin_needs(installed_profile):
    install = installed_profile.install
    folder = installed_profile.folder
    # A fresh profile lacks every package the plugin installs; the dock offers the installer.
    from thermocrop.core.model.bundle import default_bundle_path
    from thermocrop.plugin import dependencies as deps

    from_pip = [r.module for r in deps.REQUIREMENTS if r.pip]
    assert {"torch", "safetensors", "pystac", "pystac_client", "zarr", "pyarrow", "tqdm", "cdsapi"} <= set(from_pip)
    system = subprocess.run([str(qgis_python()), "-I", "-c", "import importlib.util, sys; print([m for m in "
                             "sys.argv[1:] if importlib.util.find_spec(m) is None])", *from_pip],
                            capture_output=True, text=True, env=analyst_environment(), check=True)
    assert install["missing_at_start"] == ast.literal_eval(system.stdout) and install["install_offered"]
    assert "torch" in install["missing_at_start"]
    # Inside QGIS sys.executable is not QGIS's Python (here the PATH's python3); pip ran with the
    # interpreter of QGIS's prefix all the same, and said so in its marker.
    marker = json.loads((folder / deps.MARKER_NAME).read_text())
    interpreter = Path(marker["interpreter"])
    assert interpreter == qgis_python() and interpreter.parent == Path(sys.base_prefix) / "bin"
    assert install["executable"] != str(interpreter)
    # No distribution in the folder is one QGIS's Python has in the same version (pip --target
    # installs them again; the installer removes them).
    system = {_name(d): d.version for d in metadata.distributions(path=[p for p in install["sys_path"]
                                                                         if p != str(folder)])}
    ours = {_name(d): d.version for d in metadata.distributions(path=[str(folder)])}
    assert "torch" in ours and "typing-extensions" in ours
    assert not {name for name, version in ours.items() if system.get(name) == version}
    assert {entry.rsplit(" ", 1)[0].lower() for entry in marker["shared_with_qgis"]}.isdisjoint(ours)
    # Installed, checked by importing in a new process, found at once in the same session.
    assert install["message"].startswith("Packages installed; every requirement imports"), install["message"]
    assert install["missing_after"] == []
    # In the same session, without restarting QGIS: torch imports from the folder and the model
    # card, which said torch was missing, describes the shipped model.
    assert "Model not available" in install["model_card_before"] and "torch" in install["model_card_before"]
    shipped = default_bundle_path().name
    assert "Model not available" not in install["model_card_after"] and shipped in install["model_card_after"]
    assert _inside(install["torch_in_session"], folder)
    assert folder.parent == installed_profile.profile / "python" / "thermocrop-packages"
    assert (folder / "torch").is_dir() and (folder / "typing_extensions.py").is_file()
    # The folder comes before the system's dist-packages on QGIS's path.
    path = install["sys_path"]
    dist = next(i for i, p in enumerate(path) if p.endswith("dist-packages"))
    assert path.index(str(folder)) < dist


def test_restarted_qgis_classifies_trains_searches_and_assesses_in_the_dock_and_every_dialog(
        installed_profile, tiny_region, tmp_path):
    from thermocrop.core.classify import classify_parcels
    from thermocrop.plugin.dependencies import REQUIREMENTS

    folder = installed_profile.folder
    shutil.copy(tiny_region / "parcels.gpkg", tmp_path / "parcels.gpkg")
    out = tmp_path / "out"
    out.mkdir()
    catalogue = _Catalogue(tiny_region, tmp_path / "catalogue")
    try:
        args = {"parcels": str(tiny_region / "parcels.gpkg"), "scenes": str(tiny_region / "scenes"),
                "weather": str(tiny_region / "weather.nc"), "dock_parcels": str(tmp_path / "parcels.gpkg"),
                "stac": catalogue.url + "/stac", "out": str(out)}
        env = analyst_environment(THERMOCROP_ARGS=json.dumps(args), THERMOCROP_CACHE=str(tmp_path / "cache"))
        start = time.monotonic()
        report = run_qgis(installed_profile.profiles, DESKTOP_SCRIPT, env, tmp_path / "qgis", timeout=1500)
        desktop = time.monotonic() - start
    finally:
        catalogue.close()
    timings = {**installed_profile.timings, **report["timings"], "desktop start to exit (all of the above)": desktop}
    (tmp_path / "timings.json").write_text(json.dumps(timings, indent=1))
    print("\nSeconds each step took in the installed QGIS desktop:")
    for name, seconds in timings.items():
        print(f"  {seconds:8.1f}  {name}")
    assert report["modal"] == []  # no question waited for a click

    assert report["missing"] == []
    # The plugin ran from the unpacked zip and its packages from the profile's folder, ahead of
    # Debian's older copies (torch needs a newer typing_extensions than Debian 12's).
    assert _inside(report["plugin_file"], installed_profile.plugin)
    for req in REQUIREMENTS:
        assert not report["modules"][req.module].startswith("FAILED"), report["modules"][req.module]
        if req.module in installed_profile.install["missing_at_start"]:
            assert _inside(report["modules"][req.module], folder), (req.module, report["modules"][req.module])
    assert _inside(report["typing_extensions"], folder)
    assert not any(".venv" in p or "site-packages" in p for p in report["sys_path"]), report["sys_path"]
    # Every algorithm of the provider ran through its dialog.
    assert report["algorithms"] == sorted(report["dialogs"]), (report["algorithms"], sorted(report["dialogs"]))

    # Classify: the labels read back equal the library's own run on the same files with the same model.
    expected = classify_parcels(tiny_region / "parcels.gpkg", tiny_region / "scenes", tiny_region / "weather.nc",
                                None, id_field="parcel_id")
    assert report["dock_started"], report.get("dock_message")
    for name in ("processing", "dock"):
        got = report[name]
        assert len(got) == len(expected.parcel_ids), (name, len(got))
        ok = {pid for pid, (_, _, status) in got.items() if status == "ok"}
        assert len(ok) > len(got) / 2, name
        _compare(got, expected, name)
    assert report["dialogs"]["thermocrop:classifyparcels"]["results"]["CLASSIFIED"] == \
        int((expected.status == "ok").sum())

    _check_training(report, tiny_region, out)
    _check_search(report, tiny_region, out)
    _check_accuracy(report, out)
    _check_calibration(report, tiny_region, out)
    _check_inseason(report, out)


def _check_calibration(report: dict, region: Path, out: Path) -> None:
    """The Calibrate model dialog wrote a calibrated bundle fitted on every classified reference
    parcel of a class the model knows."""
    import geopandas as gpd

    from thermocrop.core.model.bundle import load_bundle

    bundle = load_bundle(out / "calibrated.tcm")
    labels = gpd.read_file(region / "parcels.gpkg")["crop"]
    parcels = report["calibrate_dialog"]["PARCELS"]
    assert bundle.calibration is not None and bundle.calibration.parcels == parcels
    assert 50 <= parcels <= int(labels.isin(bundle.classes).sum())
    assert report["calibrate_dialog"]["TEMPERATURE"] == pytest.approx(bundle.calibration.temperature)


def _check_inseason(report: dict, out: Path) -> None:
    """The In-season accuracy dialog wrote its tables and figure; its whole-season accuracy is
    the table's last row."""
    import csv

    results = report["inseason_dialog"]
    rows = list(csv.DictReader((out / "inseason" / "inseason.csv").open(encoding="utf-8")))
    assert results["TABLE"] == str(out / "inseason" / "inseason.csv") and Path(results["FIGURE"]).is_file()
    assert float(rows[-1]["overall_accuracy"]) == pytest.approx(results["OVERALL_ACCURACY"], abs=5e-5)


def _check_training(report: dict, region: Path, out: Path) -> None:
    """The exported dataset holds the region's labelled parcels; both trained models load with
    the region's classes; the dock chose its new model."""
    import geopandas as gpd
    import numpy as np

    from thermocrop.core.model.bundle import load_bundle
    from thermocrop.core.pixel_sets import open_dataset

    crops = gpd.read_file(region / "parcels.gpkg")["crop"]
    data = open_dataset(out / "dataset")
    assert len(data.labels) == len(crops) and (np.asarray(data.labels) >= 0).sum() == crops.notna().sum()
    bundle = load_bundle(out / "dialog_model.tcm")
    assert bundle.config.variant == "tpe_sinusoidal"
    assert 2 <= len(bundle.classes) and set(bundle.classes) <= set(crops.dropna())
    dock = report["train_dock"]
    assert dock["error"] is None and dock["bundle"] == str(out / "dock_model.tcm"), dock
    assert dock["model_chosen"] == dock["bundle"] and "chosen for the next classification" in dock["status"]
    assert dock["step_s"] > 0
    bundle = load_bundle(dock["bundle"])
    assert set(bundle.classes) <= set(crops.dropna()) and len(bundle.classes) >= 2
    labels = np.asarray(open_dataset(out / "dock_model_dataset").labels)
    assert len(labels) == len(crops) and (labels >= 0).sum() == crops.notna().sum()


def _check_search(report: dict, region: Path, out: Path) -> None:
    """Search found the published dates of at most 60 % cloud, in the dialog and the dock; growing
    degree days came at those dates."""
    import geopandas as gpd

    dates = sorted(f["properties"]["datetime"][:10] for f in json.loads(Path(report["search_items"]).read_text())
                   ["features"])
    clouds = sorted(c for c in CLOUDS if c <= 60)
    assert report["dialogs"]["thermocrop:searchcatalog"]["results"]["ITEMS"] == len(clouds)
    assert report["dialogs"]["thermocrop:searchcatalog"]["results"]["DATES"] == len(clouds) == len(dates)
    dock = report["search_dock"]
    assert len(dock["rows"]) == len(clouds) and [r[:10] for r in dock["rows"]] == dates, dock
    assert sorted(float(r.split("cloud ")[1].rstrip(" %")) for r in dock["rows"]) == clouds
    assert dock["scene_paths"] == [dock["items"]]
    gdd = gpd.read_file(out / "gdd.gpkg")
    columns = [c for c in gdd.columns if c.startswith("gdd_")]
    assert columns == ["gdd_" + d.replace("-", "") for d in dates]
    values = gdd[columns].to_numpy()
    assert len(gdd) == len(gpd.read_file(region / "parcels.gpkg")) and (values[:, 0] >= 0).all()
    assert (values[:, 1:] >= values[:, :-1]).all() and (values[:, -1] > values[:, 0]).all()


def _check_accuracy(report: dict, out: Path) -> None:
    """The dialog's and the dock's overall accuracy is the share of classified reference parcels
    whose label is right, counted here from the written layers."""
    import geopandas as gpd

    for name, path, result in (("dialog", out / "processing.gpkg", report["accuracy_dialog"]),
                               ("dock", Path(report["dock_output"]), report["accuracy_dock"])):
        frame = gpd.read_file(path)
        pairs = frame[frame["crop_pred"].fillna("").astype(str).str.strip().ne("") & frame["crop"].notna()]
        right = (pairs["crop_pred"] == pairs["crop"]).sum()
        if name == "dialog":
            n, overall = result["SAMPLE_SIZE"], result["OVERALL_ACCURACY"]
        else:
            n, overall = result["n"], result["overall"]
        assert n == len(pairs) > 0, (name, result)
        assert overall == pytest.approx(right / len(pairs)), (name, result)
    assert (out / "accuracy.html").stat().st_size > 0 and (out / "matrix.csv").is_file()
    assert "Confusion matrix" in (out / "accuracy.html").read_text()


def _compare(got: dict, expected, name: str) -> None:
    """``got`` (parcel id -> label, confidence, status) against the library's result."""
    import numpy as np

    ids = [str(i) for i in np.asarray(expected.parcel_ids)]
    for pid, label, conf, status in zip(ids, expected.labels, expected.confidence, expected.status):
        g_label, g_conf, g_status = got[pid]
        assert g_status == status, (name, pid)
        if status == "ok":
            assert g_label == label, (name, pid, g_label, label)
            assert g_conf == pytest.approx(float(conf), abs=1e-4), (name, pid)
