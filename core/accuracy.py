"""Accuracy of a classified map against reference labels: the confusion matrix and its scores,
and area-adjusted accuracy and class areas with 95 % confidence intervals from a stratified
sample (Olofsson et al. 2014, "Good practices for estimating area and assessing accuracy of
land change", Remote Sensing of Environment 148, 42-57; equation numbers below are theirs).

The map's classes are the strata: every reference unit (parcel, point or pixel) counts once in
the stratum of the class the map gave it, and the stratum weights are the shares of the map
(its area, or its number of parcels) each class covers. The layout follows the paper: rows of
the matrix are map classes, columns reference classes.
"""

from __future__ import annotations

import base64
import csv
import html
import io
import json
import logging
import math
import os
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any, Iterable, Mapping, Optional, Sequence, Union

import numpy as np

from .accuracy_stats import (
    Z_95,
    Reliability,
    SampleScores,
    StratifiedEstimates,
    confusion_matrix,
    reliability,
    sample_scores,
    stratified_estimates,
)
from .crops import CROP_CLASSES
from .errors import InputError
from .io.csv_cells import inert_row, inert_text
from .io.output import check_distinct_outputs, check_output, write_text
from .io.safe_read import read_limited
from .reliability_figure import reliability_png

log = logging.getLogger(__name__)


def _is_missing(value: Any) -> bool:
    if value is None:
        return True
    if isinstance(value, float) and math.isnan(value):
        return True
    text = str(value).strip()
    return text == "" or text == "NULL"


def _confidence_value(value: Any) -> float:
    """A confidence attribute as a number (NaN where missing or not a number)."""
    try:
        return float(value) if not _is_missing(value) else math.nan
    except (TypeError, ValueError):
        return math.nan


def check_confidence_field(values: Sequence[Any], name: str) -> None:
    """Refuse a confidence field that holds no probabilities: text that is not a number, no value
    at all, or numbers outside 0-1 (a percentage, a score).

    Raises:
        InputError: naming the field and what it holds.
    """
    present = [v for v in values if not _is_missing(v)]
    numbers = [_confidence_value(v) for v in present]
    text = [v for v, x in zip(present, numbers) if math.isnan(x)]
    if text:
        raise InputError(f"The confidence field {name!r} holds values that are not numbers (e.g. {text[0]!r}); "
                         "choose the map's confidence field (a probability from 0 to 1, e.g. crop_conf).")
    if not numbers:
        raise InputError(f"The confidence field {name!r} holds no value; choose the map's confidence field "
                         "(e.g. crop_conf) or leave it out.")
    low, high = min(numbers), max(numbers)
    if low < 0 or high > 1:
        raise InputError(f"The confidence field {name!r} holds values from {low:g} to {high:g}; a confidence is a "
                         "probability from 0 to 1 (divide a percentage by 100).")


def class_label(value: Any) -> Optional[str]:
    """The class name of one attribute value: stripped text, integral floats as integers
    (``3.0`` -> ``"3"``, as codes read from a shapefile can be), None when missing."""
    if _is_missing(value):
        return None
    if isinstance(value, (float, np.floating)) and float(value).is_integer():
        return str(int(value))
    return str(value).strip()


def order_classes(names: Iterable[str]) -> tuple[str, ...]:
    """ThermoCrop's classes in their usual order, then any others alphabetically."""
    names = set(names)
    known = [c for c in CROP_CLASSES if c in names]
    return tuple(known + sorted(names - set(known)))



