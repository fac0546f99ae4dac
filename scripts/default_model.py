"""Rebuild a shipped default model reproducibly: synthesise and extract the four regions
(fixed seeds) at one processing level, train an ensemble of one variant on all of them, copy the
bundle to resources/models/ and write its model card, with its scores on the real Bavarian
parcels when they are at hand (L1C only: no real L2A parcels are).

Usage: python scripts/default_model.py [--level L1C|L2A] [--work runs/experiment]
                                       [--real-data ../shared/realdata] [--study]

``--level L1C`` (the default) builds ``default.tcm`` and ``MODEL_CARD.md`` from the regions in
``runs/experiment``; ``--level L2A`` builds ``default_l2a.tcm`` and ``MODEL_CARD_L2A.md`` with
the same recipe from the regions synthesised as L2A surface reflectance in
``runs/experiment-l2a``.

``--study`` also trains the comparison models of the card (one member alone, the previous
recipe with half the samples parcel means, the paper's pixel-set recipe) on the same regions; their scores are kept in ``WORK/study`` and the
card shows them whenever they are there.
"""

from __future__ import annotations

import argparse
import json
import logging
import shutil
import subprocess
import sys
from dataclasses import asdict, replace
from pathlib import Path
from typing import Any, Optional

import numpy as np

from thermocrop.core.model.bundle import load_bundle
from thermocrop.core.pixel_sets import PixelSets, open_dataset, save_dataset
from thermocrop.training.config import stored_config
from thermocrop.training.ensemble import member_paths
from thermocrop.training.evaluate import evaluate_bundle
from thermocrop.training.experiment import PAPER_TABLE1, REGIONS, VARIANT_NAMES, prepare_regions
from thermocrop.training.realdata import find_realdata
from thermocrop.training.train import TrainingConfig, train_model

ROOT = Path(__file__).resolve().parent.parent
MODELS = ROOT / "resources" / "models"
OUTPUTS = {"L1C": ("runs/experiment", "default.tcm", "MODEL_CARD.md"),
           "L2A": ("runs/experiment-l2a", "default_l2a.tcm", "MODEL_CARD_L2A.md")}
"""Level -> default work folder (under the checkout), shipped bundle and card names."""
MIN_REAL_PARCELS = 5
"""Real classes with fewer parcels are not scored (horsebeans 1, triticale 4 in Bavaria)."""

BEFORE_CALIBRATION = {"all": (0.203, 0.136), "east": (0.223, 0.141), "west": (0.182, 0.125)}
"""OA and macro F1 on the same real parcels and classes of the model shipped before the generator
was calibrated (trained on the uncalibrated regions, pixel sets only), for the card's comparison."""

STUDY = {
    "single": ("One model of the shipped recipe (the first member alone)", {"members": 1}),
    "half_means": ("Five members, half the samples parcel means (the previous recipe)", {"mean_pixel_share": 0.5}),
    "pixel_sets": ("One model, pixel sets and whole seasons (the paper's recipe)",
                   {"mean_pixel_share": 0.0, "season_window_share": 0.0, "members": 1}),
}
"""The comparison models: name -> (what, changes to the shipped recipe)."""


def real_import_command(realdata: Path, out: Path, classes: list[str]) -> list[str]:
    """``thermocrop import table`` of the Bavarian parcels with the Duernast temperatures."""
    wc = realdata / "bavaria2018" / "worldcrops"
    return ["thermocrop", "import", "table", str(wc / "Test_bavaria.xlsx"), "--parcels",
            str(wc / "Test_area.shp"), "--join-by-row", "--label-field", "NC_ant", "--class-map",
            "bavaria", "--classes", ",".join(classes), "--level", "L1C", "--block-size-km", "1",
            "--weather", str(realdata / "duernast-weather" / "lte_duernast.V1_0_KLIMADATEN.csv"),
            "--date-var", "Termin", "--tmin-var", "T_Min_2m", "--tmax-var", "T_Max_2m",
            "--out", str(out)]


