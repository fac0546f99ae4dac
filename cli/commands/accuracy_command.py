"""``thermocrop accuracy``: a classified layer against its reference field (confusion matrix,
accuracies, F1, kappa, area-adjusted accuracy and class areas) as HTML and CSV."""

from __future__ import annotations

import argparse

HELP = ("accuracy of a classified layer against a reference field: confusion matrix, kappa, "
        "F1, area-adjusted accuracy and class areas with 95%% intervals (HTML + CSV)")


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--layer", required=True,
                        help="classified vector file (e.g. from 'thermocrop classify'); every feature "
                             "is part of the map, those with a reference class are the sample")
    parser.add_argument("--layer-name", help="layer inside a multi-layer file such as a GeoPackage")
    parser.add_argument("--predicted", default="crop_pred",
                        help="field of the map's (predicted) class (default crop_pred)")
    parser.add_argument("--reference", required=True,
                        help="field of the reference class, empty where a feature was not checked")
    parser.add_argument("--confidence", help="the map's confidence field (e.g. crop_conf): adds a reliability "
                                             "diagram and the expected calibration error to the report")
    parser.add_argument("--weighting", choices=("area", "count", "none"), default="area",
                        help="map class areas (strata weights) from the features' ellipsoidal areas "
                             "in ha (default), their number, or none (sample scores only)")
    parser.add_argument("--class-areas",
                        help="CSV of the map's class areas (header, then class,area per row); "
                             "overrides --weighting")
    parser.add_argument("--area-unit", default="map units",
                        help="unit of --class-areas for the report (default 'map units')")
    parser.add_argument("--html", required=True, help="HTML report to write")
    parser.add_argument("--csv", help="per-class CSV table (default: beside --html, <stem>.csv)")
    parser.add_argument("--matrix-csv", help="also write the confusion matrix as CSV")
    parser.add_argument("--json", help="also write every figure as JSON")
    parser.add_argument("--overwrite", action="store_true", help="replace existing report files")


def run(args: argparse.Namespace) -> int:
    import logging
    from pathlib import Path

    import numpy as np

    from ...core.accuracy import (
        Z_95,
        assess_layer,
        check_report_outputs,
        format_estimate,
        read_class_areas,
        write_reports,
    )
    from ...core.errors import InputError

    log = logging.getLogger("thermocrop.accuracy")
    html_path = Path(args.html)
    csv_path = Path(args.csv) if args.csv else html_path.with_suffix(".csv")
    outputs = [("html", "--html", html_path), ("csv", "--csv", csv_path),
               ("matrix", "--matrix-csv", args.matrix_csv), ("json", "--json", args.json)]
    inputs = [args.layer, args.class_areas]
    # Every output is checked before the layer is read: none is an input or another output.
    check_report_outputs(outputs, overwrite=args.overwrite, inputs=inputs)
    frame = _read_layer(args.layer, args.layer_name, need_geometry=args.class_areas is None
                        and args.weighting == "area")
    areas = read_class_areas(args.class_areas) if args.class_areas else None
    try:
        report = assess_layer(frame, args.predicted, args.reference, weighting=args.weighting,
                              class_areas=areas, area_unit=args.area_unit, confidence_field=args.confidence,
                              title=f"{Path(args.layer).name} ({args.predicted} against {args.reference})")
    except InputError as exc:  # the core speaks of "the layer": say which
        where = f"{args.layer}" + (f" (layer {args.layer_name})" if args.layer_name else "")
        raise InputError(f"{where}: {exc}") from None
    for warning in report.warnings:
        log.warning(warning)
    written = write_reports(report, outputs, overwrite=args.overwrite, inputs=inputs)

    s, e = report.sample, report.estimates
    print(f"reference units {s.n}  OA {s.overall_accuracy:.4f}  kappa {s.kappa:.4f}  "
          f"macro F1 {s.macro_f1:.4f}")
    if report.reliability is not None:
        print(f"expected calibration error (10 bins) {report.reliability.ece:.4f} over {report.reliability.units} "
              f"units with a {args.confidence}")
    if e is not None:
        print(f"area-adjusted OA {format_estimate(e.overall_accuracy, e.overall_accuracy_se, 4)} "
              f"(95 %), map classes weighted by {report.area_unit}")
    head = f"{'class':<18}{'mapped':>7}{'ref':>6}{'UA':>7}{'PA':>7}{'F1':>7}"
    if e is not None:
        head += f"{'adj UA':>16}{'adj PA':>16}{'area (' + report.area_unit + ')':>26}"
    print(head)

    def pm(value, se, digits=3):
        if not np.isfinite(value):
            return "n/a"
        half = Z_95 * se
        return f"{value:.{digits}f}±" + ("n/a" if not np.isfinite(half) else f"{half:.{digits}f}")

    for i, name in enumerate(report.classes):
        line = (f"{name:<18}{report.matrix[i].sum():>7}{report.matrix[:, i].sum():>6}"
                + "".join(f"{v:>7.3f}" if np.isfinite(v) else f"{'n/a':>7}"
                          for v in (s.users_accuracy[i], s.producers_accuracy[i], s.f1[i])))
        if e is not None:
            line += (f"{pm(e.users_accuracy[i], e.users_accuracy_se[i]):>16}"
                     f"{pm(e.producers_accuracy[i], e.producers_accuracy_se[i]):>16}"
                     f"{pm(e.area[i], e.area_se[i], 1):>26}")
        print(line)
    print("wrote " + ", ".join(str(p) for p in written))
    return 0


def _read_layer(path: str, layer: str | None, need_geometry: bool):
    """The layer as a GeoDataFrame; clear errors for a missing file or layer."""
    from pathlib import Path

    import geopandas as gpd

    from ...core.errors import InputError
    from ...core.io.geoparquet import is_parquet, read_geoparquet

    if not Path(path).exists():
        raise InputError(f"The classified layer {path} does not exist; give the file written by "
                         "'thermocrop classify' (or any vector file with both fields).")
    if is_parquet(path):  # classify writes GeoParquet too; this GDAL has no Parquet driver
        return read_geoparquet(path)
    try:
        return gpd.read_file(path, layer=layer, ignore_geometry=not need_geometry)
    except Exception as exc:  # fiona / pyogrio raise their own types
        raise InputError(f"{path}{f' (layer {layer})' if layer else ''} cannot be read as a vector "
                         f"layer: {exc}") from exc