@dataclass
class AccuracyReport:
    """Everything an accuracy assessment found, ready for :func:`report_html` / :func:`write_csv`.

    Attributes:
        classes: the K class names (map and reference classes together).
        matrix: ``(K, K)`` sample counts, rows = map, columns = reference.
        sample: scores of the counts.
        map_area: ``(K,)`` the map's area (or parcels) per class, or None without weights.
        area_unit: unit of ``map_area`` (``"ha"``, ``"parcels"`` or as given).
        estimates: area-adjusted figures, or None without map areas.
        unmapped_area: area of the map without a map class (not classified), not in the strata.
        dropped_area: ``{class: area}`` of map classes left out for want of reference units.
        n_unusable: units with a reference label but no map class.
        title: what was assessed (layer and fields), for the report's heading.
        reliability: the map's confidence against the share of right labels of the sample
            (10 bins, with the expected calibration error), or None without a confidence.
        warnings: things the reader must know (strata left out, units skipped, ...).
    """

    classes: tuple[str, ...]
    matrix: np.ndarray
    sample: SampleScores
    map_area: Optional[np.ndarray] = None
    area_unit: str = "ha"
    estimates: Optional[StratifiedEstimates] = None
    unmapped_area: float = 0.0
    dropped_area: dict[str, float] = field(default_factory=dict)
    n_unusable: int = 0
    title: str = ""
    warnings: list[str] = field(default_factory=list)
    reliability: Optional[Reliability] = None

    def as_dict(self) -> dict[str, Any]:
        """Plain numbers (NaN as None) for JSON."""
        def clean(x):
            if isinstance(x, np.ndarray):
                return [clean(v) for v in x.tolist()]
            if isinstance(x, (list, tuple)):
                return [clean(v) for v in x]
            if isinstance(x, float) and math.isnan(x):
                return None
            return x

        s = self.sample
        out: dict[str, Any] = {
            "title": self.title, "classes": list(self.classes), "matrix": self.matrix.tolist(),
            "n": s.n, "overall_accuracy": clean(s.overall_accuracy), "kappa": clean(s.kappa),
            "macro_f1": clean(s.macro_f1), "users_accuracy": clean(s.users_accuracy),
            "producers_accuracy": clean(s.producers_accuracy), "f1": clean(s.f1),
            "warnings": list(self.warnings),
        }
        if self.reliability is not None:
            out["reliability"] = {"ece": self.reliability.ece, "units": self.reliability.units,
                                  "bins": [{k: clean(v) for k, v in row.items()} for row in self.reliability.bins]}
        if self.estimates is not None:
            e = self.estimates
            out["area_adjusted"] = {
                "area_unit": self.area_unit, "map_area": clean(self.map_area),
                "weights": clean(e.weights), "proportions": clean(e.proportions),
                "overall_accuracy": clean(e.overall_accuracy),
                "overall_accuracy_ci95": clean(e.ci(e.overall_accuracy_se)),
                "users_accuracy": clean(e.users_accuracy),
                "users_accuracy_ci95": clean(e.ci(e.users_accuracy_se)),
                "producers_accuracy": clean(e.producers_accuracy),
                "producers_accuracy_ci95": clean(e.ci(e.producers_accuracy_se)),
                "f1": clean(e.f1), "area": clean(e.area), "area_ci95": clean(e.ci(e.area_se)),
                "area_proportion": clean(e.area_proportion),
                "area_proportion_ci95": clean(e.ci(e.area_proportion_se)),
                "unmapped_area": self.unmapped_area, "dropped_area": dict(self.dropped_area),
            }
        return out