def real_datasets(realdata: Path, work: Path, classes: list[str]) -> dict[str, Path]:
    """The Bavarian parcels as datasets: all, and the halves west and east of the median
    longitude of the parcel centroids (the west half calibrated the generator).

    The import is done by ``thermocrop import table``; the halves are subsets of it.
    """
    all_path = work / "bavaria"
    if not all_path.exists():
        work.mkdir(parents=True, exist_ok=True)  # the importer writes only into an existing folder
        cmd = real_import_command(realdata, all_path, classes)
        subprocess.run([sys.executable, "-m", "thermocrop.cli.main"] + cmd[1:], check=True)
    paths = {"all": all_path, "west": work / "bavaria-west", "east": work / "bavaria-east"}
    if not (paths["west"].exists() and paths["east"].exists()):
        import geopandas as gpd

        layer = gpd.read_file(realdata / "bavaria2018" / "worldcrops" / "Test_area.shp")
        lon = layer.geometry.to_crs(32632).centroid.to_crs(4326).x.to_numpy()
        ps = open_dataset(all_path, mmap=False)
        rows = np.array([int(i) for i in ps.parcel_ids])  # --join-by-row: id = feature number
        west = lon[rows] < np.median(lon)
        for name, keep in (("west", west), ("east", ~west)):
            save_dataset(ps.subset(np.flatnonzero(keep)), paths[name], overwrite=True)
    return paths


def parcel_mean_dataset(source: Path, target: Path) -> Path:
    """A copy of a dataset with one pixel per parcel and date, the mean of its valid pixels."""
    if target.exists():
        return target
    ps = open_dataset(source, mmap=False)
    mask = np.asarray(ps.pixel_mask) & np.asarray(ps.date_mask)[:, :, None]
    n = mask.sum(axis=2)
    mean = (ps.pixels.astype(np.float64) * mask[:, :, None, :]).sum(axis=3) / np.maximum(n, 1)[:, :, None]
    has = n > 0
    means = PixelSets(
        pixels=np.where(has[:, :, None], np.round(mean), 0).astype(np.uint16)[..., None],
        pixel_mask=has[:, :, None], date_mask=np.asarray(ps.date_mask) & has, gdd=ps.gdd,
        dates=ps.dates, day_of_season=ps.day_of_season, parcel_ids=ps.parcel_ids, status=ps.status,
        labels=ps.labels, blocks=ps.blocks, classes=ps.classes, bands=ps.bands,
        meta={**ps.meta, "pixels": "per-parcel mean (S = 1) of " + str(source)})
    return save_dataset(means, target)


def restricted(result: dict[str, Any], keep_classes: list[str]) -> dict[str, Any]:
    """OA and macro F1 over ``keep_classes`` from an ``evaluate_bundle`` result: parcels of other
    classes are left out, with their predictions; a prediction of a left-out class on a kept
    parcel stays an error."""
    from thermocrop.training.metrics import scores

    cm = np.array(result["confusion_matrix"])
    keep = np.array([c in keep_classes for c in result["classes"]])
    cm = np.where(keep[:, None], cm, 0)
    s = scores(cm, result["classes"])
    f1 = [s["per_class"][c]["f1"] for c, k in zip(result["classes"], keep) if k]
    return {"n": s["n"], "overall_accuracy": s["overall_accuracy"], "macro_f1": float(np.mean(f1)),
            "classes": [c for c, k in zip(result["classes"], keep) if k], "per_class": s["per_class"],
            "confusion_matrix": cm.tolist(), "all_classes": result["classes"]}


def score_bundle(bundle_path: Path, synthetic: list[Path], synthetic_means: list[Path],
                 real: Optional[dict[str, Path]], seed: int) -> dict[str, Any]:
    """Scores of a bundle: the synthetic test blocks as pixel sets and as parcel means, and
    the real parcels (all, east and west halves) over the classes with at least
    ``MIN_REAL_PARCELS`` parcels among all of them."""
    bundle = load_bundle(bundle_path)
    out: dict[str, Any] = {
        "synthetic": evaluate_bundle(bundle, [open_dataset(p) for p in synthetic], split="test", seed=seed),
        "synthetic_means": evaluate_bundle(bundle, [open_dataset(p) for p in synthetic_means], split="test",
                                           seed=seed),
    }
    if real:
        out.update(real_scores(bundle, real))
    return out


