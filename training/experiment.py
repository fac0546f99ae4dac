"""The paper's leave-one-region-out experiment: every variant trained on all regions but one
and scored on the held-out one; writes ``table.md`` (shaped like the paper's Table 1) and
``results.json``. Finished runs found in the output folder are skipped."""

from __future__ import annotations

import json
import logging
import multiprocessing
import os
from dataclasses import asdict, replace
from pathlib import Path
from typing import Any, Optional, Sequence

import numpy as np

from ..core.output import write_text
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


def _one_run(job: tuple[list[str], str, str, dict[str, Any], str, int]) -> dict[str, Any]:
    """Train one variant without the held-out region and score it there (a worker job)."""
    train_paths, held_path, variant, cfg, run_dir, threads = job
    import torch

    from ..core.bundle import load_bundle
    from ..core.dataset import open_dataset
    from .evaluate import evaluate_bundle
    from .train import train_model

    torch.set_num_threads(threads)
    run_dir = Path(run_dir)
    config = TrainingConfig(**{**cfg, "variant": variant})
    train_sets = [open_dataset(p) for p in train_paths]
    held = open_dataset(held_path)
    result = train_model(train_sets, run_dir / "model.tcm", config, resume=True,
                         show_progress=False,
                         provenance={"train_regions": [region_name(p) for p in train_paths],
                                     "held_out_region": region_name(held_path)})
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
    from ..core.dataset import open_dataset
    from ..core.errors import DatasetError
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


def run_experiment(regions: Sequence[Path], variants: Sequence[str], out: Path,
                   config: TrainingConfig = TrainingConfig(), jobs: int = 1
                   ) -> list[dict[str, Any]]:
    """Leave-one-region-out over ``regions`` x ``variants``.

    Args:
        regions: dataset folders, one per region (folder name = region name).
        variants: model variants.
        out: output folder; ``<variant>/<held-out>/`` per run, ``results.json``, ``table.md``.
        config: training settings shared by every run (its variant is replaced); with
            ``config.classes`` every model has that class list, otherwise the union of its
            training regions' classes.
        jobs: runs trained at once (each with ``cpu_count // jobs`` torch threads).

    Returns:
        One record per run (``variant``, ``held_out``, ``macro_f1``, ``overall_accuracy``, ...).

    Raises:
        DatasetError: before any training, when a held-out region has classes its model would
            not have (see :func:`check_held_out_classes`).
    """
    regions = [Path(r) for r in regions]
    if len(regions) < 2:
        raise ValueError("leave-one-region-out needs at least two regions")
    check_held_out_classes(regions, config.classes)
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
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
            run_dir.mkdir(parents=True, exist_ok=True)
            train = [str(r) for r in regions if r != held]
            todo.append((train, str(held), variant, cfg, str(run_dir), threads))
    log.info("%d runs finished before, %d to do", len(records), len(todo))
    if jobs > 1 and len(todo) > 1:
        ctx = multiprocessing.get_context("spawn")
        with ctx.Pool(jobs) as pool:
            for rec in pool.imap_unordered(_one_run, todo):
                log.info("%s held out %s: macro F1 %.3f OA %.3f", rec["variant"],
                         rec["held_out"], rec["macro_f1"], rec["overall_accuracy"])
                records.append(rec)
                write_outputs(records, variants, regions, out, config)
    else:
        for job in todo:
            rec = _one_run(job)
            log.info("%s held out %s: macro F1 %.3f OA %.3f", rec["variant"], rec["held_out"],
                     rec["macro_f1"], rec["overall_accuracy"])
            records.append(rec)
            write_outputs(records, variants, regions, out, config)
    write_outputs(records, variants, regions, out, config)
    return records


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
    """(Re)write ``results.json`` and ``table.md`` from the records so far."""
    names = [region_name(r) for r in regions]
    data = {"regions": names, "variants": list(variants), "training": asdict(config),
            "runs": sorted(records, key=lambda r: (list(variants).index(r["variant"]),
                                                   names.index(r["held_out"]))),
            "summary": {v: {"mean_macro_f1": s["mean"][0] if s["mean"] else None,
                            "mean_overall_accuracy": s["mean"][1] if s["mean"] else None,
                            "complete": s["complete"]}
                        for v, s in summary(records, variants, names).items()}}
    write_text(out / "results.json", json.dumps(data, indent=2), what="results")
    text = ("Leave-one-region-out: macro F1 / overall accuracy (%) on each held-out region; "
            "paper: Nyborg et al. 2022, Table 1.\n\n" + format_table(records, variants, names))
    write_text(out / "table.md", text, what="results table")


# The four synthetic regions of the experiment and the default model.
REGIONS = ("AT1", "DK1", "FR1", "FR2")


def prepare_regions(out: Path, parcels: int, seed: int, max_pixels: int) -> list[Path]:
    """Synthesise and extract every region under ``out``; finished steps are skipped."""
    import subprocess
    import sys

    tc = [sys.executable, "-m", "thermocrop.training.cli"]
    regions, datasets = out / "regions", out / "datasets"
    todo = [r for r in REGIONS if not (regions / r / "parcels.gpkg").exists()]
    if todo:
        subprocess.run(tc + ["synth", "--region", *REGIONS, "--out", str(regions),
                             "--parcels", str(parcels), "--seed", str(seed)], check=True)
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
