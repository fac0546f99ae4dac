"""Runs inside the QGIS desktop (``qgis --code``), started by ``scripts/dock_screenshot.py``.

Drives the ThermoCrop dock as a user would (before, during and after a run, Explain, a failed run,
the accuracy tab when the plugin has it) and opens two Processing dialogs, saving a screenshot of
the whole screen at each step, then quits QGIS. The settings come as JSON in the file named by
``THERMOCROP_SHOTS``; what happened is written to ``<out>/shots.log``.
"""

import json
import os
import time
import traceback
from pathlib import Path

from qgis.core import QgsApplication, QgsProject, QgsRasterLayer, QgsVectorLayer
from qgis.PyQt.QtCore import QTimer
from qgis.PyQt.QtGui import QColor
from qgis.PyQt.QtWidgets import QApplication
from qgis.utils import iface, plugins

CONFIG = json.loads(Path(os.environ["THERMOCROP_SHOTS"]).read_text())
OUT = Path(CONFIG["out"])
LOG = OUT / "shots.log"


def note(text):
    with open(LOG, "a") as f:
        f.write(text + "\n")


def settle(seconds=0.6):
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        QgsApplication.processEvents()
        time.sleep(0.02)


def wait_for(condition, timeout=900):
    end = time.monotonic() + timeout
    while not condition():
        QgsApplication.processEvents()
        time.sleep(0.02)
        if time.monotonic() > end:
            raise TimeoutError("timed out")


def shot(name):
    # The message bar wraps a long message into two lines and cuts both; the dock's status panel
    # shows the same message whole.
    iface.messageBar().clearWidgets()
    settle()
    canvas = iface.mapCanvas()
    wait_for(lambda: not canvas.isDrawing(), 120)
    settle(0.3)
    path = OUT / name
    QApplication.primaryScreen().grabWindow(0).save(str(path), "PNG")
    note(f"{name}")


def true_colour(layer):
    """B04/B03/B02 stretched, in grey so the class colours on top stand out."""
    from qgis.core import QgsContrastEnhancement, QgsHueSaturationFilter, QgsMultiBandColorRenderer, QgsRasterBandStats

    names = [layer.bandName(i) for i in range(1, layer.bandCount() + 1)]
    bands = []
    for wanted in ("B04", "B03", "B02"):
        found = [i + 1 for i, name in enumerate(names) if name.endswith(wanted)]
        bands.append(found[0] if found else len(bands) + 1)
    renderer = QgsMultiBandColorRenderer(layer.dataProvider(), *bands)
    for band, setter in zip(bands, (renderer.setRedContrastEnhancement, renderer.setGreenContrastEnhancement,
                                    renderer.setBlueContrastEnhancement)):
        stats = layer.dataProvider().bandStatistics(band, QgsRasterBandStats.Min | QgsRasterBandStats.Max)
        enhancement = QgsContrastEnhancement(layer.dataProvider().dataType(band))
        enhancement.setContrastEnhancementAlgorithm(QgsContrastEnhancement.StretchToMinimumMaximum)
        span = stats.maximumValue - stats.minimumValue
        enhancement.setMinimumValue(stats.minimumValue + 0.02 * span)
        enhancement.setMaximumValue(stats.minimumValue + 0.5 * span)
        setter(enhancement)
    layer.setRenderer(renderer)
    layer.hueSaturationFilter().setGrayscaleMode(QgsHueSaturationFilter.GrayscaleLuminosity)


