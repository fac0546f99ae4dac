"""Choose and set a model's GDD floor: the acquisitions early in the season that it is better
without (``core.model.season_floor``).

``study`` scores each model on the real Bavarian parcels, west and east of their median longitude,
as of 30 May, 30 June, 15 July and the whole season, with every floor that falls between two of
their acquisitions in the first 1,000 GDD (the midpoint of their median GDD) and with none. Each
parcel's acquisitions below the floor are left out as a run of the model with that floor leaves
them out. The floor is chosen on the west half; the east half is where it is checked.

``set`` writes a copy of a model with a floor (the weights, calibration and everything else
unchanged). Its calibration was fitted without the floor: refit it (``scripts/calibrate_shipped.py``
for a shipped model, ``thermocrop calibrate`` for yours) and record its season curve again
(``scripts/record_season_curve.py``).

Usage: python scripts/gdd_floor.py study [MODEL ...] [--work runs/bavaria]
       python scripts/gdd_floor.py set MODEL --floor GDD --out NEW.tcm
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np

from thermocrop.core.errors import ThermoCropError
from thermocrop.core.model.bundle import load_bundle, save_bundle, with_gdd_floor
from thermocrop.training.realdata import bavaria_dataset, bavaria_halves
from thermocrop.training.season_accuracy import accuracy_through_season

ROOT = Path(__file__).resolve().parent.parent
MODELS = ("default_fast.tcm", "inseason.tcm", "default.tcm")
AS_OF = ("2018-05-30", "2018-06-30", "2018-07-15", "2018-08-30")
STUDY_GDD = 1000.0


def candidate_floors(gdd: np.ndarray) -> list[float]:
    """0 and the midpoints between consecutive acquisitions' median GDD below ``STUDY_GDD``."""
    median = np.sort(np.nanmedian(np.where(np.isfinite(gdd), gdd, np.nan), axis=0))
    early = median[median < STUDY_GDD]
    return [0.0] + [float(round((a + b) / 2)) for a, b in zip(early[:-1], early[1:]) if b > a]


def study(models: list[str], work: Path) -> None:
    halves = bavaria_halves(bavaria_dataset(work))
    floors = candidate_floors(np.concatenate([h.gdd for h in halves.values()]))
    print("| model | floor (GDD) | west OA: " + " / ".join(AS_OF) + " | east OA: same dates |")
    print("|---|---:|---|---|")
    for path in models:
        bundle = load_bundle(path)
        for floor in floors:
            row = []
            for half in ("west", "east"):
                season = accuracy_through_season(with_gdd_floor(bundle, floor), halves[half], unseen="drop")
                at = [int(np.flatnonzero(season.dates <= np.datetime64(d))[-1]) for d in AS_OF]
                row.append(" / ".join(f"{season.overall_accuracy[i]:.3f}" for i in at))
            print(f"| {Path(path).name} | {floor:,.0f} | {row[0]} | {row[1]} |", flush=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("task", choices=("study", "set"))
    parser.add_argument("models", nargs="*")
    parser.add_argument("--work", type=Path, default=ROOT / "runs" / "bavaria")
    parser.add_argument("--floor", type=float, help="set: the floor, in GDD since the season start (0: none)")
    parser.add_argument("--out", type=Path, help="set: the new bundle (never the model given)")
    args = parser.parse_args()
    import torch

    torch.set_num_threads(2)
    if args.task == "study":
        study(args.models or [str(ROOT / "resources" / "models" / m) for m in MODELS], args.work)
        return 0
    if len(args.models) != 1 or args.floor is None or args.out is None:
        parser.error("set needs one MODEL, --floor and --out")
    if args.out.resolve() == Path(args.models[0]).resolve():
        parser.error("--out must not be the model given")
    try:
        bundle = with_gdd_floor(load_bundle(args.models[0]), args.floor)
        save_bundle(args.out, bundle.model, bundle.config, overwrite=False)
    except ThermoCropError as exc:  # a model that cannot be read, a floor out of range, an existing --out
        parser.exit(2, f"{parser.prog}: error: {exc}\n")
    print(f"{args.out}: {Path(args.models[0]).name} with a GDD floor of {args.floor:g}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
