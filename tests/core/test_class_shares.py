"""Class shares: reading the CSV file and bringing probabilities to the shares, on files written here."""

from __future__ import annotations

import numpy as np
import pytest

from thermocrop.core.class_shares import (
    SHARE_FLOOR,
    TOLERANCE,
    apply_share_factors,
    match_class_shares,
    read_class_shares,
    share_factors,
)
from thermocrop.core.errors import InputError

CLASSES = ("corn", "meadow", "unknown", "winter_wheat")


def _csv(tmp_path, text: str, name: str = "shares.csv"):
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def test_shares_are_read_by_class_name_in_any_unit_and_sum_to_one(tmp_path):
    # Percentages, a byte-order mark, a column order of its own and a blank line.
    path = _csv(tmp_path, "\ufeffshare,class\n40,meadow\n\n20,corn\n30,winter_wheat\n")
    shares = read_class_shares(path, CLASSES)
    # unknown is not listed: the least share; the others in the proportions given.
    raw = np.array([20.0, 40.0, 0.0, 30.0]) / 90.0
    raw[2] = SHARE_FLOOR
    np.testing.assert_allclose(shares, raw / raw.sum())
    assert shares.sum() == pytest.approx(1.0)
    counts = read_class_shares(_csv(tmp_path, "class,share\ncorn,2\nmeadow,4\nunknown,1\nwinter_wheat,3\n"), CLASSES)
    np.testing.assert_allclose(counts, [0.2, 0.4, 0.1, 0.3])


@pytest.mark.parametrize("text, says", [
    ("class,share\nmaize,3\n", "line 2: the model has no class 'maize'"),
    ("class,share\ncorn,3\ncorn,4\n", "line 3: class 'corn' is listed twice"),
    ("class,share\ncorn,-1\n", "line 2: the share '-1' of 'corn' is not a number of 0 or more"),
    ("class,share\ncorn,a lot\n", "the share 'a lot' of 'corn'"),
    ("class,share\ncorn,nan\n", "the share 'nan' of 'corn'"),
    ("crop;part\ncorn;3\n", "has no columns 'class' and 'share'"),
    ("", "has no columns 'class' and 'share'"),
    ("class,share\ncorn,0\n", "gives no class a share above 0"),
])
def test_a_file_that_cannot_be_used_is_refused_naming_it_and_the_line(tmp_path, text, says):
    path = _csv(tmp_path, text)
    with pytest.raises(InputError) as caught:
        read_class_shares(path, CLASSES)
    assert str(path) in str(caught.value) and says in str(caught.value)
    with pytest.raises(InputError, match="does not exist"):
        read_class_shares(tmp_path / "none.csv", CLASSES)


def test_the_mean_probabilities_are_brought_to_the_shares_by_one_factor_per_class():
    rng = np.random.default_rng(3)
    p = rng.dirichlet(np.ones(4), size=200).astype(np.float32)
    p[7] = np.nan  # a parcel not classified
    shares = np.array([0.1, 0.5, 0.15, 0.25])
    q = match_class_shares(p, shares)
    seen = np.isfinite(p).all(axis=1)
    assert np.isnan(q[7]).all() and np.isfinite(q[seen]).all()
    np.testing.assert_allclose(q[seen].sum(axis=1), 1.0, rtol=1e-5)
    assert np.abs(q[seen].mean(axis=0) - shares).max() <= TOLERANCE + 1e-6
    # One factor per class for every parcel: q / p, divided by its row's first entry, is the same
    # on every row.
    ratio = q[seen] / p[seen]
    ratio /= ratio[:, :1]
    np.testing.assert_allclose(ratio, np.broadcast_to(ratio[0], ratio.shape), rtol=1e-4)
    # Those factors, applied to one parcel alone (as Explain does), give that parcel's row.
    factors = share_factors(p, shares)
    assert factors.max() == pytest.approx(1.0)
    np.testing.assert_allclose(apply_share_factors(p[3], factors), q[3], rtol=1e-5)
    np.testing.assert_allclose(factors / factors[0], ratio[0], rtol=1e-4)


def test_labels_follow_the_shares_where_the_model_cannot_tell_the_parcels_apart():
    # Every parcel at 0.6 / 0.4: the layer's mean is the row itself, so the shares become each
    # parcel's probabilities and the label turns to the class the shares favour.
    p = np.tile(np.array([[0.6, 0.4]], dtype=np.float32), (10, 1))
    q = match_class_shares(p, np.array([0.2, 0.8]))
    np.testing.assert_allclose(q, np.tile([[0.2, 0.8]], (10, 1)), atol=TOLERANCE)
    assert (q.argmax(axis=1) == 1).all()
    # Shares equal to the layer's mean change nothing.
    r = np.random.default_rng(0).dirichlet(np.ones(3), size=50)
    np.testing.assert_allclose(match_class_shares(r, r.mean(axis=0)), r, rtol=1e-5)
