"""The paper's leave-one-region-out experiment: every variant trained on all regions but one
and scored on the held-out one; writes ``table.md`` (shaped like the paper's Table 1) and
``results.json`` with every finished run in the output folder (earlier invocations included).
Finished runs are skipped; the time the rest will take is measured and estimated before they
start, and progress is reported within runs."""

from __future__ import annotations

import json
import logging
import math
import multiprocessing
import os
import threading
import time
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any, Callable, Optional, Sequence

import numpy as np

from ..core.errors import InputError
from ..core.io.output import write_text
from ..core.progress import Progress
from .train import TrainingConfig

log = logging.getLogger(__name__)

# Paper Table 1 (macro F1 / OA in %, mean over the four held-out tiles).
PAPER_TABLE1 = {
    "calendar": (68.0, 82.9), "no_pe": (75.9, 87.2), "shiftaug": (79.9, 88.8),
    "tpe_sinusoidal": (82.1, 90.6), "tpe_concat": (82.7, 90.2), "tpe_fourier": (80.3, 90.3),
    "tpe_recurrent": (83.3, 91.0),
}
VARIANT_NAMES = {
    "calendar": "Calendar PE", "no_pe": "No PE", "shiftaug": "ShiftAug",
    "tpe_sinusoidal": "TPE-Sinusoidal", "tpe_concat": "TPE-Concat",
    "tpe_fourier": "TPE-Fourier", "tpe_recurrent": "TPE-Recurrent",
}


def region_name(path: Path) -> str:
    """A dataset folder's region name (its folder name)."""
    return Path(path).name


# How a run reports its progress (run folder, fraction done): set in each worker process by
# _init_worker (a queue to the parent), or by run_experiment for runs in its own process.
_REPORT: Optional[Callable[[str, float], None]] = None


class _Redispatch(logging.Handler):
    """Hands a record that came from a worker to the parent's logger of the same name."""

    def emit(self, record: logging.LogRecord) -> None:
        logging.getLogger(record.name).handle(record)


def _init_worker(log_queue, progress_queue, level: int) -> None:
    """Worker set-up: log records and progress go to the parent through queues, so that every
    line is written once, with its logger prefix, and never into the parent's progress bar."""
    import logging.handlers

    global _REPORT
    root = logging.getLogger()
    root.handlers[:] = [logging.handlers.QueueHandler(log_queue)]
    root.setLevel(level)
    _REPORT = lambda key, fraction: progress_queue.put((key, fraction))  # noqa: E731


def _run_progress(key: str) -> Progress:
    """A Progress passing a run's fraction to :data:`_REPORT` at most every half per cent."""
    last = [-1.0]

    def report(fraction: float) -> None:
        if _REPORT is not None and (fraction - last[0] >= 0.005 or fraction >= 1.0):
            last[0] = fraction
            _REPORT(key, fraction)

    return Progress(report=report)


def _train_run(train_paths: list[str], held_path: str, config: TrainingConfig, run_dir: str,
               progress_queue=None):
    """Train one run's model (in every process of a data-parallel run): its ``TrainingResult``,
    None on ranks other than 0. With ``progress_queue`` (a ``--devices`` run) rank 0 reports
    its progress there."""
    from ..core.pixel_sets import open_dataset
    from .train import train_model

    global _REPORT
    if progress_queue is not None:
        import torch.distributed as dist

        _REPORT = (lambda key, fraction: progress_queue.put((key, fraction))) \
            if dist.get_rank() == 0 else None
    return train_model([open_dataset(p) for p in train_paths], Path(run_dir) / "model.tcm", config,
                       resume=True, show_progress=False, progress=_run_progress(run_dir),
                       provenance={"train_regions": [region_name(p) for p in train_paths],
                                   "held_out_region": region_name(held_path)})


