"""The realism measure (synth-check): quartiles of parcel means in GDD bins and the distances,
checked on small datasets whose differences are known by construction."""

from __future__ import annotations

import json

import numpy as np
import pytest

from thermocrop.cli.main import main
from thermocrop.core.errors import InputError
from thermocrop.core.pixel_sets import PixelSets, save_dataset
from thermocrop.synth.realism import FEATURES, compare, gdd_bins, parcel_observations

CLASSES = ("meadow", "rare", "wheat")
BASE = np.array([900, 800, 700, 1000, 2000, 2600, 2700, 2900, 2000, 1200], dtype=np.int64)


def _values(i: int, t: int) -> np.ndarray:
    """DN of parcel ``i`` at date ``t``: the base spectrum, 10 DN per parcel, 300 per date."""
    return BASE + 10 * i + 300 * t


def _dataset(per_class: dict[str, int], gdd: list[float], pixels: int, b04_shift: int = 0,
             cloudy_extra: bool = False, level: str = "L1C") -> PixelSets:
    rows, labels = [], []
    for name, n in per_class.items():
        for i in range(n):
            rows.append([_values(i, t) for t in range(len(gdd))])
            labels.append(CLASSES.index(name))
    v = np.array(rows, dtype=np.int64)  # (P, T, 10)
    v[:, :, 2] += b04_shift
    # Pixels spread symmetrically around the parcel value, so their mean is the value.
    offsets = np.array([-20, -10, 10, 20][:pixels]) if pixels > 1 else np.zeros(1, np.int64)
    pix = v[..., None] + offsets
    p, t = v.shape[:2]
    date_mask = np.ones((p, t), bool)
    if cloudy_extra:
        cloud = np.zeros((1, t, 10, pixels), np.int64) + 500
        cloud[0, 0, 0], cloud[0, 0, 8] = 4000, 3000  # bright in blue and SWIR: a cloud
        pix = np.concatenate([pix, cloud])
        date_mask = np.concatenate([date_mask, np.eye(1, t, dtype=bool)])
        labels.append(CLASSES.index("wheat"))
        p += 1
    return PixelSets(
        pixels=pix.astype(np.uint16), pixel_mask=np.ones((p, t, pixels), bool), date_mask=date_mask,
        gdd=np.tile(np.array(gdd, np.float32), (p, 1)), dates=np.datetime64("2018-03-01") + 20 * np.arange(t),
        day_of_season=(59 + 20 * np.arange(t)).astype(np.float32),
        parcel_ids=np.array([f"p{i}" for i in range(p)]), status=np.array(["ok"] * p),
        labels=np.array(labels, np.int16), classes=CLASSES, meta={"levels": [level], "source": "test"})


@pytest.fixture()
def pair():
    real = _dataset({"wheat": 10, "meadow": 6, "rare": 2}, [100.0, 300.0, 600.0], pixels=1)
    synthetic = _dataset({"wheat": 10, "meadow": 6, "rare": 3}, [110.0, 290.0, 620.0], pixels=4,
                         b04_shift=300, cloudy_extra=True)
    return real, synthetic


def test_bins_lie_half_way_between_real_dates(pair):
    real = parcel_observations([pair[0]])
    assert gdd_bins(real).tolist() == [0.0, 200.0, 450.0, 750.0]
    # Dates closer than 50 degree days share a bin (a snow date two days after another).
    real.gdd = np.where(real.gdd == 300.0, 130.0, real.gdd)
    assert gdd_bins(real).tolist() == [0.0, 365.0, 835.0]


def test_distances_are_the_known_shift(pair):
    real, synthetic = (parcel_observations([ps]) for ps in pair)
    assert synthetic.screened == pytest.approx(1 / (19 * 3 + 1))
    assert real.parcels == {"wheat": 10, "meadow": 6, "rare": 2}
    result = compare(real, synthetic, min_parcels=5)
    assert result.classes == ["meadow", "wheat"]  # 'rare' has two real parcels
    d = dict(zip(FEATURES, result.distance[result.classes.index("wheat")]))
    # Synthetic B04 is 300 DN brighter in every parcel: every quartile moves by 0.03.
    assert d["B04"] == pytest.approx(0.03)
    for band in ("B02", "B03", "B05", "B06", "B07", "B08", "B8A", "B11", "B12", "NDWI"):
        assert d[band] == pytest.approx(0.0, abs=1e-9), band
    # NDVI by hand: quartiles of (B08 - B04) / (B08 + B04) over the ten parcels per date.
    expect = []
    for t in range(3):
        b04 = np.array([_values(i, t)[2] for i in range(10)], float)
        b08 = np.array([_values(i, t)[6] for i in range(10)], float)
        q_real = np.percentile((b08 - b04) / (b08 + b04), [25, 50, 75])
        q_syn = np.percentile((b08 - b04 - 300) / (b08 + b04 + 300), [25, 50, 75])
        expect.append(np.abs(q_real - q_syn).mean())
    assert d["NDVI"] == pytest.approx(np.mean(expect))
    assert result.counts["wheat"].tolist() == [[10, 10], [10, 10], [10, 10]]


def test_levels_must_match(pair):
    real = parcel_observations([pair[0]])
    l2a = parcel_observations([_dataset({"wheat": 10}, [100.0, 300.0, 600.0], pixels=2, level="L2A")])
    with pytest.raises(InputError, match="L1C.*L2A"):
        compare(real, l2a)


def test_command_writes_numbers_and_figure(pair, tmp_path):
    save_dataset(pair[0], tmp_path / "real")
    save_dataset(pair[1], tmp_path / "synthetic")
    rc = main(["synth-check", "--real", str(tmp_path / "real"), "--synthetic", str(tmp_path / "synthetic"),
               "--out", str(tmp_path / "check"), "--plot", str(tmp_path / "realism.png")])
    assert rc == 0
    report = json.loads((tmp_path / "check" / "realism.json").read_text())
    assert report["distance"]["wheat"]["B04"] == pytest.approx(0.03)
    assert report["real_info"]["parcels"]["wheat"] == 10
    assert "| wheat |" in (tmp_path / "check" / "realism.md").read_text()
    assert (tmp_path / "realism.png").stat().st_size > 10_000
