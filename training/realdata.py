"""Scores on real parcels: the real Bavarian LPIS parcels as a dataset, variants trained and
scored by spatial-block cross-validation on one labelled dataset, and a model bundle scored on
real data as a section of its model card.

The real data are not part of ThermoCrop: they sit in a ``shared/realdata`` folder next to
the checkout (or where ``THERMOCROP_REALDATA`` points); see docs/training.md.
"""

from __future__ import annotations

import json
import logging
import os
import re
from dataclasses import asdict, replace
from pathlib import Path
from typing import Any, Optional, Sequence, Union

import numpy as np

from ..core.errors import InputError
from ..core.io.output import write_text
from ..core.pixel_sets import PixelSets, open_dataset
from .importers.common import ClassesAndBlocks, ImportWeather, ParcelLayer
from .importers.table import TableColumns, import_table
from .metrics import scores

log = logging.getLogger(__name__)

MIN_SUPPORT = 5
"""Macro F1 on small real datasets averages the classes with at least this many parcels."""

SECTION_START = "<!-- real-data: written by thermocrop.training.realdata.update_model_card -->"
SECTION_END = "<!-- /real-data -->"

BAVARIA_TABLE = "bavaria2018/worldcrops/Test_bavaria.xlsx"
BAVARIA_LAYER = "bavaria2018/worldcrops/Test_area.shp"
DUERNAST_CSV = "duernast-weather/lte_duernast.V1_0_KLIMADATEN.csv"


def find_realdata(start: Optional[Path] = None) -> Optional[Path]:
    """The ``realdata`` folder: ``$THERMOCROP_REALDATA``, else ``shared/realdata`` in the
    checkout's parent folders; None when there is none."""
    env = os.environ.get("THERMOCROP_REALDATA")
    if env and (Path(env) / BAVARIA_TABLE).is_file():
        return Path(env)
    here = (start or Path(__file__)).resolve()
    for parent in here.parents:
        candidate = parent / "shared" / "realdata"
        if (candidate / BAVARIA_TABLE).is_file():
            return candidate
    return None


def bavaria_import_args(realdata: Union[str, Path], out: Union[str, Path]) -> list[str]:
    """``thermocrop import table`` arguments that make the Bavarian dataset (for the model card:
    the command a reader runs; :func:`bavaria_dataset` makes the same dataset through the importer)."""
    r = Path(realdata)
    return ["import", "table", str(r / BAVARIA_TABLE), "--parcels", str(r / BAVARIA_LAYER), "--join-by-row",
            "--label-field", "NC_ant", "--class-map", "bavaria", "--level", "L1C", "--block-size-km", "1",
            "--weather", str(r / DUERNAST_CSV), "--date-var", "Termin", "--tmin-var", "T_Min_2m",
            "--tmax-var", "T_Max_2m", "--out", str(out)]


def bavaria_dataset(out: Union[str, Path], realdata: Optional[Union[str, Path]] = None) -> Path:
    """The Bavarian parcels as a dataset folder at ``out`` (imported once, then re-used), with the
    settings of :func:`bavaria_import_args`."""
    out = Path(out)
    if (out / "dataset.json").is_file():
        return out
    realdata = Path(realdata) if realdata else find_realdata()
    if realdata is None:
        raise InputError("the real data (shared/realdata) are not next to this checkout; set "
                         "THERMOCROP_REALDATA to the folder holding bavaria2018/ and duernast-weather/")
    realdata = Path(realdata)
    import_table(realdata / BAVARIA_TABLE, out,
                 weather=ImportWeather(realdata / DUERNAST_CSV,
                                       options={"date_var": "Termin", "tmin_var": "T_Min_2m", "tmax_var": "T_Max_2m"}),
                 columns=TableColumns(level="L1C"),
                 layer=ParcelLayer(path=realdata / BAVARIA_LAYER, join_by_row=True, label_field="NC_ant"),
                 grouping=ClassesAndBlocks(class_map="bavaria", block_size_m=1000.0))
    return out


# --------------------------------------------------------------------------------------------
# Scores


def bavaria_halves(dataset: Union[str, Path], realdata: Optional[Union[str, Path]] = None) -> dict[str, PixelSets]:
    """The Bavarian parcels of ``dataset`` (``bavaria_dataset``) split west and east of the median
    longitude of their centroids: ``{"west": ..., "east": ...}``. The generator was calibrated on
    the west half; the east half is where figures are reported."""
    import geopandas as gpd

    realdata = Path(realdata) if realdata else find_realdata()
    if realdata is None:
        raise InputError("the real data (shared/realdata) are not next to this checkout; set THERMOCROP_REALDATA")
    layer = gpd.read_file(Path(realdata) / BAVARIA_LAYER)
    lon = layer.geometry.to_crs(32632).centroid.to_crs(4326).x.to_numpy()
    ps = open_dataset(dataset, mmap=False)
    rows = np.array([int(i) for i in ps.parcel_ids])  # imported by row: the id is the feature number
    west = lon[rows] < np.median(lon)
    return {"west": ps.subset(np.flatnonzero(west)), "east": ps.subset(np.flatnonzero(~west))}


