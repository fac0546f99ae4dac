"""Screenshot of the ThermoCrop dock for the docs, taken from a real run on a synthetic region.

Shows a QGIS-like window (the classified parcels on a map canvas over one scene, the dock's
Classify tab) and, beside it, the Explain tab for one parcel. Needs a display; without one:

    xvfb-run -a -s "-screen 0 1800x1100x24" .venv/bin/python scripts/dock_screenshot.py
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
import time
from pathlib import Path

SHOT_SEED = 4242
"""Seed of the pictured region; the default model was trained on other seeds."""


def parse_args(argv=None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default="docs/img/dock.png", help="PNG to write")
    parser.add_argument("--region", help="synthetic region folder (generated FR2 seed 4242 when absent)")
    parser.add_argument("--parcels", type=int, default=150, help="parcels of a generated region")
    parser.add_argument("--weather", help="temperature file (default: the region's weather.nc)")
    parser.add_argument("--model", help="model bundle (default: the shipped model)")
    return parser.parse_args(argv)


def _wait_for(condition, timeout: float = 600) -> None:
    from qgis.core import QgsApplication

    end = time.monotonic() + timeout
    while not condition():
        QgsApplication.processEvents()
        time.sleep(0.02)
        if time.monotonic() > end:
            raise TimeoutError("the dock did not finish in time")


def _true_colour(layer) -> None:
    """Render a multi-band scene as B04/B03/B02 stretched to its 2-98 % range."""
    from qgis.core import (QgsContrastEnhancement, QgsHueSaturationFilter, QgsMultiBandColorRenderer,
                           QgsRasterBandStats)

    names = [layer.bandName(i) for i in range(1, layer.bandCount() + 1)]
    bands = []
    for wanted in ("B04", "B03", "B02"):
        # GDAL names a described band "Band 3: B04".
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
    # Grey, so that the class colours on top are the only colours on the map.
    layer.hueSaturationFilter().setGrayscaleMode(QgsHueSaturationFilter.GrayscaleLuminosity)


def main(argv=None) -> int:
    args = parse_args(argv)
    from qgis.core import QgsApplication, QgsLayerTreeModel, QgsProject, QgsRasterLayer, QgsVectorLayer
    from qgis.gui import QgsLayerTreeMapCanvasBridge, QgsLayerTreeView, QgsMapCanvas
    from qgis.PyQt.QtCore import Qt
    from qgis.PyQt.QtGui import QColor, QPainter, QPixmap
    from qgis.PyQt.QtWidgets import QDockWidget, QMainWindow

    app = QgsApplication([], True)
    app.initQgis()
    from thermocrop.plugin.dock import ThermoCropDock
    from thermocrop.training.synth import generate_region

    work = Path(tempfile.mkdtemp(prefix="thermocrop-shot-"))
    try:
        region = Path(args.region) if args.region else work / f"region_FR2_seed{SHOT_SEED}"
        if not (region / "parcels.gpkg").is_file():
            from thermocrop.core.bundle import default_bundle_path, load_bundle

            # Scenes of the processing level the model was trained on.
            level = load_bundle(args.model or default_bundle_path()).config.scene_level or "L2A"
            generate_region("FR2", region, parcels=args.parcels, seed=SHOT_SEED, level=level)
        weather = Path(args.weather) if args.weather else region / "weather.nc"
        # A copy, so that the classification edits a layer of our own and not the region's file.
        shutil.copy(region / "parcels.gpkg", work / "parcels.gpkg")
        parcels = QgsVectorLayer(str(work / "parcels.gpkg"), "parcels FR2", "ogr")
        scenes = sorted(p for p in (region / "scenes").glob("*.tif") if not p.stem.endswith("_SCL"))
        # A spring scene as the map background (also listed in the dock as a project raster).
        scene = scenes[len(scenes) // 3]
        background = QgsRasterLayer(str(scene), f"scene {scene.stem[11:19]}", "gdal")
        _true_colour(background)
        QgsProject.instance().addMapLayers([background, parcels])

        window = QMainWindow()
        window.setWindowTitle("ThermoCrop")
        canvas = QgsMapCanvas()
        canvas.setCanvasColor(QColor("white"))
        canvas.setDestinationCrs(parcels.crs())
        # Cyan, not QGIS's default yellow: the rapeseed class is yellow.
        canvas.setSelectionColor(QColor(0, 200, 255, 200))
        window.setCentralWidget(canvas)
        root = QgsProject.instance().layerTreeRoot()
        bridge = QgsLayerTreeMapCanvasBridge(root, canvas)
        # Parcels above the scene in the drawing order.
        node = root.findLayer(parcels.id())
        root.insertChildNode(0, node.clone())
        root.removeChildNode(node)
        root.findLayer(background.id()).setExpanded(False)
        legend = QgsLayerTreeView()
        legend_model = QgsLayerTreeModel(root)  # kept referenced: the view does not own it
        legend.setModel(legend_model)
        layers_dock = QDockWidget("Layers")
        layers_dock.setWidget(legend)
        window.addDockWidget(Qt.LeftDockWidgetArea, layers_dock)
        dock = ThermoCropDock()
        window.addDockWidget(Qt.RightDockWidgetArea, dock)
        window.resize(1400, 960)
        window.resizeDocks([layers_dock, dock], [230, 380], Qt.Horizontal)
        window.show()

        dock.layer_combo.setLayer(parcels)
        dock.add_scene_paths([str(region / "scenes")])
        dock.weather.setFilePath(str(weather))
        if args.model:
            dock.model.setFilePath(args.model)
        if dock.start() is None:
            print(f"The dock refused to start: {dock.message.text()}", file=sys.stderr)
            return 1
        _wait_for(lambda: dock.task is None)
        if dock.last_result is None:
            print(f"The classification failed: {dock.message.text()}", file=sys.stderr)
            return 1

        # Explain a large, confidently classified field crop rather than a meadow.
        layer = dock.output_layer
        label, conf = dock.label_field.text(), dock.conf_field.text()
        candidates = [f for f in layer.getFeatures()
                      if f[label] not in (None, "", "meadow", "unknown") and str(f[label]) != "NULL"]
        chosen = max(candidates, key=lambda f: (f[conf] or 0) * f.geometry().area())
        layer.selectByIds([chosen.id()])
        canvas.setExtent(layer.extent().buffered(layer.extent().width() * 0.02))
        canvas.refresh()
        canvas.waitWhileRendering()
        _wait_for(lambda: not canvas.isDrawing())
        QgsApplication.processEvents()
        main_shot = window.grab()

        tabs = dock.widget()
        tabs.setCurrentIndex(1)
        dock.explain_selected()
        QgsApplication.processEvents()
        explain_shot = dock.grab()

        gap = 12
        width = main_shot.width() + gap + explain_shot.width()
        height = max(main_shot.height(), explain_shot.height())
        picture = QPixmap(width, height)
        picture.fill(QColor("white"))
        painter = QPainter(picture)
        painter.drawPixmap(0, 0, main_shot)
        painter.drawPixmap(main_shot.width() + gap, 0, explain_shot)
        painter.end()
        out = Path(args.out)
        out.parent.mkdir(parents=True, exist_ok=True)
        picture.save(str(out), "PNG")
        print(f"{out}: {width} x {height} px; {dock.message.text()}")
        del bridge
        dock.shutdown()
        QgsProject.instance().removeAllMapLayers()
        return 0
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
