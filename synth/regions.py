"""The four TimeMatch tiles as the generator knows them: place, climate, calendars, class mix.

Figures marked [R]/[D]/[E] come from the project's fact sheet on regions, crops and spectra
(read, derived or estimated there); the comments quote its section.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..core.errors import InputError


@dataclass(frozen=True)
class Region:
    """Everything the generator needs to know about one Sentinel-2 tile.

    Attributes:
        name: region code (AT1, DK1, FR1, FR2).
        tile: MGRS tile id without the leading T.
        epsg: EPSG code of the tile's UTM zone.
        centre: tile centre (easting, northing) in metres.
        orbit: relative orbit used in product names.
        sensing_time: HHMMSS of the overpass in product names.
        tmin: (12,) monthly mean daily minimum, Jan..Dec, degrees C.
        tmax: (12,) monthly mean daily maximum, Jan..Dec, degrees C.
        anomaly_sd: (12,) standard deviation of daily anomalies by month, degrees C.
        r1: lag-1 autocorrelation of daily anomalies.
        offset: constant added to the normals (recent warming, the year's anomaly), degrees C.
        sea_side: side of the weather grid where E-OBS has sea cells (None inland).
        acquisitions: (12,) Sentinel-2 acquisitions per month.
        cloudiness: (12,) mean cloud fraction of kept scenes per month.
        class_weights: relative parcel frequency of each crop class.
        unknown_mix: relative frequency of the crops hidden in the 'unknown' class.
        sowing: per class, (first, last) sowing date as "MM-DD", the year before when the
            first month is after July.
        corn: maize thresholds (emergence, silking, maturity, harvest) in degree days from
            sowing, base 0; hybrids are chosen for the local climate.
        summer_drought: fraction by which meadow green cover drops in July and August.
        extensive_meadow: share of meadows mown only once or twice (the rest 3-5 times).
        wet_days: share of days with precipitation (snowfall when it is cold enough).
    """

    name: str
    tile: str
    epsg: int
    centre: tuple[float, float]
    orbit: int
    sensing_time: str
    tmin: tuple[float, ...]
    tmax: tuple[float, ...]
    anomaly_sd: tuple[float, ...]
    r1: float
    offset: float
    sea_side: str | None
    acquisitions: tuple[int, ...]
    cloudiness: tuple[float, ...]
    class_weights: dict[str, float]
    unknown_mix: dict[str, float]
    sowing: dict[str, tuple[str, str]] = field(default_factory=dict)
    corn: tuple[float, float, float, float] = (220.0, 1500.0, 2600.0, 2800.0)
    summer_drought: float = 0.0
    # Austrian LPIS separates meadows of two uses from three and more [R, facts s.3]; the share
    # of the extensive kind is an estimate [E], the same in every region.
    extensive_meadow: float = 0.35
    wet_days: float = 0.45


# Sowing windows, fact sheet section 3 "Proposed generator table" [E unless tagged]:
# winter wheat DK mid-Sep, AT/FR1 Oct, FR2 late Oct-Nov; winter barley 15 Sep-10 Oct [R, AHDB];
# rapeseed Aug-early Sep; spring barley FR Feb-Mar, AT Mar, DK late Mar-Apr; faba bean Feb-Apr;
# maize FR2 mid-Apr, others late Apr-early May.
_SOWING = {
    "AT1": {
        "winter_wheat": ("10-01", "10-25"), "winter_barley": ("09-20", "10-10"),
        "winter_triticale": ("10-01", "10-25"), "winter_rapeseed": ("08-20", "09-05"),
        # Spring barley into late April [B: the real Bavarian fields were bare until the end of
        # April 2018 and emerged in early May].
        "spring_barley": ("03-15", "04-25"), "horsebeans": ("03-05", "04-05"),
        "corn": ("04-20", "05-10"),
    },
    "DK1": {
        "winter_wheat": ("09-08", "09-30"), "winter_barley": ("09-05", "09-25"),
        "winter_triticale": ("09-12", "10-05"), "winter_rapeseed": ("08-10", "08-31"),
        "spring_barley": ("03-25", "04-25"), "horsebeans": ("03-25", "04-20"),
        "corn": ("04-25", "05-15"),
    },
    "FR1": {
        "winter_wheat": ("10-05", "11-05"), "winter_barley": ("09-25", "10-15"),
        "winter_triticale": ("10-05", "11-01"), "winter_rapeseed": ("08-20", "09-10"),
        "spring_barley": ("02-20", "03-25"), "horsebeans": ("02-15", "03-25"),
        "corn": ("04-20", "05-15"),
    },
    "FR2": {
        "winter_wheat": ("10-20", "11-25"), "winter_barley": ("10-05", "10-30"),
        "winter_triticale": ("10-20", "11-20"), "winter_rapeseed": ("08-25", "09-15"),
        "spring_barley": ("02-10", "03-15"), "horsebeans": ("02-01", "03-10"),
        "corn": ("04-05", "05-05"),
    },
}

# Raw LPIS counts of the class-mapping YAMLs, fact sheet section 6 [R]; France combines both
# French tiles. Austria has no counts there: its weights are an estimate [E] for the
# Upper-Austrian mix (grassland, wheat and maize dominant, some barley and rapeseed).
_DK_WEIGHTS = {
    "meadow": 49656, "unknown": 23376, "spring_barley": 21227, "winter_wheat": 12205,
    "corn": 5550, "winter_barley": 4700, "winter_rapeseed": 3438, "winter_triticale": 556,
    "horsebeans": 416,
}
_FR_WEIGHTS = {
    "meadow": 125900, "unknown": 40938, "spring_barley": 838, "winter_wheat": 28733,
    "corn": 26918, "winter_barley": 5847, "winter_rapeseed": 5082, "winter_triticale": 3991,
    "horsebeans": 816,
}
_AT_WEIGHTS = {
    "meadow": 40000, "unknown": 20000, "spring_barley": 5000, "winter_wheat": 20000,
    "corn": 18000, "winter_barley": 9000, "winter_rapeseed": 4000, "winter_triticale": 4000,
    "horsebeans": 600,
}

REGIONS: dict[str, Region] = {
    # Tile centres: fact sheet section 1 [D]. Normals: section 2 (Linz, Karup 1971-2000, Nantes,
    # Montauban). Anomaly SD and r1: section 2 (Kremsmuenster, Hamburg, Bourges, Toulouse) [D].
    # Offsets: 2017 annual anomaly (+0.36 AT, +0.13 DK, +0.22 FR1, +0.37 FR2 [D]); DK1 adds
    # +0.6 for its older 1971-2000 normals (1991-2020 about 0.5-0.8 warmer [E]).
    # Acquisition counts: section 5 table [R]. Cloudiness: winter cloudier than summer, NW
    # France and Denmark cloudier than SW France and Austria [E]. Wet-day shares: [E].
    "AT1": Region(
        name="AT1", tile="33UVP", epsg=32633, centre=(454860.0, 5345100.0), orbit=22,
        sensing_time="101031",
        tmin=(-3, -2, 2, 6, 10, 13, 15, 15, 11, 7, 2, -1),
        tmax=(2, 5, 10, 16, 21, 23, 26, 25, 20, 14, 7, 3),
        anomaly_sd=(4.6, 4.7, 4.0, 3.8, 3.5, 3.5, 3.1, 3.1, 3.0, 3.4, 3.5, 4.2), r1=0.81,
        offset=0.36, sea_side=None,
        acquisitions=(2, 4, 2, 4, 4, 5, 9, 9, 6, 5, 4, 4),
        cloudiness=(0.35, 0.3, 0.25, 0.2, 0.2, 0.15, 0.12, 0.12, 0.15, 0.2, 0.3, 0.35),
        class_weights=_AT_WEIGHTS,
        # Winter cereals other than the classes (rye, spelt) and set-aside are almost half each
        # of the real Bavarian 'unknown' next door (west half: 6 and 5 of 13 parcels) [B].
        unknown_mix={"winter_rye": 4, "fallow": 4, "soy": 2, "sugar_beet": 1, "potato": 1,
                     "vegetable": 1},
        sowing=_SOWING["AT1"], corn=(220.0, 1450.0, 2500.0, 2750.0), wet_days=0.45,
    ),
    "DK1": Region(
        name="DK1", tile="32VNH", epsg=32632, centre=(554860.0, 6245100.0), orbit=8,
        sensing_time="103021",
        tmin=(-2.0, -2.0, -0.5, 1.8, 6.1, 9.3, 11.5, 11.0, 8.4, 5.2, 1.6, -0.7),
        tmax=(2.9, 3.2, 5.9, 10.5, 15.9, 18.6, 20.7, 20.7, 16.4, 12.0, 7.0, 4.2),
        anomaly_sd=(4.4, 4.1, 3.5, 3.5, 3.4, 3.3, 3.3, 2.9, 2.6, 3.3, 3.4, 4.1), r1=0.80,
        offset=0.13 + 0.6, sea_side="east",
        acquisitions=(1, 1, 4, 3, 3, 3, 6, 8, 6, 6, 6, 5),
        cloudiness=(0.45, 0.4, 0.35, 0.3, 0.25, 0.25, 0.25, 0.25, 0.3, 0.35, 0.4, 0.45),
        class_weights=_DK_WEIGHTS,
        # Fact sheet section 3: DK 'unknown' holds set-aside/fallow (4862), Christmas trees
        # (3834), potatoes, vegetables, forest [R].
        unknown_mix={"fallow": 5, "christmas_trees": 4, "potato": 2, "vegetable": 1,
                     "winter_rye": 2},
        sowing=_SOWING["DK1"],
        # Silking ~1250 degree days in DK [D]; silage harvest well before grain maturity.
        corn=(220.0, 1250.0, 2100.0, 2200.0), wet_days=0.5,
    ),
    "FR1": Region(
        name="FR1", tile="30TXT", epsg=32630, centre=(654860.0, 5245100.0), orbit=94,
        sensing_time="110621",
        tmin=(2.8, 3.0, 4.2, 6.0, 9.5, 12.0, 14.2, 14.0, 11.8, 8.9, 5.2, 3.7),
        tmax=(8.7, 9.9, 12.7, 14.9, 18.7, 21.9, 24.7, 24.8, 21.8, 17.0, 12.2, 9.5),
        anomaly_sd=(4.1, 3.9, 3.3, 3.2, 3.2, 3.3, 3.1, 3.2, 2.9, 3.5, 3.5, 4.0), r1=0.78,
        offset=0.22, sea_side="west",
        acquisitions=(2, 3, 3, 6, 4, 6, 6, 7, 5, 8, 7, 5),
        cloudiness=(0.45, 0.4, 0.35, 0.3, 0.25, 0.2, 0.18, 0.18, 0.22, 0.3, 0.4, 0.45),
        class_weights=_FR_WEIGHTS,
        unknown_mix={"fallow": 3, "vegetable": 2, "sunflower": 2, "potato": 1, "winter_rye": 1},
        sowing=_SOWING["FR1"], corn=(230.0, 1550.0, 2700.0, 2900.0), summer_drought=0.15,
        wet_days=0.45,
    ),
    "FR2": Region(
        name="FR2", tile="31TCJ", epsg=32631, centre=(354860.0, 4845100.0), orbit=51,
        sensing_time="105031",
        tmin=(1.9, 2.2, 4.5, 6.9, 10.7, 14.1, 16.2, 15.9, 12.6, 9.6, 5.3, 2.6),
        tmax=(9.2, 11.4, 15.1, 17.7, 21.8, 25.5, 28.3, 28.1, 24.8, 19.8, 13.1, 9.5),
        anomaly_sd=(3.6, 3.7, 3.0, 2.9, 2.9, 3.2, 2.9, 3.1, 3.0, 3.4, 3.5, 3.9), r1=0.76,
        offset=0.37, sea_side=None,
        acquisitions=(1, 2, 2, 1, 3, 3, 2, 5, 4, 6, 5, 5),
        cloudiness=(0.35, 0.3, 0.3, 0.25, 0.2, 0.15, 0.1, 0.1, 0.15, 0.2, 0.3, 0.35),
        class_weights=_FR_WEIGHTS,
        # Durum wheat, grown around Toulouse, looks like the other winter cereals [E].
        unknown_mix={"sunflower": 4, "soy": 2, "fallow": 2, "vegetable": 1, "winter_rye": 2},
        sowing=_SOWING["FR2"],
        # Silking ~1730 and grain maturity ~3100 degree days in FR2 [D].
        corn=(240.0, 1730.0, 3000.0, 3150.0), summer_drought=0.3, wet_days=0.35,
    ),
}


def get_region(name: str) -> Region:
    """The region called ``name`` (case-insensitive).

    Raises:
        InputError: for an unknown region, listing the known ones.
    """
    key = name.strip().upper()
    if key not in REGIONS:
        raise InputError(f"Unknown region {name!r}; choose one of {', '.join(sorted(REGIONS))}.")
    return REGIONS[key]


def day_length_hours(latitude_deg: float, doy: np.ndarray) -> np.ndarray:
    """Astronomical day length (hours) at ``latitude_deg`` for days of year ``doy`` (any shape)."""
    decl = np.deg2rad(23.44) * np.sin(2 * np.pi * (np.asarray(doy, float) - 81) / 365.0)
    x = -np.tan(np.deg2rad(latitude_deg)) * np.tan(decl)
    return 24.0 / np.pi * np.arccos(np.clip(x, -1.0, 1.0))
