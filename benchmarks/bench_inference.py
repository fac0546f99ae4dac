"""Inference throughput on the CPU against what a user would run instead: the shipped model and one
of its members on the fast path, against the paper's PSE+LTAE (``reference_model.py``) plain and
under ``torch.compile``, with the achieved GFLOP/s beside the GEMM peak measured on this machine.

Every model gets the same batches (B=256, S=64, every date valid since the reference uses every
date, 80 % valid pixels) at T=30 and T=60; the rounds are interleaved (each round times every
model once) and the medians are printed side by side with their ratios. The reference carries
the first member's weights. The FLOPs of a forward are counted by ``FlopCounterMode`` (matrix
products; element-wise work is left out), so GFLOP/s are comparable with the GEMM peak.

A shipped model trained on parcel means alone is given each set's mean pixel on its fast path
(``networks.use_pixel_means``); a row then times it given every pixel, as before that.

`--model` adds other bundles (e.g. ``resources/models/default_small.tcm``, a distilled model of smaller
layers) on the fast path, each named by its file.

    python benchmarks/bench_inference.py [--threads 2] [--rounds 5] [--dates 30 60] [--no-compile]
                                         [--model BUNDLE ...]
"""

from __future__ import annotations

import argparse
import statistics
import time
import warnings
from pathlib import Path

import torch
from reference_model import ReferenceClassifier
from torch.utils.flop_counter import FlopCounterMode

from thermocrop.core.model.bundle import default_bundle_path, load_bundle
from thermocrop.core.model.networks import fast_inference_model, use_pixel_means
from thermocrop.core.model.precision import BF16_FLAGS, cpu_flags


def make_batch(b: int, t: int, s: int, seed: int = 0, every_date: bool = True) -> tuple[torch.Tensor, ...]:
    """A random batch with 80 % valid pixels (and 90 % valid dates unless ``every_date``)."""
    g = torch.Generator().manual_seed(seed)
    pmask = torch.rand(b, t, s, generator=g) > 0.2
    pixels = torch.randn(b, t, 10, s, generator=g) * pmask.unsqueeze(2)
    dmask = torch.ones(b, t, dtype=torch.bool) if every_date else torch.rand(b, t, generator=g) > 0.1
    dmask[:, 0] = True
    dos = torch.cumsum(torch.rand(b, t, generator=g) * 4 + 1, dim=1)
    gdd = torch.cumsum(torch.rand(b, t, generator=g) * 60, dim=1)
    return pixels, pmask, dmask, dos, gdd


def gemm_peak(dtype: torch.dtype, n: int = 1024, repeats: int = 5) -> float:
    """GFLOP/s of the best of ``repeats`` ``n x n`` matrix products in ``dtype``."""
    a, b = torch.randn(n, n).to(dtype), torch.randn(n, n).to(dtype)
    torch.mm(a, b)
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        torch.mm(a, b)
        best = min(best, time.perf_counter() - start)
    return 2 * n ** 3 / best / 1e9


def flops_per_parcel(model, batch) -> float:
    """Matrix-product FLOPs of one forward of ``model`` on ``batch``, per parcel."""
    counter = FlopCounterMode(display=False)
    with counter, torch.inference_mode():
        model(*batch)
    return counter.get_total_flops() / batch[0].shape[0]


