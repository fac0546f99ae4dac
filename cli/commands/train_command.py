"""``thermocrop train``: train a crop classifier on extracted pixel-set datasets."""

from __future__ import annotations

import argparse
from typing import Optional

from ...core.errors import InputError
from ...core.model.architecture import ARCHITECTURE_SETTINGS, architecture_problem
from ..options import architecture_setting, bounded

HELP = "train a crop classifier (bundle, metrics.json, confusion and training-curve PNGs)"

VARIANT_CHOICES = ("calendar", "no_pe", "shiftaug", "tpe_sinusoidal", "tpe_concat",
                   "tpe_fourier", "tpe_recurrent")


def add_training_flags(parser: argparse.ArgumentParser) -> None:
    """Flags shared by ``train`` and ``experiment``: paper values as defaults, or with ``train
    --init`` the few-label recipe's (``training.finetune.FEW_LABEL_RECIPE``). An option left out
    is None here, so that the recipe can tell the options given from those not."""
    parser.add_argument("--epochs", type=bounded("epochs"), help="epochs (default 100; with --init 30)")
    parser.add_argument("--steps-per-epoch", type=bounded("steps_per_epoch"),
                        help="optimiser steps per epoch (default 500; with --init 25)")
    parser.add_argument("--batch-size", type=bounded("batch_size"), help="parcels per step (default 128; with --init 64)")
    parser.add_argument("--sample-pixels", type=bounded("sample_pixels"),
                        help="random pixels per parcel and step, S (default 64; with --init the initial model's)")
    parser.add_argument("--sample-dates", type=bounded("sample_dates"),
                        help="random dates per parcel and step, T (default 30; with --init the initial model's)")
    parser.add_argument("--mean-pixel-share", type=bounded("mean_pixel_share"),
                        help="share of samples whose pixels are all the parcel mean, for models "
                             "that will meet per-parcel mean tables (default 0; with --init the initial model's)")
    parser.add_argument("--season-window-share", type=bounded("season_window_share"),
                        help="share of samples cut to a random part of the season, for partial "
                             "seasons (default 0; with --init the initial model's)")
    parser.add_argument("--season-window-end", type=bounded("season_window_end"),
                        help="the earliest end of a cut window, as a share of the span of the season's dates "
                             "(default 0.5: windows end in the second half; with --init the initial model's)")
    parser.add_argument("--season-cuts", type=bounded("season_cuts"),
                        help="record the finished model's accuracy on the validation blocks as of every 1/N of the "
                             "season's GDD in its bundle, for classify --as-of's warning (default 20)")
    parser.add_argument("--season-level", type=bounded("season_level"),
                        help="the overall accuracy recorded as the model's level; classify --as-of warns before the "
                             "part of the season where it is reached (default: 90 %% of its whole-season OA)")
    parser.add_argument("--members", type=bounded("members"),
                        help="train this many models on one split with seeds SEED, SEED+1, ... and "
                             "ship the average of their class probabilities in one bundle (an "
                             "ensemble; the members are kept in <out stem>.members/) (default 1; with --init "
                             "the initial model's)")
    parser.add_argument("--lr", type=bounded("lr"), help="Adam learning rate (default 1e-3; with --init 3e-4)")
    parser.add_argument("--device", choices=("auto", "cpu", "cuda"), help="auto (CUDA when present, the default), cpu or cuda")
    parser.add_argument("--amp", action="store_true", default=None, help="mixed precision on CUDA")
    parser.add_argument("--seed", type=bounded("seed"),
                        help="seed of the block split, weights and sampling (default 0)")
    parser.add_argument("--classes",
                        help="comma-separated class list of the model, e.g. corn,meadow,unknown (default: every "
                             "class of the training datasets; with --init the initial model's when the datasets' "
                             "classes are among them); parcels of other classes are left out")


