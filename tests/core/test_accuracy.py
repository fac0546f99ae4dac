"""Accuracy assessment: sample scores by hand, and the stratified estimators checked against
Olofsson et al. (2014)'s worked example, recomputed here with exact fractions."""

from __future__ import annotations

import csv
import math
from fractions import Fraction
from html.parser import HTMLParser

import numpy as np
import pytest

from thermocrop.core.accuracy import (
    CSV_COLUMNS,
    assess_accuracy,
    assess_layer,
    confusion_matrix,
    format_estimate,
    geodesic_areas_ha,
    read_class_areas,
    report_html,
    sample_scores,
    stratified_estimates,
    write_csv,
    write_html,
    write_matrix_csv,
)
from thermocrop.core.errors import InputError, OutputError

# Olofsson et al. 2014, section 5: sample counts (rows = map, columns = reference) of
# deforestation, forest gain, stable forest, stable non-forest, and the mapped pixels (30 m).
PAPER_CLASSES = ("deforestation", "forest_gain", "stable_forest", "stable_non_forest")
PAPER_COUNTS = [[66, 0, 5, 4], [0, 55, 8, 12], [1, 0, 153, 11], [2, 1, 9, 313]]
PAPER_PIXELS = [200_000, 150_000, 3_200_000, 6_450_000]
PIXEL_HA = Fraction(9, 100)


def _exact_olofsson(counts, pixels):
    """The paper's equations term by term in exact arithmetic (variances, not yet rooted)."""
    k = len(counts)
    n_i = [sum(row) for row in counts]
    total = sum(pixels)
    w = [Fraction(a, total) for a in pixels]
    p = [[w[i] * Fraction(counts[i][j], n_i[i]) for j in range(k)] for i in range(k)]
    p_col = [sum(p[i][j] for i in range(k)) for j in range(k)]
    ua = [Fraction(counts[i][i], n_i[i]) for i in range(k)]
    pa = [p[j][j] / p_col[j] for j in range(k)]
    oa = sum(p[i][i] for i in range(k))
    var_ua = [ua[i] * (1 - ua[i]) / (n_i[i] - 1) for i in range(k)]
    var_oa = sum(w[i] ** 2 * var_ua[i] for i in range(k))
    var_area = [sum(w[i] ** 2 * Fraction(counts[i][j], n_i[i]) * (1 - Fraction(counts[i][j], n_i[i]))
                    / (n_i[i] - 1) for i in range(k)) for j in range(k)]
    var_pa = []
    for j in range(k):
        n_hat = sum(Fraction(pixels[i], n_i[i]) * counts[i][j] for i in range(k))
        first = pixels[j] ** 2 * (1 - pa[j]) ** 2 * ua[j] * (1 - ua[j]) / (n_i[j] - 1)
        second = pa[j] ** 2 * sum(
            pixels[i] ** 2 * Fraction(counts[i][j], n_i[i]) * (1 - Fraction(counts[i][j], n_i[i]))
            / (n_i[i] - 1) for i in range(k) if i != j)
        var_pa.append((first + second) / n_hat ** 2)
    return {"oa": oa, "var_oa": var_oa, "ua": ua, "var_ua": var_ua, "pa": pa, "var_pa": var_pa,
            "p": p, "p_col": p_col, "var_area": var_area, "total": total}


def _labels_of(counts, classes):
    mapped, reference = [], []
    for i, row in enumerate(counts):
        for j, n in enumerate(row):
            mapped += [classes[i]] * n
            reference += [classes[j]] * n
    return mapped, reference


