"""Class maps: CSV and YAML files written here, the three presets checked against facts read off
the reference tables by hand, codes of every type, unmapped codes and rare classes."""

from __future__ import annotations

import logging

import numpy as np
import pytest

from thermocrop.core.classmap import PRESETS, ClassMap, apply_min_parcels, assign_classes, normalise_code
from thermocrop.core.errors import InputError


def test_codes_of_every_type_compare_as_the_same_text():
    assert [normalise_code(v) for v in (11, 11.0, np.int64(11), np.float32(11.0), "11", " 11.0 ", "+11")] \
        == ["11"] * 7
    assert [normalise_code(v) for v in (None, float("nan"), np.nan, "", "  ")] == [None] * 5
    assert normalise_code(" BTH ") == "BTH"
    assert normalise_code("010") == "10"
    assert normalise_code(2.5) == "2.5"


def test_csv_map_with_header_comments_and_semicolons(tmp_path):
    path = tmp_path / "map.csv"
    path.write_text("# my own table\nclass;code;name\nwinter_wheat;BTH;soft winter wheat\n"
                    "winter_wheat;bdh;\nsunflowers;TRN;sunflower\n", encoding="utf-8")
    cmap = ClassMap.load(path)
    assert cmap.classes == ("sunflowers", "winter_wheat")
    names, unmapped = cmap.map_labels(["BTH", "BDH", "trn", None, "SOJ", "SOJ", "MLT", float("nan")])
    assert names.tolist() == ["winter_wheat", "winter_wheat", "sunflowers", None, "unknown", "unknown",
                              "unknown", None]
    assert unmapped == {"SOJ": 2, "MLT": 1}
    # Missing values can be given a class instead (the reference's Danish NaN codes are 'unknown').
    names, _ = cmap.map_labels([None, "BTH"], missing="unknown")
    assert names.tolist() == ["unknown", "winter_wheat"]


def test_csv_map_without_header(tmp_path):
    path = tmp_path / "map.csv"
    path.write_text("1,spring_barley\n10,winter_barley\n11.0,winter_wheat\n", encoding="utf-8")
    names, unmapped = ClassMap.load(path).map_labels([1.0, "10", 11, 12.0])
    assert names.tolist() == ["spring_barley", "winter_barley", "winter_wheat", "unknown"]
    assert unmapped == {"12": 1}


def test_a_code_with_two_classes_is_refused(tmp_path):
    path = tmp_path / "map.csv"
    path.write_text("code,class\nBTH,winter_wheat\nbth,spring_wheat\n", encoding="utf-8")
    with pytest.raises(InputError, match="'bth' is mapped to two classes, 'winter_wheat' and 'spring_wheat'"):
        ClassMap.load(path)
    path.write_text("code,class\nBTH,\n", encoding="utf-8")
    with pytest.raises(InputError, match="code 'BTH' has no class"):
        ClassMap.load(path)
    with pytest.raises(InputError, match="neither a preset"):
        ClassMap.load(tmp_path / "nope.csv")


def test_yaml_blocks_seasons_and_repeated_keys(tmp_path):
    path = tmp_path / "map.yml"
    path.write_text(
        "meadow:\n  # permanent\n  251: Permanent grass (3245)\n  252: other grass\n"
        "barley:\n  spring:\n    1: Spring barley\n  winter:\n    10: Winter barley\n"
        "peas:\n  spring:\n    30: Peas\n  winter:\n"
        "unknown:\n  114: seed grass\n  576: forest\n  114: seed grass\n"
        "meadow:\n  263: grass without clover\n"
        "codes:\n  NO: a code, not a boolean\n  1_000: a code, not the number 1000\n",
        encoding="utf-8")
    cmap = ClassMap.load(path)
    expected = {"251": "meadow", "252": "meadow", "1": "spring_barley", "10": "winter_barley",
                "30": "spring_peas", "114": "unknown", "576": "unknown", "263": "meadow",
                "NO": "codes", "no": "codes", "1_000": "codes", " 10 ": "winter_barley"}
    for code, cls in expected.items():
        assert cmap.class_of(code) == cls, code
    assert cmap.class_of(251.0) == "meadow"
    assert cmap.class_of(1000) is None
    assert len(cmap) == 10  # 114 once
    assert cmap.classes == ("codes", "meadow", "spring_barley", "spring_peas", "unknown", "winter_barley")
    assert [e.name for e in cmap.entries if e.code == "251"] == ["Permanent grass (3245)"]


def test_yaml_refuses_conflicts_and_half_season_blocks(tmp_path):
    path = tmp_path / "map.yml"
    path.write_text("meadow:\n  251: grass\nunknown:\n  251: grass again\n", encoding="utf-8")
    with pytest.raises(InputError, match="'251' is mapped to two classes, 'meadow' and 'unknown'"):
        ClassMap.load(path)
    path.write_text("oat:\n  spring:\n    3: oats\n", encoding="utf-8")
    with pytest.raises(InputError, match="'spring' block but no 'winter' block"):
        ClassMap.load(path)
    path.write_text("1: spring_barley\n11: winter_wheat\n1: spring_barley\n", encoding="utf-8")
    flat = ClassMap.load(path)
    assert flat.class_of(1) == "spring_barley" and flat.class_of("11") == "winter_wheat" and len(flat) == 2


