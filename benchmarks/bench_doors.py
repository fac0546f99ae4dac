"""The same classification through each door: the command line, ``qgis_process`` and the dock.

One synthetic region (FR2 L1C, ``--parcels`` parcels x 39 scenes) is classified with every
door's defaults (the shipped model for the scenes' level, prediction sets on): ``thermocrop
classify`` as a process of its own, ``qgis_process.bin run thermocrop:classifyparcels`` as a
process of its own, and the dock in a QGIS application of its own (offscreen), timed from its
Run to the written layer, once as the session's first run (torch and the model still to load)
and once more as its second. The doors alternate round by round and each keeps its best; the
ratio is each door's time over the command line's (1.00: as fast). All doors must write the same
labels (checked).

    python benchmarks/bench_doors.py [--parcels 1000] [--rounds 2]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

DOCK_CHILD = r"""
import json, sys, time
from pathlib import Path
from qgis.core import QgsApplication, QgsProject, QgsVectorLayer

region, work, profile = (Path(a) for a in sys.argv[1:4])
app = QgsApplication([], False, str(profile))
app.initQgis()
from thermocrop.plugin.dock import ThermoCropDock

times = []
for run in range(2):
    folder = work / f"dock{run}"
    folder.mkdir()
    parcels = folder / "parcels.gpkg"
    parcels.write_bytes((region / "parcels.gpkg").read_bytes())
    layer = QgsVectorLayer(str(parcels), "parcels", "ogr")
    QgsProject.instance().addMapLayer(layer)
    dock = ThermoCropDock()
    dock.add_scene_paths([str(region / "scenes")])
    dock.weather.setFilePath(str(region / "weather.nc"))
    dock.confirm_overwrite = lambda names: True
    dock.layer_combo.setLayer(layer)
    start = time.perf_counter()
    if dock.start() is None:
        raise SystemExit("the dock refused to start: " + dock.message.text())
    while dock.task is not None:
        QgsApplication.processEvents()
        time.sleep(0.01)
    times.append(time.perf_counter() - start)
    if "Classified" not in dock.message.text():
        raise SystemExit("the dock's run failed: " + dock.message.text())
    dock.shutdown()
    QgsProject.instance().removeAllMapLayers()
print(json.dumps({"first": times[0], "second": times[1], "out": str(work / "dock1" / "parcels_classified.gpkg")}))
"""


def run_cli(region: Path, out: Path) -> float:
    start = time.perf_counter()
    subprocess.run([sys.executable, "-m", "thermocrop.cli.main", "classify", "--parcels", str(region / "parcels.gpkg"),
                    "--scenes", str(region / "scenes"), "--weather", str(region / "weather.nc"),
                    "--out", str(out), "--overwrite"], check=True, capture_output=True)
    return time.perf_counter() - start


def run_qgis_process(region: Path, out: Path, profile: Path) -> float:
    from thermocrop.plugin.headless import enable_plugin, qgis_process_env, qgis_process_program

    enable_plugin(profile)
    command = [qgis_process_program(), "run", "thermocrop:classifyparcels", "--",
               f"INPUT={region / 'parcels.gpkg'}", f"SCENE_FOLDER={region / 'scenes'}",
               f"WEATHER={region / 'weather.nc'}", f"OUTPUT={out}"]
    start = time.perf_counter()
    done = subprocess.run(command, env=qgis_process_env(profile), capture_output=True, text=True)
    seconds = time.perf_counter() - start
    if done.returncode != 0:
        raise RuntimeError(f"qgis_process failed:\n{done.stdout[-2000:]}\n{done.stderr[-2000:]}")
    return seconds


def run_dock(region: Path, work: Path, profile: Path) -> dict:
    from thermocrop.plugin.headless import qgis_process_env

    env = qgis_process_env(profile)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (env.get("PYTHONPATH", ""), *sys.path) if p)
    done = subprocess.run([sys.executable, "-c", DOCK_CHILD, str(region), str(work), str(profile)], env=env,
                          capture_output=True, text=True)
    if done.returncode != 0:
        raise RuntimeError(f"the dock run failed:\n{done.stdout[-2000:]}\n{done.stderr[-3000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def labels(path: Path) -> dict:
    import geopandas as gpd

    table = gpd.read_file(path)
    return dict(zip(table["parcel_id"].astype(str), table["crop_pred"].fillna("")))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--parcels", type=int, default=1000)
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args()
    from thermocrop.synth import generate_region

    doors = ("command line", "qgis_process", "dock, first run", "dock, second run")
    best = {door: float("inf") for door in doors}
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        region = tmp / "region"
        generate_region("FR2", region, parcels=args.parcels, seed=1, level="L1C")
        outputs = {}
        load = []
        for round_no in range(args.rounds):
            load.append(os.getloadavg()[0])
            work = tmp / f"round{round_no}"
            work.mkdir()
            outputs["command line"] = work / "cli.gpkg"
            best["command line"] = min(best["command line"], run_cli(region, outputs["command line"]))
            outputs["qgis_process"] = work / "qgis_process.gpkg"
            best["qgis_process"] = min(best["qgis_process"], run_qgis_process(region, outputs["qgis_process"],
                                                                              tmp / "profile-process"))
            dock = run_dock(region, work, tmp / f"profile-dock{round_no}")
            best["dock, first run"] = min(best["dock, first run"], dock["first"])
            best["dock, second run"] = min(best["dock, second run"], dock["second"])
            outputs["dock"] = Path(dock["out"])
        first = labels(outputs["command line"])
        for door, path in outputs.items():
            assert labels(path) == first, f"{door} wrote other labels than the command line"
        cpus = len(os.sched_getaffinity(0))
        print(f"classify, {args.parcels} parcels x 39 scenes, {cpus} CPUs, load average at the rounds' starts "
              f"{', '.join(f'{v:.1f}' for v in load)}; best of {args.rounds} (s); same labels in every door")
        print("| door | seconds | / command line |")
        print("|---|---:|---:|")
        for door in doors:
            print(f"| {door} | {best[door]:.1f} | {best[door] / best['command line']:.2f}x |")
        print(f"(mean of the doors over the command line: {np.mean([best[d] for d in doors[1:]]) / best['command line']:.2f}x)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
