"""How long a cancel takes to stop a classification, and how the progress moved, on a synthetic
region (FR2 L1C, 3,000 parcels x 39 scenes by default).

The cancel is asked a fixed time after the first scene window is read (``--extract-after``),
then in another run a fixed time after the model is first called (``--predict-after``); the
time from that moment until ``classify_parcels`` returns with ``CancelledError`` is printed,
with the progress shown at the moment of the cancel. ``--code`` runs another copy of
ThermoCrop (its parent folder goes first on the import path), so that a previous version is
measured on the same machine in the same way; each run is a process of its own.

    python benchmarks/bench_cancel.py [--region big] [--parcels 3000] [--code /tmp/old]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

CHILD = """
import json, sys, time
from thermocrop.core.model.bundle import ModelBundle
from thermocrop.core.classify import classify_parcels
from thermocrop.core.errors import CancelledError
from thermocrop.core.progress import Progress
from thermocrop.core.scenes.product import ProductReader

region, phase, after = sys.argv[1], sys.argv[2], float(sys.argv[3])
began = {}
for cls, name, key in ((ProductReader, "read", "extract"), (ModelBundle, "predict", "predict")):
    def timed(self, *a, _original=getattr(cls, name), _key=key, **k):
        began.setdefault(_key, time.perf_counter())
        return _original(self, *a, **k)
    setattr(cls, name, timed)
shown = [0.0, None]

def asked():
    if phase in began and time.perf_counter() >= began[phase] + after:
        if shown[1] is None:
            shown[1] = shown[0]
        return True
    return False

start = time.perf_counter()
try:
    classify_parcels(f"{region}/parcels.gpkg", f"{region}/scenes", f"{region}/weather.nc",
                     progress=Progress(lambda f: shown.__setitem__(0, f), asked))
    print(json.dumps({"finished_s": time.perf_counter() - start}))
except CancelledError:
    print(json.dumps({"stop_s": round(time.perf_counter() - began[phase] - after, 2), "shown": shown[1],
                      "run_s": round(time.perf_counter() - start, 1)}))
"""


def run(code: Path, region: Path, phase: str, after: float) -> dict:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(code.parent), os.environ.get("PYTHONPATH", "")]))
    out = subprocess.run([sys.executable, "-c", CHILD, str(region), phase, str(after)], env=env, capture_output=True,
                         text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--parcels", type=int, default=3000)
    parser.add_argument("--region", type=Path, help="region folder, generated when missing (default: one in the "
                        "temporary folder, kept for the next run)")
    parser.add_argument("--extract-after", type=float, default=5.0,
                        help="cancel this many seconds after the first scene window is read")
    parser.add_argument("--predict-after", type=float, default=10.0,
                        help="cancel this many seconds after the model is first called")
    parser.add_argument("--phase", choices=("extract", "predict"), action="append",
                        help="measure only this phase (repeatable; default both)")
    parser.add_argument("--code", type=Path, action="append", default=[],
                        help="another ThermoCrop folder to measure beside this one (repeatable)")
    args = parser.parse_args()
    args.region = args.region or Path(tempfile.gettempdir()) / f"thermocrop-bench-cancel-{args.parcels}"
    if not (args.region / "parcels.gpkg").exists():
        from thermocrop.synth import generate_region

        generate_region("FR2", args.region, parcels=args.parcels, seed=0, level="L1C")
    here = Path(__file__).resolve().parents[1]
    for phase, after in (("extract", args.extract_after), ("predict", args.predict_after)):
        if args.phase and phase not in args.phase:
            continue
        stops = []
        for code in [*args.code, here]:
            answer = run(code, args.region, phase, after)
            stops.append(answer.get("stop_s"))
            print(f"cancel {after:4.1f} s into {phase:7s} {code}: {json.dumps(answer)}", flush=True)
        if len(stops) > 1 and None not in stops:
            print(f"  stop time, each other copy / this one: {', '.join(f'{s / stops[-1]:.0f}x' for s in stops[:-1])}")


if __name__ == "__main__":
    main()
