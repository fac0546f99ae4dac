"""Sentinel-2 band order and digital-number conventions shared by readers, models and writers."""

from __future__ import annotations

S2_BANDS: tuple[str, ...] = ("B02", "B03", "B04", "B05", "B06", "B07", "B08", "B8A", "B11", "B12")
"""Band order of every ThermoCrop pixel array (10 m and 20 m bands, wavelength order)."""

BANDS_10M: tuple[str, ...] = ("B02", "B03", "B04", "B08")
BANDS_20M: tuple[str, ...] = ("B05", "B06", "B07", "B8A", "B11", "B12")

QUANTIFICATION_VALUE = 10000
"""Reflectance = (DN + offset) / 10000 for L1C and L2A products."""

BASELINE_OFFSET_DN = -1000
"""Radiometric offset added to DNs from processing baseline 04.00 (25 Jan 2022) on."""

OFFSET_FROM_BASELINE = (4, 0)
"""First processing baseline (major, minor) whose DNs carry the offset."""