def test_stratified_estimates_reproduce_olofsson_2014_example():
    exact = _exact_olofsson(PAPER_COUNTS, PAPER_PIXELS)
    est = stratified_estimates(np.array(PAPER_COUNTS), np.array(PAPER_PIXELS) * 0.09)
    total_ha = float(exact["total"] * PIXEL_HA)
    assert est.total_area == pytest.approx(total_ha)
    assert est.overall_accuracy == pytest.approx(float(exact["oa"]), rel=1e-12)
    assert est.overall_accuracy_se == pytest.approx(math.sqrt(exact["var_oa"]), rel=1e-12)
    np.testing.assert_allclose(est.proportions, np.array(exact["p"], dtype=float), rtol=1e-12)
    np.testing.assert_allclose(est.users_accuracy, [float(v) for v in exact["ua"]], rtol=1e-12)
    np.testing.assert_allclose(est.users_accuracy_se, [math.sqrt(v) for v in exact["var_ua"]], rtol=1e-12)
    np.testing.assert_allclose(est.producers_accuracy, [float(v) for v in exact["pa"]], rtol=1e-12)
    np.testing.assert_allclose(est.producers_accuracy_se, [math.sqrt(v) for v in exact["var_pa"]],
                               rtol=1e-12)
    np.testing.assert_allclose(est.area, [float(v) * total_ha for v in exact["p_col"]], rtol=1e-12)
    np.testing.assert_allclose(est.area_se, [math.sqrt(v) * total_ha for v in exact["var_area"]],
                               rtol=1e-12)

    # The figures the paper prints (rounded): areas in ha with 95 % intervals, accuracies.
    published_area = [(21_158, 6_158), (11_686, 3_756), (285_770, 15_510), (581_386, 16_281)]
    for (area, ci), a, se in zip(published_area, est.area, est.area_se):
        assert a == pytest.approx(area, abs=1)
        assert 1.96 * se == pytest.approx(ci, abs=1.5)
    assert round(est.overall_accuracy, 2) == 0.95 and round(1.96 * est.overall_accuracy_se, 2) == 0.02
    assert [round(v, 2) for v in est.users_accuracy] == [0.88, 0.73, 0.93, 0.96]
    assert [round(1.96 * v, 2) for v in est.users_accuracy_se] == [0.07, 0.10, 0.04, 0.02]
    assert [round(v, 2) for v in est.producers_accuracy] == [0.75, 0.85, 0.93, 0.96]
    assert [round(1.96 * v, 2) for v in est.producers_accuracy_se] == [0.21, 0.25, 0.03, 0.02]


def test_assess_accuracy_on_labels_matches_the_matrix_route():
    mapped, reference = _labels_of(PAPER_COUNTS, PAPER_CLASSES)
    rng = np.random.default_rng(1)
    order = rng.permutation(len(mapped))
    areas = {c: a * 0.09 for c, a in zip(PAPER_CLASSES, PAPER_PIXELS)}
    report = assess_accuracy([mapped[i] for i in order], [reference[i] for i in order],
                             map_area=areas, classes=PAPER_CLASSES)
    assert report.matrix.tolist() == PAPER_COUNTS
    assert report.estimates.area[0] == pytest.approx(21_157.76, abs=0.01)
    assert report.warnings == []


def test_sample_scores_by_hand():
    # rows = map, columns = reference: a 3-class sample of 20 units.
    counts = np.array([[5, 1, 0], [2, 6, 1], [0, 1, 4]])
    s = sample_scores(counts)
    assert s.n == 20
    assert s.overall_accuracy == pytest.approx(15 / 20)
    users = [5 / 6, 6 / 9, 4 / 5]
    producers = [5 / 7, 6 / 8, 4 / 5]
    np.testing.assert_allclose(s.users_accuracy, users)
    np.testing.assert_allclose(s.producers_accuracy, producers)
    f1 = [2 * u * p / (u + p) for u, p in zip(users, producers)]
    np.testing.assert_allclose(s.f1, f1)
    assert s.macro_f1 == pytest.approx(sum(f1) / 3)
    chance = (6 * 7 + 9 * 8 + 5 * 5) / 400
    assert s.kappa == pytest.approx((0.75 - chance) / (1 - chance))


def test_confusion_matrix_rows_are_map_classes():
    m = confusion_matrix(["a", "a", "b"], ["a", "b", "b"], ("a", "b"))
    assert m.tolist() == [[1, 1], [0, 1]]