# Facts read off the reference tables (jnyborg/tpe class_mapping/*.yml) by hand.
PRESET_FACTS = {
    "france": {"BTH": "winter_wheat", "BDH": "winter_wheat", "BTP": "spring_wheat", "ORP": "spring_barley",
               "ORH": "winter_barley", "MIE": "corn", "PPH": "meadow", "LUZ": "meadow", "CZH": "winter_rapeseed",
               "TTH": "winter_triticale", "FVL": "horsebeans", "PHI": "winter_peas", "PPO": "spring_peas",
               "TRN": "sunflowers", "PTC": "potatoes", "BVF": "sugar_beet", "AVH": "winter_oat",
               "SGH": "winter_rye", "VRC": "unknown", "CGH": "unknown", "SOJ": "unknown"},
    "denmark": {1: "spring_barley", 701: "spring_barley", 10: "winter_barley", 11: "winter_wheat",
                2: "spring_wheat", 22: "winter_rapeseed", 216: "corn", 252: "meadow", 101: "meadow",
                16: "winter_triticale", 31: "horsebeans", 30: "spring_peas", 3: "spring_oat",
                703: "spring_oat", 57: "winter_oat", 15: "winter_rye", 151: "potatoes", 280: "sugar_beet",
                114: "unknown", 576: "unknown", 24: "unknown"},
    "austria": {111: "spring_barley", 110: "winter_barley", 138: "winter_wheat", 137: "spring_wheat",
                301: "winter_rapeseed", 155: "spring_oat", 116: "winter_triticale", 202: "horsebeans",
                201: "spring_peas", 142: "winter_rye", 307: "sunflowers", 651: "sugar_beet", 524: "potatoes",
                717: "meadow", 109: "corn", 308: "unknown", 641: "unknown"},
}
# Code lines in each reference file (grep), less the Danish table's two repeated codes (114, 576).
PRESET_SIZES = {"france": 237, "denmark": 248 - 2, "austria": 114}


@pytest.mark.parametrize("country", PRESETS)
def test_presets_hold_the_reference_facts(country):
    cmap = ClassMap.load(country)
    assert cmap.source == f"preset {country}"
    assert len(cmap) == PRESET_SIZES[country]
    for code, cls in PRESET_FACTS[country].items():
        assert cmap.class_of(code) == cls, (country, code)
        assert cmap.class_of(float(code) if isinstance(code, int) else code.lower()) == cls
    # The nine classes of the paper's experiment are in every country's table.
    assert {"corn", "horsebeans", "meadow", "spring_barley", "unknown", "winter_barley", "winter_rapeseed",
            "winter_triticale", "winter_wheat"} <= set(cmap.classes)
    assert all(not e.name.endswith(")") or not e.name.rstrip(")").split("(")[-1].isdigit() for e in cmap.entries)


def test_min_parcels_folds_rare_classes_into_unknown():
    names = ["a"] * 5 + ["b"] * 2 + ["unknown"] + ["c"] * 3 + [None]
    out, rare = apply_min_parcels(names, 3)
    assert rare == {"b": 2}
    assert out.tolist() == ["a"] * 5 + ["unknown"] * 3 + ["c"] * 3 + [None]


def test_assign_classes_maps_folds_indexes_and_logs(caplog):
    cmap = ClassMap.from_mapping({"BTH": "winter_wheat", "ORP": "spring_barley", "TRN": "sunflowers",
                                  "MIE": "corn"}, source="test map")
    values = ["BTH"] * 4 + ["ORP"] * 3 + ["TRN"] + ["MIE"] * 3 + ["SOJ", "SOJ", "XYZ", None]
    with caplog.at_level(logging.WARNING):
        result = assign_classes(values, cmap, min_parcels=3, source="layer.gpkg")
    assert result.classes == ("corn", "spring_barley", "unknown", "winter_wheat")
    # By hand: TRN (1 parcel) is rare, SOJ and XYZ are not in the map: 4 unknown.
    assert result.counts == {"corn": 3, "spring_barley": 3, "unknown": 4, "winter_wheat": 4}
    assert result.unmapped == {"SOJ": 2, "XYZ": 1} and result.rare == {"sunflowers": 1}
    assert result.labels.tolist() == [3] * 4 + [1] * 3 + [2] + [0] * 3 + [2, 2, 2, -1]
    text = caplog.text
    assert "3 parcels have 2 codes that test map does not map" in text and "SOJ (2), XYZ (1)" in text
    assert "fewer than 3 parcels and count as 'unknown': sunflowers (1)" in text


def test_assign_classes_without_a_map_and_with_a_fixed_list():
    result = assign_classes(["soy", " potatoes", 7, 7.0, None, "soy"])
    assert result.classes == ("7", "potatoes", "soy")
    assert result.labels.tolist() == [2, 1, 0, 0, -1, 2]
    fixed = assign_classes(["soy", "potatoes", "corn"], classes=("corn", "soy"))
    assert fixed.labels.tolist() == [1, -1, 0] and fixed.dropped == {"potatoes": 1}


def test_every_csv_beside_the_presets_is_a_preset_too():
    from thermocrop.core.classmap import available_presets, preset_path

    names = available_presets()
    assert set(PRESETS) <= set(names)
    for name in names:
        assert len(ClassMap.load(name)) == len(ClassMap.from_csv(preset_path(name)))
