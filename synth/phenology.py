"""Crop development driven by thermal time: green cover, senescence and flowering per parcel.

Each parcel accumulates degree days (base 0, the TPE formula) from its own sowing date at its
nearest weather cell. Winter crops develop more slowly under short days (photoperiod and
vernalisation), so mild winters add degree days that barely advance them: the residual the
fact sheet describes (section 3, 150-300 degree days between regions) is kept on purpose.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Optional

import numpy as np

from .climate import paper_gdd
from .regions import Region, day_length_hours


@dataclass(frozen=True)
class CropSpec:
    """Development thresholds in effective degree days from sowing (base 0).

    Attributes:
        emergence: sowing to emergence.
        autumn_cover: green cover of the autumn stand of a winter crop (0 for spring crops).
        autumn_span: degree days after emergence to reach ``autumn_cover``.
        rise: start of the main canopy growth (stem elongation / jointing).
        peak: full canopy (heading, silking, flowering).
        senescence: start of canopy senescence.
        maturity: canopy fully senesced.
        harvest: harvest (canopy removed, stubble left).
        cover: peak green cover fraction.
        damped: whether development slows under short days before ``peak``.
        flowering: (onset, peak, end, canopy fraction in flower) or None.
    """

    emergence: float
    autumn_cover: float
    autumn_span: float
    rise: float
    peak: float
    senescence: float
    maturity: float
    harvest: float
    cover: float
    damped: bool = False
    flowering: Optional[tuple[float, float, float, float]] = None

    def scaled(self, k: float) -> "CropSpec":
        """The same crop with every threshold after emergence scaled by ``k`` (variety)."""
        f = None
        if self.flowering is not None:
            f = (self.flowering[0] * k, self.flowering[1] * k, self.flowering[2] * k, self.flowering[3])
        return replace(
            self, rise=self.rise * k, peak=self.peak * k, senescence=self.senescence * k,
            maturity=self.maturity * k, harvest=self.harvest * k, flowering=f,
        )


# Winter crops run two clocks. Emergence and the autumn stand follow degree days from sowing
# (emergence 150 [R]). Stem elongation, heading and everything after follow a spring clock:
# degree days from 1 Jan, damped by short days until heading (photoperiod / vernalisation),
# then plain degree days. Mild winters thus add degree days that barely advance the crop, and
# a regional residual of ~150-300 degree days from 1 Jan remains (fact sheet section 3).
# Timing [B]: the real Bavarian parcels of 2018 (west half) with the Duernast temperatures put
# the canopy of winter wheat at its peak until ~1700 degree days from 1 Jan, half senesced at
# ~1950 and harvested by ~2250; winter barley half senesced at ~1650-1700 and gone by ~2000;
# rapeseed flowering in the first half of May (~800 degree days), half senesced at ~1850. The
# PhenologyMMS thresholds of the fact sheet (heading 790, maturity 1700 from 1 Jan [R]) come
# out two to three weeks early there, so heading and the grain-filling span were moved later:
# run with the Duernast weather of 2018, the thresholds below reproduce those events within
# about 100 degree days. Wheat heads at ~1180 degree days from 1 Jan there (early June),
# senesces from heading + 600, is ripe at + 1050 and harvested at + 1200. The spring stand of
# March is thin (real NDVI of wheat 0.27 at top of atmosphere) and the canopy grows steadily
# from March to heading (real NDVI 0.43 mid-April, 0.56 end of April, 0.70 mid-June): autumn
# cover 0.28, closing from 1 Jan on the damped clock.
WINTER_WHEAT = CropSpec(150, 0.28, 450, 0, 1000, 1600, 2050, 2200, 0.92, damped=True)
# Winter barley closes its canopy by mid-April (real NDVI 0.58) and heads ~2 weeks before
# wheat: heading + 700 senescence, + 1150 ripe [B].
WINTER_BARLEY = CropSpec(150, 0.32, 400, 0, 550, 1300, 1750, 1850, 0.86, damped=True)
# Triticale ~ wheat [E]; rye and spelt (in 'unknown') a little earlier [E].
WINTER_TRITICALE = CropSpec(150, 0.28, 450, 10, 1010, 1610, 2060, 2210, 0.94, damped=True)
WINTER_RYE = CropSpec(150, 0.32, 450, 0, 930, 1500, 1950, 2100, 0.92, damped=True)
# Rapeseed: large autumn rosette (NDVI 0.72 in Nov at 31TCJ [R]; 0.5-0.65 at the real
# Bavarian parcels in March-April after a hard frost [B]); flowering for 3-4 weeks [E] from 450
# damped degree days after 1 Jan (d'Andrimont et al. use ~425 [R]); the canopy is closed by
# mid-April (real NDVI 0.65) and pods stay green for ~900 degree days after flowering [B].
WINTER_RAPESEED = CropSpec(
    150, 0.55, 650, 0, 450, 1480, 1980, 2080, 0.90, damped=True,
    flowering=(450, 560, 730, 1.0),
)
# Spring barley: emergence ~150, heading ~950, ripe ~1800 degree days from sowing [B: the real
# parcels, sown in mid-April 2018, are half green at ~1150 and half senesced at ~1980 from 1 Jan].
SPRING_BARLEY = CropSpec(150, 0.0, 0, 150, 950, 1300, 1800, 1950, 0.90)
# Faba bean: emergence 150-200, flowering onset 700-900, maturity 1700-1900 [E].
HORSEBEANS = CropSpec(180, 0.0, 0, 180, 950, 1300, 1800, 1950, 0.88)
# Crops inside 'unknown' (fact sheet section 3: set-aside, Christmas trees, potatoes,
# vegetables, soy, sugar beet) [E for all thresholds].
POTATO = CropSpec(300, 0.0, 0, 300, 950, 1300, 1750, 1900, 0.85)
SUGAR_BEET = CropSpec(180, 0.0, 0, 180, 1200, 3300, 3800, 3500, 0.92)
SOY = CropSpec(220, 0.0, 0, 220, 1250, 1900, 2500, 2600, 0.88)
SUNFLOWER = CropSpec(220, 0.0, 0, 220, 1150, 1450, 2150, 2300, 0.80, flowering=(1100, 1200, 1400, 0.45))
VEGETABLE = CropSpec(120, 0.0, 0, 120, 650, 900, 1100, 800, 0.75)
CATCH_CROP = CropSpec(120, 0.0, 0, 120, 700, 5000, 6000, 5000, 0.60)

ARABLE: dict[str, CropSpec] = {
    "winter_wheat": WINTER_WHEAT,
    "winter_barley": WINTER_BARLEY,
    "winter_triticale": WINTER_TRITICALE,
    "winter_rapeseed": WINTER_RAPESEED,
    "winter_rye": WINTER_RYE,
    "spring_barley": SPRING_BARLEY,
    "horsebeans": HORSEBEANS,
    "potato": POTATO,
    "sugar_beet": SUGAR_BEET,
    "soy": SOY,
    "sunflower": SUNFLOWER,
    "vegetable": VEGETABLE,
}

_EXTRA_SOWING = {
    # (first, last) "MM-DD" of the season year [E].
    "winter_rye": ("09-20", "10-20"),
    "potato": ("04-05", "05-01"),
    "sugar_beet": ("03-15", "04-10"),
    "soy": ("05-01", "05-25"),
    "sunflower": ("04-10", "05-05"),
    "vegetable": ("04-01", "06-15"),
}


WINTER_COVER_SHARE = {"corn": 0.75, "spring_barley": 0.2}
"""Share of spring-crop fields green with a catch crop until shortly before sowing; 0.35 for
the crops not named."""


@dataclass
class CanopyState:
    """Surface composition of every parcel at every acquisition.

    Attributes:
        green: (P, T) green canopy cover fraction.
        senescent: (P, T) senescent canopy / straw / stubble fraction.
        flowering: (P, T) fraction of the green canopy in flower (yellow petals).
        info: per parcel, a dict of what was drawn (sowing date, variety, regime, sub-crop).
    """

    green: np.ndarray
    senescent: np.ndarray
    flowering: np.ndarray
    info: list[dict]


def photoperiod_factor(day_length: np.ndarray) -> np.ndarray:
    """Relative development rate of a long-day winter crop under ``day_length`` hours.

    Linear between an 8.5 h day (almost no development, floor 0.1) and 12 h (full rate):
    0.1 in January at 56 N, 0.23 at 44 N, full rate from early April everywhere.
    """
    return np.clip((day_length - 8.5) / (12.0 - 8.5), 0.1, 1.0)


def simulate_canopy(
    region: Region,
    crops: list[str],
    latitudes: np.ndarray,
    tmin: np.ndarray,
    tmax: np.ndarray,
    days: np.ndarray,
    acquisitions: np.ndarray,
    year: int,
    rng: np.random.Generator,
) -> CanopyState:
    """Green, senescent and flowering fractions of each parcel at each acquisition.

    Args:
        region: the region (sowing windows, maize hybrids, summer drought).
        crops: (P,) crop per parcel: one of the nine classes, a sub-crop of 'unknown'
            (fallow, christmas_trees, potato, sugar_beet, soy, sunflower, vegetable,
            winter_rye), or a
            background cover (forest, urban).
        latitudes: (P,) parcel latitudes (day length).
        tmin: (P, D) daily minimum at each parcel's weather cell, degrees C.
        tmax: (P, D) daily maximum, same layout.
        days: (D,) datetime64[D] of the daily series (must start before any sowing).
        acquisitions: (T,) datetime64[D] dates to report.
        year: the season (harvest) year.
        rng: random generator.

    Returns:
        The canopy state at the acquisitions.
    """
    P, T = len(crops), len(acquisitions)
    green = np.zeros((P, T))
    sen = np.zeros((P, T))
    flower = np.zeros((P, T))
    gdd = paper_gdd(tmin, tmax)
    doy = _doy(days)
    acq_idx = np.searchsorted(days, acquisitions)
    info: list[dict] = []
    for p, crop in enumerate(crops):
        dl = day_length_hours(float(latitudes[p]), doy)
        if crop in ("meadow", "fallow"):
            if crop == "fallow":
                regime = "fallow"
            else:
                regime = "extensive" if rng.random() < region.extensive_meadow else "intensive"
            g, s, meta = _meadow(region, gdd[p], days, doy, year, rng, regime)
            f = np.zeros_like(g)
        elif crop in ("forest", "christmas_trees", "urban"):
            g, s, meta = _perennial(crop, doy, rng)
            f = np.zeros_like(g)
        else:
            g, s, f, meta = _arable(region, crop, gdd[p], dl, days, year, rng)
        green[p], sen[p], flower[p] = g[acq_idx], s[acq_idx], f[acq_idx]
        info.append(meta)
    return CanopyState(green, sen, flower, info)


def _arable(region, crop, gdd, dl, days, year, rng):
    if crop == "corn":
        e, silk, mat, harv = region.corn
        # The canopy stays green for half of grain filling [B: real maize is still at 90 % of
        # its peak NDVI at 2900 degree days from 1 Jan, end of August].
        spec = CropSpec(e, 0.0, 0, e, silk, silk + 0.5 * (mat - silk), mat, harv, 0.95)
        window = region.sowing["corn"]
    else:
        spec = ARABLE[crop]
        window = region.sowing.get(crop) or _EXTRA_SOWING[crop]
    variety = float(np.clip(rng.normal(1.0, 0.04), 0.9, 1.1))
    spec = spec.scaled(variety)
    spec = replace(spec, cover=float(np.clip(spec.cover + rng.normal(0, 0.03), 0.6, 0.98)))
    if spec.flowering is not None:
        # Seen from above, half to all of the canopy is in flower at the height of it [B: the
        # real rapeseed's half-month composite in flower is half as yellow as THEIA's plots].
        on, pk, end, fmax = spec.flowering
        spec = replace(spec, flowering=(on, pk, end, fmax * rng.uniform(0.5, 1.0)))
    sow = _draw_date(window, year, rng)
    g, s, f, harvest_day = _develop(spec, gdd, dl, days, sow, year)
    meta = {"sowing": str(sow), "variety": round(variety, 3),
            "harvest": None if harvest_day is None else str(days[harvest_day])}

    # Before a spring crop: bare soil or the remains of a winter catch crop, destroyed before
    # sowing (common in DK and France) [E]. Before maize most fields are green until April,
    # before spring barley few [B: real NDVI in March-April 0.30-0.42 against 0.18-0.23].
    sow_i = int(np.searchsorted(days, sow))
    if not spec.damped and rng.random() < WINTER_COVER_SHARE.get(crop, 0.35):
        catch = np.where(np.arange(len(days)) < sow_i - rng.integers(10, 30), rng.uniform(0.25, 0.5), 0.0)
        catch[: int(np.searchsorted(days, np.datetime64(f"{year - 1}-10-01")))] = 0.0
        g = np.maximum(g, catch)
        meta["winter_cover"] = True

    # After harvest the field is tilled and either left bare, sown with a catch crop, or sown
    # with next season's winter crop [E]; the last two show up as autumn green-up.
    if harvest_day is not None:
        choice = rng.choice(["bare", "catch", "winter_wheat", "winter_barley", "winter_rapeseed"],
                            p=[0.3, 0.25, 0.25, 0.1, 0.1])
        h_date = days[harvest_day]
        if choice == "winter_rapeseed" and h_date > np.datetime64(f"{year}-08-20"):
            choice = "winter_wheat"
        meta["next"] = str(choice)
        # Volunteers and weeds green the stubble within a month, shed rapeseed most [B: real
        # NDVI in August 0.23-0.24 after cereals, 0.37 after rapeseed].
        volunteers = rng.uniform(0.15, 0.4) if crop == "winter_rapeseed" else rng.uniform(0.03, 0.2)
        after_h = np.arange(len(days)) - harvest_day
        g = np.where(after_h > 0, np.maximum(g, volunteers * _smooth(after_h / 30.0)), g)
        if choice != "bare":
            if choice == "catch":
                nxt_spec = CATCH_CROP
                nxt_sow = h_date + np.timedelta64(int(rng.integers(7, 25)), "D")
            else:
                nxt_spec = ARABLE[choice]
                nxt_sow = max(_draw_date(region.sowing[choice], year + 1, rng),
                              h_date + np.timedelta64(10, "D"))
            if nxt_sow <= days[-1]:
                g2, s2, f2, _ = _develop(nxt_spec, gdd, dl, days, nxt_sow, year + 1)
                after = np.arange(len(days)) >= int(np.searchsorted(days, nxt_sow))
                g = np.where(after, np.maximum(g, g2), g)
    return g, s, f, meta


def _develop(spec: CropSpec, gdd, dl, days, sow, year):
    """Daily (green, senescent, flowering) of one crop sown on ``sow``; and its harvest index."""
    n = len(days)
    g = np.zeros(n)
    s = np.zeros(n)
    f = np.zeros(n)
    i0 = int(np.searchsorted(days, sow))
    if i0 >= n:
        return g, s, f, None
    inc = gdd[i0:]
    raw = np.cumsum(inc)
    if spec.damped:
        # Spring clock from 1 Jan of the harvest year, damped by short days until heading.
        jan1 = days[i0:] >= np.datetime64(f"{year}-01-01")
        eff = np.where(jan1, inc * photoperiod_factor(dl[i0:]), 0.0)
        spring = np.cumsum(eff)
        headed = spring >= spec.peak
        if headed.any():
            k = int(np.argmax(headed))
            spring[k:] = spring[k] + np.cumsum(inc[k:]) - inc[k]
        d = spring
    else:
        d = raw
    gg = _green_curve(spec, d, raw)
    ss = np.where(d >= spec.senescence, spec.cover - gg, 0.0)
    harvest = np.nonzero((d >= spec.harvest) & (raw >= spec.emergence))[0]
    hday = None
    if len(harvest):
        h = int(harvest[0])
        hday = i0 + h
        since = np.arange(len(d) - h)
        # Stubble and straw left after the combine, worked in over two months [B: real cereal
        # fields keep NDVI 0.21-0.25 and a bright SWIR through August].
        ss[h:] = 0.45 * spec.cover * np.exp(-since / 60.0)
        gg[h:] = 0.0
    if spec.flowering is not None:
        on, pk, end, fmax = spec.flowering
        up = np.clip((d - on) / (pk - on), 0, 1)
        down = np.clip((end - d) / (end - pk), 0, 1)
        f[i0:] = fmax * _smooth(np.minimum(up, down))
        if hday is not None:
            f[hday:] = 0
    g[i0:] = gg
    s[i0:] = ss
    return g, s, f, hday


def _green_curve(spec: CropSpec, d: np.ndarray, raw: np.ndarray) -> np.ndarray:
    """Green cover along the development clock ``d``; ``raw`` is degree days from sowing."""
    e = spec.emergence
    if spec.autumn_cover > 0:
        # Autumn stand from sowing; in spring the canopy closes from whatever stand there is.
        stand = spec.autumn_cover * _smooth((raw - e) / spec.autumn_span)
        closing = _smooth((d - spec.rise) / (spec.peak - spec.rise))
        g = stand + (spec.cover - stand) * closing
    else:
        g = spec.cover * _smooth((d - e) / (spec.peak - e))
    g = np.where(raw < e, 0.0, g)
    decline = spec.cover * (1 - _smooth((d - spec.senescence) / (spec.maturity - spec.senescence)))
    return np.where(d >= spec.senescence, decline, g)


def _meadow(region, gdd, days, doy, year, rng, regime):
    """Grassland: green all winter, spring growth, mowing cuts with regrowth.

    ``regime`` is 'intensive' (3-5 cuts), 'extensive' (1-2 late cuts) or 'fallow' (set-aside,
    mulched at most twice, possibly never).
    """
    n = len(days)
    extensive = regime != "intensive"
    winter = rng.uniform(0.5, 0.65)
    top = rng.uniform(0.85, 0.95) if not extensive else rng.uniform(0.7, 0.82)
    # Growth restarts at a grassland temperature sum of 200 (Jan x0.5, Feb x0.75) [R, facts s.3].
    mean_t = np.maximum(gdd, 0)
    month = _month(days)
    weight = np.where(month == 1, 0.5, np.where(month == 2, 0.75, 1.0))
    in_year = days >= np.datetime64(f"{year}-01-01")
    gts = np.cumsum(np.where(in_year, mean_t * weight, 0.0))
    start = int(np.argmax(gts >= 200)) if (gts >= 200).any() else n - 1
    tt = np.cumsum(np.where(np.arange(n) >= start, gdd, 0.0))
    g = np.full(n, winter)
    grow = winter + (top - winter) * _smooth(tt / 350.0)
    g = np.where(np.arange(n) >= start, grow, g)
    s = np.zeros(n)
    # Intensive: 3-5 cuts, first at ~500-700 degree days, regrowth 500-700 each; extensive:
    # 1-2 cuts; a cut drops NDVI by 0.2-0.4 and it recovers within 2-4 weeks [E, facts s.3].
    if extensive:
        n_cuts = int(rng.integers(0 if regime == "fallow" else 1, 3))
        first = rng.uniform(800, 1000)
    else:
        n_cuts = int(rng.integers(3, 6))
        first = rng.uniform(500, 700)
    last_day = np.datetime64(f"{year}-10-10")
    cuts = []
    t_cut = first
    for _ in range(n_cuts):
        idx = np.nonzero(tt >= t_cut)[0]
        if not len(idx) or days[idx[0]] > last_day:
            break
        cuts.append(int(idx[0]))
        t_cut += rng.uniform(500, 700)
    for c in cuts:
        after = np.arange(n) >= c
        since = tt - tt[c]
        # A cut leaves a green stubble of 5-8 cm that closes again within ~250 degree days
        # [B: the real meadows' median NDVI dips by only ~0.15 at the first cut].
        low = rng.uniform(0.35, 0.55)
        regrow = low + (top - low) * _smooth(since / 250.0)
        g = np.where(after, np.minimum(g, regrow), g)
        # Cut grass lies on the field for a few days before it is baled.
        s = np.where(after, np.maximum(s, 0.25 * np.exp(-(np.arange(n) - c) / 4.0) * after), s)
    # Summer drought browns the sward in the south (July-August) [E].
    if region.summer_drought > 0:
        bump = np.exp(-0.5 * ((doy - 215) / 20.0) ** 2) * region.summer_drought * rng.uniform(0.6, 1.2)
        s = s + g * bump
        g = g * (1 - bump)
    # Autumn slow-down towards the winter sward.
    autumn = np.clip((doy - 280) / 60.0, 0, 1) * (days >= np.datetime64(f"{year}-09-01"))
    g = g * (1 - autumn) + winter * autumn
    meta = {"regime": regime,
            "cuts": [str(days[c]) for c in cuts], "growth_start": str(days[start])}
    return g, s, meta


def _perennial(crop, doy, rng):
    """Forest, Christmas-tree plantations and built-up land: slow, smooth seasonal change."""
    season = np.clip(np.sin(np.pi * (doy - 90) / 200.0), 0, 1)
    if crop == "forest":
        g = rng.uniform(0.55, 0.7) + rng.uniform(0.15, 0.25) * season
    elif crop == "christmas_trees":
        g = rng.uniform(0.45, 0.6) + 0.1 * season
    else:
        g = rng.uniform(0.08, 0.2) + 0.08 * season
    return np.clip(g, 0, 0.97), np.zeros_like(g), {}


def _draw_date(window: tuple[str, str], year: int, rng: np.random.Generator) -> np.datetime64:
    first, last = window
    y = year - 1 if int(first[:2]) >= 8 else year
    a = np.datetime64(f"{y}-{first}")
    b = np.datetime64(f"{y}-{last}")
    return a + np.timedelta64(int(rng.integers(0, int((b - a).astype(int)) + 1)), "D")


def _smooth(x: np.ndarray) -> np.ndarray:
    x = np.clip(x, 0.0, 1.0)
    return x * x * (3 - 2 * x)


def _doy(days: np.ndarray) -> np.ndarray:
    return (days - days.astype("datetime64[Y]").astype("datetime64[D]")).astype(np.int64) + 1


def _month(days: np.ndarray) -> np.ndarray:
    return days.astype("datetime64[M]").astype(np.int64) % 12 + 1