def assess_accuracy(mapped: Sequence[Any], reference: Sequence[Any], *,
                    map_area: Optional[Mapping[str, float]] = None, area_unit: str = "ha",
                    unmapped_area: float = 0.0, classes: Optional[Sequence[str]] = None,
                    title: str = "", confidence: Optional[Sequence[Any]] = None) -> AccuracyReport:
    """Compare map and reference labels unit by unit; with the map's class areas, also estimate
    area-adjusted accuracy and class areas (Olofsson et al. 2014).

    Units without a reference label are not in the sample and are ignored; units with a reference
    label but no map class (not classified) are counted in ``n_unusable`` and left out.

    Args:
        mapped: ``(N,)`` map class of each unit (None / empty where not classified).
        reference: ``(N,)`` reference class (None / empty where the unit was not checked).
        map_area: the whole map's area per map class (e.g. hectares of every parcel of the
            layer by predicted class, or pixel counts); None for sample scores only. A map class
            with area but no reference unit is left out of the strata with a warning.
        area_unit: unit of ``map_area`` for the report.
        unmapped_area: area of the map with no class (reported, not a stratum).
        classes: class order (default: ThermoCrop's classes, then others alphabetically).
        title: heading of the report.
        confidence: ``(N,)`` the map's confidence in each unit's class (e.g. ``crop_conf``), or
            None; with it the report has a reliability table (10 bins) and the expected
            calibration error of the sample's units that have a confidence.

    Raises:
        InputError: the lengths differ, no unit has both labels, map and reference share no
            class name, or a map class of the sample is missing from ``map_area``.
    """
    if len(mapped) != len(reference) or (confidence is not None and len(confidence) != len(mapped)):
        raise InputError(f"{len(mapped)} map labels but {len(reference)} reference labels"
                         + (f" and {len(confidence)} confidences." if confidence is not None else "."))
    pairs = [(class_label(m), class_label(r)) for m, r in zip(mapped, reference)]
    with_reference = [(m, r) for m, r in pairs if r is not None]
    sample = [(m, r) for m, r in with_reference if m is not None]
    confident = None
    if confidence is not None:
        in_sample = [_confidence_value(c) for (m, r), c in zip(pairs, confidence) if r is not None and m is not None]
        confident = reliability(in_sample, [m == r for m, r in sample])
    n_unusable = len(with_reference) - len(sample)
    if not sample:
        raise InputError(
            "No unit has both a map class and a reference class"
            + (f" ({n_unusable} reference units are not classified)" if n_unusable else "")
            + "; fill the reference field for a sample of classified parcels.")
    map_names = {m for m, _ in sample}
    ref_names = {r for _, r in sample}
    if not map_names & ref_names:
        raise InputError(
            f"The map classes ({', '.join(sorted(map_names)[:6])}) and the reference classes "
            f"({', '.join(sorted(ref_names)[:6])}) share no name; the reference field must use "
            "the classifier's class names.")
    names = set(map_names) | ref_names
    if map_area is not None:
        areas = {class_label(k): float(v) for k, v in map_area.items() if class_label(k) is not None}
        missing = sorted(map_names - set(areas))
        if missing:
            raise InputError(f"The map areas lack the classes {', '.join(missing)} found in the "
                             "sample; give the area of every map class.")
        negative = sorted(k for k, v in areas.items() if not v >= 0)
        if negative:
            raise InputError(f"The map area of {', '.join(negative)} is negative or not a number.")
        if not sum(areas.get(m, 0.0) for m in map_names) > 0:
            raise InputError(f"The map classes of the sample have no {area_unit or 'area'} in the map "
                             "(points or lines have no area); weight the classes by parcel count or give "
                             "their areas.")
        names |= {k for k, v in areas.items() if v > 0}
    if classes is not None:
        extra = sorted(names - set(classes))
        order = tuple(classes) + tuple(extra)
    else:
        order = order_classes(names)
    matrix = confusion_matrix([m for m, _ in sample], [r for _, r in sample], order)
    report = AccuracyReport(classes=order, matrix=matrix, sample=sample_scores(matrix),
                            area_unit=area_unit, unmapped_area=float(unmapped_area),
                            n_unusable=n_unusable, title=title, reliability=confident)
    if confident is not None and confident.units < len(sample):
        report.warnings.append(f"{len(sample) - confident.units} reference units have no confidence and are left "
                               "out of the reliability table.")
    if n_unusable:
        report.warnings.append(f"{n_unusable} reference units have no map class (not classified) "
                               "and are left out.")
    if map_area is None:
        return report
    a_m = np.array([areas.get(c, 0.0) for c in order])
    report.map_area = a_m
    n_i = matrix.sum(axis=1)
    strata = a_m.copy()
    for i, c in enumerate(order):
        if a_m[i] > 0 and n_i[i] == 0:
            report.dropped_area[c] = float(a_m[i])
            strata[i] = 0.0
    if report.dropped_area:
        share = sum(report.dropped_area.values()) / a_m.sum()
        report.warnings.append(
            f"Map classes without any reference unit ({', '.join(report.dropped_area)}; "
            f"{100 * share:.1f} % of the mapped {area_unit}) are left out of the area-adjusted "
            "figures, which cover the rest of the map; add reference units in these classes.")
    if not strata.sum() > 0:
        report.warnings.append("No map area is left for area-adjusted figures.")
        return report
    small = [c for i, c in enumerate(order) if strata[i] > 0 and n_i[i] == 1]
    if small:
        report.warnings.append(
            f"Map classes with a single reference unit ({', '.join(small)}): a stratum needs two "
            "units for a variance, so the confidence intervals that depend on them (overall "
            "accuracy and every class area among them) cannot be estimated (n/a); add reference "
            "units in these classes.")
    if unmapped_area > 0:
        report.warnings.append(
            f"{unmapped_area:,.1f} {area_unit} of the map are not classified and are not part of "
            "the strata.")
    report.estimates = stratified_estimates(matrix, strata)
    return report


# Reading a layer -------------------------------------------------------------------------------

WEIGHTINGS = ("area", "count", "none")
"""How map class weights are taken from a classified layer: parcel areas (ha), parcel counts,
or none (sample scores only)."""


def geodesic_areas_ha(geometries: Any) -> np.ndarray:
    """``(N,)`` area of each polygon on the WGS 84 ellipsoid, in hectares (0 for empty ones).

    Args:
        geometries: a GeoSeries (or GeoDataFrame) with a CRS.

    Raises:
        InputError: the geometries have no CRS.
    """
    from pyproj import Geod

    if geometries.crs is None:
        raise InputError("The layer has no coordinate reference system, so its areas cannot be "
                         "measured; set its CRS, or weight the map classes by parcel count.")
    series = geometries.geometry if hasattr(geometries, "geometry") else geometries
    if not series.crs.equals("EPSG:4326"):
        series = series.to_crs("EPSG:4326")
    geod = Geod(ellps="WGS84")
    areas = np.zeros(len(series))
    for i, geom in enumerate(series.values):
        if geom is not None and not geom.is_empty:
            areas[i] = abs(geod.geometry_area_perimeter(geom)[0])
    return areas / 10_000.0