def _one_run(job: tuple[list[str], str, str, dict[str, Any], str, int, int]) -> dict[str, Any]:
    """Train one variant without the held-out region, on ``devices`` processes, and score it
    there (a worker job)."""
    train_paths, held_path, variant, cfg, run_dir, threads, devices = job
    import torch

    from ..core.model.bundle import load_bundle
    from ..core.pixel_sets import open_dataset
    from .config import TrainingResult, output_paths
    from .data_parallel import launch_reporting
    from .evaluate import evaluate_bundle

    torch.set_num_threads(threads)
    run_dir = Path(run_dir)
    config = TrainingConfig(**{**cfg, "variant": variant})
    held = open_dataset(held_path)
    if devices > 1:  # rank 0 writes the run's files and reports its progress here
        launch_reporting(_train_run, devices, config.device, _REPORT, train_paths, held_path, config,
                         str(run_dir))
        result = TrainingResult(run_dir / "model.tcm",
                                json.loads(output_paths(run_dir / "model.tcm")["metrics"].read_text()))
    else:
        result = _train_run(train_paths, held_path, config, str(run_dir))
    # A chosen class list leaves the held-out region's other classes out, as it did in training.
    scores = evaluate_bundle(load_bundle(result.bundle_path), [held], split="all",
                             unseen="drop" if config.classes else "error")
    record = {
        "variant": variant, "held_out": region_name(held_path),
        "train_regions": [region_name(p) for p in train_paths],
        "macro_f1": scores["macro_f1"], "overall_accuracy": scores["overall_accuracy"],
        "kappa": scores["kappa"], "n_parcels": scores["n"], "classes": scores["classes"],
        "left_out": scores["left_out"],
        "confusion_matrix": scores["confusion_matrix"], "per_class": scores["per_class"],
        "best_val_macro_f1": result.metrics["best_val_macro_f1"],
        "train_samples_per_s": result.metrics["train_samples_per_s"],
        "training": {**cfg, "variant": variant},
    }
    write_text(run_dir / "result.json", json.dumps(record, indent=2), what="run result")
    return record


def check_held_out_classes(regions: Sequence[Path], classes: Optional[Sequence[str]] = None) -> None:
    """Refuse, before any training, a held-out region with classes its model will not have.

    The model trained without a region has the chosen ``classes`` or the union of the other
    regions' classes. With a chosen list the held-out parcels of other classes are left out
    (logged); with the union they would be unscorable, so this raises.

    Raises:
        DatasetError: naming each region and the classes the other regions lack.
    """
    from ..core.errors import DatasetError
    from ..core.pixel_sets import open_dataset
    from .datasets import model_classes, unseen_classes

    sets = {Path(r): open_dataset(r) for r in regions}
    problems = []
    for held, ps in sets.items():
        others = [o for r, o in sets.items() if r != held]
        known = model_classes(others, classes)
        unseen = unseen_classes([ps], known)
        if not unseen:
            continue
        listed = ", ".join(f"{c} ({n} parcels)" for c, n in unseen.items())
        if classes:
            log.info("Held-out %s: parcels outside the class list are left out: %s", region_name(held), listed)
        else:
            problems.append(f"{region_name(held)} has {listed}, which no other region has")
    if problems:
        raise DatasetError("Leave-one-region-out cannot score classes the model never saw: "
                           + "; ".join(problems) + ". Choose the classes (--classes), or fold rare classes "
                           "into 'unknown' when extracting (--class-map, --min-parcels).")


