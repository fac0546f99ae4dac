"""Generate and extract the four synthetic regions for training: synth -> station CSV ->
extract. Used by scripts/run_experiment.sh and scripts/default_model.py.

Usage: python scripts/prepare_regions.py OUT_DIR [--parcels N] [--seed S] [--max-pixels M]
"""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

REGIONS = ("AT1", "DK1", "FR1", "FR2")


def station_csv(weather_nc: Path, out_csv: Path) -> Path:
    """Write the daily tmin/tmax of the grid cell nearest the region's centre as a station
    CSV (``date,tmin,tmax``), the weather format the extractor reads."""
    import numpy as np
    import xarray as xr

    with xr.open_dataset(weather_nc) as ds:
        tn, tx = ds["tn"].values, ds["tx"].values  # (time, lat, lon)
        valid = np.isfinite(tn).all(axis=0) & np.isfinite(tx).all(axis=0)
        cy, cx = (np.array(valid.shape) - 1) / 2.0
        yy, xx = np.nonzero(valid)
        k = int(np.argmin((yy - cy) ** 2 + (xx - cx) ** 2))
        dates = ds["time"].values.astype("datetime64[D]")
        rows = [f"{d},{a:.2f},{b:.2f}" for d, a, b in
                zip(dates, tn[:, yy[k], xx[k]], tx[:, yy[k], xx[k]])]
    out_csv.write_text("date,tmin,tmax\n" + "\n".join(rows) + "\n")
    return out_csv


def prepare(out: Path, parcels: int, seed: int, max_pixels: int) -> list[Path]:
    """Synthesise and extract every region under ``out``; finished steps are skipped."""
    tc = [sys.executable, "-m", "thermocrop.training.cli"]
    regions, datasets = out / "regions", out / "datasets"
    todo = [r for r in REGIONS if not (regions / r / "parcels.gpkg").exists()]
    if todo:
        subprocess.run(tc + ["synth", "--region", *REGIONS, "--out", str(regions),
                             "--parcels", str(parcels), "--seed", str(seed)], check=True)
    paths = []
    for r in REGIONS:
        target = datasets / r
        if not target.exists():
            csv = station_csv(regions / r / "weather.nc", regions / r / "weather.csv")
            subprocess.run(tc + ["extract", "--parcels", str(regions / r / "parcels.gpkg"),
                                 "--scenes", str(regions / r / "scenes"), "--weather", str(csv),
                                 "--label-field", "crop", "--max-pixels", str(max_pixels),
                                 "--seed", str(seed), "--out", str(target)], check=True)
        paths.append(target)
    return paths


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("--parcels", type=int, default=500)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--max-pixels", type=int, default=32)
    args = parser.parse_args()
    for p in prepare(args.out, args.parcels, args.seed, args.max_pixels):
        print(p)
    return 0


if __name__ == "__main__":
    sys.exit(main())
