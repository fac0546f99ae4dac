"""Reflectance of a pixel from its surface composition: measured endmembers, mixed linearly.

Endmembers are the THEIA L2A surface reflectances measured on field plots inside 31TCJ
(fact sheet section 4 [R]), in band order B02 B03 B04 B05 B06 B07 B08 B8A B11 B12.
"""

from __future__ import annotations

import numpy as np

SOIL_DRY = np.array([.101, .147, .182, .210, .241, .253, .249, .269, .283, .240])
SOIL_MOIST = np.array([.075, .113, .127, .166, .205, .215, .210, .227, .221, .164])
GREEN_MEAN = np.array([.021, .043, .025, .067, .255, .347, .358, .371, .117, .056])
GREEN_DENSE = np.array([.009, .028, .008, .043, .272, .430, .447, .465, .100, .041])
SENESCENT = np.array([.044, .070, .082, .122, .175, .197, .208, .228, .195, .118])
STRAW = np.array([.06, .09, .13, .17, .21, .23, .26, .28, .34, .26])  # [E] in the fact sheet
RAPE_GREEN = np.array([.038, .060, .056, .107, .300, .351, .356, .365, .136, .073])
RAPE_FLOWER = np.array([.048, .129, .109, .166, .412, .497, .506, .513, .149, .078])
RAPE_PODS = np.array([.039, .075, .043, .115, .366, .436, .445, .453, .101, .052])
# Built-up surfaces: flat and moderately bright, no red edge [E].
URBAN = np.array([.085, .095, .105, .115, .125, .130, .140, .145, .170, .150])
CLOUD = np.array([.42, .41, .40, .41, .42, .42, .43, .43, .33, .24])

# Top-of-atmosphere path radiance and transmission for L1C: B02 +0.03-0.05, B03 +0.01-0.02,
# NIR 0 to -0.03, NDVI 0.03-0.08 lower than at the surface [E, fact sheet section 4].
TOA_ADD = np.array([.040, .016, .007, .005, .003, .002, .001, .001, .000, .000])
TOA_GAIN = np.array([1.0, 1.0, 0.99, 0.98, 0.97, 0.96, 0.955, 0.955, 0.97, 0.98])


def canopy_spectra(kind: str, green_cover: float, maturity: float) -> tuple[np.ndarray, np.ndarray]:
    """Pure green-canopy and senescent-canopy spectra of one parcel's crop at one date.

    Args:
        kind: 'rapeseed', 'forest', or anything else for a generic green canopy.
        green_cover: green cover fraction (denser canopies look like the densest measured pixel).
        maturity: 0 while senescing, 1 for ripe, dry straw.

    Returns:
        green, senescent: (10,) reflectance spectra.
    """
    density = float(np.clip(green_cover, 0, 1)) ** 2
    if kind == "rapeseed":
        green = RAPE_GREEN * (1 - density) + RAPE_PODS * density
    else:
        green = GREEN_MEAN * (1 - density) + GREEN_DENSE * density
    if kind == "forest":
        # Needle and broad-leaf crowns with shadows are darker than a crop canopy.
        green = green * np.array([.8, .8, .8, .8, .75, .7, .7, .7, .7, .7])
    senescent = SENESCENT * (1 - maturity) + STRAW * maturity
    return green, senescent


def to_toa(reflectance: np.ndarray, aerosol: float, band_axis: int = 0) -> np.ndarray:
    """Surface reflectance to L1C top-of-atmosphere reflectance.

    Args:
        reflectance: surface reflectance with the 10 bands along ``band_axis``.
        aerosol: scene haze multiplier of the path radiance (about 0.6-1.4).
        band_axis: axis holding the bands.
    """
    shape = [1] * reflectance.ndim
    shape[band_axis] = 10
    return reflectance * TOA_GAIN.reshape(shape) + aerosol * TOA_ADD.reshape(shape)


def ndvi(b04: np.ndarray, b08: np.ndarray) -> np.ndarray:
    """(B08 - B04) / (B08 + B04), NaN where both are 0."""
    b04 = np.asarray(b04, float)
    b08 = np.asarray(b08, float)
    with np.errstate(invalid="ignore", divide="ignore"):
        return (b08 - b04) / (b08 + b04)