def parse_classes(text):
    """``"a, b,c"`` -> ``("a", "b", "c")``; None -> None (every class of the data).

    Raises:
        InputError: the text names no class (``--classes ""``), which would otherwise train every class.
    """
    if text is None:
        return None
    classes = tuple(c.strip() for c in text.split(",") if c.strip())
    if not classes:
        from ...core.errors import InputError

        raise InputError(f"--classes {text!r} names no class; give a comma-separated list such as corn,meadow,unknown, "
                         "or leave it out for every class of the data.")
    return classes


def given_training_options(args: argparse.Namespace) -> dict:
    """The ``TrainingConfig`` fields the flags set (None: not given)."""
    return {"epochs": args.epochs, "steps_per_epoch": args.steps_per_epoch, "batch_size": args.batch_size,
            "sample_pixels": args.sample_pixels, "sample_dates": args.sample_dates,
            "mean_pixel_share": args.mean_pixel_share, "season_window_share": args.season_window_share,
            "season_window_end": args.season_window_end, "season_cuts": args.season_cuts,
            "season_level": args.season_level,
            "lr": args.lr, "seed": args.seed, "members": args.members, "device": args.device, "amp": args.amp,
            "classes": parse_classes(args.classes)}


def architecture_of(args: argparse.Namespace) -> Optional[dict]:
    """The layer sizes ``--architecture`` gives (None: not given).

    Raises:
        InputError: sizes that describe no network (``d_model`` not a multiple of ``n_head``).
    """
    given = getattr(args, "architecture", None)
    if not given:
        return None
    settings = dict(given)
    problem = architecture_problem(settings)
    if problem:
        raise InputError(f"--architecture: {problem}; give sizes that fit together.")
    return settings


def config_from_args(args: argparse.Namespace, variant: Optional[str]):
    """The ``TrainingConfig`` the flags describe (``training.finetune.training_config``, or with
    ``--teacher`` ``training.distil.distillation_config``)."""
    from ...training.distil import distillation_config
    from ...training.finetune import training_config

    given = {**given_training_options(args), "variant": variant, "model_settings": architecture_of(args)}
    teacher = getattr(args, "teacher", None)
    if teacher:
        return distillation_config({**given, "init": getattr(args, "init", None),
                                    "distil_temperature": args.distil_temperature,
                                    "distil_hard_weight": args.distil_hard_weight,
                                    "distil_noise": args.distil_noise}, teacher)
    return training_config(given, init=getattr(args, "init", None))


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--data", required=True, nargs="+",
                        help="labelled dataset folder(s) from 'thermocrop extract --label-field'")
    parser.add_argument("--variant", choices=VARIANT_CHOICES,
                        help="positional encoding variant (default tpe_recurrent; with --init the initial model's)")
    parser.add_argument("--init", metavar="MODEL",
                        help="start from the weights of this model bundle (.tcm) and fine-tune it: its variant, "
                             "hyper-parameters, bands, input scaling and GDD settings are kept, its class list too "
                             "when the datasets' classes are among its classes (else a new output layer learns "
                             "the new list), and the few-label recipe sets the options not given (docs/training.md)")
    parser.add_argument("--teacher", metavar="MODEL",
                        help="distil this model bundle (.tcm, typically the shipped ensemble) into one model of its "
                             "variant: the new model learns the teacher's softened class probabilities on the training "
                             "samples, with its classes, bands, input scaling and GDD settings; the options not given "
                             "come from the teacher's own training (docs/training.md)")
    parser.add_argument("--distil-temperature", type=bounded("distil_temperature"),
                        help="with --teacher: temperature that softens both models' probabilities (default 2)")
    parser.add_argument("--distil-hard-weight", type=bounded("distil_hard_weight"),
                        help="with --teacher: weight of the focal loss on the labels beside the teacher's "
                             "probabilities (default 0)")
    parser.add_argument("--distil-noise", type=bounded("distil_noise"),
                        help="with --teacher: standard deviation of the noise added to the scaled pixels that both "
                             "models see, so that the new model also follows the teacher off the training samples "
                             "(default 0)")
    parser.add_argument("--architecture", nargs="+", type=architecture_setting, metavar="NAME=WIDTH",
                        help="layer sizes other than the paper's, e.g. mlp1=32 mlp2=64 d_model=64 n_head=8 "
                             "(a smaller, faster model); NAME is one of "
                             + "; ".join(f"{k}: {v}" for k, v in ARCHITECTURE_SETTINGS.items())
                             + ". With --teacher they replace the teacher's sizes; with --init they must be the "
                               "initial model's. The bundle records them (docs/training.md)")
    parser.add_argument("--out", required=True,
                        help="bundle to write, e.g. model.tcm; metrics and figures go beside it")
    parser.add_argument("--val-data", nargs="+",
                        help="validation dataset(s); default: 10%% of the spatial blocks")
    parser.add_argument("--resume", action="store_true",
                        help="continue from the checkpoint beside --out (<stem>.ckpt)")
    parser.add_argument("--overwrite", action="store_true",
                        help="replace an existing bundle (and its metrics and figures)")
    parser.add_argument("--devices", type=bounded("devices"), default=1,
                        help="train data-parallel in N processes on this machine (one per GPU "
                             "with CUDA, else an equal share of the CPU cores each); the batch "
                             "size stays the global batch (default 1; under torchrun, torchrun "
                             "sets the number)")
    add_training_flags(parser)