def map_class_weights(mapped: Sequence[Any], sizes: Optional[np.ndarray] = None
                      ) -> tuple[dict[str, float], float]:
    """The map's total size per class: sum of ``sizes`` (areas) or parcel counts without.

    Returns:
        ``({class: size}, size of the units without a class)``.
    """
    sizes = np.ones(len(mapped)) if sizes is None else np.asarray(sizes, dtype=np.float64)
    totals: dict[str, float] = {}
    unmapped = 0.0
    for value, size in zip(mapped, sizes):
        name = class_label(value)
        if name is None:
            unmapped += float(size)
        else:
            totals[name] = totals.get(name, 0.0) + float(size)
    return totals, unmapped


def read_class_areas(path: Union[str, os.PathLike]) -> dict[str, float]:
    """Map class areas from a CSV with a header: the first column the class, the second its area
    (e.g. ``class,area_ha`` or ``class,pixels``).

    Raises:
        InputError: the file is missing, has fewer than two columns, a class twice or an area
            that is not a non-negative number.
    """
    path = Path(path)
    if not path.is_file():
        raise InputError(f"The class-area table {path} does not exist; give a CSV of class,area.")
    try:
        text = read_limited(path, what="class-area table").decode("utf-8-sig")
        rows = [row for row in csv.reader(io.StringIO(text, newline=""))
                if row and any(cell.strip() for cell in row)]
    except (UnicodeDecodeError, csv.Error) as exc:
        raise InputError(f"The class-area table {path} cannot be read as CSV ({exc}).") from None
    if len(rows) < 2 or len(rows[0]) < 2:
        raise InputError(f"{path}: expected a header and one row per class with two columns, "
                         "class and area (e.g. 'class,area_ha').")
    areas: dict[str, float] = {}
    for line, row in enumerate(rows[1:], start=2):
        name = class_label(row[0])
        if name is None:
            raise InputError(f"{path}, line {line}: the class name is empty.")
        if name in areas:
            raise InputError(f"{path}, line {line}: class {name!r} is listed twice.")
        try:
            value = float(row[1])
        except (ValueError, IndexError):
            raise InputError(f"{path}, line {line}: the area of {name!r} is not a number.") from None
        if not value >= 0:
            raise InputError(f"{path}, line {line}: the area of {name!r} is negative.")
        areas[name] = value
    return areas


def assess_layer(frame: Any, mapped_field: str, reference_field: str, *,
                 weighting: str = "area", class_areas: Optional[Mapping[str, float]] = None,
                 area_unit: Optional[str] = None, title: str = "",
                 confidence_field: Optional[str] = None) -> AccuracyReport:
    """Assess a classified parcel layer: the map is every feature's ``mapped_field``, the sample
    the features whose ``reference_field`` is filled.

    Args:
        frame: a (Geo)DataFrame of the layer (geometry needed for ``weighting="area"``).
        mapped_field: field of the map (predicted) class.
        reference_field: field of the reference class (empty where not checked).
        weighting: ``"area"`` (map classes weighted by their parcels' geodesic area, ha),
            ``"count"`` (by their number of parcels) or ``"none"``; ignored with ``class_areas``.
        class_areas: the map's class areas given by the user (e.g. of a larger map).
        area_unit: unit of ``class_areas`` for the report (default "map units").
        title: heading of the report.
        confidence_field: field of the map's confidence (e.g. ``crop_conf``) for the
            reliability table, or None.

    Raises:
        InputError: a field is missing, or see :func:`assess_accuracy`.
    """
    named = [(mapped_field, "map (predicted) class"), (reference_field, "reference class")]
    if confidence_field:
        named.append((confidence_field, "confidence"))
    for name, what in named:
        if name not in frame.columns:
            fields = ", ".join(c for c in frame.columns if c != "geometry")
            raise InputError(f"The layer has no field {name!r} for the {what}; its fields are {fields}.")
    if mapped_field == reference_field:
        raise InputError("The map and the reference field are the same field; choose the field "
                         "holding the reference (ground truth) classes.")
    if len(frame) == 0:
        raise InputError("The layer has no features: there is no map to assess. Choose the classified layer.")
    if confidence_field in (mapped_field, reference_field):
        what = "map (predicted) class" if confidence_field == mapped_field else "reference class"
        raise InputError(f"The confidence field {confidence_field!r} is the field of the {what}; choose the map's "
                         "confidence field (e.g. crop_conf) or leave it out.")
    if confidence_field:
        check_confidence_field(list(frame[confidence_field]), confidence_field)
    mapped = list(frame[mapped_field])
    reference = list(frame[reference_field])
    unmapped = 0.0
    if class_areas is not None:
        map_area, unit = dict(class_areas), area_unit or "map units"
    elif weighting == "none":
        map_area, unit = None, ""
    elif weighting == "count":
        map_area, unmapped = map_class_weights(mapped)
        unit = "parcels"
    elif weighting == "area":
        map_area, unmapped = map_class_weights(mapped, geodesic_areas_ha(frame))
        unit = "ha"
    else:
        raise InputError(f"Unknown weighting {weighting!r}; use one of {', '.join(WEIGHTINGS)}.")
    return assess_accuracy(mapped, reference, map_area=map_area, area_unit=unit, unmapped_area=unmapped,
                           title=title, confidence=list(frame[confidence_field]) if confidence_field else None)


