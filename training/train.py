"""Training loop of the paper's recipe: random pixel/date sampling, focal loss, Adam with
per-step cosine annealing, validation macro-F1 each epoch, best checkpoint kept, resumable."""

from __future__ import annotations

import logging
import sys
import time
import warnings
from dataclasses import asdict
from pathlib import Path
from typing import Any, Optional, Sequence, Union

import numpy as np
import torch

from ..core.errors import InputError
from ..core.io.output import staged_file
from ..core.model.bundle import InputScaling
from ..core.model.networks import set_statistics_group
from ..core.model.sample_noise import sample_keys
from ..core.pixel_sets import PixelSets
from ..core.progress import Progress
from ..core.runs.fingerprint import changed_files, input_fingerprints
from .config import (
    TrainingConfig,
    TrainingResult,
    data_provenance,
    output_paths,
    resolve_device,
    stored_config,
    training_split,
)
from .data_parallel import join
from .distil import DistillationLoss, load_teacher, teacher_classes, teacher_provenance
from .ensemble import train_ensemble
from .finetune import anchor_penalty, init_classes, init_provenance, initial_weights, new_model
from .losses import FocalLoss
from .predict import score_rows
from .results import write_results
from .sampling import BatchSampler

log = logging.getLogger(__name__)


_CHECKPOINT_KEYS = ("config", "model", "optimiser", "scheduler", "history", "best_f1", "best_state",
                    "epoch")


def load_checkpoint(path: Path, device: Union[str, torch.device]) -> dict[str, Any]:
    """Read a training checkpoint written by ``train_model``, never running code from it.

    Only tensors and plain containers are unpickled (``weights_only``); a file holding anything
    else (a pickle that would call a function, a foreign format) is refused.

    Raises:
        InputError: the file is not a ThermoCrop training checkpoint.
    """
    path = Path(path)
    what = (f"{path} is not a ThermoCrop training checkpoint: {{}}. Resume only from the .ckpt "
            "this command wrote beside its --out, or remove it to start over")
    try:
        with warnings.catch_warnings():  # e.g. "pickle protocol 4": the refusal below says enough
            warnings.simplefilter("ignore")
            ckpt = torch.load(path, map_location=device, weights_only=True)
    except Exception as exc:  # noqa: BLE001 (pickle, zip and torch each raise their own)
        # The library's own text proposes loading without the restriction; never relay it.
        reason = "it holds objects other than tensors and numbers" if "weights_only" in str(exc) \
            or "Unsupported global" in str(exc) else f"it cannot be read ({type(exc).__name__})"
        raise InputError(what.format(reason)) from None
    if not isinstance(ckpt, dict) or any(k not in ckpt for k in _CHECKPOINT_KEYS):
        raise InputError(what.format("it lacks the entries a checkpoint has"))
    if not isinstance(ckpt["config"], dict) or not isinstance(ckpt["epoch"], int):
        raise InputError(what.format("its settings are not readable"))
    return ckpt


def _pooled_scaling(datasets: Sequence[PixelSets], rows: Sequence[np.ndarray],
                    seed: int) -> InputScaling:
    """Input scaling from the training parcels of every dataset, weighted by parcel count."""
    rng = np.random.default_rng(seed)
    parts = []
    for ps, r in zip(datasets, rows):
        if len(r) == 0:
            continue
        # Subsample before subsetting: a subset of a memory map is read into memory.
        pick = np.sort(rng.choice(r, min(len(r), 1000), replace=False))
        parts.append((InputScaling.from_pixel_sets(ps.subset(pick), max_parcels=1000,
                                                   seed=seed), len(r)))
    w = np.array([n for _, n in parts], dtype=np.float64)
    w /= w.sum()
    mean = sum(wi * np.asarray(s.mean) for (s, _), wi in zip(parts, w))
    # Pooled variance: within-dataset variance plus the spread of the dataset means.
    var = sum(wi * (np.asarray(s.std) ** 2 + (np.asarray(s.mean) - mean) ** 2)
              for (s, _), wi in zip(parts, w))
    return InputScaling(parts[0][0].quantification, tuple(mean), tuple(np.sqrt(var)))