def macro_f1_min_support(cm: np.ndarray, min_support: int = MIN_SUPPORT) -> tuple[float, list[int]]:
    """Mean F1 over the classes with at least ``min_support`` reference parcels, and those classes."""
    cm = np.asarray(cm, dtype=np.float64)
    tp, ref, pred = np.diag(cm), cm.sum(axis=1), cm.sum(axis=0)
    with np.errstate(invalid="ignore", divide="ignore"):
        precision = np.where(pred > 0, tp / pred, 0.0)
        recall = np.where(ref > 0, tp / ref, 0.0)
        f1 = np.where(precision + recall > 0, 2 * precision * recall / (precision + recall), 0.0)
    kept = [int(i) for i in np.flatnonzero(ref >= min_support)]
    return (float(f1[kept].mean()) if kept else 0.0), kept


def score_confusion(cm: np.ndarray, classes: Sequence[str], min_support: int = MIN_SUPPORT) -> dict[str, Any]:
    """``metrics.scores`` plus the macro F1 over classes with at least ``min_support`` parcels."""
    result = scores(cm, classes)
    f1, kept = macro_f1_min_support(cm, min_support)
    result.update({"macro_f1_min_support": f1, "min_support": min_support,
                   "classes_min_support": [classes[i] for i in kept],
                   "confusion_matrix": np.asarray(cm).tolist(), "classes": list(classes)})
    return result


def score_bundle(bundle_path: Union[str, Path], dataset: Union[str, Path, PixelSets],
                 min_support: int = MIN_SUPPORT) -> dict[str, Any]:
    """A bundle's scores on every labelled parcel of a dataset (see ``score_confusion``)."""
    from ..core.model.bundle import load_bundle
    from .evaluate import evaluate_bundle

    ps = open_dataset(dataset) if not isinstance(dataset, PixelSets) else dataset
    result = evaluate_bundle(load_bundle(bundle_path), [ps], split="all")
    return score_confusion(np.array(result["confusion_matrix"]), result["classes"], min_support)


# --------------------------------------------------------------------------------------------
# Cross-validation by spatial blocks


def block_folds(ps: PixelSets, n_folds: int, seed: int = 0) -> list[np.ndarray]:
    """The dataset's blocks dealt into ``n_folds`` folds of about equal parcel counts.

    Blocks are shuffled with ``seed`` and each goes to the fold with the fewest labelled
    parcels so far. Returns the block ids of each fold.
    """
    labels, blocks = np.asarray(ps.labels), np.asarray(ps.blocks)
    ids, counts = np.unique(blocks[(labels >= 0) & (blocks >= 0)], return_counts=True)
    if len(ids) < n_folds:
        raise InputError(f"{len(ids)} spatial blocks cannot make {n_folds} folds; import with smaller "
                         "blocks (--block-size-km) or use fewer folds")
    order = np.random.default_rng(seed).permutation(len(ids))
    folds: list[list[int]] = [[] for _ in range(n_folds)]
    size = np.zeros(n_folds, dtype=np.int64)
    for i in order:
        k = int(np.argmin(size))
        folds[k].append(int(ids[i]))
        size[k] += counts[i]
    return [np.array(sorted(f), dtype=np.int32) for f in folds]


def _with_labels_in(ps: PixelSets, blocks: np.ndarray) -> PixelSets:
    """The same (memory-mapped) pixel sets with labels kept only in ``blocks``."""
    keep = np.isin(np.asarray(ps.blocks), blocks)
    return replace(ps, labels=np.where(keep, np.asarray(ps.labels), -1).astype(np.int16))