# Writing the report ----------------------------------------------------------------------------

def _fmt(value: float, digits: int = 3) -> str:
    return "n/a" if value is None or not np.isfinite(value) else f"{value:.{digits}f}"


def format_estimate(value: float, se: float, digits: int = 3) -> str:
    """``"0.947 ± 0.018"``: an estimate and the half-width of its 95 % interval (n/a where
    either cannot be estimated)."""
    if not np.isfinite(value):
        return "n/a"
    half = Z_95 * se
    return f"{value:.{digits}f} ± {_fmt(half, digits)}"


def _fmt_area(value: float) -> str:
    if not np.isfinite(value):
        return "n/a"
    return f"{value:,.0f}" if abs(value) >= 100 else f"{value:,.2f}"


def _whole_percent(value: float) -> str:
    """``value`` (a proportion) in whole per cent; ``<1`` for a share above 0 that rounds to 0."""
    percent = 100 * float(value)
    return "<1" if 0 < percent < 0.5 else f"{percent:.0f}"


def _heat(share: float, diagonal: bool) -> str:
    """Background colour of a matrix cell: blue for agreement, orange for confusion, by share."""
    if not share > 0:
        return "#ffffff"
    base = (33, 102, 172) if diagonal else (214, 96, 77)
    t = 0.15 + 0.85 * min(share, 1.0)
    r, g, b = (round(255 + (c - 255) * t) for c in base)
    return f"#{r:02x}{g:02x}{b:02x}"


_CSS = """
body { font-family: sans-serif; font-size: 10pt; color: #222; margin: 12px; }
h1 { font-size: 14pt; } h2 { font-size: 12pt; margin-top: 18px; }
table { border-collapse: collapse; margin: 6px 0; }
th, td { border: 1px solid #bbb; padding: 3px 6px; text-align: right; }
th { background: #eee; } td.name, th.name { text-align: left; }
p.note { color: #555; font-size: 9pt; } ul.warn { color: #8a4b00; }
"""
_NARROW_CSS = "body { margin: 4px; } th, td { padding: 2px 3px; }\n"
"""What :func:`report_html` adds for a narrow panel."""


