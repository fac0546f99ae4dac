"""Settings as objects: what datasets and bundles store, and that older shapes still load."""

from types import SimpleNamespace

import pytest

from thermocrop.core.classify import bundle_thermal_time
from thermocrop.core.errors import InputError
from thermocrop.core.settings import ExtractionSettings, PixelSampling, ThermalTime
from thermocrop.core.thermal.gdd import SeasonStart


def test_a_datasets_metadata_keeps_its_keys_order_and_values():
    settings = ExtractionSettings(sampling=PixelSampling(max_pixels=16, seed=3, min_pixels=4, scl_invalid=[3, 8]),
                                  thermal=ThermalTime(season_start="09-01/-1", t_base=5, t_cap=28.5,
                                                      method="average"),
                                  weather_options={"max_distance_m": 1000.0})
    record = settings.to_dict()
    # The keys datasets were always written with, in that order; min_pixels, the window size and
    # the weather options were never part of them.
    assert list(record) == ["max_pixels", "seed", "min_valid_fraction", "season_start", "t_base", "t_cap",
                            "gdd_method", "scl_invalid", "missing_scl"]
    assert record == {"max_pixels": 16, "seed": 3, "min_valid_fraction": 0.5, "season_start": "09-01/-1",
                      "t_base": 5, "t_cap": 28.5, "gdd_method": "average", "scl_invalid": [3, 8],
                      "missing_scl": "warn"}
    back = ExtractionSettings.from_dict(record)
    assert back.thermal == ThermalTime(SeasonStart.parse("09-01/-1"), 5.0, 28.5, "average")
    assert (back.sampling.max_pixels, back.sampling.seed, back.sampling.scl_invalid) == (16, 3, (3, 8))


def test_thermal_time_reads_gdd_method_and_fills_defaults():
    assert ThermalTime.from_dict({"gdd_method": "average", "t_cap": 25}) == ThermalTime(method="average", t_cap=25.0)
    assert ThermalTime.from_dict(None) == ThermalTime() == ThermalTime.from_dict({})
    assert ThermalTime(season_start=None).season_start == SeasonStart()
    assert ThermalTime.from_dict(ThermalTime(t_base=4.0).to_dict()) == ThermalTime(t_base=4.0)


def test_a_bundles_thermal_time_from_its_gdd_record_or_an_older_config():
    current = SimpleNamespace(config=SimpleNamespace(gdd={"t_base": 2, "t_cap": 31, "method": "average",
                                                           "season_start": "10-01/-1"}))
    assert bundle_thermal_time(current) == ThermalTime(SeasonStart.parse("10-01/-1"), 2.0, 31.0, "average")
    # Older configs kept the settings as attributes of their own, the method as gdd_method.
    older = SimpleNamespace(config=SimpleNamespace(gdd=None, t_base=1.5, gdd_method="average"))
    assert bundle_thermal_time(older) == ThermalTime(t_base=1.5, method="average")


def test_sampling_refuses_values_out_of_range():
    with pytest.raises(InputError, match="max_pixels must be at least 1"):
        PixelSampling(max_pixels=0)
    with pytest.raises(InputError, match="min_valid_fraction must lie in 0..1"):
        PixelSampling(min_valid_fraction=1.5)
