"""Crop class names and their display colours, for any class list.

Every map, legend, style file and plot colours classes through :func:`class_colours`, so a
class looks the same in the dock, in a ``.qml`` written beside an output and in a figure.
"""

from __future__ import annotations

import colorsys
from typing import Iterable, Sequence

CROP_CLASSES: tuple[str, ...] = (
    "corn",
    "horsebeans",
    "meadow",
    "spring_barley",
    "unknown",
    "winter_barley",
    "winter_rapeseed",
    "winter_triticale",
    "winter_wheat",
)
"""The nine classes of the paper's experiment (its sorted order): the synthetic regions and the
shipped model use them. Datasets extracted from real labels have their own classes."""

UNKNOWN_CLASS = "unknown"
"""The class of crops outside a class map, and of rare classes folded together."""

UNKNOWN_COLOUR = "#5c5c5c"
"""Dark grey: a predicted class that means "some other crop"."""

NOT_CLASSIFIED_COLOUR = "#ffffff"
"""White: parcels without a prediction (outside the scenes, no clear date, ...)."""

# A fixed qualitative palette with no greys and no near-white, so that neither special colour
# can be mistaken for a class. The first nine are Tableau 10 without its grey; the rest add
# lighter, darker and in-between hues chosen to stay apart from the first nine.
PALETTE: tuple[str, ...] = (
    "#4e79a7",  # blue
    "#f28e2b",  # orange
    "#e15759",  # red
    "#76b7b2",  # teal
    "#59a14f",  # green
    "#edc948",  # yellow
    "#b07aa1",  # purple
    "#ff9da7",  # pink
    "#9c755f",  # brown
    "#a0cbe8",  # light blue
    "#8cd17d",  # light green
    "#b6992d",  # olive
    "#2f4b7c",  # navy
    "#d37295",  # rose
    "#17becf",  # cyan
    "#7b2d26",  # maroon
    "#ffbe7d",  # light orange
    "#3d7a3a",  # dark green
    "#6a3d9a",  # violet
    "#c7e66b",  # lime
)

# Conventional map colours for a few common crops (grassland green, maize orange, rapeseed
# yellow, wheat red), as palette entries; a class takes its own only when no earlier class
# in the list already did.
_PREFERRED: dict[str, str] = {
    "meadow": "#59a14f",
    "grassland": "#59a14f",
    "corn": "#f28e2b",
    "maize": "#f28e2b",
    "winter_rapeseed": "#edc948",
    "rapeseed": "#edc948",
    "winter_wheat": "#e15759",
    "wheat": "#e15759",
}


def _extra_colour(i: int) -> str:
    """Colour number ``i`` beyond the palette: hues spaced by the golden angle, saturated
    enough never to read as grey, at two alternating lightness levels."""
    hue = (0.13 + i * 0.618033988749895) % 1.0
    value = 0.85 if i % 2 == 0 else 0.62
    r, g, b = colorsys.hsv_to_rgb(hue, 0.65, value)
    return "#{:02x}{:02x}{:02x}".format(round(r * 255), round(g * 255), round(b * 255))


def class_colours(classes: Iterable[str]) -> dict[str, str]:
    """A ``#rrggbb`` colour for every class, deterministic for a given class list.

    ``unknown`` is always :data:`UNKNOWN_COLOUR`. A few common crops keep a conventional colour;
    the other classes take the free palette colours in list order, so a list of up to
    ``len(PALETTE)`` ordinary classes has no two alike. Longer lists continue with generated
    hues, distinct from each other and never grey.

    Args:
        classes: class names, in the model's (or dataset's) order.

    Returns:
        ``{class name: "#rrggbb"}`` in the order of ``classes``.
    """
    names = list(dict.fromkeys(str(c) for c in classes))
    out: dict[str, str] = {}
    taken: set[str] = set()
    for name in names:
        if name == UNKNOWN_CLASS:
            out[name] = UNKNOWN_COLOUR
        elif _PREFERRED.get(name) and _PREFERRED[name] not in taken:
            out[name] = _PREFERRED[name]
            taken.add(out[name])
    free = iter([c for c in PALETTE if c not in taken])
    extra = 0
    for name in names:
        if name in out:
            continue
        colour = next(free, None)
        while colour is None or colour in taken:
            colour = _extra_colour(extra)
            extra += 1
        taken.add(colour)
        out[name] = colour
    return {name: out[name] for name in names}


def colour_list(classes: Sequence[str]) -> list[str]:
    """The colours of :func:`class_colours` as a list in the order of ``classes``."""
    colours = class_colours(classes)
    return [colours[str(c)] for c in classes]


CLASS_COLOURS: dict[str, str] = class_colours(CROP_CLASSES)
"""The colours of the nine paper classes (as :func:`class_colours` gives them)."""
