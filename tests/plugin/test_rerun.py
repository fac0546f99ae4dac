"""Running Classify parcels again into the same output: the README's ``qgis_process`` commands and
the Processing algorithm in QGIS, three times each, never asking a question nobody can answer."""

from __future__ import annotations

import re
import shlex
import sqlite3
from pathlib import Path

import pytest

pytestmark = [pytest.mark.qgis, pytest.mark.slow]

README = Path(__file__).resolve().parents[2] / "README.md"
RUN_TIMEOUT_S = 600
"""A run waiting on a dialog never ends; this limit turns that into a failure."""


def readme_commands() -> list[tuple[str, list[tuple[str, str]]]]:
    """``(algorithm, [(KEY, VALUE), ...])`` of every ``qgis_process.bin run`` line of the README."""
    commands = []
    for block in re.findall(r"```sh\n(.*?)```", README.read_text(), flags=re.S):
        for line in block.replace("\\\n", " ").splitlines():
            if line.startswith("qgis_process.bin run "):
                words = shlex.split(line)
                rest = words[words.index("--") + 1:]
                commands.append((words[2], [tuple(word.split("=", 1)) for word in rest]))
    return commands


def _here(value: str, region: Path, folder: Path) -> str:
    """The README's relative paths placed in the test's folders: ``region/...`` in the generated
    region, other file names (``out.gpkg``, ``accuracy.html``) in ``folder``."""
    if value.startswith("region/"):
        return str(region / value[len("region/"):])
    return str(folder / value) if re.fullmatch(r"[\w-]+\.\w+", value) else value


def _styles(path: Path) -> list:
    with sqlite3.connect(f"file:{path}?mode=ro", uri=True) as db:
        return db.execute("SELECT f_table_name, styleName, useAsDefault FROM layer_styles").fetchall()


def test_readme_qgis_process_commands_run_three_times_into_the_same_output(make_region, tmp_path):
    import geopandas as gpd

    from thermocrop.plugin.headless import run_algorithm

    region = make_region("FR2", "L1C", seed=0, parcels=100)  # the README's region, fewer parcels
    commands = readme_commands()
    assert [alg for alg, _ in commands] == ["thermocrop:classifyparcels", "thermocrop:accuracyassessment"]
    out = tmp_path / "out.gpkg"
    for run in range(3):
        answers = [run_algorithm(alg, [(key, _here(value, region, tmp_path)) for key, value in params],
                                 tmp_path / "profile", timeout=RUN_TIMEOUT_S)
                   for alg, params in commands]
        classified = answers[0]["results"]
        assert classified["OUTPUT"] == str(out), run
        back = gpd.read_file(out, layer="out")
        assert len(back) == len(gpd.read_file(region / "parcels.gpkg"))
        assert (back["crop_status"] == "ok").sum() == classified["CLASSIFIED"] > 0
        assert _styles(out) == [("out", "thermocrop", 1)], run
        assert (tmp_path / "accuracy.csv").stat().st_size > 0 and (tmp_path / "accuracy.html").is_file()


def test_classifyparcels_in_qgis_three_times_into_the_same_output(provider, tiny_region, region_weather,
                                                                  small_bundle, tmp_path):
    """As the Toolbox does: each run's output is added to the project and stays there meanwhile."""
    import geopandas as gpd
    import processing
    from qgis.core import QgsProcessingContext, QgsProcessingFeedback, QgsProject, QgsVectorLayer
    from qgis.PyQt.QtCore import QTimer
    from qgis.PyQt.QtWidgets import QApplication

    from thermocrop.core.classify import classify_parcels

    asked = []

    def reject_modal():  # a question in a test would wait for ever: answer No, and fail below
        dialog = QApplication.activeModalWidget()
        if dialog is not None:
            asked.append(getattr(dialog, "text", lambda: type(dialog).__name__)())
            dialog.reject()

    timer = QTimer()
    timer.timeout.connect(reject_modal)
    timer.start(200)
    expected = classify_parcels(tiny_region / "parcels.gpkg", tiny_region / "scenes", region_weather,
                                str(small_bundle), id_field="parcel_id")
    out = tmp_path / "classified.gpkg"
    project = QgsProject.instance()
    loaded = []
    try:
        for run in range(3):
            context = QgsProcessingContext()
            context.setProject(project)
            result = processing.run("thermocrop:classifyparcels", {
                "INPUT": str(tiny_region / "parcels.gpkg"), "SCENE_FOLDER": str(tiny_region / "scenes"),
                "WEATHER": str(region_weather), "MODEL": str(small_bundle), "OUTPUT": str(out)},
                context=context, feedback=QgsProcessingFeedback())
            assert asked == [], run
            assert result["OUTPUT"] == str(out)
            back = gpd.read_file(out, layer="classified")
            assert dict(zip(back["parcel_id"].astype(str), back["crop_pred"].fillna(""))) == dict(
                zip(expected.parcel_ids, expected.labels)), run
            assert _styles(out) == [("classified", "thermocrop", 1)], run
            layer = QgsVectorLayer(result["OUTPUT"], f"run {run}", "ogr")
            assert layer.isValid() and layer.featureCount() == len(back)
            project.addMapLayer(layer)
            loaded.append(layer.id())
    finally:
        timer.stop()
        project.removeMapLayers(loaded)