def _log_classes(datasets: Sequence[PixelSets], classes: Sequence[str]) -> None:
    """Log the training parcels per class; warn about classes without any."""
    counts = {c: 0 for c in classes}
    for ps in datasets:
        for c, n in ps.class_counts().items():
            counts[c] += n
    log.info("%d classes, usable labelled parcels: %s", len(classes),
             ", ".join(f"{c} {n}" for c, n in counts.items()))
    empty = [c for c, n in counts.items() if n == 0]
    if empty:
        log.warning("No training parcels of %s: the model has these classes but cannot learn them.", empty)


def train_model(datasets: Sequence[PixelSets], out: Union[str, Path],
                config: Optional[TrainingConfig] = None,
                val_datasets: Optional[Sequence[PixelSets]] = None,
                resume: bool = False, show_progress: bool = True,
                provenance: Optional[dict[str, Any]] = None,
                progress: Optional[Progress] = None) -> Optional[TrainingResult]:
    """Train one model and write its bundle, metrics, figures and checkpoint.

    Splits: without ``val_datasets`` the parcels of ``datasets`` are split 70/10/20 by
    spatial block (``split_blocks`` with ``config.data_seed``); the test blocks are held out and
    scored at the end. With ``val_datasets`` every usable parcel of ``datasets`` trains and
    ``val_datasets`` validate (no test split).

    Classes: the model's class list is ``config.classes`` or the union of the datasets' class
    lists (sorted); each dataset's labels are moved onto it by name, so datasets extracted from
    different layers (with different class lists) train together.

    Args:
        datasets: labelled pixel sets (one per region), same bands.
        out: bundle path to write (``.tcm``); ``<stem>.metrics.json``, ``.confusion.png``,
            ``.curve.png`` and ``.ckpt`` (the resumable checkpoint) go beside it.
        config: run settings (default: ``TrainingConfig()``).
        val_datasets: separate validation data.
        resume: continue from ``<stem>.ckpt`` when it exists (same config expected).
        show_progress: draw a tqdm bar with loss and validation F1.
        provenance: extra facts to store in the bundle and metrics.
        progress: progress and cancellation (checked every step).

    Data-parallel: called in every process of a ``torch.distributed`` run (see
    ``training.data_parallel``), each process trains on its slice of every global batch of
    ``config.batch_size``; only rank 0 validates, writes and returns a result.

    Ensembles: with ``config.members`` > 1 the members are trained one after the other
    (``training.ensemble``) and the bundle at ``out`` holds them all.

    Distillation: with ``config.teacher`` the model learns the teacher bundle's softened class
    probabilities on each batch (``training.distil``), in the teacher's classes and input scaling,
    and the last epoch is kept rather than the best by validation macro F1.

    Returns:
        A ``TrainingResult``; None on ranks other than 0 of a data-parallel run.
    """
    config = TrainingConfig() if config is None else config
    if config.init:
        config = init_classes(config, datasets)
        provenance = {**(provenance or {}), **init_provenance(config.init)}
    if config.teacher:
        config = teacher_classes(config)
        provenance = {**(provenance or {}), **teacher_provenance(config.teacher)}
    if config.members > 1:
        return train_ensemble(datasets, out, config, train_model, val_datasets=val_datasets, resume=resume,
                              show_progress=show_progress, provenance=provenance, progress=progress)
    out = Path(out)
    paths = output_paths(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    progress = progress or Progress()
    # The dataset folders by content: a resumed run refuses data that changed meanwhile.
    data_fingerprint = input_fingerprints(sorted({ps.source for ps in [*datasets, *(val_datasets or [])]
                                                  if ps.source}))
    split = training_split(datasets, config, val_datasets)
    datasets, classes = split.datasets, split.classes
    train_rows, val_sets, val_rows = split.train_rows, split.val_sets, split.val_rows
    k = len(classes)
    if k < 2:  # a bundle of one class cannot be loaded, and there is nothing to tell apart
        raise InputError(f"A model needs at least two classes; the training data hold only {', '.join(classes) or 'none'}"
                         " (after the class list and the class map). Add parcels of other classes, or give "
                         "--classes with two or more.")
    _log_classes(datasets, classes)
    device = resolve_device(config.device)
    # In a data-parallel run (--devices N or torchrun) every process runs this function on
    # the same data and seed: each draws the same global batch and trains on its own slice,
    # BatchNorm statistics and gradients are reduced over all, and rank 0 validates and
    # writes the outputs.
    ranks = join(device)
    if ranks is not None:
        device = ranks.device
        if config.batch_size % ranks.world_size:
            raise ValueError(f"The batch size {config.batch_size} must be a multiple of the "
                             f"{ranks.world_size} training processes.")
    rank, world = (ranks.rank, ranks.world_size) if ranks else (0, 1)
    main = rank == 0
    torch.manual_seed(config.seed)
    init = initial_weights(config, split, datasets[0].bands) if config.init else None
    teacher = load_teacher(config, split, datasets[0].bands, device) if config.teacher else None
    scaling = init.scaling if init else teacher.scaling if teacher else \
        _pooled_scaling(datasets, train_rows, config.data_seed)
    model, anchors = new_model(config, k, init, classes, device)
    net: torch.nn.Module = model
    if ranks is not None:
        set_statistics_group(model, ranks.stats_group)
        # Buffers (running statistics) stay equal on every rank: their updates come from the
        # reduced statistics, so DDP need not broadcast them.
        net = torch.nn.parallel.DistributedDataParallel(
            model, device_ids=[device.index] if device.type == "cuda" else None,
            forward_sync_buffers=False)
    shift = config.max_shift if model.config.shift_augment else 0
    sampler = BatchSampler(datasets, train_rows, scaling, config.sample_pixels,
                           config.sample_dates, max_shift=shift,
                           mean_pixel_share=config.mean_pixel_share,
                           season_window_share=config.season_window_share,
                           season_window_end=config.season_window_end, gdd_floor=config.gdd_floor)
    optimiser = torch.optim.Adam([p for p in model.parameters() if p.requires_grad], lr=config.lr,
                                 weight_decay=config.weight_decay)
    total_steps = config.epochs * config.steps_per_epoch
    scheduler = torch.optim.lr_scheduler.CosineAnnealingLR(optimiser, T_max=total_steps,
                                                           eta_min=0.0)
    loss_fn = FocalLoss(config.gamma)
    distil = DistillationLoss(teacher, config.distil_temperature, config.distil_hard_weight, config.gamma,
                              config.distil_noise) if teacher else None
    use_amp = config.amp and device.type == "cuda"
    # torch.amp.GradScaler came with torch 2.3; Intel Macs end at torch 2.2.2 (docs/install.md).
    scaler = (torch.amp.GradScaler("cuda", enabled=use_amp) if hasattr(torch.amp, "GradScaler")
              else torch.cuda.amp.GradScaler(enabled=use_amp))
    history: list[dict[str, Any]] = []
    best_f1, best_state, start_epoch = -1.0, None, 0
    if resume and paths["checkpoint"].exists():
        ckpt = load_checkpoint(paths["checkpoint"], device)
        if stored_config(ckpt["config"]) != asdict(config) | {"device": ckpt["config"].get("device")}:
            raise InputError(f"{paths['checkpoint']} was written with other settings; "
                             "use the same settings or remove the checkpoint to start over.")
        changed = changed_files(ckpt.get("data"), data_fingerprint) if data_fingerprint else []
        if changed:
            raise InputError(f"The training data changed since {paths['checkpoint']} was written: "
                             f"{'; '.join(changed)}. Resuming would train on a mix of the old and the new data. "
                             "Start afresh: run without --resume and with --overwrite, or put the data back as it was.")
        try:
            model.load_state_dict(ckpt["model"])
            optimiser.load_state_dict(ckpt["optimiser"])
            scheduler.load_state_dict(ckpt["scheduler"])
        except (RuntimeError, ValueError, KeyError, TypeError) as exc:
            raise InputError(f"{paths['checkpoint']} does not fit this model ({str(exc)[:200]}); "
                             "remove it to start over.") from None
        history, best_f1, start_epoch = ckpt["history"], ckpt["best_f1"], ckpt["epoch"]
        best_state = ckpt["best_state"]
        log.info("Resuming %s at epoch %d", paths["checkpoint"], start_epoch)

    bar = None
    if show_progress and main:
        from tqdm import tqdm
        # Few redraws when the bar goes to a log file rather than a terminal.
        bar = tqdm(total=total_steps, initial=start_epoch * config.steps_per_epoch,
                   desc=f"train {config.variant}", unit="step",
                   mininterval=0.2 if sys.stderr.isatty() else 15.0)
    t0, samples = time.perf_counter(), 0
    try:
        for epoch in range(start_epoch, config.epochs):
            # Seeding per epoch makes a resumed run draw the same batches as an unbroken one.
            rng = np.random.default_rng([config.seed, epoch])
            # The training step draws nothing from torch's stream (dropout has per-draw keys);
            # it stays seeded for anything that does.
            torch.manual_seed(config.seed * 100_003 + epoch + 1_000_003 * rank)
            model.train()
            losses = []
            for step in range(config.steps_per_epoch):
                progress((epoch * config.steps_per_epoch + step) / total_steps)
                b = sampler.sample(config.batch_size, rng, rank, world)
                inputs = [torch.from_numpy(a).to(device, non_blocking=True) for a in
                          (b.pixels, b.pixel_mask, b.date_mask, b.day_of_season, b.gdd)]
                target = torch.from_numpy(b.labels).to(device)
                # Dropout keys from the draw's number in the run: a parcel draw gets the same
                # masks whichever process trains it.
                draws = (epoch * config.steps_per_epoch + step) * config.batch_size + b.draws
                keys = torch.from_numpy(sample_keys(config.seed, draws)).to(device)
                if distil:
                    inputs = distil.perturb(inputs)
                with torch.autocast(device.type, enabled=use_amp):
                    logits = net(*inputs, sample_keys=keys)
                    loss = distil(logits, target, inputs) if distil else loss_fn(logits, target)
                    if anchors:
                        loss = loss + anchor_penalty(model, anchors, config.init_anchor)
                optimiser.zero_grad(set_to_none=True)
                scaler.scale(loss).backward()
                scaler.step(optimiser)
                scaler.update()
                scheduler.step()
                losses.append(float(loss.detach()) if ranks is None
                              else ranks.mean(float(loss.detach())))
                samples += len(target) * world
                if bar is not None:
                    bar.update(1)
                    bar.set_postfix(loss=f"{losses[-1]:.3f}",
                                    f1=f"{history[-1]['val_macro_f1']:.3f}" if history else "-",
                                    refresh=False)
            if not main:
                ranks.barrier()  # rank 0 validates and writes the checkpoint
                continue
            val_f1, _ = score_rows(model, scaling, val_sets, val_rows, device, k)
            history.append({"epoch": epoch + 1, "loss": float(np.mean(losses)),
                            "val_macro_f1": val_f1, "lr": scheduler.get_last_lr()[0]})
            # A distilled model keeps its last epoch: on the validation labels it soon ties with its
            # teacher, and the first of the ties would be a model that has barely learnt it.
            if val_f1 > best_f1 or distil:
                best_f1 = val_f1
                best_state = {n: t.detach().clone() for n, t in model.state_dict().items()}
            log.info("epoch %d: loss %.4f, validation macro F1 %.4f", epoch + 1,
                     history[-1]["loss"], val_f1)
            with staged_file(paths["checkpoint"], what="checkpoint") as tmp:  # never half a checkpoint
                torch.save({"config": asdict(config), "model": model.state_dict(),
                            "optimiser": optimiser.state_dict(), "scheduler": scheduler.state_dict(),
                            "history": history, "best_f1": best_f1, "best_state": best_state,
                            "epoch": epoch + 1, "data": data_fingerprint}, tmp)
            if ranks is not None:
                ranks.barrier()
    finally:
        if bar is not None:
            bar.close()
    elapsed = time.perf_counter() - t0
    if not main:
        return None
    model.load_state_dict(best_state)
    model.eval()
    if ranks is not None:
        set_statistics_group(model, None)  # the scoring below copies the model; a process group cannot be copied
    provenance = {**data_provenance(datasets), **(provenance or {})}
    return write_results(model, scaling, split, config, paths, history, best_f1, device,
                         samples / max(elapsed, 1e-9), provenance, base=init.bundle.config if init else None)