def report_html(report: AccuracyReport, narrow: bool = False) -> str:
    """The report as one self-contained HTML page (inline style, no scripts, no external files);
    the confusion matrix is a heat map coloured by each cell's share of its map class.

    ``narrow``: for a narrow panel: the matrices' columns headed by class numbers (``1``, ``2``,
    ...) and their rows by number and name (``1 corn``), their cells never wrapped, the user's
    and producer's accuracies only in the per-class table, the estimated error matrix in per
    cent with one decimal, and table cells padded less, so that a matrix is as narrow as its
    numbers; otherwise the matrices are headed by the class names.
    """
    e, s, classes = report.estimates, report.sample, report.classes
    esc = html.escape
    out = ["<!DOCTYPE html>", "<html><head><meta charset=\"utf-8\">",
           f"<title>{esc(report.title or 'Accuracy assessment')}</title>",
           f"<style>{_CSS}{_NARROW_CSS if narrow else ''}</style></head><body>",
           f"<h1>Accuracy assessment{': ' + esc(report.title) if report.title else ''}</h1>",
           f"<p class=\"note\">ThermoCrop, {datetime.now():%Y-%m-%d %H:%M}</p>"]
    if report.warnings:
        out.append("<ul class=\"warn\">" + "".join(f"<li>{esc(w)}</li>" for w in report.warnings)
                   + "</ul>")
    summary = [("Reference units", f"{s.n:,}"), ("Overall accuracy", _fmt(s.overall_accuracy)),
               ("Kappa", _fmt(s.kappa)), ("Macro F1", _fmt(s.macro_f1))]
    if e is not None:
        summary.append(("Area-adjusted overall accuracy (95 % CI)",
                        format_estimate(e.overall_accuracy, e.overall_accuracy_se)))
    out.append("<h2>Summary</h2><table>" + "".join(
        f"<tr><th class=\"name\">{esc(k)}</th><td>{esc(v)}</td></tr>" for k, v in summary) + "</table>")

    # Heat map of the counts.
    counts = report.matrix
    row_tot, col_tot = counts.sum(axis=1), counts.sum(axis=0)
    out.append("<h2>Confusion matrix (reference units)</h2>")
    out.append("<p class=\"note\">Rows: map (predicted) class; columns: reference class. Colour: "
               "the cell's share of its row (blue: agreement, orange: confusion).</p>")
    # Narrow: numbered columns, cells that never wrap (a squeezed table would break "12" or
    # "total" letter by letter), and the user's and producer's accuracies left to the per-class
    # table, so that the matrix is as narrow as its counts.
    nowrap = ";white-space:nowrap" if narrow else ""
    cell = "<td style=\"white-space:nowrap\">" if narrow else "<td>"
    if narrow:
        head = "".join(f"<th style=\"white-space:nowrap\">{k}</th>" for k in range(1, len(classes) + 1))
        row_names = [f"{k} {esc(c)}" for k, c in enumerate(classes, 1)]
        out.append("<p class=\"note\">Columns are numbered as the rows; user's and producer's accuracies "
                   "are in the per-class table.</p>")
        rows = [f"<tr><th class=\"name\">map \\ reference</th>{head}<th style=\"white-space:nowrap\">total</th>"
                "</tr>"]
    else:
        head = "".join(f"<th>{esc(c)}</th>" for c in classes)
        row_names = [esc(c) for c in classes]
        rows = [f"<tr><th class=\"name\">map \\ reference</th>{head}<th>total</th><th>user's</th></tr>"]
    for i in range(len(classes)):
        cells = []
        for j in range(len(classes)):
            share = counts[i, j] / row_tot[i] if row_tot[i] else 0.0
            colour = _heat(share, i == j)
            ink = "#ffffff" if share > 0.6 else "#222222"
            cells.append(f"<td bgcolor=\"{colour}\" style=\"background-color:{colour};color:{ink}{nowrap}\">"
                         f"{counts[i, j]}</td>")
        users = "" if narrow else f"<td>{_fmt(s.users_accuracy[i])}</td>"
        rows.append(f"<tr><th class=\"name\">{row_names[i]}</th>{''.join(cells)}{cell}{row_tot[i]}</td>{users}</tr>")
    rows.append("<tr><th class=\"name\">total</th>" + "".join(f"{cell}{v}</td>" for v in col_tot)
                + f"{cell}{counts.sum()}</td>" + ("" if narrow else "<td></td>") + "</tr>")
    if not narrow:
        rows.append("<tr><th class=\"name\">producer's</th>" + "".join(
            f"<td>{_fmt(v)}</td>" for v in s.producers_accuracy) + "<td></td><td></td></tr>")
    out.append("<table>" + "".join(rows) + "</table>")

    out.append("<h2>Per class (reference units, unweighted)</h2><table><tr><th class=\"name\">class"
               "</th><th>mapped</th><th>reference</th><th>correct</th><th>user's accuracy</th>"
               "<th>producer's accuracy</th><th>F1</th></tr>")
    for i, c in enumerate(classes):
        out.append(f"<tr><td class=\"name\">{esc(c)}</td><td>{row_tot[i]}</td><td>{col_tot[i]}</td>"
                   f"<td>{counts[i, i]}</td><td>{_fmt(s.users_accuracy[i])}</td>"
                   f"<td>{_fmt(s.producers_accuracy[i])}</td><td>{_fmt(s.f1[i])}</td></tr>")
    out.append("</table>")

    if report.reliability is not None:
        out.append(_reliability_html(report.reliability))

    if e is not None:
        unit = esc(report.area_unit)
        out.append("<h2>Area-adjusted accuracy and class areas (stratified estimators, 95 % "
                   "confidence intervals)</h2><table><tr><th class=\"name\">class</th>"
                   f"<th>mapped ({unit})</th><th>weight W<sub>i</sub></th>"
                   "<th>user's accuracy</th><th>producer's accuracy</th><th>F1</th>"
                   f"<th>estimated area ({unit})</th><th>area share</th></tr>")
        for i, c in enumerate(classes):
            out.append(
                f"<tr><td class=\"name\">{esc(c)}</td><td>{_fmt_area(report.map_area[i])}</td>"
                f"<td>{_fmt(e.weights[i], 4)}</td>"
                f"<td>{format_estimate(e.users_accuracy[i], e.users_accuracy_se[i])}</td>"
                f"<td>{format_estimate(e.producers_accuracy[i], e.producers_accuracy_se[i])}</td>"
                f"<td>{_fmt(e.f1[i])}</td>"
                f"<td>{_fmt_area(e.area[i])} ± {_fmt_area(Z_95 * e.area_se[i])}</td>"
                f"<td>{format_estimate(e.area_proportion[i], e.area_proportion_se[i], 4)}</td></tr>")
        out.append(f"<tr><td class=\"name\">total</td><td>{_fmt_area(e.total_area)}</td><td>1</td>"
                   "<td></td><td></td><td></td>"
                   f"<td>{_fmt_area(e.area.sum())}</td><td>1</td></tr></table>")
        # Narrow: whole per cent, as narrow as the counts above.
        share = (lambda v: esc(_whole_percent(v))) if narrow else (lambda v: _fmt(v, 4))
        unit = "per cent, rounded" if narrow else "proportions"
        out.append(f"<h2>Estimated error matrix ({unit} of mapped area)</h2><table>"
                   f"<tr><th class=\"name\">map \\ reference</th>{head}<th>total</th></tr>")
        for i in range(len(classes)):
            out.append(f"<tr><th class=\"name\">{row_names[i]}</th>" + "".join(
                f"{cell}{share(v)}</td>" for v in e.proportions[i])
                + f"{cell}{share(e.proportions[i].sum())}</td></tr>")
        out.append("<tr><th class=\"name\">total</th>" + "".join(
            f"{cell}{share(v)}</td>" for v in e.area_proportion) + f"{cell}{share(1.0)}</td></tr></table>")
        out.append(
            "<p class=\"note\">Stratified estimators of Olofsson et al. (2014), Remote Sensing of "
            "Environment 148, 42-57 (eqs. 1-13), with the map classes as strata: each reference "
            "unit counts once in the stratum of its map class, weighted by the map's share W<sub>i"
            "</sub> of that class. They are unbiased for a random sample within each map class "
            "(or a simple random / systematic sample of the map). With parcels as units and area "
            "weights, every sampled parcel stands for an equal share of its stratum's area.</p>")
    out.append("</body></html>")
    return "\n".join(out)