def real_scores(bundle: Any, real: dict[str, Path]) -> dict[str, Any]:
    """``real_all``, ``real_east``, ``real_west``: a bundle on the real parcels, over the classes
    with at least ``MIN_REAL_PARCELS`` parcels among all of them."""
    results = {name: evaluate_bundle(bundle, [open_dataset(path)]) for name, path in real.items()}
    support = np.array(results["all"]["confusion_matrix"]).sum(axis=1)
    kept = [c for c, n in zip(results["all"]["classes"], support) if n >= MIN_REAL_PARCELS]
    return {f"real_{name}": restricted(result, kept) for name, result in results.items()}


def _pct(x: float) -> str:
    return f"{100 * x:.1f}"


def _before(name: str) -> str:
    oa, f1 = BEFORE_CALIBRATION[name]
    return f"{_pct(oa)} / {_pct(f1)}"


def real_section(scores: dict[str, Any], study: dict[str, dict[str, Any]]) -> list[str]:
    """Model-card lines: the shipped model on the real Bavarian parcels and the comparison."""
    if "real_all" not in scores:
        return ["", "## Real parcels", "",
                "The real Bavarian parcels (`shared/realdata/bavaria2018`) were not at hand when this "
                "card was written; `make default-model` next to them adds their scores here."]
    a, e, w = scores["real_all"], scores["real_east"], scores["real_west"]
    classes = a["classes"]
    lines = [
        "", "## Real parcels: Bavaria 2018", "",
        "301 real LPIS parcels near Freising (Bavaria, 2018; `shared/realdata/bavaria2018`, ESA "
        "Phi-lab WorldCrops test split): one mean L1C top-of-atmosphere reflectance per parcel at 14 "
        "half-month steps from 15 Feb to 30 Aug (two interpolated, a snow date and a hazy one "
        "kept), the farmers' crop codes mapped to the nine classes, GDD from the daily "
        "temperatures measured at Duernast 4-6 km away. The model sees each parcel as a "
        "single pixel (S = 1). No real parcel went into training. The generator's calibration "
        "used only the parcels west of the median longitude; the east half was never looked "
        f"at while calibrating. Scores over the {len(classes)} classes with at least "
        f"{MIN_REAL_PARCELS} parcels (horsebeans and triticale, 1 and 4 parcels, left out):", "",
        "| parcels | n | OA % | macro F1 % | before calibration: OA / macro F1 % |", "|---|---|---|---|---|",
        f"| all | {a['n']} | {_pct(a['overall_accuracy'])} | {_pct(a['macro_f1'])} | {_before('all')} |",
        f"| east half (not used to calibrate) | {e['n']} | {_pct(e['overall_accuracy'])} | {_pct(e['macro_f1'])} "
        f"| {_before('east')} |",
        f"| west half (calibration) | {w['n']} | {_pct(w['overall_accuracy'])} | {_pct(w['macro_f1'])} "
        f"| {_before('west')} |",
        "", "The last column is the model shipped before calibration (uncalibrated regions, pixel "
        "sets only), scored the same way.",
        "", "Per class (all parcels; precision counts every prediction of the class on them):", "",
        "| class | precision % | recall % | F1 % | parcels |", "|---|---|---|---|---|",
    ]
    members = scores.get("members_real") or []
    if members:
        def spread(half: str, key: str) -> str:
            values = [100 * m[f"real_{half}"][key] for m in members]
            return f"{min(values):.1f}-{max(values):.1f}"

        lines[-5:-5] = [
            "", f"Each of the {len(members)} members alone (OA / macro F1 %, lowest-highest): all "
            f"{spread('all', 'overall_accuracy')} / {spread('all', 'macro_f1')}, east half "
            f"{spread('east', 'overall_accuracy')} / {spread('east', 'macro_f1')}, west half "
            f"{spread('west', 'overall_accuracy')} / {spread('west', 'macro_f1')}. A single model's score on "
            "real fields depends on its seed far more than on the synthetic test blocks; the shipped "
            "model averages five."]
    for c in classes:
        pc = a["per_class"][c]
        lines.append(f"| {c} | {_pct(pc['precision'])} | {_pct(pc['recall'])} | {_pct(pc['f1'])} | "
                     f"{pc['support']} |")
    names = a["all_classes"]
    lines += ["", "Confusion matrix (all parcels; rows = reference, columns = predicted):", "",
              "| reference \\ predicted | " + " | ".join(names) + " |", "|---|" + "---|" * len(names)]
    for c, row in zip(names, a["confusion_matrix"]):
        if c in classes:
            lines.append(f"| {c} | " + " | ".join(str(v) for v in row) + " |")
    if study:
        lines += [
            "", "## Pixel sets, parcel means and the realism gap", "",
            "The same variant and budget trained on the same synthetic regions with other recipes. "
            "Synthetic scores are on the regions' held-out test blocks, once with every pixel "
            "(S up to 32) and once with each parcel reduced to its mean (S = 1); real scores as "
            "above. The drop from synthetic pixel sets to synthetic parcel means is the pixel-set "
            "handicap; what a parcel-mean model loses from synthetic parcel means to the real "
            "parcels is the realism gap.", "",
            "| recipe | synthetic, pixel sets F1 / OA | synthetic, parcel means F1 / OA | real, all F1 / OA "
            "| real, east half F1 / OA |", "|---|---|---|---|---|",
        ]
        rows = [("shipped", "Shipped: five members, parcel means, half the samples season cuts", scores)] + \
            [(k, STUDY[k][0], v) for k, v in study.items()]
        for _, what, s in rows:
            lines.append(
                f"| {what} | {_pct(s['synthetic']['macro_f1'])} / {_pct(s['synthetic']['overall_accuracy'])} | "
                f"{_pct(s['synthetic_means']['macro_f1'])} / {_pct(s['synthetic_means']['overall_accuracy'])} | "
                f"{_pct(s['real_all']['macro_f1'])} / {_pct(s['real_all']['overall_accuracy'])} | "
                f"{_pct(s['real_east']['macro_f1'])} / {_pct(s['real_east']['overall_accuracy'])} |")
    return lines