def test_missing_labels_codes_and_reference_only_classes():
    mapped = ["wheat", "wheat", None, "corn", "corn", 3.0, "corn", "wheat"]
    reference = ["wheat", "corn", "corn", "corn", None, "3", "", "meadow"]
    report = assess_accuracy(mapped, reference)
    # Unit 3 has no map class (left out, said so), units 5 and 7 no reference (not sampled).
    assert report.n_unusable == 1 and report.sample.n == 5
    assert "1 reference units have no map class" in report.warnings[0]
    assert set(report.classes) == {"wheat", "corn", "meadow", "3"}
    idx = {c: i for i, c in enumerate(report.classes)}
    assert report.matrix[idx["3"], idx["3"]] == 1
    assert report.matrix[idx["wheat"], idx["meadow"]] == 1
    # meadow is never mapped: its user's accuracy is undefined, its producer's accuracy 0.
    assert np.isnan(report.sample.users_accuracy[idx["meadow"]])
    assert report.sample.producers_accuracy[idx["meadow"]] == 0


def test_reference_only_class_in_stratified_estimates():
    # Class c is in the reference but the map never shows it (weight 0): it gets an estimated
    # area from the omissions, no user's accuracy.
    counts = np.array([[8, 1, 1], [2, 7, 1], [0, 0, 0]])
    est = stratified_estimates(counts, [600.0, 400.0, 0.0])
    assert est.weights.tolist() == [0.6, 0.4, 0.0]
    assert est.area[2] == pytest.approx(1000 * (0.6 * 0.1 + 0.4 * 0.1))
    assert np.isnan(est.users_accuracy[2]) and est.producers_accuracy[2] == 0
    assert est.area.sum() == pytest.approx(1000)
    se_c = math.sqrt(0.36 * 0.1 * 0.9 / 9 + 0.16 * 0.1 * 0.9 / 9)
    assert est.area_proportion_se[2] == pytest.approx(se_c)


def test_strata_without_sample_are_dropped_with_a_warning():
    report = assess_accuracy(["a", "a", "b", "b"], ["a", "b", "b", "b"],
                             map_area={"a": 30.0, "b": 50.0, "c": 20.0})
    assert report.dropped_area == {"c": 20.0}
    assert any("20.0 % of the mapped ha" in w for w in report.warnings)
    assert report.estimates.total_area == pytest.approx(80.0)


def test_single_unit_stratum_has_no_interval():
    report = assess_accuracy(["a", "a", "a", "b"], ["a", "a", "b", "b"], map_area={"a": 9, "b": 1})
    e = report.estimates
    assert np.isnan(e.users_accuracy_se[1]) and np.isnan(e.overall_accuracy_se)
    assert not np.isnan(e.users_accuracy_se[0])
    assert any("single reference unit (b)" in w for w in report.warnings)
    assert "n/a" in report_html(report)
    assert format_estimate(0.5, 0.01) == "0.500 ± 0.020"
    assert format_estimate(e.overall_accuracy, e.overall_accuracy_se) == f"{e.overall_accuracy:.3f} ± n/a"
    assert format_estimate(float("nan"), 0.1) == "n/a"


@pytest.mark.parametrize("mapped, reference, area, match", [
    (["a"], ["a", "b"], None, "1 map labels but 2"),
    ([None, None], ["a", "b"], None, "2 reference units are not classified"),
    (["a", "b"], ["x", "y"], None, "share no name"),
    (["a", "b"], ["a", "b"], {"a": 1.0}, "lack the classes b"),
    (["a", "b"], ["a", "b"], {"a": 1.0, "b": -2}, "negative"),
    (["a", "b"], ["a", "b"], {"a": 0.0, "b": 0.0}, "have no ha in the map"),
])
def test_bad_input_is_named(mapped, reference, area, match):
    with pytest.raises(InputError, match=match):
        assess_accuracy(mapped, reference, map_area=area)


def test_class_area_table(tmp_path):
    good = tmp_path / "areas.csv"
    good.write_text("class,area_ha\nwheat,120.5\ncorn,80\n\n")
    assert read_class_areas(good) == {"wheat": 120.5, "corn": 80.0}
    for text, match in [("class\nwheat\n", "two columns"), ("c,a\nwheat,1\nwheat,2\n", "listed twice"),
                        ("c,a\nwheat,lots\n", "not a number"), ("c,a\nwheat,-1\n", "negative")]:
        bad = tmp_path / "bad.csv"
        bad.write_text(text)
        with pytest.raises(InputError, match=match):
            read_class_areas(bad)
    with pytest.raises(InputError, match="does not exist"):
        read_class_areas(tmp_path / "none.csv")