def _reliability_html(table: Reliability) -> str:
    """The reliability section: the diagram (inline PNG), the expected calibration error and the
    table of bins."""
    parts = ["<h2>Reliability of the confidence</h2>",
             f"<p>Expected calibration error (10 bins): <b>{_fmt(table.ece)}</b> over {table.units:,} reference "
             "units. A calibrated confidence is right as often as it says: of the parcels at 0.8, eight in ten.</p>"]
    png = reliability_png(table)
    if png is not None:
        data = base64.b64encode(png).decode("ascii")
        parts.append(f"<p><img alt=\"reliability diagram\" src=\"data:image/png;base64,{data}\"></p>")
    rows = "".join(f"<tr><td class=\"name\">{row['low']:.1f}-{row['high']:.1f}</td><td>{row['parcels']}</td>"
                   f"<td>{_fmt(row['confidence'])}</td><td>{_fmt(row['accuracy'])}</td></tr>" for row in table.bins)
    parts.append("<table><tr><th class=\"name\">confidence</th><th>units</th><th>mean confidence</th>"
                 f"<th>share right</th></tr>{rows}</table>")
    return "".join(parts)


def write_html(report: AccuracyReport, path: Union[str, os.PathLike], *, overwrite: bool = True,
               inputs: Sequence[Union[str, os.PathLike, None]] = ()) -> Path:
    """Write :func:`report_html` to ``path`` (checked and staged, see :func:`write_reports`)."""
    return write_reports(report, [("html", "", path)], overwrite=overwrite, inputs=inputs)[0]


CSV_COLUMNS = (
    "class", "n_mapped", "n_reference", "n_correct", "users_accuracy", "producers_accuracy", "f1",
    "overall_accuracy", "kappa", "map_area", "area_unit", "weight", "adj_users_accuracy",
    "adj_users_accuracy_ci95", "adj_producers_accuracy", "adj_producers_accuracy_ci95", "adj_f1",
    "adj_overall_accuracy", "adj_overall_accuracy_ci95", "estimated_area", "estimated_area_ci95",
)
"""Columns of :func:`write_csv`: one row per class, then a row ``overall``; ``adj_`` columns
are the area-adjusted estimates, ``_ci95`` the half-widths of their 95 % intervals."""


def report_rows(report: AccuracyReport) -> list[dict[str, Any]]:
    """The rows of :func:`write_csv` as dicts (numbers, or "" where a value does not apply)."""
    s, e, counts = report.sample, report.estimates, report.matrix

    def num(x):
        return "" if x is None or not np.isfinite(x) else float(x)

    rows = []
    for i, c in enumerate(report.classes):
        row = {"class": c, "n_mapped": int(counts[i].sum()), "n_reference": int(counts[:, i].sum()),
               "n_correct": int(counts[i, i]), "users_accuracy": num(s.users_accuracy[i]),
               "producers_accuracy": num(s.producers_accuracy[i]), "f1": num(s.f1[i])}
        if e is not None:
            row.update({
                "map_area": num(report.map_area[i]), "area_unit": report.area_unit,
                "weight": num(e.weights[i]), "adj_users_accuracy": num(e.users_accuracy[i]),
                "adj_users_accuracy_ci95": num(Z_95 * e.users_accuracy_se[i]),
                "adj_producers_accuracy": num(e.producers_accuracy[i]),
                "adj_producers_accuracy_ci95": num(Z_95 * e.producers_accuracy_se[i]),
                "adj_f1": num(e.f1[i]), "estimated_area": num(e.area[i]),
                "estimated_area_ci95": num(Z_95 * e.area_se[i])})
        rows.append(row)
    overall = {"class": "overall", "n_mapped": s.n, "n_reference": s.n,
               "n_correct": int(np.trace(counts)), "f1": num(s.macro_f1),
               "overall_accuracy": num(s.overall_accuracy), "kappa": num(s.kappa)}
    if e is not None:
        overall.update({"map_area": num(e.total_area), "area_unit": report.area_unit, "weight": 1.0,
                        "adj_overall_accuracy": num(e.overall_accuracy),
                        "adj_overall_accuracy_ci95": num(Z_95 * e.overall_accuracy_se),
                        "estimated_area": num(e.area.sum())})
    rows.append(overall)
    return rows


