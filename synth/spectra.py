"""Reflectance of a pixel from its surface composition: endmembers, mixed linearly, and the
top-of-atmosphere transform of L1C.

Band order everywhere: B02 B03 B04 B05 B06 B07 B08 B8A B11 B12. Sources: THEIA L2A surface
reflectance of field plots in 31TCJ (fact sheet section 4 [R]), and the real Bavarian parcels
of 2018 (``realdata/bavaria2018``, per-parcel mean L1C, only the parcels west of the median
longitude) brought to the surface with the atmosphere below [B]. docs/synthetic-data.md lists
which figure comes from where.
"""

from __future__ import annotations

import numpy as np

SOIL_DRY = np.array([.101, .147, .182, .210, .241, .253, .249, .269, .283, .240])
SOIL_MOIST = np.array([.075, .113, .127, .166, .205, .215, .210, .227, .221, .164])
# Green crop canopies [B]: the visible bands of THEIA's mean green wheat, the red edge, NIR and
# SWIR of the greenest tenth of the real cereal and maize parcel-dates (NDVI 0.89 at the
# surface), which are brighter in NIR and SWIR than the THEIA plots. Dense: the greenest 5 %.
GREEN_MEAN = np.array([.028, .050, .030, .072, .262, .375, .372, .405, .160, .075])
GREEN_DENSE = np.array([.018, .037, .016, .055, .285, .440, .440, .470, .140, .058])
# Grassland [B]: the greenest tenth of the real meadow parcel-dates; more green and red-edge
# reflectance and more SWIR (litter in the sward) than a crop canopy.
GRASS = np.array([.030, .060, .028, .092, .340, .460, .450, .492, .192, .086])
SENESCENT = np.array([.044, .070, .082, .122, .175, .197, .208, .228, .195, .118])
# Ripe cereal and stubble [B]: real winter cereals after harvest (NDVI under 0.25), July-August.
STRAW = np.array([.080, .110, .145, .160, .205, .235, .225, .255, .315, .240])
RAPE_GREEN = np.array([.038, .060, .056, .107, .300, .351, .356, .365, .136, .073])
RAPE_FLOWER = np.array([.048, .129, .109, .166, .412, .497, .506, .513, .149, .078])
RAPE_PODS = np.array([.039, .075, .043, .115, .366, .436, .445, .453, .101, .052])
# Built-up surfaces: flat and moderately bright, no red edge [E].
URBAN = np.array([.085, .095, .105, .115, .125, .130, .140, .145, .170, .150])
CLOUD = np.array([.42, .41, .40, .41, .42, .42, .43, .43, .33, .24])
# Snow lying on fields [B]: the brightest tenth of the real parcels on the snow-covered date
# (28 Feb 2018) at the surface: bright and flat from blue to NIR, dark in the SWIR.
SNOW = np.array([.80, .78, .80, .82, .83, .83, .82, .82, .10, .09])

# L1C: top-of-atmosphere reflectance = path reflectance x haze + transmission x surface.
# Path reflectance [B]: the darkest real parcel-dates (1st percentile: B02 0.085, B03 0.076,
# B04 0.049, B05 0.077) minus what a dense canopy reflects there; it makes blue 0.07 brighter
# and lowers NDVI by 0.1-0.15 over green fields. Two-way transmission [E]: Rayleigh and aerosol
# extinction, strongest in the blue; with it the real bare soils of spring come back to the
# THEIA moist soil within 0.01 in every band but the SWIR.
TOA_ADD = np.array([.072, .046, .032, .028, .018, .014, .012, .010, .003, .001])
TOA_GAIN = np.array([.80, .85, .88, .90, .93, .94, .94, .96, .95, .93])


def canopy_spectra(kind: str, green_cover: float, maturity: float) -> tuple[np.ndarray, np.ndarray]:
    """Pure green-canopy and senescent-canopy spectra of one parcel's crop at one date.

    Args:
        kind: 'rapeseed', 'grass', 'forest', or anything else for a crop canopy.
        green_cover: green cover fraction (denser canopies look like the densest measured pixel).
        maturity: 0 while senescing, 1 for ripe, dry straw.

    Returns:
        green, senescent: (10,) reflectance spectra.
    """
    density = float(np.clip(green_cover, 0, 1)) ** 2
    if kind == "rapeseed":
        green = RAPE_GREEN * (1 - density) + RAPE_PODS * density
    elif kind == "grass":
        green = GREEN_MEAN * (1 - density) + GRASS * density
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
        aerosol: scene haze multiplier of the path reflectance (about 0.7-1.3; hazy scenes
            up to 2.5). Haze also dims the surface a little.
        band_axis: axis holding the bands.
    """
    shape = [1] * reflectance.ndim
    shape[band_axis] = 10
    gain = TOA_GAIN * (1.0 - 0.1 * (1.0 - TOA_GAIN) / 0.2 * (aerosol - 1.0))
    return reflectance * gain.reshape(shape) + aerosol * TOA_ADD.reshape(shape)


def ndvi(b04: np.ndarray, b08: np.ndarray) -> np.ndarray:
    """(B08 - B04) / (B08 + B04), NaN where both are 0."""
    b04 = np.asarray(b04, float)
    b08 = np.asarray(b08, float)
    with np.errstate(invalid="ignore", divide="ignore"):
        return (b08 - b04) / (b08 + b04)