def check_training_outputs(out, *, overwrite: bool, inputs=()) -> None:
    """Preflight of a training run's files: the bundle (``.tcm``) and, beside it, its metrics,
    figures and checkpoint, which belong to it and are replaced with it."""
    from ...core.errors import OutputError
    from ...core.io.output import check_output
    from ...core.model.shipped import refuse_shipped_model_output
    from ...training.train import output_paths

    refuse_shipped_model_output(out)
    check_output(out, what="model bundle", suffixes=(".tcm",), overwrite=overwrite, inputs=inputs)
    for role, path in output_paths(out).items():
        if role != "bundle":
            check_output(path, what=role, overwrite=True, inputs=inputs)
    checkpoint = output_paths(out)["checkpoint"]
    if checkpoint.exists() and not overwrite:
        raise OutputError(f"{checkpoint} holds an unfinished training run; continue it with --resume, or start over "
                          "with --overwrite.")


def run(args: argparse.Namespace) -> int:
    from pathlib import Path

    from ...training.data_parallel import launch, under_torchrun

    check_training_outputs(Path(args.out), overwrite=args.overwrite or args.resume,
                           inputs=[*args.data, *(args.val_data or []), *([args.init] if args.init else []),
                                   *([args.teacher] if args.teacher else [])])
    config_from_args(args, args.variant)  # a contradicting option stops here, before any process starts
    if args.devices > 1 and not under_torchrun():
        launch(train_and_report, args.devices, args.device, args)
    else:
        train_and_report(args)
    return 0


def train_and_report(args: argparse.Namespace) -> None:
    """Train as the flags say and print the result (in every process of a data-parallel run;
    only rank 0 has a result to print)."""
    from pathlib import Path

    from ...core.pixel_sets import open_dataset
    from ...training.train import train_model

    datasets = [open_dataset(p) for p in args.data]
    val = [open_dataset(p) for p in args.val_data] if args.val_data else None
    config = config_from_args(args, args.variant)
    result = train_model(datasets, Path(args.out), config,
                         val_datasets=val, resume=args.resume,
                         provenance={"train_data": [str(p) for p in args.data]})
    if result is None:
        return
    ev = result.metrics["eval"]
    if args.init:
        print(f"fine-tuned from {args.init}")
    if args.teacher:
        print(f"distilled from {args.teacher}")
    print(f"{len(result.metrics['classes'])} classes: {', '.join(result.metrics['classes'])}")
    print(f"{config.variant}: {result.metrics['eval_split']} macro F1 {ev['macro_f1']:.3f}, "
          f"OA {ev['overall_accuracy']:.3f}, kappa {ev['kappa']:.3f} "
          f"({result.metrics['train_samples_per_s']:.0f} samples/s)")
    for role, path in result.files.items():
        if Path(path).exists():  # an ensemble keeps its checkpoints with its members
            print(f"{role}: {path}")