def test_geodesic_areas_against_an_equal_area_projection():
    gpd = pytest.importorskip("geopandas")
    from shapely.geometry import box

    # Two fields in UTM 32N (Bavaria): 200 m x 500 m and 1 km x 1 km.
    frame = gpd.GeoDataFrame(geometry=[box(700_000, 5_350_000, 700_200, 5_350_500),
                                       box(690_000, 5_340_000, 691_000, 5_341_000)], crs="EPSG:32632")
    ha = geodesic_areas_ha(frame)
    equal_area = frame.to_crs("EPSG:3035").area.to_numpy() / 10_000  # ETRS89 LAEA
    np.testing.assert_allclose(ha, equal_area, rtol=1e-4)
    # UTM's scale factor makes planar areas differ from true ones by up to ~0.1 %.
    assert ha[0] == pytest.approx(10.0, rel=2e-3)
    with pytest.raises(InputError, match="no coordinate reference system"):
        geodesic_areas_ha(gpd.GeoSeries([box(0, 0, 1, 1)]))


def test_assess_layer_weights_by_area_and_count(tmp_path):
    gpd = pytest.importorskip("geopandas")
    from shapely.geometry import box

    # Six parcels in an equal-area CRS: wheat 3 parcels of 1 ha, 1 ha, 4 ha, corn 2 of 2 ha,
    # one parcel not classified (1 ha). Reference on five parcels, one of them not classified.
    geoms = [box(0, 0, 100, 100), box(200, 0, 300, 100), box(400, 0, 600, 200),
             box(0, 300, 200, 400), box(300, 300, 500, 400), box(700, 0, 800, 100)]
    frame = gpd.GeoDataFrame({"pred": ["wheat", "wheat", "wheat", "corn", "corn", None],
                              "truth": ["wheat", "corn", None, "corn", "corn", "wheat"]},
                             geometry=geoms, crs="EPSG:3035")
    by_area = assess_layer(frame, "pred", "truth", weighting="area")
    idx = {c: i for i, c in enumerate(by_area.classes)}
    assert by_area.map_area[idx["wheat"]] == pytest.approx(6.0, rel=1e-4)
    assert by_area.map_area[idx["corn"]] == pytest.approx(4.0, rel=1e-4)
    assert by_area.unmapped_area == pytest.approx(1.0, rel=1e-4)
    # Stratum wheat (W 0.6): 1 of 2 reference units is corn -> corn area 0.6 * 0.5 + 0.4 * 1.
    assert by_area.estimates.area_proportion[idx["corn"]] == pytest.approx(0.7, rel=1e-4)
    assert by_area.n_unusable == 1
    by_count = assess_layer(frame, "pred", "truth", weighting="count")
    assert by_count.area_unit == "parcels"
    assert by_count.map_area[idx["wheat"]] == 3 and by_count.map_area[idx["corn"]] == 2
    assert by_count.estimates.area[idx["corn"]] == pytest.approx(3 * 0.5 + 2)
    none = assess_layer(frame, "pred", "truth", weighting="none")
    assert none.estimates is None and none.sample.n == 4
    with pytest.raises(InputError, match="no field 'label'.*pred, truth"):
        assess_layer(frame, "label", "truth")
    with pytest.raises(InputError, match="same field"):
        assess_layer(frame, "pred", "pred")


class _Collect(HTMLParser):
    def __init__(self):
        super().__init__()
        self.tags, self.cells, self.colours = [], [], []

    def handle_starttag(self, tag, attrs):
        self.tags.append(tag)
        attrs = dict(attrs)
        if tag == "td" and "bgcolor" in attrs:
            self.colours.append(attrs["bgcolor"])

    def handle_data(self, data):
        self.cells.append(data.strip())


