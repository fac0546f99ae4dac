"""Rebuild the shipped default model reproducibly: synthesise and extract the four regions
(fixed seeds), train one variant on all of them, copy the bundle to resources/models/ and
write its model card.

Usage: python scripts/default_model.py [--work runs/experiment] [--variant tpe_sinusoidal]
"""

from __future__ import annotations

import argparse
import json
import logging
import shutil
import sys
from pathlib import Path

from thermocrop.core.bundle import load_bundle
from thermocrop.core.dataset import open_dataset
from thermocrop.training.experiment import (PAPER_TABLE1, REGIONS, VARIANT_NAMES,
                                            prepare_regions)
from thermocrop.training.realdata import bavaria_card_section, find_realdata, update_model_card
from thermocrop.training.train import TrainingConfig, train_model

ROOT = Path(__file__).resolve().parent.parent
MODELS = ROOT / "resources" / "models"


def model_card(bundle_path: Path, metrics: dict, command: str, experiments: list[Path]) -> str:
    """Markdown model card of the shipped bundle."""
    bundle = load_bundle(bundle_path)
    cfg = bundle.config
    ev = metrics["eval"]
    lines = [
        "# ThermoCrop default model", "",
        "**Trained on synthetic data.** The regions come from `thermocrop synth` (AT1, DK1, "
        "FR1, FR2: the paper's four tiles imitated with their climates; 500 parcels each, "
        "seed 0, daily temperatures of each parcel's cell of the region's E-OBS-style "
        "weather.nc); no real "
        "Sentinel-2 scene or LPIS label was used. Expect it to show how the tool works, "
        "not to map real crops: train your own model on real labels (below) before "
        "trusting a map.", "",
        f"- Variant: `{cfg.variant}` ({VARIANT_NAMES.get(cfg.variant, cfg.variant)}), "
        f"{sum(p.numel() for p in bundle.model.parameters()):,} parameters, "
        f"file {bundle_path.stat().st_size / 1e6:.2f} MB",
        f"- Bands: {', '.join(cfg.bands)}; GDD: base {cfg.gdd['t_base']} C, cap "
        f"{cfg.gdd['t_cap']} C, method `{cfg.gdd['method']}`, season start "
        f"{cfg.gdd['season_start']}",
        f"- Training regions: {', '.join(REGIONS)} (all four; 70/10/20 split by spatial "
        "block, best epoch by validation macro F1)",
        f"- Training: {json.dumps(metrics['config'])}",
        f"- Scores on the held-out test blocks of the four regions: macro F1 "
        f"{100 * ev['macro_f1']:.1f} %, OA {100 * ev['overall_accuracy']:.1f} %, kappa "
        f"{ev['kappa']:.3f} ({ev['n']} parcels)", "",
        "## Classes", "", "| class | colour |", "|---|---|",
    ]
    lines += [f"| {c} | `{cfg.colours.get(c, '')}` |" for c in cfg.classes]
    runs = [json.loads((d / "results.json").read_text()) for d in experiments
            if (d / "results.json").exists()]
    if runs:
        seeds = ", ".join(str(r["training"]["seed"]) for r in runs)
        lines += ["", "## Leave-one-region-out scores of the variants (macro F1 / OA %)", "",
                  f"From `thermocrop experiment` (mean over the held-out regions and over seeds {seeds}; "
                  "docs/experiment.md has every cell); each run trained on three regions and "
                  "scored on all parcels of the fourth.", "",
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
    lines += [
        "", "## Rebuild", "", "```", command, "```", "",
        "Same seed and same number of torch threads, same bytes.", "",
        "## Train on real LPIS labels", "",
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


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--work", type=Path, default=ROOT / "runs" / "experiment",
                        help="folder of the regions and datasets (re-used when present)")
    parser.add_argument("--variant", default="tpe_sinusoidal",
                        help="the best thermal variant of the leave-one-region-out experiment")
    parser.add_argument("--parcels", type=int, default=500)
    parser.add_argument("--epochs", type=int, default=30)
    parser.add_argument("--steps-per-epoch", type=int, default=25)
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--sample-pixels", type=int, default=16)
    parser.add_argument("--sample-dates", type=int, default=24)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=Path, default=MODELS / "default.tcm")
    args = parser.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    paths = prepare_regions(args.work, args.parcels, args.seed, 32)
    config = TrainingConfig(variant=args.variant, epochs=args.epochs,
                            steps_per_epoch=args.steps_per_epoch, batch_size=args.batch_size,
                            sample_pixels=args.sample_pixels, sample_dates=args.sample_dates,
                            seed=args.seed, device="cpu")
    target = args.work / "default" / "default.tcm"
    result = train_model([open_dataset(p) for p in paths], target, config,
                         provenance={"train_regions": list(REGIONS), "data": "synthetic"})
    args.out.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(result.bundle_path, args.out)
    command = (f"make default-model   # = python scripts/default_model.py --variant {args.variant} "
               f"--parcels {args.parcels} --epochs {args.epochs} --steps-per-epoch "
               f"{args.steps_per_epoch} --batch-size {args.batch_size} --sample-pixels "
               f"{args.sample_pixels} --sample-dates {args.sample_dates} --seed {args.seed}")
    card = model_card(args.out, result.metrics, command, [args.work / "results", args.work / "results-seed1"])
    (args.out.parent / "MODEL_CARD.md").write_text(card)
    if find_realdata() is not None:  # scores on real parcels (also: scripts/real_data_card.py)
        update_model_card(args.out.parent / "MODEL_CARD.md", bavaria_card_section(args.out, args.work))
    print(f"{args.out} ({args.out.stat().st_size / 1e6:.2f} MB), card "
          f"{args.out.parent / 'MODEL_CARD.md'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
