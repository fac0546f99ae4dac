"""ThermoCrop the way an analyst runs it: the zip from ``make package`` installed into a fresh QGIS
profile, *Install missing packages* run in the QGIS desktop, then QGIS started again and a
synthetic region classified through the Processing algorithm and through the dock, with nothing
of the test environment on the path (tests/plugin/installed_qgis.py)."""

from __future__ import annotations

import ast
import json
import re
import shutil
import subprocess
import sys
from importlib import metadata
from pathlib import Path

import pytest

from installed_qgis import SCRIPT_HEAD, analyst_environment, qgis_python, run_qgis

pytestmark = [pytest.mark.qgis, pytest.mark.slow]

CLASSIFY_SCRIPT = SCRIPT_HEAD + r'''
import importlib
from qgis.core import QgsProject, QgsVectorLayer

ARGS = json.loads(os.environ["THERMOCROP_ARGS"])


def labels(path):
    layer = QgsVectorLayer(path, "read back", "ogr")
    assert layer.isValid(), path
    return {str(f["parcel_id"]): [f["crop_pred"], f["crop_conf"], f["crop_status"]] for f in layer.getFeatures()}


def classify():
    report = {}
    try:
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

        import processing
        result = processing.run("thermocrop:classifyparcels", {
            "INPUT": ARGS["parcels"], "SCENE_FOLDER": ARGS["scenes"], "WEATHER": ARGS["weather"],
            "OUTPUT": ARGS["processing_output"]})
        report["processing"] = labels(result["OUTPUT"])

        layer = QgsVectorLayer(ARGS["dock_parcels"], "parcels", "ogr")
        QgsProject.instance().addMapLayer(layer)
        plugin.action.setChecked(True)
        dock = plugin.dock
        dock.layer_combo.setLayer(layer)
        dock.add_scene_paths([ARGS["scenes"]])
        dock.weather.setFilePath(ARGS["weather"])
        dock.confirm_overwrite = lambda names: True
        report["dock_started"] = dock.start() is not None
        wait_for(lambda: dock.task is None, 600)
        report["dock_message"] = dock.message.text()
        output = dock.output_layer
        report["dock"] = labels(output.source().split("|")[0]) if output is not None else {}
    except Exception:
        report["error"] = traceback.format_exc()
    finish(report)


QTimer.singleShot(1000, classify)
'''


def _name(dist) -> str:
    return re.sub(r"[-_.]+", "-", dist.metadata["Name"]).lower()


def _inside(path: str, folder: Path) -> bool:
    return Path(path).resolve().is_relative_to(folder.resolve())


def test_installer_in_qgis_installs_what_the_plugin_needs(installed_profile):
    install = installed_profile.install
    folder = installed_profile.folder
    # A fresh profile lacks every package the plugin installs; the dock offers the installer.
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
    assert "Model not available" not in install["model_card_after"] and "default.tcm" in install["model_card_after"]
    assert _inside(install["torch_in_session"], folder)
    assert folder.parent == installed_profile.profile / "python" / "thermocrop-packages"
    assert (folder / "torch").is_dir() and (folder / "typing_extensions.py").is_file()
    # The folder comes before the system's dist-packages on QGIS's path.
    path = install["sys_path"]
    dist = next(i for i, p in enumerate(path) if p.endswith("dist-packages"))
    assert path.index(str(folder)) < dist


def test_restarted_qgis_classifies_through_processing_and_the_dock(installed_profile, tiny_region, tmp_path):
    from thermocrop.core.classify import classify_parcels
    from thermocrop.plugin.dependencies import REQUIREMENTS

    folder = installed_profile.folder
    shutil.copy(tiny_region / "parcels.gpkg", tmp_path / "parcels.gpkg")
    args = {"parcels": str(tiny_region / "parcels.gpkg"), "scenes": str(tiny_region / "scenes"),
            "weather": str(tiny_region / "weather.nc"), "processing_output": str(tmp_path / "processing.gpkg"),
            "dock_parcels": str(tmp_path / "parcels.gpkg")}
    report = run_qgis(installed_profile.profiles, CLASSIFY_SCRIPT,
                      analyst_environment(THERMOCROP_ARGS=json.dumps(args)), tmp_path / "qgis")
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

    # The labels read back equal the library's own run on the same files with the same model.
    expected = classify_parcels(tiny_region / "parcels.gpkg", tiny_region / "scenes", tiny_region / "weather.nc",
                                None, id_field="parcel_id")
    assert report["dock_started"], report.get("dock_message")
    for name in ("processing", "dock"):
        got = report[name]
        assert len(got) == len(expected.parcel_ids), (name, len(got))
        ok = {pid for pid, (_, _, status) in got.items() if status == "ok"}
        assert len(ok) > len(got) / 2, name
        _compare(got, expected, name)


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