def interleaved_medians(models: dict, batch, rounds: int) -> dict[str, float]:
    """Median seconds of one call of each model on ``batch`` over ``rounds`` interleaved rounds."""
    seconds: dict[str, list[float]] = {name: [] for name in models}
    with torch.inference_mode():
        for _ in range(rounds):
            for name, model in models.items():
                start = time.perf_counter()
                model(*batch)
                seconds[name].append(time.perf_counter() - start)
    return {name: statistics.median(values) for name, values in seconds.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--threads", type=int, default=2, help="torch threads")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--dates", type=int, nargs="+", default=[30, 60])
    parser.add_argument("--batch", type=int, default=256)
    parser.add_argument("--pixels", type=int, default=64)
    parser.add_argument("--no-compile", action="store_true", help="leave out the compiled reference")
    parser.add_argument("--model", type=Path, nargs="+", default=[],
                        help="other bundles to time on the fast path beside the shipped model")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    warnings.filterwarnings("ignore")
    bundle = load_bundle(default_bundle_path())
    shipped = bundle.fast_model()
    member = shipped.members[0] if hasattr(shipped, "members") else shipped
    reference = ReferenceClassifier(bundle.model.variant, len(bundle.classes)).eval()
    first = bundle.model.members[0] if hasattr(bundle.model, "members") else bundle.model
    reference.load_state_dict(first.state_dict())
    flags = cpu_flags()
    peaks = {"fp32": gemm_peak(torch.float32)}
    if flags & BF16_FLAGS:
        peaks["bf16"] = gemm_peak(torch.bfloat16)
    members = len(getattr(shipped, "members", [shipped]))
    others = {f"{path.name}, fast path": load_bundle(path).fast_model() for path in args.model}
    fp32_shipped = fast_inference_model(bundle.model)
    every_pixel = use_pixel_means(fast_inference_model(bundle.model), False)  # the per-pixel layers on all S
    print(f"{torch.get_num_threads()} threads, B={args.batch} S={args.pixels}, {args.rounds} interleaved rounds, "
          f"median parcels/s; precision {bundle.precision_choice.precision} ({bundle.precision_choice.reason})")
    print("GEMM peak (1024^3): " + ", ".join(f"{k} {v:.0f} GFLOP/s" for k, v in peaks.items()))
    for t in args.dates:
        batch = make_batch(args.batch, t, args.pixels, seed=t)
        models = {"reference, plain no_grad": reference}
        compile_s = None
        if not args.no_compile:
            compiled = torch.compile(reference)
            start = time.perf_counter()
            with torch.inference_mode():
                compiled(*batch)
            compile_s = time.perf_counter() - start
            models["reference, torch.compile"] = compiled
        models["one member, fast path"] = member
        models[f"shipped model ({members} members), fast path"] = shipped
        if bundle.precision_choice.precision != "fp32":  # what the chosen precision gains
            models["shipped model, fast path in fp32"] = use_pixel_means(
                fp32_shipped, shipped.pse.pixel_means_first if hasattr(shipped, "pse") else False)
        if getattr(getattr(shipped, "pse", None), "pixel_means_first", False):  # what the mean pixel gains
            models["shipped model, every pixel (fp32)"] = every_pixel
        models.update(others)
        with torch.inference_mode():
            for model in models.values():
                model(*batch)  # warm-up
        medians = interleaved_medians(models, batch, args.rounds)
        flops = {"reference, plain no_grad": flops_per_parcel(reference, batch),
                 "one member, fast path": flops_per_parcel(member, batch)}
        flops["reference, torch.compile"] = flops["reference, plain no_grad"]
        flops[f"shipped model ({members} members), fast path"] = flops_per_parcel(shipped, batch)
        flops["shipped model, fast path in fp32"] = flops[f"shipped model ({members} members), fast path"]
        flops["shipped model, every pixel (fp32)"] = flops_per_parcel(every_pixel, batch)
        flops.update({name: flops_per_parcel(model, batch) for name, model in others.items()})
        best_ref = medians.get("reference, torch.compile", medians["reference, plain no_grad"])
        print(f"\nT={t}" + (f" (compiling the reference took {compile_s:.1f} s)" if compile_s else ""))
        print(f"{'':40s} {'parcels/s':>10s} {'vs plain ref':>12s} {'vs best ref':>12s} "
              f"{'MFLOP/parcel':>13s} {'GFLOP/s':>8s} {'of fp32 peak':>12s}")
        for name, seconds in medians.items():
            rate = args.batch / seconds
            gflops = flops[name] * rate / 1e9
            print(f"{name:40s} {rate:10.0f} {medians['reference, plain no_grad'] / seconds:11.2f}x "
                  f"{best_ref / seconds:11.2f}x {flops[name] / 1e6:13.1f} {gflops:8.1f} "
                  f"{gflops / peaks['fp32']:11.0%}")


if __name__ == "__main__":
    main()
