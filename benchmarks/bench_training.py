"""Training throughput: the batched, vectorised sampling of training/sampling.py against a
straightforward per-sample torch Dataset + DataLoader over the same memory-mapped dataset,
data path alone and full training steps (PSE+LTAE forward/backward), side by side."""

from __future__ import annotations

import argparse
import itertools
import tempfile
import time
from pathlib import Path

import numpy as np
import torch
from torch.utils.data import DataLoader, Dataset

from thermocrop.core.crops import CROP_CLASSES
from thermocrop.core.model.bundle import InputScaling
from thermocrop.core.model.networks import build_model
from thermocrop.core.pixel_sets import PixelSets, open_dataset, save_dataset
from thermocrop.training.losses import FocalLoss
from thermocrop.training.sampling import BatchSampler


def make_dataset(path: Path, n: int, t: int, s: int) -> None:
    rng = np.random.default_rng(0)
    pixel_mask = rng.random((n, t, s)) > 0.2
    pixels = rng.integers(500, 6000, (n, t, 10, s), dtype=np.uint16) * pixel_mask[:, :, None, :]
    dates = np.datetime64("2017-01-05") + np.arange(t) * 8
    save_dataset(PixelSets(
        pixels=pixels.astype(np.uint16), pixel_mask=pixel_mask, date_mask=rng.random((n, t)) > 0.3,
        gdd=np.cumsum(rng.uniform(0, 120, (n, t)), axis=1).astype(np.float32), dates=dates,
        day_of_season=(dates - np.datetime64("2017-01-01")).astype(np.float32),
        parcel_ids=np.array([f"p{i}" for i in range(n)]), status=np.array(["ok"] * n),
        labels=rng.integers(0, 9, n).astype(np.int16), blocks=np.zeros(n, np.int32),
        classes=CROP_CLASSES), path)


class PerSampleDataset(Dataset):
    """The plain way: one parcel per __getitem__, numpy random choice per sample."""

    def __init__(self, ps: PixelSets, scaling: InputScaling, n_pixels: int, n_dates: int):
        self.ps, self.scaling, self.s, self.t = ps, scaling, n_pixels, n_dates
        self.rng = np.random.default_rng(0)

    def __len__(self) -> int:
        return len(self.ps)

    def __getitem__(self, i: int):
        ps = self.ps
        valid = np.flatnonzero(ps.date_mask[i])
        dates = np.sort(self.rng.choice(valid, min(self.t, len(valid)), replace=False))
        pad = self.t - len(dates)
        dmask = np.r_[np.ones(len(dates), bool), np.zeros(pad, bool)]
        dates = np.r_[dates, np.zeros(pad, int)]
        slots = np.flatnonzero(ps.pixel_mask[i].any(axis=0))
        pick = self.rng.choice(slots, self.s, replace=len(slots) < self.s)
        pix = ps.pixels[i][dates][:, :, pick]
        pmask = ps.pixel_mask[i][dates][:, pick] & dmask[:, None]
        x = self.scaling.apply(pix, pmask)
        return (torch.from_numpy(x), torch.from_numpy(pmask), torch.from_numpy(dmask),
                torch.from_numpy(ps.day_of_season[dates].astype(np.float32)),
                torch.from_numpy(ps.gdd[i][dates].astype(np.float32)), int(ps.labels[i]))


def run_steps(batches, model, steps: int, train: bool) -> float:
    opt = torch.optim.Adam(model.parameters(), lr=1e-3) if train else None
    loss_fn = FocalLoss(1.0)
    n, t0 = 0, time.perf_counter()
    for inputs, target in itertools.islice(batches, steps):
        if train:
            loss = loss_fn(model(*inputs), target)
            opt.zero_grad()
            loss.backward()
            opt.step()
        n += len(target)
    return n / (time.perf_counter() - t0)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--parcels", type=int, default=3000)
    parser.add_argument("--dates", type=int, default=45)
    parser.add_argument("--slots", type=int, default=64)
    parser.add_argument("--sample-pixels", type=int, default=32)
    parser.add_argument("--sample-dates", type=int, default=24)
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--steps", type=int, default=20)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        make_dataset(Path(tmp) / "ds", args.parcels, args.dates, args.slots)
        ps = open_dataset(Path(tmp) / "ds")
        scaling = InputScaling.from_pixel_sets(ps)
        sampler = BatchSampler([ps], [np.arange(len(ps))], scaling, args.sample_pixels,
                               args.sample_dates)
        rng = np.random.default_rng(0)

        def ours():
            while True:
                b = sampler.sample(args.batch_size, rng)
                yield ([torch.from_numpy(a) for a in (b.pixels, b.pixel_mask, b.date_mask,
                                                       b.day_of_season, b.gdd)],
                       torch.from_numpy(b.labels))

        loader = DataLoader(PerSampleDataset(ps, scaling, args.sample_pixels, args.sample_dates),
                            batch_size=args.batch_size, shuffle=True, num_workers=0)

        def plain():
            while True:
                for *inputs, target in loader:
                    yield inputs, target

        torch.manual_seed(0)
        model = build_model("tpe_recurrent", len(CROP_CLASSES))
        print(f"{args.parcels} memory-mapped parcels x {args.dates} dates x {args.slots} slots; "
              f"S={args.sample_pixels} T={args.sample_dates} batch {args.batch_size}, "
              f"{torch.get_num_threads()} torch threads")
        print(f"{'':<28}{'batched (ours)':>16}{'Dataset+DataLoader':>20}{'ratio':>8}")
        # Warm both paths and the model's kernels up, then alternate them and keep each one's
        # best, so neither pays for running first or for a busy moment of the machine.
        ours_batches, plain_batches = ours(), plain()
        run_steps(ours_batches, model, 3, True)
        run_steps(plain_batches, model, 3, True)
        for name, train, steps in (("data path only, samples/s", False, args.steps * 3),
                                   ("training steps, samples/s", True, args.steps)):
            a = b = 0.0
            for _ in range(2):
                a = max(a, run_steps(ours_batches, model, steps, train))
                b = max(b, run_steps(plain_batches, model, steps, train))
            print(f"{name:<28}{a:>16.0f}{b:>20.0f}{a / b:>7.1f}x")


if __name__ == "__main__":
    main()
