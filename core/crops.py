"""The nine crop classes of the paper's data and their display colours."""

from __future__ import annotations

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

# Colours chosen to be told apart on a map: grassland green, cereals in earth tones,
# rapeseed yellow, maize orange.
CLASS_COLOURS: dict[str, str] = {
    "corn": "#f28e2b",
    "horsebeans": "#8c564b",
    "meadow": "#59a14f",
    "spring_barley": "#edc948",
    "unknown": "#9d9d9d",
    "winter_barley": "#b07aa1",
    "winter_rapeseed": "#ffff33",
    "winter_triticale": "#76b7b2",
    "winter_wheat": "#e15759",
}