def cross_validate(dataset: Union[str, Path], variants: Sequence[str], out: Union[str, Path], config,
                   n_folds: int = 5, seeds: Sequence[int] = (0,), min_support: int = MIN_SUPPORT
                   ) -> dict[str, Any]:
    """Train and score each variant by spatial-block cross-validation on one dataset.

    Fold k's blocks are the test parcels, fold k+1's validate (best epoch), the rest train; the
    folds' confusion matrices add up to one over every labelled parcel. Finished runs found in
    ``out`` (``<variant>/seed<s>/fold<k>/result.json``) are re-used.

    Args:
        dataset: a labelled dataset folder with spatial blocks.
        variants: model variants.
        out: output folder; ``results.json`` and ``table.md`` are written there.
        config: ``TrainingConfig`` shared by every run (variant and seed replaced).
        n_folds: folds of blocks.
        seeds: seeds of the folds' deal, the weights and the sampling, one run set each.
        min_support: classes averaged in the small-class-safe macro F1.

    Returns:
        ``{"runs": [...], "summary": {variant: {...}}}`` (also in ``results.json``).
    """
    from ..core.model.bundle import load_bundle
    from .evaluate import evaluate_bundle
    from .train import train_model

    ps = open_dataset(dataset)
    out = Path(out)
    k = len(ps.classes)
    runs = []
    for variant in variants:
        for seed in seeds:
            folds = block_folds(ps, n_folds, seed)
            total = np.zeros((k, k), dtype=np.int64)
            for f in range(n_folds):
                run_dir = out / variant / f"seed{seed}" / f"fold{f}"
                done = run_dir / "result.json"
                if done.is_file():
                    record = json.loads(done.read_text())
                else:
                    test, val = folds[f], folds[(f + 1) % n_folds]
                    train = np.concatenate([folds[j] for j in range(n_folds) if j not in (f, (f + 1) % n_folds)])
                    cfg = replace(config, variant=variant, seed=seed)
                    result = train_model([_with_labels_in(ps, train)], run_dir / "model.tcm", cfg,
                                         val_datasets=[_with_labels_in(ps, val)], show_progress=False,
                                         provenance={"cross_validation": {"fold": f, "test_blocks": test.tolist(),
                                                                          "val_blocks": val.tolist()}})
                    cm = evaluate_bundle(load_bundle(result.bundle_path), [_with_labels_in(ps, test)],
                                         split="all")["confusion_matrix"]
                    record = {"variant": variant, "seed": seed, "fold": f, "test_blocks": test.tolist(),
                              "confusion_matrix": cm, "best_val_macro_f1": result.metrics["best_val_macro_f1"]}
                    run_dir.mkdir(parents=True, exist_ok=True)
                    write_text(done, json.dumps(record, indent=1), what="run result")
                total += np.array(record["confusion_matrix"], dtype=np.int64)
            s = score_confusion(total, ps.classes, min_support)
            log.info("%s seed %d: OA %.3f, macro F1 %.3f (classes >= %d parcels)", variant, seed,
                     s["overall_accuracy"], s["macro_f1_min_support"], min_support)
            runs.append({"variant": variant, "seed": seed, "folds": [f.tolist() for f in folds], **s})
    summary = {}
    for variant in variants:
        mine = [r for r in runs if r["variant"] == variant]
        summary[variant] = {
            key: float(np.mean([r[key] for r in mine])) for key in
            ("overall_accuracy", "macro_f1_min_support", "macro_f1", "kappa")}
        summary[variant]["std_macro_f1_min_support"] = float(np.std([r["macro_f1_min_support"] for r in mine]))
        summary[variant]["std_overall_accuracy"] = float(np.std([r["overall_accuracy"] for r in mine]))
    training = {k: v for k, v in asdict(config).items() if k not in ("variant", "seed")}
    data = {"dataset": str(dataset), "n_folds": n_folds, "seeds": list(seeds), "training": training,
            "classes": list(ps.classes), "runs": runs, "summary": summary}
    out.mkdir(parents=True, exist_ok=True)
    write_text(out / "results.json", json.dumps(data, indent=1), what="results")
    write_text(out / "table.md", format_cross_validation(data), what="results table")
    return data