def model_card(bundle_path: Path, metrics: dict, command: str, experiments: list[Path],
               scores: dict[str, Any], study: dict[str, dict[str, Any]], real_commands: list[str]) -> str:
    """Markdown model card of the shipped bundle."""
    bundle = load_bundle(bundle_path)
    cfg = bundle.config
    ev = metrics["eval"]
    tr = metrics["config"]
    lines = [
        "# ThermoCrop L1C ensemble (`default.tcm`)", "",
        "Runs on L1C scenes without a model use `default_fast.tcm`, one model distilled from this "
        "ensemble (`MODEL_CARD_FAST.md`); this ensemble is used when given by path "
        "(`--model resources/models/default.tcm`).", "",
        "**Trained on synthetic data.** The regions come from `thermocrop synth` (AT1, DK1, "
        "FR1, FR2: the paper's four tiles imitated with their climates, L1C; 500 parcels each, "
        "seed 0, daily temperatures of each parcel's cell of the region's E-OBS-style "
        "weather.nc), with a generator whose reflectance, phenology, snow and atmosphere were "
        "calibrated on half of a small set of real Bavarian parcels (docs/synthetic-data.md). "
        "No real Sentinel-2 scene or LPIS label went into training. On real parcels it is a "
        "rough first map (below); train your own model on real labels before trusting one.", "",
        f"- Variant: `{cfg.variant}` ({VARIANT_NAMES.get(cfg.variant, cfg.variant)}), an ensemble of "
        f"{tr['members']} models trained with seeds {tr['seed']} to {tr['seed'] + tr['members'] - 1} on one "
        "split, whose class probabilities are averaged; "
        f"{sum(p.numel() for p in bundle.model.parameters()):,} parameters in all, "
        f"file {bundle_path.stat().st_size / 1e6:.2f} MB",
        f"- Bands: {', '.join(cfg.bands)}; GDD: base {cfg.gdd['t_base']} C, cap "
        f"{cfg.gdd['t_cap']} C, method `{cfg.gdd['method']}`, season start "
        f"{cfg.gdd['season_start']}",
        f"- Training regions: {', '.join(REGIONS)} (all four; 70/10/20 split by spatial "
        "block, best epoch by validation macro F1)",
        f"- Training: {json.dumps(tr)}",
        f"- Recipe: the paper's random pixel and date sampling, with {_pct(tr['mean_pixel_share'])} % "
        "of the samples with every pixel set to the parcel mean of its date (what a per-parcel "
        f"table gives) and {_pct(tr['season_window_share'])} % cut to a random part of the "
        "season (first third to second half), so that parcel means and partial seasons are met "
        "in training. The recipe (parcel means rather than half of them, five members rather "
        "than one) was chosen by the scores on the west half of the real parcels; the study "
        "below gives the alternatives on all parcels and on the east half.",
        f"- Scores on the held-out test blocks of the four synthetic regions: macro F1 "
        f"{_pct(ev['macro_f1'])} %, OA {_pct(ev['overall_accuracy'])} %, kappa "
        f"{ev['kappa']:.3f} ({ev['n']} parcels); the same parcels as parcel means: macro F1 "
        f"{_pct(scores['synthetic_means']['macro_f1'])} %, OA "
        f"{_pct(scores['synthetic_means']['overall_accuracy'])} %",
    ]
    lines += real_section(scores, study)
    lines += ["", "## Classes", "", "| class | colour |", "|---|---|"]
    lines += [f"| {c} | `{cfg.colours.get(c, '')}` |" for c in cfg.classes]
    runs = [json.loads((d / "results.json").read_text()) for d in experiments
            if (d / "results.json").exists()]
    if runs:
        seeds = ", ".join(str(r["training"]["seed"]) for r in runs)
        lines += ["", "## Leave-one-region-out scores of the variants (macro F1 / OA %)", "",
                  f"From `thermocrop experiment` (mean over the held-out regions and over seeds {seeds}; "
                  "docs/experiment.md has every cell); each run trained on three regions with the "
                  "paper's recipe and scored on all parcels of the fourth.", "",
                  "| variant | mean F1 / OA | paper F1 / OA |", "|---|---|---|"]
        for v in runs[0]["summary"]:
            cells = [r["summary"][v] for r in runs if r["summary"].get(v, {}).get("mean_macro_f1") is not None]
            if not cells:
                continue
            f1 = sum(c["mean_macro_f1"] for c in cells) / len(cells)
            oa = sum(c["mean_overall_accuracy"] for c in cells) / len(cells)
            partial = "" if all(c["complete"] for c in cells) and len(cells) == len(runs) else " (partial)"
            p = PAPER_TABLE1.get(v, ("-", "-"))
            lines.append(f"| {VARIANT_NAMES.get(v, v)} | {f1:.1f} / {oa:.1f}{partial} | {p[0]} / {p[1]} |")
    lines += ["", "## Rebuild", "", "```", command, "```", "",
              "Same seed and same number of torch threads, same bytes (the members are kept in "
              "`runs/experiment/default/default.members/`). The real-data scores need "
              "`shared/realdata` beside the checkout; the script imports the Bavarian parcels with "
              "the table importer and cuts the halves by the median longitude of the parcel "
              "centroids (`thermocrop evaluate` scores every class; the card leaves out those with "
              f"fewer than {MIN_REAL_PARCELS} real parcels). `--card-only` rewrites this card from what "
              "is in the work folder without training.", "", "```"] + real_commands + ["```"]
    lines += [
        "", "## Train on real LPIS labels", "",
        "1. Put the parcels (GeoPackage or shapefile) with a crop field mapped to the class "
        "names above, a `block` field for spatial splits (e.g. a grid of ~10 km cells), the "
        "Sentinel-2 scenes of one season and daily temperatures (E-OBS `tn_...nc` and "
        "`tx_...nc`, any CF NetCDF of daily minimum and maximum, or a station CSV "
        "`date,tmin,tmax`) side by side.",
        "2. `thermocrop extract --parcels parcels.gpkg --scenes S2/ --weather "
        "tn_ens_mean_0.1deg_reg_v29.0e.nc "
        "--label-field crop --out data/region1` (one dataset per region or tile).",
        "3. `thermocrop train --data data/region1 data/region2 --variant tpe_recurrent "
        "--out my.tcm` (paper settings by default: 100 epochs x 500 steps x 128 parcels, "
        "S=64, T=30; a GPU is used when present).",
        "4. `thermocrop evaluate --model my.tcm --data data/region3` and use `my.tcm` in the "
        "plugin or `thermocrop classify --model my.tcm`.",
    ]
    return "\n".join(lines) + "\n"


