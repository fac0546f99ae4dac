"""Inference throughput on the CPU: the plain eval model against the fast path.

Both run the same weights on the same batches (B=256, T=40, S=64, with masked pixels and
dates); the plain model runs under ``torch.no_grad`` with its BatchNorm layers, the fast path
is ``fast_inference_model`` under ``torch.inference_mode``. Prints parcels/s side by side.

    python benchmarks/bench_inference.py [--variant tpe_recurrent] [--batches 4] [--threads N]
"""

from __future__ import annotations

import argparse
import time

import torch

from thermocrop.core.model.networks import VARIANTS, build_model, fast_inference_model


def make_batch(b: int, t: int, s: int, seed: int = 0) -> tuple[torch.Tensor, ...]:
    """A random batch with 80 % valid pixels and 90 % valid dates."""
    g = torch.Generator().manual_seed(seed)
    pmask = torch.rand(b, t, s, generator=g) > 0.2
    pixels = torch.randn(b, t, 10, s, generator=g) * pmask.unsqueeze(2)
    dmask = torch.rand(b, t, generator=g) > 0.1
    dmask[:, 0] = True
    dos = torch.cumsum(torch.rand(b, t, generator=g) * 9 + 1, dim=1)
    gdd = torch.cumsum(torch.rand(b, t, generator=g) * 150, dim=1)
    return pixels, pmask, dmask, dos, gdd


def time_runs(fn, batches, repeats: int) -> float:
    """Best-of-``repeats`` seconds for one pass over ``batches``."""
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        for batch in batches:
            fn(*batch)
        best = min(best, time.perf_counter() - start)
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--variant", default="tpe_recurrent", choices=VARIANTS)
    parser.add_argument("--batches", type=int, default=3)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--threads", type=int, default=0, help="torch threads (0: default)")
    args = parser.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    model = build_model(args.variant, 9)
    with torch.no_grad():
        for i in range(3):  # realistic BatchNorm statistics
            model(*make_batch(64, 40, 64, seed=100 + i))
    model.eval()
    fast = fast_inference_model(model)
    batches = [make_batch(256, 40, 64, seed=i) for i in range(args.batches)]
    n = 256 * len(batches)

    def plain(*batch):
        with torch.no_grad():
            return model(*batch)

    def quick(*batch):
        with torch.inference_mode():
            return fast(*batch)

    worst = max((plain(*b) - quick(*b)).abs().max().item() for b in batches)
    quick(*batches[0]), plain(*batches[0])  # warm up
    t_plain = time_runs(plain, batches, args.repeats)
    t_fast = time_runs(quick, batches, args.repeats)
    print(f"variant {args.variant}, B=256 T=40 S=64, {len(batches)} batches, "
          f"{torch.get_num_threads()} threads, max |difference| {worst:.2e}")
    print(f"plain eval model : {n / t_plain:9.0f} parcels/s")
    print(f"fast path        : {n / t_fast:9.0f} parcels/s")
    print(f"ratio            : {t_plain / t_fast:9.2f}x")


if __name__ == "__main__":
    main()