def run():
    window = iface.mainWindow()
    window.setGeometry(QApplication.primaryScreen().availableGeometry())
    settle(1.0)
    region = Path(CONFIG["region"])
    scenes = sorted(p for p in (region / "scenes").glob("*.tif") if not p.stem.endswith("_SCL"))
    scene = scenes[len(scenes) // 3]
    background = QgsRasterLayer(str(scene), f"scene {scene.stem[11:19]}", "gdal")
    true_colour(background)
    dem = QgsRasterLayer(CONFIG["dem"], "dem", "gdal")
    basemap = QgsRasterLayer("type=xyz&url=http://127.0.0.1:9/{z}/{x}/{y}.png&zmax=19&zmin=0",
                             "OpenStreetMap", "wms")
    parcels = QgsVectorLayer(CONFIG["parcels"], "parcels FR2", "ogr")
    project = QgsProject.instance()
    # The parcels first, so that the project takes their CRS; then the rasters the dock must sort out.
    project.addMapLayers([parcels, background, dem, basemap])
    for layer in (basemap, dem):
        node = project.layerTreeRoot().findLayer(layer.id())
        if node is not None:
            node.setItemVisibilityChecked(False)
    iface.setActiveLayer(parcels)
    root = project.layerTreeRoot()
    for layer in (background, parcels):  # parcels on top of the scene
        node = root.findLayer(layer.id())
        root.insertChildNode(0, node.clone())
        root.removeChildNode(node)
    project.setCrs(parcels.crs())
    canvas = iface.mapCanvas()
    canvas.setDestinationCrs(parcels.crs())
    canvas.setSelectionColor(QColor(0, 200, 255, 200))
    settle(0.5)
    canvas.setExtent(parcels.extent().buffered(parcels.extent().width() * 0.02))
    canvas.refreshAllLayers()
    note(f"canvas {canvas.mapSettings().destinationCrs().authid()} {canvas.extent().toString(0)}")

    plugin = plugins["thermocrop"]
    plugin.action.setChecked(True)
    dock = plugin.dock
    dock.confirm_overwrite = lambda names: True
    dock.layer_combo.setLayer(parcels)
    dock.add_scene_paths([str(region / "scenes")])
    dock.weather.setFilePath(CONFIG["weather"])
    if CONFIG.get("model"):
        dock.model.setFilePath(CONFIG["model"])
    window.resizeDocks([dock], [CONFIG.get("dock_width", 400)], 1)  # Qt.Horizontal
    settle(0.5)
    note(f"dock {dock.width()}x{dock.height()}, status panel from y={dock.run_button.mapTo(dock, dock.rect().topLeft()).y()}")
    shot("dock-before.png")

    task = dock.start()
    if task is None:
        note(f"refused: {dock.message.text()}")
        return
    wait_for(lambda: dock.progress.value() >= 40 or dock.task is None)
    shot("dock-during.png")
    wait_for(lambda: dock.task is None)
    note(f"after: {dock.message.text()}")
    layer = dock.output_layer
    label, conf = dock.label_field.text(), dock.conf_field.text()
    candidates = [f for f in layer.getFeatures()
                  if f[label] not in (None, "", "meadow", "unknown") and str(f[label]) != "NULL"]
    chosen = max(candidates, key=lambda f: (f[conf] or 0) * f.geometry().area())
    layer.selectByIds([chosen.id()])
    iface.setActiveLayer(layer)
    # As a user would: the input layer out of sight under the result.
    project.layerTreeRoot().findLayer(parcels.id()).setItemVisibilityChecked(False)
    shot("dock-after.png")

    # With the Processing Toolbox docked under the dock, as many users keep it: the dock is short.
    from qgis.PyQt.QtCore import Qt
    from qgis.PyQt.QtWidgets import QDockWidget

    toolbox = window.findChild(QDockWidget, "ProcessingToolbox")
    if toolbox is not None:
        window.addDockWidget(Qt.RightDockWidgetArea, toolbox)
        window.splitDockWidget(dock, toolbox, Qt.Vertical)
        toolbox.show()
        window.resizeDocks([dock, toolbox], [430, 230], Qt.Vertical)
        shot("dock-toolbox.png")
        toolbox.hide()
        settle(0.5)

    dock.colour_by.setCurrentIndex(1)
    dock.low_confidence.setChecked(True)
    shot("dock-confidence.png")
    dock.low_confidence.setChecked(False)
    dock.colour_by.setCurrentIndex(0)
    layer.selectByIds([chosen.id()])  # a new filter drops the selection

    dock.tabs.setCurrentIndex(1)
    dock.reference_field.setField(CONFIG.get("reference_field", "crop"))
    dock.explain_selected()
    wait_for(lambda: dock.explain_task is None)
    note(f"explain: {dock.explain_message.text()}")
    shot("dock-explain.png")

    if getattr(dock, "accuracy_widget", None) is not None:
        # The result layer against the region's reference classes (its "crop" field), weighted by
        # parcel areas, as a user would assess a classification.
        accuracy = dock.accuracy_widget
        dock.tabs.setCurrentIndex(2)
        accuracy.set_layer(layer, label, CONFIG.get("reference_field", "crop"))
        accuracy.assess()
        wait_for(lambda: accuracy.task is None)
        note(f"accuracy: {accuracy.status.text()}")
        # The part of the report the dock's width matters for: the confusion matrix, at the top.
        browser = accuracy.browser
        settle(0.3)
        heading = browser.cursorRect(browser.document().find("Columns are numbered"))
        browser.verticalScrollBar().setValue(browser.verticalScrollBar().value() + heading.top() - 4)
        shot("dock-accuracy.png")

    # The Train tab on the region's labelled parcels, with the estimate measured before training.
    train = dock.train_panel
    dock.tabs.setCurrentIndex(dock.tabs.indexOf(train.parentWidget().parentWidget()))
    train.set_layer(parcels)
    train.epochs.setValue(2)
    train.steps.setValue(5)
    train.output.setFilePath(str(Path(CONFIG["work"]) / "shots_model.tcm"))
    started = train.train()
    if started is not None:
        wait_for(lambda: started.estimate is not None or train.task is None)
        settle(0.5)
        shot("dock-train.png")
        wait_for(lambda: train.task is None)
        note(f"train: {train.status.text()}")
        dock.model.setFilePath(CONFIG.get("model") or "")  # the pictures go on with the shipped model
    else:
        note(f"train refused: {train.status.text()}")

    dock.tabs.setCurrentIndex(0)
    dock.weather.setFilePath(CONFIG["bad_weather"])
    dock.start()
    wait_for(lambda: dock.task is None)
    note(f"failed: {dock.message.text()}")
    shot("dock-failed.png")
    dock.weather.setFilePath(CONFIG["weather"])

    import processing

    for name, shot_name, params in (
            ("thermocrop:classifyparcels", "dialog-classify.png",
             {"INPUT": parcels, "WEATHER": CONFIG["weather"], "SCENE_FOLDER": str(region / "scenes")}),
            ("thermocrop:trainmodel", "dialog-train.png", {})):
        dialog = processing.createAlgorithmDialog(name, params)
        dialog.show()
        screen = QApplication.primaryScreen().availableGeometry()
        dialog.resize(min(900, screen.width() - 40), min(640, screen.height() - 60))
        dialog.move(screen.center() - dialog.rect().center())
        shot(shot_name)
        dialog.close()
        dialog.deleteLater()


def main():
    try:
        run()
        note("done")
    except Exception:
        note("error\n" + traceback.format_exc())
    finally:
        # QGIS 3.22 may hang or crash on a scripted exit; the pictures are saved, so leave at once.
        os._exit(0)


QTimer.singleShot(1500, main)
