"""A Ctrl-C that reaches a comparison of parcel statuses stops the run (numpy 1.x turns an
exception inside an object-array comparison into one ``False``: the run went on and failed
later with a ``TypeError``)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from thermocrop.core.pixel_sets import STATUS_OK, status_ok


class Interrupting(str):
    """A status whose comparison and text are where the interrupt lands."""

    def __eq__(self, other):
        raise KeyboardInterrupt

    __hash__ = str.__hash__

    def __str__(self):
        raise KeyboardInterrupt


def test_statuses_compare_as_text():
    status = np.array(["ok", "too_small", "no_clear_date", "ok"], dtype=object)
    assert status_ok(status).tolist() == [s == STATUS_OK for s in status.tolist()]
    assert status_ok(np.array([], dtype=object)).shape == (0,)


def test_an_interrupt_in_the_comparison_is_not_lost():
    status = np.array([Interrupting("ok"), "too_small"], dtype=object)
    if np.lib.NumpyVersion(np.__version__) < "2.0.0":
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            assert (status == STATUS_OK) is False  # what the plain comparison did with the interrupt
    with pytest.raises(KeyboardInterrupt):
        status_ok(status)