def model_card_level(bundle_path: Path, metrics: dict, level: str, command: str,
                     scores: dict[str, Any]) -> str:
    """Markdown model card of a shipped bundle trained on the regions synthesised at ``level``
    (L2A): its synthetic test scores beside the L1C model's, and no real-data rows."""
    bundle = load_bundle(bundle_path)
    cfg, tr = bundle.config, metrics["config"]
    l1c_path = MODELS / OUTPUTS["L1C"][1]
    l1c = load_bundle(l1c_path).config.provenance
    ev, ev_means, before = scores["synthetic"], scores["synthetic_means"], scores["l1c_model"]
    gap = 100 * (ev["macro_f1"] - l1c["test_macro_f1"]), 100 * (ev["overall_accuracy"] - l1c["test_overall_accuracy"])
    lines = [
        f"# ThermoCrop {level} ensemble (`{bundle_path.name}`)", "",
        f"`{bundle_path.name}` is the ensemble for {level} scenes (each catalogue search of `thermocrop "
        "scenes search` and the Toolbox finds L2A). Runs without a model whose scenes are all "
        f"{level} use `default_fast_l2a.tcm`, one model distilled from it (`MODEL_CARD_FAST.md`); "
        f"this ensemble is used when given by path (`--model resources/models/{bundle_path.name}`), "
        "and `default.tcm` (`MODEL_CARD.md`) is the L1C one. It is trained exactly as the "
        "L1C model, on the same four synthetic regions (AT1, DK1, FR1, FR2; 500 parcels each, seed 0, "
        f"the same parcels, crops and weather) written as {level}: the calibrated generator's surface "
        "reflectance with its scene classification layer, before the atmosphere that the calibration "
        "fitted on real L1C parcels. No real Sentinel-2 scene or LPIS label went into training.", "",
        f"- Variant: `{cfg.variant}` ({VARIANT_NAMES.get(cfg.variant, cfg.variant)}), an ensemble of "
        f"{tr['members']} models trained with seeds {tr['seed']} to {tr['seed'] + tr['members'] - 1}, whose "
        f"class probabilities are averaged; {sum(p.numel() for p in bundle.model.parameters()):,} parameters "
        f"in all, file {bundle_path.stat().st_size / 1e6:.2f} MB",
        f"- Bands: {', '.join(cfg.bands)}; GDD: base {cfg.gdd['t_base']} C, cap {cfg.gdd['t_cap']} C, "
        f"method `{cfg.gdd['method']}`, season start {cfg.gdd['season_start']}; scene level recorded "
        f"in the bundle: {cfg.scene_level}",
        f"- Training regions: {', '.join(REGIONS)} (all four; 70/10/20 split by spatial block, best "
        "epoch by validation macro F1)",
        f"- Training: {json.dumps(tr)} (the L1C model's recipe and budget)",
        "", "## Synthetic test blocks", "",
        "Held-out test blocks of the four regions (the same blocks for both levels):", "",
        "| model | test scenes | n | macro F1 % | OA % |", "|---|---|---|---|---|",
        f"| `{bundle_path.name}` | {level}, pixel sets | {ev['n']} | {_pct(ev['macro_f1'])} | "
        f"{_pct(ev['overall_accuracy'])} |",
        f"| `{bundle_path.name}` | {level}, parcel means | {ev_means['n']} | {_pct(ev_means['macro_f1'])} | "
        f"{_pct(ev_means['overall_accuracy'])} |",
        f"| `{l1c_path.name}` (as recorded at its training) | L1C, pixel sets | - | "
        f"{_pct(l1c['test_macro_f1'])} | {_pct(l1c['test_overall_accuracy'])} |",
        f"| `{l1c_path.name}` | {level}, pixel sets (a level it was not trained on) | {before['n']} | "
        f"{_pct(before['macro_f1'])} | {_pct(before['overall_accuracy'])} |",
        "", f"The {level} model on {level} against the L1C model on L1C: macro F1 {gap[0]:+.1f} points, "
        f"OA {gap[1]:+.1f} points.",
        "", "## Real parcels", "",
        f"No real {level} data is at hand here: `shared/realdata` holds the Bavarian parcels as "
        "L1C top-of-atmosphere parcel means only, so this card has no real-data rows. Score it on "
        f"{level} parcels of your own (`thermocrop evaluate --model resources/models/{bundle_path.name} "
        "--data DATASET`) before trusting its labels; `MODEL_CARD.md` gives what the L1C model does on "
        "the real L1C parcels.",
        "", "## Rebuild", "", "```", command, "```", "",
        "Same seed and same number of torch threads, same bytes (the regions, datasets and members "
        "are kept under the work folder, `runs/experiment-l2a` by default). The row of the L1C model "
        f"on {level} needs `resources/models/default.tcm`.",
    ]
    return "\n".join(lines) + "\n"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--level", choices=tuple(OUTPUTS), default="L1C",
                        help="processing level of the synthetic scenes: L1C builds default.tcm, L2A "
                             "default_l2a.tcm (default L1C)")
    parser.add_argument("--work", type=Path, default=None,
                        help="folder of the regions and datasets, re-used when present (default "
                             "runs/experiment for L1C, runs/experiment-l2a for L2A)")
    parser.add_argument("--variant", default="tpe_sinusoidal",
                        help="the best thermal variant of the leave-one-region-out experiment")
    parser.add_argument("--parcels", type=int, default=500)
    parser.add_argument("--epochs", type=int, default=30)
    parser.add_argument("--steps-per-epoch", type=int, default=25)
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--sample-pixels", type=int, default=16)
    parser.add_argument("--sample-dates", type=int, default=24)
    parser.add_argument("--mean-pixel-share", type=float, default=1.0)
    parser.add_argument("--members", type=int, default=5, help="models in the shipped ensemble")
    parser.add_argument("--season-window-share", type=float, default=0.5)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--threads", type=int, default=1,
                        help="torch threads (default 1: the bytes then do not depend on the core count)")
    parser.add_argument("--out", type=Path, default=None,
                        help="the bundle to write (default resources/models/default.tcm for L1C, "
                             "default_l2a.tcm for L2A); the card goes beside it")
    parser.add_argument("--real-data", type=Path, default=None,
                        help="the shared real data folder (default: shared/realdata beside a parent "
                             "of this checkout, when there)")
    parser.add_argument("--card-only", action="store_true",
                        help="rewrite the card from the model, scores and experiment results already in "
                             "WORK, without training (e.g. after the experiment or the study finished)")
    parser.add_argument("--resume", action="store_true",
                        help="keep the ensemble members already trained with these settings in WORK "
                             "(same seeds and settings, same bytes) and train only the missing ones")
    parser.add_argument("--study", action="store_true",
                        help="also train the comparison models (one member alone, half parcel means, the paper's pixel sets)")
    args = parser.parse_args()
    work, bundle_name, card_name = OUTPUTS[args.level]
    args.work = args.work or ROOT / work
    args.out = args.out or MODELS / bundle_name
    if args.study and args.level != "L1C":
        parser.error("--study compares the recipes on the real L1C parcels; use it with --level L1C")
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    import torch

    torch.set_num_threads(args.threads)
    paths = prepare_regions(args.work, args.parcels, args.seed, 32, args.level)
    means = [parcel_mean_dataset(p, args.work / "datasets-means" / p.name) for p in paths]
    config = TrainingConfig(variant=args.variant, epochs=args.epochs,
                            steps_per_epoch=args.steps_per_epoch, batch_size=args.batch_size,
                            sample_pixels=args.sample_pixels, sample_dates=args.sample_dates,
                            mean_pixel_share=args.mean_pixel_share,
                            season_window_share=args.season_window_share, members=args.members,
                            seed=args.seed, device="cpu")
    target = args.work / "default" / bundle_name
    stored = args.work / "default" / "scores.json"
    if args.card_only:
        if not (target.exists() and stored.exists()):
            parser.error(f"--card-only needs {target} and {stored} from an earlier run")
        metrics = json.loads(target.with_suffix(".metrics.json").read_text())
        if stored_config(metrics["config"]) != asdict(config):
            parser.error(f"{target} was trained with other settings than these; run without --card-only")
    else:
        metrics = train_model([open_dataset(p) for p in paths], target, config, resume=args.resume,
                              provenance={"train_regions": list(REGIONS), "data": "synthetic"}).metrics
    args.out.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(target, args.out)

    realdata = (args.real_data or find_realdata()) if args.level == "L1C" else None
    bundle_classes = list(load_bundle(args.out).classes)
    real = real_datasets(realdata, args.work / "real", bundle_classes) if realdata else None
    if args.card_only:
        scores = json.loads(stored.read_text())
    else:
        scores = score_bundle(args.out, paths, means, real, args.seed)
        if real and args.members > 1:  # each member alone on the real parcels
            scores["members_real"] = [real_scores(load_bundle(m), real) for m in member_paths(target, args.members)]
        if args.level != "L1C":  # what a run on these scenes used before this model was shipped
            scores["l1c_model"] = evaluate_bundle(load_bundle(MODELS / OUTPUTS["L1C"][1]),
                                                  [open_dataset(p) for p in paths], split="test", seed=args.seed)
        stored.write_text(json.dumps(scores, indent=1))
    study: dict[str, dict[str, Any]] = {}
    for name, (_, changes) in STUDY.items():
        record = args.work / "study" / name / "scores.json"
        if args.study and not args.card_only and not record.exists():
            run = train_model([open_dataset(p) for p in paths], record.parent / "model.tcm",
                              replace(config, **changes), show_progress=False,
                              provenance={"train_regions": list(REGIONS), "data": "synthetic"})
            record.write_text(json.dumps({"config": asdict(replace(config, **changes)),
                                          **score_bundle(run.bundle_path, paths, means, real, args.seed)},
                                         indent=1))
        if record.exists():
            data = json.loads(record.read_text())
            if "real_all" in data:
                study[name] = data
    recipe = (f"--variant {args.variant} "
               f"--parcels {args.parcels} --epochs {args.epochs} --steps-per-epoch "
               f"{args.steps_per_epoch} --batch-size {args.batch_size} --members {args.members} --sample-pixels "
               f"{args.sample_pixels} --sample-dates {args.sample_dates} --threads {args.threads} --mean-pixel-share "
               f"{args.mean_pixel_share} --season-window-share {args.season_window_share} "
               f"--seed {args.seed}")
    if args.level != "L1C":
        card = model_card_level(args.out, metrics, args.level,
                                f"python scripts/default_model.py --level {args.level} {recipe}", scores)
        return write_card(card, args.out.parent / card_name, args.out)
    command = (f"make default-model   # = python scripts/default_model.py {recipe}\n"
               "python scripts/default_model.py --study   # the comparison models")
    real_commands = [" ".join(real_import_command(Path("shared/realdata"), Path("runs/experiment/real/bavaria"),
                                                  bundle_classes)),
                     "thermocrop evaluate --model resources/models/default.tcm --data runs/experiment/real/bavaria",
                     "thermocrop evaluate --model resources/models/default.tcm --data runs/experiment/real/bavaria-east",
                     "thermocrop synth-check --real runs/experiment/real/bavaria-west --synthetic "
                     "runs/experiment/datasets/{AT1,DK1,FR1,FR2} --out runs/experiment/realism "
                     "--plot docs/img/realism.png"]
    card = model_card(args.out, metrics, command,
                      [args.work / "results", args.work / "results-seed1"], scores, study, real_commands)
    return write_card(card, args.out.parent / card_name, args.out)


def write_card(card: str, path: Path, bundle_path: Path) -> int:
    path.write_text(card)
    print(f"{bundle_path} ({bundle_path.stat().st_size / 1e6:.2f} MB), card {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
