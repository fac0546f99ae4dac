"""The settings of a run as objects: how thermal time is counted (``ThermalTime``), how pixels are
sampled and masked (``PixelSampling``) and both together for an extraction
(``ExtractionSettings``). Defaults are written here once; datasets and bundles store them with
``to_dict`` and read them back with ``from_dict`` (older files that say ``gdd_method`` load)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping, Optional, Union

from .errors import InputError
from .scenes.radiometry import SCL_INVALID
from .thermal.gdd import SeasonStart

BLOCK_SIZE = 1024
"""Window edge in pixels: a multiple of the usual GeoTIFF/COG tile sizes (256, 512)."""


def season_start_of(value: Union[SeasonStart, str, None]) -> SeasonStart:
    """``value`` as a ``SeasonStart``: None is 1 January, text is parsed (``"09-01/-1"``)."""
    if value is None:
        return SeasonStart()
    if isinstance(value, str):
        return SeasonStart.parse(value)
    return value


@dataclass(frozen=True)
class ThermalTime:
    """How growing degree days are counted: from ``season_start``, daily mean temperatures
    clipped at ``t_cap`` above ``t_base`` (``method`` "paper": clip, then average; "average":
    average, then clip at ``t_base``)."""

    season_start: SeasonStart = field(default_factory=SeasonStart)
    t_base: float = 0.0
    t_cap: float = 30.0
    method: str = "paper"

    def __post_init__(self) -> None:
        object.__setattr__(self, "season_start", season_start_of(self.season_start))

    def to_dict(self) -> dict[str, Any]:
        return {"season_start": str(self.season_start), "t_base": float(self.t_base), "t_cap": float(self.t_cap),
                "method": self.method}

    @classmethod
    def from_dict(cls, data: Union[Mapping[str, Any], Any, None]) -> "ThermalTime":
        """From a mapping or an object with these attributes; ``gdd_method`` is read as ``method``
        and missing values take the defaults."""
        if data is None:
            return cls()

        def pick(*names: str, default: Any = None) -> Any:
            for name in names:
                if isinstance(data, Mapping) and name in data:
                    return data[name]
                if not isinstance(data, Mapping) and hasattr(data, name):
                    return getattr(data, name)
            return default

        return cls(season_start=pick("season_start"), t_base=float(pick("t_base", default=0.0)),
                   t_cap=float(pick("t_cap", default=30.0)), method=pick("method", "gdd_method", default="paper"))


@dataclass(frozen=True)
class PixelSampling:
    """Which pixels of a parcel are read: at most ``max_pixels`` per date (drawn with ``seed``),
    a date kept where at least ``min_valid_fraction`` of them and ``min_pixels`` are clear of the
    SCL classes ``scl_invalid``; parcels covering fewer than ``min_pixels`` pixels are ``too_small``;
    ``missing_scl`` says what happens to L2A products without SCL (``warn``: use them unmasked;
    ``bands``: mask bright pixels; ``refuse``)."""

    max_pixels: int = 64
    seed: int = 0
    min_valid_fraction: float = 0.5
    min_pixels: int = 1
    missing_scl: str = "warn"
    scl_invalid: tuple[int, ...] = SCL_INVALID

    def __post_init__(self) -> None:
        if self.max_pixels < 1:
            raise InputError(f"max_pixels must be at least 1, got {self.max_pixels}.")
        if not 0.0 <= self.min_valid_fraction <= 1.0:
            raise InputError(f"min_valid_fraction must lie in 0..1, got {self.min_valid_fraction}.")
        object.__setattr__(self, "scl_invalid", tuple(int(c) for c in self.scl_invalid))

    def to_dict(self) -> dict[str, Any]:
        return {"max_pixels": self.max_pixels, "seed": self.seed, "min_valid_fraction": self.min_valid_fraction,
                "min_pixels": self.min_pixels, "missing_scl": self.missing_scl,
                "scl_invalid": list(self.scl_invalid)}

    @classmethod
    def from_dict(cls, data: Optional[Mapping[str, Any]]) -> "PixelSampling":
        data = dict(data or {})
        defaults = cls.__dataclass_fields__
        values = {name: data[name] for name in defaults if name in data}
        return cls(**values)


@dataclass(frozen=True)
class ExtractionSettings:
    """How an extraction samples pixels and counts thermal time, its window size and the options
    of the weather reader (``max_distance_m``, variable names)."""

    sampling: PixelSampling = field(default_factory=PixelSampling)
    thermal: ThermalTime = field(default_factory=ThermalTime)
    block_size: int = BLOCK_SIZE
    weather_options: Mapping[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        """The flat record datasets store in their metadata, keys and values as datasets always
        held them (``gdd_method`` for the method; ``min_pixels``, the window size and the weather
        options are not part of it)."""
        sampling, thermal = self.sampling, self.thermal
        return {"max_pixels": sampling.max_pixels, "seed": sampling.seed,
                "min_valid_fraction": sampling.min_valid_fraction, "season_start": str(thermal.season_start),
                "t_base": thermal.t_base, "t_cap": thermal.t_cap, "gdd_method": thermal.method,
                "scl_invalid": list(sampling.scl_invalid), "missing_scl": sampling.missing_scl}

    @classmethod
    def from_dict(cls, data: Optional[Mapping[str, Any]]) -> "ExtractionSettings":
        data = dict(data or {})
        return cls(sampling=PixelSampling.from_dict(data), thermal=ThermalTime.from_dict(data))
