"""Classifying with ``crop_decided`` against a whole-season classification, side by side.

Both run the model part of a classification (``core.classify.predict_chunk`` and
``predict_chunk_decided``, the second one pass over the season's prefixes, decoding those a
decision needs: ``core.model.decided.decide``) on the same pixel
sets: P parcels x T dates x S pixels, 80 % of pixels and 90 % of dates valid, with the shipped
model (the one a run without ``--model`` uses) unless ``--model`` names another. Extracting the
pixels costs both runs the same and is left out, so the ratio printed is the largest a whole run
can show. The target: at most 1.5 times for 20,000 parcels x 40 dates.

The two run in alternating order for ``--rounds`` rounds (whole season first in odd rounds,
``crop_decided`` first in even ones), so that a load that changes while they run weighs on both;
each round's wall and CPU seconds are printed, then the medians and their ratios. On a shared
machine the CPU-time ratio is the steadier one.

    python benchmarks/bench_decided.py [--parcels 1000] [--dates 40] [--pixels 64] [--threads N]
                                       [--rounds 3] [--first-date 2021-03-01]
"""

from __future__ import annotations

import argparse
import os
import time

import numpy as np
import torch

from thermocrop.core.classify import predict_chunk, predict_chunk_decided
from thermocrop.core.model.bundle import default_bundle_path, load_bundle
from thermocrop.core.model.season_floor import gdd_floor
from thermocrop.core.pixel_sets import PixelSets


def pixel_sets(parcels: int, dates: int, pixels: int, seed: int = 0, first: str = "2021-03-01") -> PixelSets:
    """Random pixel sets of one season (a date every 5 days from ``first``, GDD rising 10 a day
    from 1 January)."""
    rng = np.random.default_rng(seed)
    pixel_mask = rng.random((parcels, dates, pixels)) < 0.8
    values = rng.integers(300, 5000, (parcels, dates, 10, pixels), dtype=np.uint16)
    values *= pixel_mask[:, :, None, :]
    date_mask = rng.random((parcels, dates)) < 0.9
    days = np.datetime64(first) + np.arange(dates) * 5
    day_of_season = (days - np.datetime64("2021-01-01")).astype(np.float32)
    gdd = (np.tile(day_of_season * 10.0, (parcels, 1)) + rng.random((parcels, dates)) * 50).astype(np.float32)
    return PixelSets(pixels=values, pixel_mask=pixel_mask, date_mask=date_mask, gdd=gdd, dates=days,
                     day_of_season=day_of_season, parcel_ids=np.array([f"p{i}" for i in range(parcels)]),
                     status=np.array(["ok"] * parcels))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--parcels", type=int, default=1000)
    parser.add_argument("--dates", type=int, default=40)
    parser.add_argument("--pixels", type=int, default=64)
    parser.add_argument("--model", default=str(default_bundle_path()))
    parser.add_argument("--threads", type=int, default=0, help="torch threads (0: default)")
    parser.add_argument("--rounds", type=int, default=3, help="alternated rounds of each (the medians are compared)")
    parser.add_argument("--first-date", default="2021-03-01",
                        help="the first acquisition (GDD 10 a day from 1 January: from 2021-01-01 the first 11 "
                        "of 40 dates lie below the shipped model's GDD floor of 550, which a whole-season run "
                        "leaves out and crop_decided reads)")
    args = parser.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    bundle = load_bundle(args.model)
    ps = pixel_sets(args.parcels, args.dates, args.pixels, first=args.first_date)
    predict_chunk(bundle, ps.subset(np.arange(min(32, len(ps)))))  # warm-up: the folded model is built once
    members = bundle.config.hyperparameters.get("members", 1)
    floor = gdd_floor(bundle.config.gdd)
    below = int((np.asarray(ps.gdd) < floor).any(axis=0).sum())
    print(f"{args.parcels} parcels x {args.dates} dates x {args.pixels} pixels from {args.first_date} "
          f"({below} dates below the model's GDD floor of {floor:g}), {bundle.config.variant} "
          f"({members} member{'s' if members != 1 else ''}), {torch.get_num_threads()} threads, "
          f"{args.rounds} alternated rounds", flush=True)
    runs = {"whole": lambda: predict_chunk(bundle, ps), "decided": lambda: predict_chunk_decided(bundle, ps, 0.8)}
    times: dict[str, list[tuple[float, float]]] = {"whole": [], "decided": []}
    outputs: dict[str, object] = {}
    for r in range(args.rounds):
        for name in (("whole", "decided") if r % 2 == 0 else ("decided", "whole")):
            wall, cpu = time.perf_counter(), time.process_time()
            outputs[name] = runs[name]()
            times[name].append((time.perf_counter() - wall, time.process_time() - cpu))
        print(f"round {r + 1}: whole season {times['whole'][-1][0]:.1f} s ({times['whole'][-1][1]:.1f} CPU s), "
              f"with crop_decided {times['decided'][-1][0]:.1f} s ({times['decided'][-1][1]:.1f} CPU s), "
              f"load {os.getloadavg()[0]:.1f}", flush=True)
    whole_s, whole_cpu = (float(np.median(v)) for v in zip(*times["whole"]))
    decided_s, decided_cpu = (float(np.median(v)) for v in zip(*times["decided"]))
    decided, days, _ = outputs["decided"]
    print(f"{'median':<20}{'wall s':>9}{'CPU s':>9}{'parcels/s':>11}")
    print(f"{'whole season':<20}{whole_s:>9.1f}{whole_cpu:>9.1f}{args.parcels / whole_s:>11.1f}")
    print(f"{'with crop_decided':<20}{decided_s:>9.1f}{decided_cpu:>9.1f}{args.parcels / decided_s:>11.1f}")
    print(f"ratio wall {decided_s / whole_s:.2f}x, CPU {decided_cpu / whole_cpu:.2f}x (target <= 1.5x); "
          f"{int((~np.isnat(days)).sum())} parcels decided; largest probability difference "
          f"{np.nanmax(np.abs(decided - outputs['whole'])):.1e}")

if __name__ == "__main__":
    main()
