"""How long the dock holds QGIS's UI thread when a run starts, against reading the layer there.

Before, the dock read every feature of the parcel layer into a GeoDataFrame on the UI thread
before starting its task; now it takes a ``QgsVectorLayerFeatureSource`` snapshot there and reads
in the task. This writes a GeoPackage of N square parcels and, side by side in one process,
times both steps on the UI thread (best of three each), and the longest pause of a timer that
ticks every 10 ms on the UI thread while the dock's new task reads the layer in the background.

    QT_QPA_PLATFORM=offscreen python benchmarks/bench_dock_ui.py [--parcels 50000]
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path


def write_parcels(path: Path, n: int) -> None:
    import geopandas as gpd
    from shapely.geometry import box

    side = int(n ** 0.5) + 1
    boxes = [box(600000 + 30 * (i % side), 5400000 + 30 * (i // side), 600000 + 30 * (i % side) + 25,
                 5400000 + 30 * (i // side) + 25) for i in range(n)]
    gpd.GeoDataFrame({"parcel_id": [f"P{i:06d}" for i in range(n)], "crop": ["meadow"] * n,
                      "area": [625.0] * n}, geometry=boxes, crs="EPSG:32632").to_file(path, driver="GPKG")


def best(call, repeat=3) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        call()
        times.append(time.perf_counter() - start)
    return min(times)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--parcels", type=int, default=50000)
    args = parser.parse_args(argv)
    from qgis.core import QgsApplication, QgsVectorLayer, QgsVectorLayerFeatureSource
    from qgis.PyQt.QtCore import QTimer

    app = QgsApplication([], False)
    app.initQgis()
    from thermocrop.plugin.layers import features_to_frame
    from thermocrop.plugin.task import LayerSnapshot

    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "parcels.gpkg"
        write_parcels(path, args.parcels)
        layer = QgsVectorLayer(str(path), "parcels", "ogr")
        assert layer.featureCount() == args.parcels

        read_on_ui = best(lambda: features_to_frame(layer.getFeatures(), layer.crs()))
        snapshot_on_ui = best(lambda: LayerSnapshot(QgsVectorLayerFeatureSource(layer), layer.crs(), layer.name(),
                                                    layer.fields().names()))

        # The longest gap between ticks of a 10 ms UI timer while a task reads the layer.
        from qgis.core import QgsTask

        snapshot = LayerSnapshot(QgsVectorLayerFeatureSource(layer), layer.crs(), layer.name(),
                                 layer.fields().names())
        done = []

        def read(task):
            snapshot.read(attributes=True)
            done.append(True)

        task = QgsTask.fromFunction("read", read)
        ticks = []
        timer = QTimer()
        timer.timeout.connect(lambda: ticks.append(time.perf_counter()))
        timer.start(10)
        start = time.perf_counter()
        QgsApplication.taskManager().addTask(task)
        while not done:
            QgsApplication.processEvents()
            time.sleep(0.001)
        background = time.perf_counter() - start
        timer.stop()
        gaps = [b - a for a, b in zip(ticks, ticks[1:])] or [0.0]

    print(f"{args.parcels} parcels")
    print(f"  UI thread, reading the layer (before):       {read_on_ui * 1000:9.1f} ms")
    print(f"  UI thread, taking the snapshot (now):        {snapshot_on_ui * 1000:9.1f} ms")
    print(f"  ratio before / now:                          {read_on_ui / max(snapshot_on_ui, 1e-6):9.0f}")
    print(f"  reading in the task, with attributes:        {background * 1000:9.1f} ms")
    print(f"  longest pause of a 10 ms UI timer meanwhile: {max(gaps) * 1000:9.1f} ms")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