def _plan_runs(regions: Sequence[Path], variants: Sequence[str], out: Path, config: TrainingConfig, jobs: int,
               *extra: Any, make_dirs: bool = False) -> tuple[list[dict], list[tuple]]:
    """The records of runs finished in ``out`` before, and the job tuples of the runs still to do
    (each held-out region x variant): ``(train regions, held out, variant, config, run folder,
    torch threads, *extra)``."""
    records, todo = [], []
    threads = max(1, (os.cpu_count() or 1) // max(jobs, 1))
    cfg = asdict(replace(config, variant=variants[0]))
    for variant in variants:
        for held in regions:
            run_dir = out / variant / region_name(held)
            done = run_dir / "result.json"
            if done.exists():
                records.append(json.loads(done.read_text()))
                continue
            if make_dirs:
                run_dir.mkdir(parents=True, exist_ok=True)
            todo.append(([str(r) for r in regions if r != held], str(held), variant, cfg, str(run_dir), threads,
                         *extra))
    return records, todo


def run_experiment(regions: Sequence[Path], variants: Sequence[str], out: Path,
                   config: Optional[TrainingConfig] = None, jobs: int = 1,
                   progress: Optional[Progress] = None, estimate_only: bool = False,
                   devices: int = 1) -> list[dict[str, Any]]:
    """Leave-one-region-out over ``regions`` x ``variants``.

    Before training, the time of the runs still to do is measured and estimated
    (:func:`estimate_experiment`) and logged, with a warning when it is long on a CPU.

    Args:
        regions: dataset folders, one per region (folder name = region name).
        variants: model variants.
        out: output folder; ``<variant>/<held-out>/`` per run, ``results.json``, ``table.md``.
        config: training settings shared by every run (its variant is replaced); with
            ``config.classes`` every model has that class list, otherwise the union of its
            training regions' classes.
        jobs: runs trained at once (each with ``cpu_count // jobs`` torch threads).
        progress: overall progress over the runs to do, moving within each run; its
            cancellation check stops the experiment between steps.
        estimate_only: log the estimate and return the finished runs without training.
        devices: processes each run trains in, data-parallel as ``train --devices`` (one
            per GPU with CUDA, else a share of the cores each); runs then go one at a time.

    Returns:
        One record per run of this call's variants and regions (``variant``, ``held_out``,
        ``macro_f1``, ``overall_accuracy``, ...); ``table.md`` and ``results.json`` also hold
        the runs of earlier calls found in ``out``.

    Raises:
        DatasetError: before any training, when a held-out region has classes its model would
            not have (see :func:`check_held_out_classes`).
    """
    config = TrainingConfig() if config is None else config
    regions = [Path(r) for r in regions]
    if len(regions) < 2:
        raise ValueError("leave-one-region-out needs at least two regions")
    if devices > 1 and jobs > 1:
        raise ValueError("Runs on several devices go one at a time: give --jobs or --devices, not both.")
    if config.batch_size % devices:
        raise InputError(f"The batch size {config.batch_size} must be a multiple of the {devices} devices "
                         "each run trains on (--batch-size, --devices).")
    check_held_out_classes(regions, config.classes)
    out = Path(out)
    if not estimate_only:
        out.mkdir(parents=True, exist_ok=True)
    records, todo = _plan_runs(regions, variants, out, config, jobs, devices)
    log.info("%d runs finished before, %d to do", len(records), len(todo))
    if todo:
        estimate = estimate_experiment(regions, variants, config, len(todo), jobs)
        log.info("%s", estimate.describe())
        if estimate.long_on_cpu:
            log.warning(
                "This is about %s of training on a CPU (%d epochs x %d steps x %d parcels per run). The "
                "paper's recipe is meant for a GPU; for a CPU-sized run pass smaller budgets, e.g. --epochs 20 "
                "--steps-per-epoch 25 --batch-size 64 --sample-pixels 16 --sample-dates 24 (the README's "
                "table), or see the estimate first with --estimate.", _hours(estimate.total_s),
                config.epochs, config.steps_per_epoch, config.batch_size)
    if estimate_only:
        return records
    if not todo:
        write_outputs(records, variants, regions, out, config)
        return records
    for job in todo:
        Path(job[4]).mkdir(parents=True, exist_ok=True)
    tracker = _Tracker(len(todo), progress)
    started = time.perf_counter()
    if jobs > 1 and len(todo) > 1:
        import logging.handlers

        ctx = multiprocessing.get_context("spawn")
        with multiprocessing.Manager() as manager:
            log_queue, progress_queue = manager.Queue(), manager.Queue()
            listener = logging.handlers.QueueListener(log_queue, _Redispatch())
            listener.start()
            pump = threading.Thread(target=tracker.pump, args=(progress_queue,), daemon=True)
            pump.start()
            try:
                with ctx.Pool(jobs, initializer=_init_worker,
                              initargs=(log_queue, progress_queue, logging.getLogger().getEffectiveLevel())
                              ) as pool:
                    for rec in pool.imap_unordered(_one_run, todo):
                        tracker.finished(rec, str(out / rec["variant"] / rec["held_out"]))
                        records.append(rec)
                        write_outputs(records, variants, regions, out, config)
            finally:
                progress_queue.put(None)
                pump.join(timeout=5)
                listener.stop()
    else:
        global _REPORT
        _REPORT = tracker.update
        try:
            for n, job in enumerate(todo, start=1):
                log.info("run %d of %d: %s held out %s", n, len(todo), job[2], region_name(Path(job[1])))
                rec = _one_run(job)
                tracker.finished(rec, job[4])
                records.append(rec)
                write_outputs(records, variants, regions, out, config)
        finally:
            _REPORT = None
    write_outputs(records, variants, regions, out, config)
    # Set-up, figures and bundles add a few seconds per run that the estimate leaves out.
    log.info("%d runs took %s (estimated %s)", len(todo), _hours(time.perf_counter() - started),
             _hours(estimate.total_s))
    return records


class _Tracker:
    """Overall progress over the runs to do: each run's fraction, finished runs as whole ones."""

    def __init__(self, total: int, progress: Optional[Progress]) -> None:
        self.total, self.progress = total, progress
        self.fractions: dict[str, float] = {}
        self.lock = threading.Lock()

    def update(self, key: str, fraction: float) -> None:
        with self.lock:
            self.fractions[key] = max(self.fractions.get(key, 0.0), fraction)
            done = sum(self.fractions.values()) / self.total
        if self.progress is not None:
            self.progress(min(done, 1.0))

    def finished(self, rec: dict[str, Any], key: str) -> None:
        log.info("%s held out %s: macro F1 %.3f OA %.3f", rec["variant"], rec["held_out"],
                 rec["macro_f1"], rec["overall_accuracy"])
        self.update(key, 1.0)

    def pump(self, progress_queue) -> None:
        while True:
            item = progress_queue.get()
            if item is None:
                return
            self.update(*item)


# -- how long it will take -----------------------------------------------------------------------

PAPER_SCALE_STEPS = 10_000
"""Optimiser steps per run from which a CPU run counts as paper-scale (the paper: 50,000)."""
LONG_ON_CPU_S = 3600.0


@dataclass
class Estimate:
    """Measured speed and the time the runs still to do will take.

    Attributes:
        runs: runs to do; jobs: runs at once; device: where training runs.
        step_s: measured seconds per optimiser step (batch of ``batch_size``) with the threads a
            run gets; predict_s: measured seconds per parcel scored (validation, test, held-out).
        run_s: estimated seconds of one run; total_s: of all runs, ``jobs`` at a time.
        steps_per_run: optimiser steps per run.
    """

    runs: int
    jobs: int
    device: str
    step_s: float
    predict_s: float
    run_s: float
    total_s: float
    steps_per_run: int

    @property
    def long_on_cpu(self) -> bool:
        return self.device == "cpu" and (self.total_s > LONG_ON_CPU_S or self.steps_per_run >= PAPER_SCALE_STEPS)

    def describe(self) -> str:
        return (f"Estimate: {self.runs} runs x {self.steps_per_run:,} steps; measured here {self.step_s * 1000:.0f} ms "
                f"per step and {self.predict_s * 1000:.1f} ms per parcel scored on {self.device}, so about "
                f"{_hours(self.run_s)} per run and {_hours(self.total_s)} in all with {self.jobs} "
                f"run{'s' if self.jobs > 1 else ''} at a time.")


def _hours(seconds: float) -> str:
    if seconds < 90:
        return f"{seconds:.0f} s"
    if seconds < 5400:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"


def measure_speed(datasets: Sequence[Any], config: TrainingConfig, threads: int, steps: int = 4,
                  warmup: int = 2, parcels: int = 64) -> tuple[float, float, str]:
    """Seconds per training step and per scored parcel, measured on ``datasets`` with the
    training path's own sampler, model, loss and optimiser (the first steps are not timed).

    Returns:
        ``(step_s, predict_s, device)``.
    """
    import torch

    from ..core.model.bundle import InputScaling
    from ..core.model.networks import build_model
    from .datasets import align_classes, model_classes
    from .losses import FocalLoss
    from .predict import predict_rows
    from .sampling import BatchSampler, usable_parcels
    from .train import resolve_device

    previous = torch.get_num_threads()
    torch.set_num_threads(threads)
    try:
        device = resolve_device(config.device)
        classes = model_classes(datasets, config.classes)
        datasets = align_classes(datasets, classes, unseen="drop")
        k = len(classes)
        rows = [usable_parcels(ps, k) for ps in datasets]
        first = next(i for i, r in enumerate(rows) if len(r))
        scaling = InputScaling.from_pixel_sets(datasets[first].subset(rows[first][:200]), max_parcels=200)
        model = build_model(config.variant, k).to(device)
        sampler = BatchSampler(datasets, rows, scaling, config.sample_pixels, config.sample_dates)
        optimiser = torch.optim.Adam(model.parameters(), lr=config.lr)
        loss_fn = FocalLoss(config.gamma)
        rng = np.random.default_rng(0)
        model.train()
        start = 0.0
        for step in range(warmup + steps):
            if step == warmup:
                if device.type == "cuda":
                    torch.cuda.synchronize()
                start = time.perf_counter()
            b = sampler.sample(config.batch_size, rng)
            inputs = [torch.from_numpy(a).to(device) for a in
                      (b.pixels, b.pixel_mask, b.date_mask, b.day_of_season, b.gdd)]
            loss = loss_fn(model(*inputs), torch.from_numpy(b.labels).to(device))
            optimiser.zero_grad(set_to_none=True)
            loss.backward()
            optimiser.step()
        if device.type == "cuda":
            torch.cuda.synchronize()
        step_s = (time.perf_counter() - start) / steps
        sample = rows[first][:parcels]
        predict_rows(model, scaling, datasets[first], sample[:8], device=str(device))  # warm-up
        start = time.perf_counter()
        predict_rows(model, scaling, datasets[first], sample, device=str(device))
        predict_s = (time.perf_counter() - start) / max(len(sample), 1)
        return step_s, predict_s, device.type
    finally:
        torch.set_num_threads(previous)


def estimate_experiment(regions: Sequence[Path], variants: Sequence[str], config: TrainingConfig,
                        runs: int, jobs: int = 1) -> Estimate:
    """How long ``runs`` runs will take here: the speed is measured (:func:`measure_speed`, with
    the slowest-looking variant among ``variants`` and the threads each run will get) and scaled
    by the steps of a run and the parcels it scores (validation every epoch, test and held-out
    region once)."""
    from ..core.pixel_sets import open_dataset
    from .datasets import SPLIT_FRACTIONS, align_classes, model_classes
    from .sampling import usable_parcels

    datasets = [open_dataset(r) for r in regions]
    # The recurrent encoding is the slowest; measure it when it is among the variants.
    variant = "tpe_recurrent" if "tpe_recurrent" in variants else variants[0]
    threads = max(1, (os.cpu_count() or 1) // max(jobs, 1))
    step_s, predict_s, device = measure_speed(datasets, replace(config, variant=variant), threads)
    classes = model_classes(datasets, config.classes)
    usable = [len(usable_parcels(ps, len(classes))) for ps in align_classes(datasets, classes, unseen="drop")]
    held = float(np.mean(usable))
    train_parcels = sum(usable) - held
    scored_per_epoch = SPLIT_FRACTIONS[1] * train_parcels
    scored_once = SPLIT_FRACTIONS[2] * train_parcels + held
    steps = config.epochs * config.steps_per_epoch
    run_s = steps * step_s + (config.epochs * scored_per_epoch + scored_once) * predict_s
    total_s = run_s * math.ceil(runs / max(jobs, 1))
    return Estimate(runs, jobs, device, step_s, predict_s, run_s, total_s, steps)


def estimate_training(datasets: Sequence[Any], config: TrainingConfig, threads: Optional[int] = None) -> Estimate:
    """How long one ``train_model`` run of ``config`` on ``datasets`` (``PixelSets``) will take
    here: the speed is measured (:func:`measure_speed`, with ``config``'s variant and batch) and
    scaled by the run's steps and the parcels it scores (validation every epoch, test once), for
    each member of an ensemble."""
    import torch

    from .datasets import SPLIT_FRACTIONS, align_classes, model_classes
    from .sampling import usable_parcels

    threads = threads or torch.get_num_threads()
    step_s, predict_s, device = measure_speed(datasets, config, threads)
    classes = model_classes(datasets, config.classes)
    usable = sum(len(usable_parcels(ps, len(classes))) for ps in align_classes(datasets, classes, unseen="drop"))
    # An ensemble trains its members one after the other.
    steps = config.epochs * config.steps_per_epoch * config.members
    run_s = steps * step_s + config.members * (config.epochs * SPLIT_FRACTIONS[1] + SPLIT_FRACTIONS[2]) * usable * predict_s
    return Estimate(1, 1, device, step_s, predict_s, run_s, run_s, steps)


def describe_training_estimate(estimate: Estimate) -> str:
    """One line for a single run: its steps, the measured step time and the time it will take."""
    return (f"{estimate.steps_per_run:,} steps at {estimate.step_s * 1000:.0f} ms each (measured here on "
            f"{estimate.device}): about {_hours(estimate.run_s)}")


# -- the table -------------------------------------------------------------------------------------

def load_finished_runs(out: Path) -> list[dict[str, Any]]:
    """Every ``<variant>/<region>/result.json`` under ``out`` (runs of any earlier call)."""
    found = []
    for path in sorted(Path(out).glob("*/*/result.json")):
        try:
            found.append(json.loads(path.read_text()))
        except (OSError, ValueError):
            log.warning("%s cannot be read; that run is left out of the table.", path)
    return found


def summary(records: Sequence[dict[str, Any]], variants: Sequence[str],
            regions: Sequence[str]) -> dict[str, dict[str, Any]]:
    """Per variant: ``{region: (F1 %, OA %)}`` and ``mean`` over the regions present."""
    table: dict[str, dict[str, Any]] = {}
    for v in variants:
        row = {r["held_out"]: (100 * r["macro_f1"], 100 * r["overall_accuracy"])
               for r in records if r["variant"] == v}
        cells = [row[g] for g in regions if g in row]
        mean = tuple(np.mean(cells, axis=0)) if cells else None
        table[v] = {"regions": row, "mean": mean, "complete": len(cells) == len(regions)}
    return table


def format_table(records: Sequence[dict[str, Any]], variants: Sequence[str],
                 regions: Sequence[str]) -> str:
    """Markdown table: rows = variants, columns = F1 / OA per held-out region, the mean, and
    the paper's mean beside it."""
    table = summary(records, variants, regions)
    head = ["PE"] + [f"{g} F1 / OA" for g in regions] + ["mean F1 / OA", "paper F1 / OA"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for v in variants:
        row = table[v]
        cells = [f"{row['regions'][g][0]:.1f} / {row['regions'][g][1]:.1f}"
                 if g in row["regions"] else "-" for g in regions]
        mean = row["mean"]
        mean_txt = "-" if mean is None else f"{mean[0]:.1f} / {mean[1]:.1f}"
        if mean is not None and not row["complete"]:
            mean_txt += " (partial)"
        paper = PAPER_TABLE1.get(v)
        paper_txt = f"{paper[0]:.1f} / {paper[1]:.1f}" if paper else "-"
        lines.append("| " + " | ".join([VARIANT_NAMES.get(v, v)] + cells
                                       + [mean_txt, paper_txt]) + " |")
    return "\n".join(lines) + "\n"


def write_outputs(records: Sequence[dict[str, Any]], variants: Sequence[str],
                  regions: Sequence[Path], out: Path, config: TrainingConfig) -> None:
    """(Re)write ``results.json`` and ``table.md`` from every finished run in ``out``: the
    records of this call and the ``result.json`` of earlier calls (other variants or regions
    stay in the table; this call's variants and regions come first)."""
    merged = {(r["variant"], r["held_out"]): r for r in load_finished_runs(out)}
    merged.update({(r["variant"], r["held_out"]): r for r in records})
    runs = list(merged.values())
    names = [region_name(r) for r in regions]
    names += sorted({r["held_out"] for r in runs} - set(names))
    order = list(VARIANT_NAMES)
    all_variants = list(variants) + sorted({r["variant"] for r in runs} - set(variants),
                                           key=lambda v: (order.index(v) if v in order else len(order), v))
    current = json.loads(json.dumps(asdict(config)))  # as result.json holds it (tuples as lists)
    other = sorted(f"{r['variant']}/{r['held_out']}" for r in runs
                   if "training" in r and {**r["training"], "variant": None} != {**current, "variant": None})
    data = {"regions": names, "variants": all_variants, "training": current,
            "runs": sorted(runs, key=lambda r: (all_variants.index(r["variant"]),
                                                names.index(r["held_out"]))),
            "summary": {v: {"mean_macro_f1": s["mean"][0] if s["mean"] else None,
                            "mean_overall_accuracy": s["mean"][1] if s["mean"] else None,
                            "complete": s["complete"]}
                        for v, s in summary(runs, all_variants, names).items()},
            "other_settings": other}
    write_text(out / "results.json", json.dumps(data, indent=2), what="results")
    text = ("Leave-one-region-out: macro F1 / overall accuracy (%) on each held-out region; "
            "paper: Nyborg et al. 2022, Table 1.\n\n" + format_table(runs, all_variants, names))
    if other:
        text += ("\nRuns trained with other settings than the last call's: " + ", ".join(other)
                 + " (see each run's result.json).\n")
    write_text(out / "table.md", text, what="results table")


# The four synthetic regions of the experiment and the default model.
REGIONS = ("AT1", "DK1", "FR1", "FR2")


def prepare_regions(out: Path, parcels: int, seed: int, max_pixels: int, level: str = "L1C") -> list[Path]:
    """Synthesise at ``level`` (``"L1C"`` or ``"L2A"``) and extract every region under ``out``;
    finished steps are skipped.

    Raises:
        InputError: a region already under ``out`` was synthesised at another level.
    """
    import subprocess
    import sys

    tc = [sys.executable, "-m", "thermocrop.cli.main"]
    regions, datasets = out / "regions", out / "datasets"
    for r in REGIONS:
        truth = regions / r / "truth.json"
        found = json.loads(truth.read_text()).get("level") if truth.exists() else level
        if found != level:
            raise InputError(f"{regions / r} holds a region synthesised at {found}, not {level}; "
                             "use another work folder for each level.")
    todo = [r for r in REGIONS if not (regions / r / "parcels.gpkg").exists()]
    if todo:
        subprocess.run(tc + ["synth", "--region", *REGIONS, "--out", str(regions), "--level", level,
                             "--parcels", str(parcels), "--seed", str(seed)], check=True)
    datasets.mkdir(parents=True, exist_ok=True)  # extract writes only into an existing folder
    paths = []
    for r in REGIONS:
        target = datasets / r
        if not target.exists():
            subprocess.run(tc + ["extract", "--parcels", str(regions / r / "parcels.gpkg"),
                                 "--scenes", str(regions / r / "scenes"),
                                 "--weather", str(regions / r / "weather.nc"),
                                 "--label-field", "crop", "--max-pixels", str(max_pixels),
                                 "--seed", str(seed), "--out", str(target)], check=True)
        paths.append(target)
    return paths


# --------------------------------------------------------------------------------------------
# The paper's own protocol on the TimeMatch data

PAPER_TILES = ("AT1", "DK1", "FR1", "FR2")
"""The paper's tiles by their Table 1 names (``importers.timematch.TILES`` gives their paths)."""


def _labels_in(ps, blocks):
    """The same (memory-mapped) pixel sets with labels kept only for parcels in ``blocks``."""
    keep = np.isin(np.asarray(ps.blocks), np.asarray(list(blocks), dtype=np.int64))
    return replace(ps, labels=np.where(keep, np.asarray(ps.labels), -1).astype(np.int16))


def _fold_blocks(ps, fold: int, split: str) -> list[int]:
    splits = (ps.meta or {}).get("splits")
    if not splits:
        raise ValueError(f"{ps.meta.get('source', 'a dataset')} has no block folds (dataset_split.json); "
                         "import the tile from a TimeMatch folder that holds one")
    if not 0 <= fold < len(splits):
        raise ValueError(f"fold {fold} does not exist; the data have folds 0..{len(splits) - 1}")
    return [int(b) for b in splits[fold][split]]


def _paper_run(job: tuple[list[str], str, str, dict[str, Any], str, int, int]) -> dict[str, Any]:
    """Train one variant on the train blocks of three tiles (best epoch on their validation
    blocks) and score it on the test blocks of the fourth (a worker job)."""
    train_paths, held_path, variant, cfg, run_dir, threads, fold = job
    import torch

    from ..core.model.bundle import load_bundle
    from ..core.pixel_sets import open_dataset
    from .evaluate import evaluate_bundle
    from .sampling import usable_parcels
    from .train import train_model

    torch.set_num_threads(threads)
    run_dir = Path(run_dir)
    config = TrainingConfig(**{**cfg, "variant": variant})
    sources = [open_dataset(p) for p in train_paths]
    train = [_labels_in(ps, _fold_blocks(ps, fold, "train")) for ps in sources]
    val = [_labels_in(ps, _fold_blocks(ps, fold, "val")) for ps in sources]
    held = open_dataset(held_path)
    test = _labels_in(held, _fold_blocks(held, fold, "test"))
    k = len(held.classes)
    counts = {name: int(sum(len(usable_parcels(ps, k)) for ps in sets))
              for name, sets in (("n_train", train), ("n_val", val), ("n_parcels", [test]))}
    result = train_model(train, run_dir / "model.tcm", config, val_datasets=val, resume=True,
                         show_progress=False,
                         provenance={"protocol": "paper", "fold": fold,
                                     "train_regions": [region_name(p) for p in train_paths],
                                     "held_out_region": region_name(held_path)})
    scores = evaluate_bundle(load_bundle(result.bundle_path), [test], split="all")
    record = {
        "variant": variant, "held_out": region_name(held_path), "protocol": "paper", "fold": fold,
        "train_regions": [region_name(p) for p in train_paths],
        "macro_f1": scores["macro_f1"], "overall_accuracy": scores["overall_accuracy"],
        "kappa": scores["kappa"], **counts,
        "confusion_matrix": scores["confusion_matrix"], "per_class": scores["per_class"],
        "best_val_macro_f1": result.metrics["best_val_macro_f1"],
        "train_samples_per_s": result.metrics["train_samples_per_s"],
    }
    write_text(run_dir / "result.json", json.dumps(record, indent=2), what="run result")
    return record


def import_paper_tiles(data_root: Path, out: Path, *, class_maps: Optional[dict[str, Any]] = None,
                       max_pixels: int = 64, seed: int = 0) -> list[Path]:
    """The four TimeMatch tiles as datasets ``out/<AT1|DK1|FR1|FR2>`` (imported once), with the
    paper's nine classes and the block folds of ``dataset_split.json``."""
    from .importers.timematch import TILES, import_timematch

    paths = []
    for name in PAPER_TILES:
        target = Path(out) / name
        if not (target / "dataset.json").is_file():
            country = TILES[name].split("/")[0]
            log.info("importing %s (%s) into %s", name, TILES[name], target)
            import_timematch(data_root, TILES[name], target, class_map=(class_maps or {}).get(country),
                             max_pixels=max_pixels, seed=seed, overwrite=target.exists())
        paths.append(target)
    return paths


def run_paper_protocol(data_root: Path, variants: Sequence[str], out: Path,
                       config: Optional[TrainingConfig] = None, *, fold: int = 0, jobs: int = 1,
                       class_maps: Optional[dict[str, Any]] = None, max_pixels: int = 64
                       ) -> list[dict[str, Any]]:
    """The paper's Table 1 protocol on the TimeMatch data.

    Each variant is trained on three tiles and tested on the fourth: training parcels are the
    ``train`` blocks of fold ``fold`` of the three tiles (``dataset_split.json``), the best
    epoch is chosen on their ``val`` blocks, and the score is taken on the ``test`` blocks of the
    held-out tile, with the paper's nine classes (parcels of other classes left out, unmapped
    crop codes ``unknown``) and its recipe (``config``; the defaults are the paper's).

    Args:
        data_root: the TimeMatch folder (``dataset_split.json``, ``<country>/<tile>/<year>/``).
        variants: model variants.
        out: output folder: ``datasets/`` (the imported tiles), ``<variant>/<tile>/`` per run,
            ``results.json`` and ``table.md``. Finished imports and runs are re-used.
        config: training settings (variant replaced per run); ``device="auto"`` takes the GPU.
        fold: the fold of ``dataset_split.json`` (the paper reports fold 0).
        jobs: runs trained at once.
        class_maps: ``{country: class map}`` instead of the presets named after the countries.
        max_pixels: S kept per parcel on import.

    Returns:
        One record per run, as ``run_experiment``'s.
    """
    config = TrainingConfig() if config is None else config
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    regions = import_paper_tiles(Path(data_root), out / "datasets", class_maps=class_maps,
                                 max_pixels=max_pixels, seed=config.seed)
    records, todo = _plan_runs(regions, variants, out, config, jobs, fold, make_dirs=True)
    log.info("paper protocol: %d runs finished before, %d to do", len(records), len(todo))
    if jobs > 1 and len(todo) > 1:
        ctx = multiprocessing.get_context("spawn")
        with ctx.Pool(jobs) as pool:
            for rec in pool.imap_unordered(_paper_run, todo):
                records.append(rec)
                write_outputs(records, variants, regions, out, config)
    else:
        for job in todo:
            records.append(_paper_run(job))
            write_outputs(records, variants, regions, out, config)
    write_outputs(records, variants, regions, out, config)
    return records
