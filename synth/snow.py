"""Snow lying on the fields: a degree-day snow pack fed by cold wet days.

The generator has no precipitation field, so wet days are a two-state Markov chain shared by
the region (weather systems are larger than a tile) with the region's share of wet days; on a
wet day colder than 1 C the day's precipitation falls as snow. The pack melts by a degree-day
factor and covers the ground fully from 15 mm of water equivalent (a few centimetres of snow).
All figures are textbook orders of magnitude [E]; the real Bavarian parcels only show that a
snow-covered February date must be expected in a continental winter (fact [B]).
"""

from __future__ import annotations

import numpy as np

SNOW_LIMIT_C = 1.0
"""Daily mean temperature below which precipitation falls as snow."""
MELT_MM_PER_DEGREE_DAY = 3.0
"""Melt of the pack per degree C of daily mean above 0, mm water equivalent."""
FULL_COVER_MM = 15.0
"""Water equivalent at which the pack hides the ground completely."""
WET_PERSISTENCE = 0.35
"""How much more likely a wet day is after a wet day than on average (Markov chain)."""


def wet_days(n: int, share: float, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """A wet/dry sequence with persistence and the day's precipitation.

    Args:
        n: number of days.
        share: long-run share of wet days.
        rng: random generator.

    Returns:
        wet: (n,) bool; amount: (n,) mm on wet days (exponential, mean 4 mm), 0 on dry days.
    """
    p_wet_wet = share + WET_PERSISTENCE * (1.0 - share)
    p_wet_dry = share * (1.0 - p_wet_wet) / (1.0 - share)
    u = rng.random(n)
    wet = np.zeros(n, bool)
    wet[0] = u[0] < share
    for i in range(1, n):
        wet[i] = u[i] < (p_wet_wet if wet[i - 1] else p_wet_dry)
    amount = np.where(wet, rng.exponential(4.0, n), 0.0)
    return wet, amount


def snow_cover(tmin: np.ndarray, tmax: np.ndarray, amount: np.ndarray) -> np.ndarray:
    """Fraction of open ground under snow for each point and day.

    Args:
        tmin: (P, D) daily minimum, degrees C.
        tmax: (P, D) daily maximum.
        amount: (D,) precipitation of each day, mm (shared by every point).

    Returns:
        (P, D) snow cover fraction in 0..1.
    """
    tmean = (np.asarray(tmin, float) + np.asarray(tmax, float)) / 2.0
    p, d = tmean.shape
    pack = np.zeros(p)
    cover = np.zeros((p, d))
    for i in range(d):
        pack += np.where(tmean[:, i] < SNOW_LIMIT_C, amount[i], 0.0)
        pack = np.maximum(pack - MELT_MM_PER_DEGREE_DAY * np.maximum(tmean[:, i], 0.0), 0.0)
        cover[:, i] = np.minimum(pack / FULL_COVER_MM, 1.0)
    return cover