def report_csv(report: AccuracyReport) -> str:
    """Per-class table (columns :data:`CSV_COLUMNS`) as CSV text."""
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=CSV_COLUMNS, restval="", lineterminator="\n")
    writer.writeheader()
    for row in report_rows(report):
        writer.writerow({k: (f"{v:.6g}" if isinstance(v, float) else inert_text(v)) for k, v in row.items()})
    return buffer.getvalue()


def matrix_csv(report: AccuracyReport) -> str:
    """The count matrix as CSV text: first column the map class, one column per reference class."""
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(inert_row(["map \\ reference", *report.classes]))
    for name, row in zip(report.classes, report.matrix):
        writer.writerow([inert_text(name), *(int(v) for v in row)])
    return buffer.getvalue()


def report_json(report: AccuracyReport) -> str:
    """Every figure of the report as JSON text."""
    return json.dumps(report.as_dict(), indent=2)


REPORT_FORMATS = {
    "html": ("accuracy report", report_html),
    "csv": ("per-class table", report_csv),
    "matrix": ("confusion matrix table", matrix_csv),
    "json": ("accuracy figures", report_json),
}
"""What :func:`write_reports` can write: kind -> (how messages name it, renderer)."""

ReportOutput = tuple[str, str, Union[str, os.PathLike, None]]
"""``(kind, label, path)``: a kind of :data:`REPORT_FORMATS`, the name the user gave the output
(``--html``, ``OUTPUT_CSV``; "" where the user named none) and its path (None: not written)."""


def check_report_outputs(outputs: Sequence[ReportOutput], *, overwrite: bool = False,
                         inputs: Sequence[Union[str, os.PathLike, None]] = ()) -> list[tuple[str, Path]]:
    """Check every report output before the assessment: ``core.io.output.check_output`` for each
    (the folder can be written, the name fits, it is none of ``inputs`` under any name, it does
    not exist unless ``overwrite``) and no two of them are one file.

    Returns:
        ``(kind, path)`` of the outputs to write, their paths absolute.

    Raises:
        OutputError: naming the output and what to do.
    """
    wanted = [(kind, label, path) for kind, label, path in outputs if path is not None and str(path).strip()]
    checked = []
    for kind, label, path in wanted:
        what = f"{REPORT_FORMATS[kind][0]} ({label})" if label else REPORT_FORMATS[kind][0]
        checked.append((kind, check_output(path, what=what, overwrite=overwrite, inputs=[i for i in inputs if i])))
    check_distinct_outputs([(label or f"the {REPORT_FORMATS[kind][0]}", path) for kind, label, path in wanted])
    return checked


def write_reports(report: AccuracyReport, outputs: Sequence[ReportOutput], *, overwrite: bool = False,
                  inputs: Sequence[Union[str, os.PathLike, None]] = ()) -> list[Path]:
    """Write the report's files, each staged, read back and moved into place by one rename.

    The outputs are checked again first (:func:`check_report_outputs`), so an output that is
    an input or another output is refused even when the caller skipped the preflight, and an
    existing file is replaced only with ``overwrite`` (also when it appeared meanwhile).

    Returns:
        The written paths, in the order given.

    Raises:
        OutputError: an output was refused or could not be written (the disk may be full);
            what was at its path is unchanged.
    """
    checked = check_report_outputs(outputs, overwrite=overwrite, inputs=inputs)
    texts = [(path, REPORT_FORMATS[kind][0], REPORT_FORMATS[kind][1](report)) for kind, path in checked]
    return [write_text(path, text, overwrite=overwrite, what=what) for path, what, text in texts]


def write_csv(report: AccuracyReport, path: Union[str, os.PathLike], *, overwrite: bool = True,
              inputs: Sequence[Union[str, os.PathLike, None]] = ()) -> Path:
    """Per-class table (columns :data:`CSV_COLUMNS`) as CSV (checked and staged)."""
    return write_reports(report, [("csv", "", path)], overwrite=overwrite, inputs=inputs)[0]


def write_matrix_csv(report: AccuracyReport, path: Union[str, os.PathLike], *, overwrite: bool = True,
                     inputs: Sequence[Union[str, os.PathLike, None]] = ()) -> Path:
    """The count matrix as CSV (checked and staged)."""
    return write_reports(report, [("matrix", "", path)], overwrite=overwrite, inputs=inputs)[0]
