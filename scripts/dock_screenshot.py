"""Screenshots of the ThermoCrop dock and Processing dialogs in the real QGIS desktop, for the docs.

Generates a synthetic FR2 region (seed 4242; the shipped model was trained on other seeds), a
throw-away QGIS profile with the plugin installed from the zip of ``make package`` and its
packages installed by *Install missing packages* (no virtual environment, no PYTHONPATH: the
plugin as analysts have it), a DEM and a web basemap layer beside the scenes
(so the dock shows which rasters it leaves out), and starts QGIS under Xvfb at 1366x768 with
``scripts/qgis_dock_shots.py``, which drives the dock and saves into ``docs/img/``:
``dock-before``, ``dock-during``, ``dock-after``, ``dock-confidence``, ``dock-explain``,
``dock-failed``, ``dock-accuracy`` (when the plugin has the accuracy tab), ``dock-train`` (the
Train tab with its measured estimate), ``dialog-classify`` and ``dialog-train`` (``.png``).

    .venv/bin/python scripts/dock_screenshot.py            # or: make screenshots
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

SHOT_SEED = 4242
"""Seed of the pictured region; the default model was trained on other seeds."""

ROOT = Path(__file__).resolve().parents[1]


def parse_args(argv=None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=str(ROOT / "docs" / "img"), help="folder for the PNG files")
    parser.add_argument("--size", default="1366x768", help="screen size WIDTHxHEIGHT (default 1366x768)")
    parser.add_argument("--region", help="synthetic region folder (generated FR2 seed 4242 when absent)")
    parser.add_argument("--parcels", type=int, default=150, help="parcels of a generated region")
    parser.add_argument("--weather", help="temperature file (default: the region's weather.nc)")
    parser.add_argument("--model", help="model bundle (default: the shipped model)")
    parser.add_argument("--timeout", type=int, default=900, help="seconds QGIS may take in all")
    return parser.parse_args(argv)


def _dem(path: Path, like: Path) -> None:
    """A one-band elevation raster on the scenes' grid (what a DEM layer in a project looks like)."""
    import numpy as np
    import rasterio

    with rasterio.open(like) as src:
        profile = dict(driver="GTiff", width=src.width, height=src.height, crs=src.crs, transform=src.transform)
    y, x = np.mgrid[0:profile["height"], 0:profile["width"]]
    with rasterio.open(path, "w", count=1, dtype="float32", **profile) as dst:
        dst.write((180 + 0.2 * x + 0.1 * y).astype("float32")[None])


def _bad_weather(path: Path) -> None:
    """A station CSV of the wrong year: the run fails the way a user's mistake would."""
    import numpy as np

    days = np.arange(np.datetime64("2015-01-01"), np.datetime64("2015-12-31"))
    rows = "".join(f"{d},{2.0 + 8 * np.sin(i / 58):.1f},{11.0 + 10 * np.sin(i / 58):.1f}\n"
                   for i, d in enumerate(days))
    path.write_text("date,tmin,tmax\n" + rows)


def _installed_qgis():
    """``tests/plugin/installed_qgis.py``: the zip install into a fresh profile, the in-QGIS
    installer and the environment without the checkout's virtual environment."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("installed_qgis", ROOT / "tests" / "plugin" / "installed_qgis.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def main(argv=None) -> int:
    args = parse_args(argv)
    width, height = (int(v) for v in args.size.lower().split("x"))
    out = Path(args.out).resolve()
    out.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix="thermocrop-shots-"))
    try:
        region = Path(args.region) if args.region else work / f"region_FR2_seed{SHOT_SEED}"
        if not (region / "parcels.gpkg").is_file():
            from thermocrop.core.model.bundle import default_bundle_path, load_bundle
            from thermocrop.synth import generate_region

            # Scenes of the processing level the model was trained on.
            level = load_bundle(args.model or default_bundle_path()).config.scene_level or "L2A"
            generate_region("FR2", region, parcels=args.parcels, seed=SHOT_SEED, level=level)
        # A copy, so that nothing is written beside the region's own file.
        data = work / "data"
        data.mkdir()
        shutil.copy(region / "parcels.gpkg", data / "parcels.gpkg")
        scene = sorted(p for p in (region / "scenes").glob("*.tif") if not p.stem.endswith("_SCL"))[0]
        _dem(data / "dem.tif", scene)
        _bad_weather(data / "station_2015.csv")

        # The plugin as analysts have it: the zip installed into a fresh profile and its packages
        # installed by its own installer (from the wheel folder the installed-plugin test fills).
        installed = _installed_qgis()
        profiles = work / "profiles"
        installed.install_zip(installed._packager().build_package(work / "dist"), profiles)
        wheels = installed.wheel_folder()
        installed.fill_wheels(wheels, installed.qgis_python())
        install = installed.run_qgis(profiles, installed.INSTALL_SCRIPT, installed.analyst_environment(wheels),
                                     work / "install", timeout=1800)
        print(f"installed from the zip; Install missing packages: {install['message']}")
        for old in out.glob("shots.log"):
            old.unlink()
        config = {"out": str(out), "region": str(region), "parcels": str(data / "parcels.gpkg"),
                  "weather": str(Path(args.weather).resolve() if args.weather else region / "weather.nc"),
                  "model": args.model and str(Path(args.model).resolve()), "dem": str(data / "dem.tif"),
                  "bad_weather": str(data / "station_2015.csv"), "dock_width": 400 if width >= 1300 else 360,
                  "work": str(data)}
        (work / "shots.json").write_text(json.dumps(config))
        env = installed.analyst_environment(THERMOCROP_SHOTS=str(work / "shots.json"), LANG="en_GB.UTF-8",
                                            LC_ALL="C.UTF-8")
        command = ["xvfb-run", "-a", "-s", f"-screen 0 {width}x{height}x24", "qgis", "--nologo",
                   "--noversioncheck", "--profiles-path", str(profiles), "--code",
                   str(ROOT / "scripts" / "qgis_dock_shots.py")]
        proc = subprocess.run(command, env=env, timeout=args.timeout, capture_output=True, text=True)
        log = (out / "shots.log").read_text() if (out / "shots.log").is_file() else ""
        (out / "shots.log").unlink(missing_ok=True)
        print(log, end="")
        if proc.returncode != 0 or "done" not in log.splitlines():
            print(proc.stderr[-3000:], file=sys.stderr)
            return 1
        return 0
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
