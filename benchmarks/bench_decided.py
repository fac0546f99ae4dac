"""Classifying with ``crop_decided`` against a whole-season classification, side by side.

Both run the model part of a classification (``core.classify.predict_chunk`` and
``predict_chunk_decided``, the second one pass over every prefix of the season) on the same pixel
sets: P parcels x T dates x S pixels, 80 % of pixels and 90 % of dates valid, with the shipped
model (an ensemble of five) unless ``--model`` names another. Extracting the pixels costs both
runs the same and is left out, so the ratio printed is the largest a whole run can show.
The target: at most 1.5 times for 20,000 parcels x 40 dates.

    python benchmarks/bench_decided.py [--parcels 1000] [--dates 40] [--pixels 64] [--threads N]
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import torch

from thermocrop.core.classify import predict_chunk, predict_chunk_decided
from thermocrop.core.model.bundle import default_bundle_path, load_bundle
from thermocrop.core.pixel_sets import PixelSets


def pixel_sets(parcels: int, dates: int, pixels: int, seed: int = 0) -> PixelSets:
    """Random pixel sets of one season (a date every 5 days from March, GDD rising)."""
    rng = np.random.default_rng(seed)
    pixel_mask = rng.random((parcels, dates, pixels)) < 0.8
    values = rng.integers(300, 5000, (parcels, dates, 10, pixels), dtype=np.uint16)
    values *= pixel_mask[:, :, None, :]
    date_mask = rng.random((parcels, dates)) < 0.9
    days = np.datetime64("2021-03-01") + np.arange(dates) * 5
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
    args = parser.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    bundle = load_bundle(args.model)
    ps = pixel_sets(args.parcels, args.dates, args.pixels)
    predict_chunk(bundle, ps.subset(np.arange(min(32, len(ps)))))  # warm-up: the folded model is built once
    start = time.perf_counter()
    whole = predict_chunk(bundle, ps)
    whole_s = time.perf_counter() - start
    start = time.perf_counter()
    decided, days, _ = predict_chunk_decided(bundle, ps, 0.8)
    decided_s = time.perf_counter() - start
    members = bundle.config.hyperparameters.get("members", 1)
    print(f"{args.parcels} parcels x {args.dates} dates x {args.pixels} pixels, {bundle.config.variant} "
          f"({members} member{'s' if members != 1 else ''}), {torch.get_num_threads()} threads")
    print(f"{'whole season':<28}{whole_s:>9.1f} s  {args.parcels / whole_s:>8.1f} parcels/s")
    print(f"{'with crop_decided':<28}{decided_s:>9.1f} s  {args.parcels / decided_s:>8.1f} parcels/s")
    print(f"ratio {decided_s / whole_s:.2f}x (target <= 1.5x); {int((~np.isnat(days)).sum())} parcels decided; "
          f"largest probability difference {np.nanmax(np.abs(decided - whole)):.1e}")


if __name__ == "__main__":
    main()