def test_html_report_is_self_contained_with_a_heat_map(tmp_path):
    mapped, reference = _labels_of(PAPER_COUNTS, PAPER_CLASSES)
    report = assess_accuracy(mapped, reference, classes=PAPER_CLASSES, title="example <1>",
                             map_area={c: a * 0.09 for c, a in zip(PAPER_CLASSES, PAPER_PIXELS)})
    path = write_html(report, tmp_path / "report.html")
    text = path.read_text(encoding="utf-8")
    for external in ("<script", "src=", "href=", "http", "<link", "@import"):
        assert external not in text
    parser = _Collect()
    parser.feed(text)
    assert "example <1>" in " ".join(parser.cells)          # escaped in the page, read back
    assert "21,158 ± 6,158" in parser.cells                  # deforestation area and its CI
    assert "0.947 ± 0.018" in parser.cells                   # area-adjusted OA
    # 16 heat-map cells: diagonal ones blue-ish, the empty ones white.
    assert len(parser.colours) == 16
    diagonal = [parser.colours[i * 5] for i in range(4)]
    assert all(int(c[5:7], 16) > int(c[1:3], 16) for c in diagonal)
    assert parser.colours[1] == "#ffffff"                    # deforestation mapped, gain: 0


def test_narrow_report_numbers_the_matrix_columns_and_keeps_every_number():
    mapped, reference = _labels_of(PAPER_COUNTS, PAPER_CLASSES)
    report = assess_accuracy(mapped, reference, classes=PAPER_CLASSES,
                             map_area={c: a * 0.09 for c, a in zip(PAPER_CLASSES, PAPER_PIXELS)})
    wide, narrow = _Collect(), _Collect()
    wide.feed(report_html(report))
    narrow.feed(report_html(report, narrow=True))
    # The matrix header: numbers instead of names, the rows say number and name.
    start = narrow.cells.index("map \\ reference")
    assert narrow.cells[start:start + 6] == ["map \\ reference", "1", "2", "3", "4", "total"]
    for k, name in enumerate(PAPER_CLASSES, 1):
        assert f"{k} {name}" in narrow.cells and name in wide.cells
    # The same counts in the same heat-map colours.
    assert narrow.colours == wide.colours and len(narrow.colours) == 16
    counts = [str(v) for v in np.asarray(report.matrix).ravel()]
    row = narrow.cells.index(f"1 {PAPER_CLASSES[0]}")
    assert narrow.cells[row + 1:row + 5] == counts[:4]
    # The estimated error matrix in whole per cent, computed here from the proportions.
    e = report.estimates
    row = len(narrow.cells) - 1 - narrow.cells[::-1].index(f"1 {PAPER_CLASSES[0]}")
    expected = ["<1" if 0 < 100 * v < 0.5 else str(round(100 * v)) for v in e.proportions[0]]
    assert narrow.cells[row + 1:row + 5] == expected


def test_csv_reports_read_back(tmp_path):
    mapped, reference = _labels_of(PAPER_COUNTS, PAPER_CLASSES)
    report = assess_accuracy(mapped, reference, classes=PAPER_CLASSES,
                             map_area={c: a * 0.09 for c, a in zip(PAPER_CLASSES, PAPER_PIXELS)})
    with open(write_csv(report, tmp_path / "r.csv"), newline="") as fh:
        rows = list(csv.DictReader(fh))
    assert tuple(rows[0]) == CSV_COLUMNS
    assert [r["class"] for r in rows] == [*PAPER_CLASSES, "overall"]
    assert float(rows[0]["estimated_area"]) == pytest.approx(21_157.8, abs=0.1)
    assert float(rows[0]["users_accuracy"]) == pytest.approx(66 / 75, rel=1e-5)
    assert float(rows[0]["producers_accuracy"]) == pytest.approx(66 / 69, rel=1e-5)
    assert float(rows[-1]["overall_accuracy"]) == pytest.approx(587 / 640, rel=1e-5)
    assert float(rows[-1]["adj_overall_accuracy"]) == pytest.approx(report.estimates.overall_accuracy,
                                                                    rel=1e-5)
    assert rows[-1]["users_accuracy"] == ""
    with open(write_matrix_csv(report, tmp_path / "m.csv"), newline="") as fh:
        matrix = list(csv.reader(fh))
    assert matrix[0][1:] == list(PAPER_CLASSES)
    assert [[int(v) for v in row[1:]] for row in matrix[1:]] == PAPER_COUNTS
    with pytest.raises(OutputError, match="does not exist"):
        write_csv(report, tmp_path / "missing" / "r.csv")
