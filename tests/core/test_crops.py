"""Class colours for any class list: distinct, never grey, unknown and not-classified apart."""

from __future__ import annotations

import colorsys

from thermocrop.core.crops import (
    CROP_CLASSES,
    NOT_CLASSIFIED_COLOUR,
    PALETTE,
    UNKNOWN_CLASS,
    UNKNOWN_COLOUR,
    class_colours,
    colour_list,
)


def _hsv(colour: str) -> tuple[float, float, float]:
    return colorsys.rgb_to_hsv(*(int(colour[i:i + 2], 16) / 255 for i in (1, 3, 5)))


def test_palette_has_no_greys_and_no_near_white():
    for colour in PALETTE:
        rgb = [int(colour[i:i + 2], 16) / 255 for i in (1, 3, 5)]
        assert _hsv(colour)[1] >= 0.25 and min(rgb) < 0.8, colour


def test_any_number_of_classes_gets_distinct_class_colours():
    for n in (1, 9, 12, 20, 21, 45):
        classes = [f"crop_{i:02d}" for i in range(n)] + [UNKNOWN_CLASS]
        colours = class_colours(classes)
        assert list(colours) == classes
        ordinary = [colours[c] for c in classes[:-1]]
        assert len(set(ordinary)) == n
        assert colours[UNKNOWN_CLASS] == UNKNOWN_COLOUR
        assert UNKNOWN_COLOUR not in ordinary and NOT_CLASSIFIED_COLOUR not in ordinary
        # Every class colour is saturated: neither special grey/white can be mistaken for it.
        assert all(_hsv(c)[1] >= 0.25 for c in ordinary)
        # The first twenty ordinary classes use the fixed palette, in list order.
        assert ordinary[:min(n, len(PALETTE))] == list(PALETTE[:min(n, len(PALETTE))])


def test_unknown_and_not_classified_differ_clearly():
    (_, _, v_unknown), (_, _, v_none) = _hsv(UNKNOWN_COLOUR), _hsv(NOT_CLASSIFIED_COLOUR)
    assert v_none - v_unknown > 0.5


def test_colours_are_deterministic_and_common_crops_keep_theirs():
    a = class_colours(["winter_wheat", "meadow", "potatoes", "corn"])
    assert a == class_colours(["winter_wheat", "meadow", "potatoes", "corn"])
    assert a["meadow"] == "#59a14f" and a["corn"] == "#f28e2b" and a["winter_wheat"] == "#e15759"
    assert a["potatoes"] == PALETTE[0]
    nine = class_colours(CROP_CLASSES)
    assert len(set(nine.values())) == 9 and nine["winter_rapeseed"] == "#edc948"
    assert colour_list(["meadow", "unknown"]) == ["#59a14f", UNKNOWN_COLOUR]
