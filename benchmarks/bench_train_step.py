"""CPU training step of ThermoCrop's model against the reference PSE+LTAE written plainly
(benchmarks/reference_model.py), side by side: forward, focal loss, backward and Adam on the
same batches from the same initial weights, B=128, T=30, S=64, two torch threads.

    python benchmarks/bench_train_step.py [--variants calendar tpe_recurrent] [--steps 4]
        [--rounds 3] [--threads 2] [--plain] [--block-threads 1 2]

The two are timed in alternation, round after round, and each keeps its best round, so a
busy moment of a shared machine costs both alike. ``--plain`` adds ThermoCrop's own plain
autograd path of the pixel-set encoder (the path before the blocked encoder) as a third column.
``--block-threads`` times ThermoCrop once per value of ``core.model.pse_training.BLOCK_THREADS`` (Python
threads sharing the encoder's blocks; 0 = as many as torch threads), one column each.
``--sample-keys`` adds ThermoCrop with per-draw dropout keys (``core.model.sample_noise``, as
``train`` runs it) as a column, its ratio against ThermoCrop with torch's dropout stream.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

import numpy as np
import torch

from thermocrop.core.model import pse_training
from thermocrop.core.model.networks import build_model
from thermocrop.core.model.sample_noise import sample_keys
from thermocrop.training.losses import FocalLoss

sys.path.insert(0, str(Path(__file__).resolve().parent))
from reference_model import ReferenceClassifier  # noqa: E402

DEFAULT_VARIANTS = ("calendar", "tpe_sinusoidal", "tpe_concat", "tpe_fourier", "tpe_recurrent")


def make_batch(b: int, t: int, s: int, k: int, seed: int) -> tuple[tuple[torch.Tensor, ...],
                                                                   torch.Tensor]:
    """Random inputs with 80 % valid pixels and every date valid (the reference uses every
    date of a batch, so both models do the same work); integer-valued positions."""
    g = torch.Generator().manual_seed(seed)
    pmask = torch.rand(b, t, s, generator=g) > 0.2
    pixels = torch.randn(b, t, 10, s, generator=g) * pmask.unsqueeze(2)
    dmask = torch.ones(b, t, dtype=torch.bool)
    dos = torch.cumsum(torch.randint(1, 10, (b, t), generator=g), dim=1).float()
    gdd = torch.cumsum(torch.randint(0, 150, (b, t), generator=g), dim=1).float()
    return (pixels, pmask, dmask, dos, gdd), torch.randint(0, k, (b,), generator=g)


class Trainer:
    """One model with its own Adam; ``run(n)`` takes n steps and returns seconds per step."""

    def __init__(self, model: torch.nn.Module, batches) -> None:
        self.model, self.batches, self.i = model.train(), batches, 0
        self.optimiser = torch.optim.Adam(model.parameters(), lr=1e-3)
        self.loss_fn = FocalLoss(1.0)
        self.best = float("inf")
        self.block_threads: "int | None" = None
        self.keyed = False

    def run(self, n: int) -> float:
        if self.block_threads is not None:
            pse_training.BLOCK_THREADS = self.block_threads
        start = time.perf_counter()
        for _ in range(n):
            inputs, target = self.batches[self.i % len(self.batches)]
            self.i += 1
            if self.keyed:  # the keys of this step's draws, computed in the step as train does
                draws = np.arange(self.i * len(target), (self.i + 1) * len(target))
                logits = self.model(*inputs, sample_keys=torch.from_numpy(sample_keys(0, draws)))
            else:
                logits = self.model(*inputs)
            loss = self.loss_fn(logits, target)
            self.optimiser.zero_grad(set_to_none=True)
            loss.backward()
            self.optimiser.step()
        seconds = (time.perf_counter() - start) / n
        self.best = min(self.best, seconds)
        return seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--variants", nargs="+", default=list(DEFAULT_VARIANTS))
    parser.add_argument("--batch-size", type=int, default=128)
    parser.add_argument("--dates", type=int, default=30)
    parser.add_argument("--pixels", type=int, default=64)
    parser.add_argument("--steps", type=int, default=3, help="steps per timed round")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--block-threads", type=int, nargs="+", default=None,
                        help="time ThermoCrop with each of these BLOCK_THREADS (0: torch's thread count)")
    parser.add_argument("--plain", action="store_true",
                        help="also time ThermoCrop's plain autograd pixel-set encoder")
    parser.add_argument("--sample-keys", action="store_true",
                        help="also time ThermoCrop with per-draw dropout keys (ratio against ThermoCrop)")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    k = 9
    batches = [make_batch(args.batch_size, args.dates, args.pixels, k, seed) for seed in range(3)]
    load = os.getloadavg()
    print(f"B={args.batch_size} T={args.dates} S={args.pixels}, {torch.get_num_threads()} "
          f"torch threads, {os.cpu_count()} CPUs, load average {load[0]:.1f} at the start; "
          f"best of {args.rounds} rounds of {args.steps} steps, ms per step")
    block_threads = args.block_threads or [pse_training.BLOCK_THREADS]
    header = f"{'variant':<16}{'reference':>11}"
    for b in block_threads:
        name = "ThermoCrop" if args.block_threads is None else f"blocks/{b or 'auto'}"
        header += f"{name:>12}{'ratio':>8}"
    if args.plain:
        header += f"{'plain path':>12}{'ratio':>8}"
    if args.sample_keys:
        header += f"{'keyed':>12}{'vs ours':>8}"
    print(header, flush=True)
    for variant in args.variants:
        torch.manual_seed(0)
        ours = build_model(variant, k)
        reference = ReferenceClassifier(variant, k)
        reference.load_state_dict(ours.state_dict())
        trainers = {"reference": Trainer(reference, batches)}
        for b in block_threads:
            model = build_model(variant, k)
            model.load_state_dict(ours.state_dict())
            trainers[f"ours{b}"] = Trainer(model, batches)
            trainers[f"ours{b}"].block_threads = b
        if args.plain:
            plain = build_model(variant, k)
            plain.load_state_dict(ours.state_dict())
            plain.pse.blocked_training = False
            trainers["plain"] = Trainer(plain, batches)
        if args.sample_keys:
            keyed = build_model(variant, k)
            keyed.load_state_dict(ours.state_dict())
            trainers["keyed"] = Trainer(keyed, batches)
            trainers["keyed"].keyed = True
        for trainer in trainers.values():  # warm-up: allocator, kernels, Adam state
            trainer.run(1)
            trainer.best = float("inf")
        for _ in range(args.rounds):
            for trainer in trainers.values():
                trainer.run(args.steps)
        ref = trainers["reference"].best
        line = f"{variant:<16}{ref * 1e3:>11.0f}"
        for b in block_threads:
            fast = trainers[f"ours{b}"].best
            line += f"{fast * 1e3:>12.0f}{ref / fast:>7.2f}x"
        if args.plain:
            slow = trainers["plain"].best
            line += f"{slow * 1e3:>12.0f}{ref / slow:>7.2f}x"
        if args.sample_keys:
            keyed_s, ours_s = trainers["keyed"].best, trainers[f"ours{block_threads[0]}"].best
            line += f"{keyed_s * 1e3:>12.1f}{keyed_s / ours_s:>7.3f}x"
        print(line, flush=True)
    print(f"load average {os.getloadavg()[0]:.1f} at the end")


if __name__ == "__main__":
    main()
