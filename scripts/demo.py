"""``make demo``: classify a synthetic region the shipped model never saw, headless through qgis_process.

Generates the region, runs ``thermocrop:classifyparcels`` with ``qgis_process``, prints overall
and per-class accuracy against the region's truth, and leaves the styled GeoPackage and a PNG
map in the output folder.
"""

from __future__ import annotations

import argparse
import shutil
import sys
import time
from pathlib import Path

DEMO_SEED = 4242
"""Seed of the demo region; the default model is trained on other seeds."""


def parse_args(argv=None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default="demo-output", help="output folder (its demo files are replaced)")
    parser.add_argument("--region", default="FR2", help="synthetic region (AT1, DK1, FR1, FR2)")
    parser.add_argument("--seed", type=int, default=DEMO_SEED, help="seed of the synthetic region")
    parser.add_argument("--parcels", type=int, default=300, help="number of parcels")
    parser.add_argument("--level", choices=("L1C", "L2A"),
                        help="Sentinel-2 processing level (default: the level the model was trained on)")
    parser.add_argument("--model", help="model bundle (default: the shipped model)")
    parser.add_argument("--weather", help="temperature file to use instead of the region's weather.nc")
    return parser.parse_args(argv)


def accuracy_table(truth, predicted, ok):
    """Overall accuracy and per-class accuracy (recall) over the classified parcels.

    Args:
        truth, predicted: ``(P,)`` class names; ok: ``(P,)`` bool, parcels that were classified.

    Returns:
        ``(overall, {class: (correct, total)})``.
    """
    import numpy as np

    truth, predicted, ok = np.asarray(truth), np.asarray(predicted), np.asarray(ok, dtype=bool)
    hits = (truth == predicted) & ok
    per_class = {name: (int(hits[truth == name].sum()), int(((truth == name) & ok).sum()))
                 for name in sorted(set(truth[ok]))}
    overall = float(hits.sum() / max(ok.sum(), 1))
    return overall, per_class


def draw_map(gpkg: Path, field: str, classes, png: Path) -> None:
    """A PNG map of the classified parcels in the model's class colours, with a legend."""
    import geopandas as gpd
    import matplotlib

    from thermocrop.core.crops import NOT_CLASSIFIED_COLOUR, class_colours

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.patches import Patch

    gdf = gpd.read_file(gpkg)
    labels = gdf[field].fillna("")
    colours = class_colours(classes)
    fig, ax = plt.subplots(figsize=(8, 8), dpi=110)
    gdf.plot(ax=ax, color=[colours.get(v, NOT_CLASSIFIED_COLOUR) for v in labels], edgecolor="#404040",
             linewidth=0.3)
    present = [c for c in colours if (labels == c).any()]
    handles = [Patch(facecolor=colours[c], edgecolor="#404040", label=c) for c in present]
    if (labels == "").any():
        handles.append(Patch(facecolor=NOT_CLASSIFIED_COLOUR, edgecolor="#404040", label="not classified"))
    ax.legend(handles=handles, loc="upper left", bbox_to_anchor=(1.01, 1), fontsize=8)
    ax.set_title(f"ThermoCrop: {gpkg.name}")
    ax.set_axis_off()
    fig.savefig(png, bbox_inches="tight")
    plt.close(fig)


def main(argv=None) -> int:
    args = parse_args(argv)
    import geopandas as gpd

    from thermocrop.core.model.bundle import default_bundle_path, load_bundle
    from thermocrop.plugin.headless import run_algorithm
    from thermocrop.synth import generate_region

    model = Path(args.model) if args.model else default_bundle_path()
    if not model.is_file():
        print(f"No model bundle at {model}: run `make default-model` first, or pass --model.", file=sys.stderr)
        return 1
    bundle = load_bundle(model)
    level = args.level or bundle.config.scene_level or "L2A"
    out = Path(args.out).resolve()
    out.mkdir(parents=True, exist_ok=True)
    region = out / f"region_{args.region}_{level}_seed{args.seed}"
    started = time.monotonic()
    if not (region / "truth.json").is_file():
        print(f"Generating synthetic region {args.region} ({level}, seed {args.seed}, {args.parcels} parcels) "
              f"in {region}")
        generate_region(args.region, region, parcels=args.parcels, seed=args.seed, level=level)
    scenes = sorted(str(p) for p in (region / "scenes").glob("*.tif"))
    weather = Path(args.weather) if args.weather else region / "weather.nc"

    result = out / "classified.gpkg"
    for old in (result, result.with_suffix(".qml")):
        if old.exists():
            old.unlink()
    print(f"Classifying {args.parcels} parcels on {len(scenes)} scene files with {model.name} via qgis_process")
    params = [("INPUT", str(region / "parcels.gpkg"))] + [("SCENES", s) for s in scenes] + [
        ("WEATHER", str(weather)), ("MODEL", str(model)), ("OUTPUT", str(result))]
    try:
        run_algorithm("thermocrop:classifyparcels", params, out / ".qgis-profile")
    except (RuntimeError, FileNotFoundError) as exc:
        print(exc, file=sys.stderr)
        return 1
    finally:
        shutil.rmtree(out / ".qgis-profile", ignore_errors=True)

    gdf = gpd.read_file(result)
    ok = (gdf["crop_status"] == "ok").to_numpy()
    overall, per_class = accuracy_table(gdf["crop"].astype(str).to_numpy(),
                                        gdf["crop_pred"].fillna("").astype(str).to_numpy(), ok)
    print(f"\nClassified {ok.sum()} of {len(gdf)} parcels in {time.monotonic() - started:.0f} s")
    print(f"Overall accuracy: {overall:.3f}")
    print(f"{'class':<18}{'correct':>8}{'parcels':>9}{'accuracy':>10}")
    for name, (correct, total) in per_class.items():
        print(f"{name:<18}{correct:>8}{total:>9}{correct / total:>10.3f}")
    png = out / "map.png"
    draw_map(result, "crop_pred", bundle.classes, png)
    print(f"\nStyled layer: {result} (style {result.with_suffix('.qml').name}); map: {png}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
