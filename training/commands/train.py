"""``thermocrop train``: train a crop classifier on extracted pixel-set datasets."""

from __future__ import annotations

import argparse

HELP = "train a crop classifier (bundle, metrics.json, confusion and training-curve PNGs)"

VARIANT_CHOICES = ("calendar", "no_pe", "shiftaug", "tpe_sinusoidal", "tpe_concat",
                   "tpe_fourier", "tpe_recurrent")


def add_training_flags(parser: argparse.ArgumentParser) -> None:
    """Flags shared by ``train`` and ``experiment`` (paper values as defaults)."""
    parser.add_argument("--epochs", type=int, default=100, help="epochs (default 100)")
    parser.add_argument("--steps-per-epoch", type=int, default=500,
                        help="optimiser steps per epoch (default 500)")
    parser.add_argument("--batch-size", type=int, default=128,
                        help="parcels per step (default 128)")
    parser.add_argument("--sample-pixels", type=int, default=64,
                        help="random pixels per parcel and step, S (default 64)")
    parser.add_argument("--sample-dates", type=int, default=30,
                        help="random dates per parcel and step, T (default 30)")
    parser.add_argument("--mean-pixel-share", type=float, default=0.0,
                        help="share of samples whose pixels are all the parcel mean, for models "
                             "that will meet per-parcel mean tables (default 0)")
    parser.add_argument("--season-window-share", type=float, default=0.0,
                        help="share of samples cut to a random part of the season, for partial "
                             "seasons (default 0)")
    parser.add_argument("--lr", type=float, default=1e-3, help="Adam learning rate (default 1e-3)")
    parser.add_argument("--device", default="auto", help="auto (CUDA when present), cpu or cuda")
    parser.add_argument("--amp", action="store_true", help="mixed precision on CUDA")
    parser.add_argument("--seed", type=int, default=0,
                        help="seed of the block split, weights and sampling (default 0)")


def config_from_args(args: argparse.Namespace, variant: str):
    """The ``TrainingConfig`` the flags describe."""
    from ..train import TrainingConfig

    return TrainingConfig(variant=variant, epochs=args.epochs,
                          steps_per_epoch=args.steps_per_epoch, batch_size=args.batch_size,
                          sample_pixels=args.sample_pixels, sample_dates=args.sample_dates,
                          mean_pixel_share=args.mean_pixel_share,
                          season_window_share=args.season_window_share,
                          lr=args.lr, seed=args.seed, device=args.device, amp=args.amp)


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--data", required=True, nargs="+",
                        help="labelled dataset folder(s) from 'thermocrop extract --label-field'")
    parser.add_argument("--variant", default="tpe_recurrent", choices=VARIANT_CHOICES,
                        help="positional encoding variant (default tpe_recurrent)")
    parser.add_argument("--out", required=True,
                        help="bundle to write, e.g. model.tcm; metrics and figures go beside it")
    parser.add_argument("--val-data", nargs="+",
                        help="validation dataset(s); default: 10%% of the spatial blocks")
    parser.add_argument("--resume", action="store_true",
                        help="continue from the checkpoint beside --out (<stem>.ckpt)")
    add_training_flags(parser)


def run(args: argparse.Namespace) -> int:
    from pathlib import Path

    from ...core.dataset import open_dataset
    from ..train import train_model

    datasets = [open_dataset(p) for p in args.data]
    val = [open_dataset(p) for p in args.val_data] if args.val_data else None
    result = train_model(datasets, Path(args.out), config_from_args(args, args.variant),
                         val_datasets=val, resume=args.resume,
                         provenance={"train_data": [str(p) for p in args.data]})
    ev = result.metrics["eval"]
    print(f"{args.variant}: {result.metrics['eval_split']} macro F1 {ev['macro_f1']:.3f}, "
          f"OA {ev['overall_accuracy']:.3f}, kappa {ev['kappa']:.3f} "
          f"({result.metrics['train_samples_per_s']:.0f} samples/s)")
    for role, path in result.files.items():
        print(f"{role}: {path}")
    return 0