def format_cross_validation(data: dict[str, Any]) -> str:
    """Markdown table of a ``cross_validate`` result: per variant, per seed and the mean."""
    from .experiment import VARIANT_NAMES

    seeds = data["seeds"]
    head = ["PE"] + [f"seed {s} F1 / OA" for s in seeds] + ["mean F1 / OA", "macro F1, all classes"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for variant, s in data["summary"].items():
        cells = []
        for seed in seeds:
            r = next(r for r in data["runs"] if r["variant"] == variant and r["seed"] == seed)
            cells.append(f"{100 * r['macro_f1_min_support']:.1f} / {100 * r['overall_accuracy']:.1f}")
        lines.append("| " + " | ".join([VARIANT_NAMES.get(variant, variant)] + cells + [
            f"{100 * s['macro_f1_min_support']:.1f} / {100 * s['overall_accuracy']:.1f}",
            f"{100 * s['macro_f1']:.1f}"]) + " |")
    return "\n".join(lines) + "\n"


# --------------------------------------------------------------------------------------------
# Model card


def model_card_section(result: dict[str, Any], commands: Sequence[str],
                       title: str = "Real data: 301 Bavarian LPIS parcels, 2018") -> str:
    """Markdown section of a bundle's scores on the Bavarian parcels (``score_bundle`` output)."""
    classes = result["classes"]
    cm = np.array(result["confusion_matrix"])
    lines = [
        SECTION_START, f"## {title}", "",
        "Scored on real parcels this model never saw: the WorldCrops Bavarian test set (301 "
        "LPIS parcels near Freising, the farmers' declared crops mapped to the classes by "
        "`resources/classmaps/bavaria.csv`, per-parcel mean Sentinel-2 L1C reflectance in 14 half-month "
        "steps from February to August 2018, GDD from the daily temperatures of the Dürnast station "
        "4-6 km away). These are parcel means (one \"pixel\" per parcel and date, no within-field "
        "variability), half-month composites rather than acquisitions, with clouds and snow left in: "
        "harder inputs than the pixel sets the model was made for (docs/training.md).", "",
        f"- Overall accuracy **{100 * result['overall_accuracy']:.1f} %**, macro F1 "
        f"**{100 * result['macro_f1_min_support']:.1f} %** over the {len(result['classes_min_support'])} "
        f"classes with at least {result['min_support']} parcels ({', '.join(result['classes_min_support'])}); "
        f"macro F1 over every class present {100 * result['macro_f1']:.1f} %, kappa {result['kappa']:.3f}, "
        f"{result['n']} parcels.", "",
        "| class | parcels | precision | recall | F1 |", "|---|---|---|---|---|",
    ]
    for name in classes:
        c = result["per_class"][name]
        lines.append(f"| {name} | {c['support']} | {c['precision']:.2f} | {c['recall']:.2f} | {c['f1']:.2f} |")
    short = [re.sub(r"^(winter|spring)_", lambda m: m.group(1)[0] + ".", c) for c in classes]
    lines += ["", "Confusion matrix (rows: declared crop, columns: predicted):", "",
              "| | " + " | ".join(short) + " |", "|---|" + "---|" * len(classes)]
    for name, row in zip(short, cm):
        lines.append(f"| {name} | " + " | ".join(str(int(v)) for v in row) + " |")
    lines += ["", "Made by:", "", "```sh", *commands, "```", SECTION_END]
    return "\n".join(lines) + "\n"


def update_model_card(card: Union[str, Path], section: str) -> Path:
    """Put ``section`` into a model card: in place of an earlier one, else at the end."""
    card = Path(card)
    text = card.read_text() if card.is_file() else ""
    if SECTION_START in text and SECTION_END in text:
        head, rest = text.split(SECTION_START, 1)
        tail = rest.split(SECTION_END, 1)[1].lstrip("\n")
        text = head + section + ("\n" + tail if tail else "")
    else:
        text = text.rstrip("\n") + ("\n\n" if text else "") + section
    write_text(card, text, what="model card")
    return card


def bavaria_card_section(bundle_path: Union[str, Path], work: Union[str, Path],
                         realdata: Optional[Union[str, Path]] = None) -> str:
    """Score ``bundle_path`` on the Bavarian parcels (imported into ``work/bavaria`` once) and
    return the model card section, with the commands that reproduce it."""
    dataset = bavaria_dataset(Path(work) / "bavaria", realdata)
    result = score_bundle(bundle_path, dataset)
    bundle_path = Path(bundle_path)
    model = f"resources/models/{bundle_path.name}" if bundle_path.parent.name == "models" else str(bundle_path)
    return model_card_section(result, shell_lines(["thermocrop"] + bavaria_import_args("../shared/realdata",
                                                                                       "data/bavaria"))
                              + [f"thermocrop evaluate --model {model} --data data/bavaria",
                                 "# this section: python scripts/real_data_card.py"])


def shell_lines(args: Sequence[str], per_line: int = 3) -> list[str]:
    """A command as lines of a few options each, continued with backslashes."""
    units: list[list[str]] = []
    for a in args:
        if a.startswith("--") or not units or not units[-1][0].startswith("--"):
            units.append([a])
        else:
            units[-1].append(a)
    head = [u for u in units if not u[0].startswith("--")]
    options = [u for u in units if u[0].startswith("--")]
    lines = [" ".join(x for u in head for x in u)]
    for i in range(0, len(options), per_line):
        lines.append("    " + " ".join(x for u in options[i:i + per_line] for x in u))
    return [line + (" \\" if i < len(lines) - 1 else "") for i, line in enumerate(lines)]
