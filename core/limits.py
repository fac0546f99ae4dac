"""The accepted range of every numeric setting, shared by the command line and the Toolbox.

One table, so that ``thermocrop extract --max-pixels`` and the Toolbox's *Pixels per parcel*
refuse the same values. Bounds are inclusive; ``above`` marks an exclusive lower bound.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Optional, Union

Number = Union[int, float]


@dataclass(frozen=True)
class Limit:
    """The values a numeric setting may take.

    Attributes:
        low: smallest value (or, with ``above``, the value it must exceed).
        high: largest value.
        integer: whole numbers only.
        above: ``low`` itself is excluded.
        unit: for messages (``"degrees C"``, ``"km"``).
    """

    low: Number
    high: Number
    integer: bool = False
    above: bool = False
    unit: str = ""

    def describe(self) -> str:
        """The range as text, e.g. ``a whole number from 1 to 1024``."""
        kind = "a whole number" if self.integer else "a number"
        unit = f" {self.unit}" if self.unit else ""
        if self.above:
            return f"{kind} above {self.low:g} and at most {self.high:g}{unit}"
        return f"{kind} from {self.low:g} to {self.high:g}{unit}"

    def problem(self, value: Number) -> Optional[str]:
        """Why ``value`` is refused, or None when it is accepted."""
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
            return f"must be {self.describe()}, not {value!r}"
        if self.integer and not float(value).is_integer():
            return f"must be {self.describe()}, not {value!r}"
        if value < self.low or (self.above and value == self.low) or value > self.high:
            return f"must be {self.describe()}, not {value:g}"
        return None


SEED = Limit(0, 2**32 - 1, integer=True)

LIMITS: dict[str, Limit] = {
    # extraction and classification
    "max_pixels": Limit(1, 1024, integer=True),
    "min_pixels": Limit(1, 100_000, integer=True),
    "chunk_size": Limit(1, 10_000_000, integer=True),
    "min_valid_fraction": Limit(0.0, 1.0),
    "coverage": Limit(0.0, 0.999, above=True),
    "decided_threshold": Limit(0.0, 1.0),
    "offset": Limit(-10_000, 10_000, integer=True, unit="DN"),
    "seed": SEED,
    # growing degree days and weather
    "t_base": Limit(-50.0, 60.0, unit="degrees C"),
    "t_cap": Limit(-50.0, 60.0, unit="degrees C"),
    "max_distance_km": Limit(0.0, 1000.0, above=True, unit="km"),
    "season": Limit(1900, 2100, integer=True),
    "min_parcels": Limit(0, 10_000_000, integer=True),
    # catalogues
    "max_requests": Limit(1, 64, integer=True),
    "max_cloud": Limit(0.0, 100.0, unit="%"),
    "max_items": Limit(1, 1_000_000, integer=True),
    # imported tables
    "value_scale": Limit(0.0, 1_000_000.0, above=True),
    "value_offset": Limit(-10_000.0, 10_000.0),
    "block_size_km": Limit(0.0, 1000.0, above=True, unit="km"),
    # training
    "epochs": Limit(1, 100_000, integer=True),
    "steps_per_epoch": Limit(1, 10_000_000, integer=True),
    "batch_size": Limit(1, 65_536, integer=True),
    "sample_pixels": Limit(1, 1024, integer=True),
    "sample_dates": Limit(1, 366, integer=True),
    "lr": Limit(0.0, 10.0, above=True),
    "mean_pixel_share": Limit(0.0, 1.0),
    "season_window_share": Limit(0.0, 1.0),
    "season_window_end": Limit(0.0, 1.0),
    "season_cuts": Limit(1, 1000, integer=True),
    "season_level": Limit(0.0, 1.0),
    "jobs": Limit(1, 256, integer=True),
    "devices": Limit(1, 1024, integer=True),
    "members": Limit(1, 64, integer=True),
    "layer_width": Limit(1, 4096, integer=True),
    "distil_temperature": Limit(0.0, 100.0, above=True),
    "distil_hard_weight": Limit(0.0, 100.0),
    "distil_noise": Limit(0.0, 10.0),
    "workers": Limit(1, 4096, integer=True),
    "as_of_steps": Limit(1, 366, integer=True),
    # synthetic regions
    "parcels": Limit(9, 10_000_000, integer=True),
    "size": Limit(16, 100_000, integer=True, unit="pixels"),
    "year": Limit(1950, 2100, integer=True),
}
"""Setting name (as in the core functions' keyword arguments) -> accepted values."""
