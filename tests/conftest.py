"""Shared test set-up: QGIS tests run where QGIS is installed, offscreen."""

from __future__ import annotations

import importlib.util
import os

import pytest

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
os.environ.setdefault("PROJ_DATA", "/usr/share/proj")

HAVE_QGIS = importlib.util.find_spec("qgis") is not None


def pytest_collection_modifyitems(config, items):
    if HAVE_QGIS:
        return
    skip = pytest.mark.skip(reason="QGIS (python3-qgis) is not installed")
    for item in items:
        if "qgis" in item.keywords:
            item.add_marker(skip)


# Synthetic regions (synth/): generated once per test session and shared.
@pytest.fixture(scope="session")
def make_region(tmp_path_factory):
    """Factory ``make_region(region="FR2", level="L2A", seed=0, parcels=100, **kw) -> Path``.

    Each distinct set of arguments is generated once per session into its own folder; tests
    must not modify the files.
    """
    from thermocrop.synth import generate_region

    cache = {}

    def make(region="FR2", level="L2A", seed=0, parcels=100, **kwargs):
        key = (region, level, seed, parcels, tuple(sorted(kwargs.items())))
        if key not in cache:
            name = f"{region}_{level}_s{seed}_p{parcels}_{len(cache)}"
            out = tmp_path_factory.mktemp("synth") / name
            generate_region(region, out, parcels=parcels, seed=seed, level=level, **kwargs)
            cache[key] = out
        return cache[key]

    return make


@pytest.fixture(scope="session")
def tiny_region(make_region):
    """Folder of a tiny FR2 L2A region: ~100 parcels, 39 scenes of 240 px, weather.nc, truth.json."""
    return make_region("FR2", "L2A", seed=0, parcels=100)


@pytest.fixture
def random_batch():
    """Factory ``random_batch(b, t, s, generator)`` of model inputs drawn from ``generator``:
    pixels (70 % valid), dates (80 % valid, the first always), days of season and GDD."""
    import torch

    def make(b, t, s, g):
        pmask = torch.rand(b, t, s, generator=g) > 0.3
        pixels = torch.randn(b, t, 10, s, generator=g) * pmask.unsqueeze(2)
        dmask = torch.rand(b, t, generator=g) > 0.2
        dmask[:, 0] = True
        dos = torch.cumsum(torch.rand(b, t, generator=g) * 20 + 1, dim=1)
        gdd = torch.cumsum(torch.rand(b, t, generator=g) * 200 + 5, dim=1)
        return pixels, pmask, dmask, dos, gdd

    return make


# One QGIS application per test session (offscreen), with Processing and the ThermoCrop provider.
@pytest.fixture(scope="session")
def qgis_app(tmp_path_factory):
    """The QgsApplication with Processing initialised and a throw-away profile folder."""
    pytest.importorskip("qgis")
    from qgis.core import QgsApplication

    profile = tmp_path_factory.mktemp("qgis-profile")
    app = QgsApplication([], False, str(profile))
    app.initQgis()
    # QGIS's own Processing plugin lives in a plugin folder (pytest's pythonpath lists it).
    processing = pytest.importorskip("processing.core.Processing")
    Processing = processing.Processing

    Processing.initialize()
    yield app
    Processing.deinitialize()


# Python-side providers must stay referenced while registered, or their overrides vanish.
_PROVIDERS: list = []


@pytest.fixture
def provider(qgis_app):
    """The ThermoCrop provider, registered again if a test removed it."""
    from qgis.core import QgsApplication

    from thermocrop.plugin.provider import ThermoCropProvider

    registry = QgsApplication.processingRegistry()
    if registry.providerById("thermocrop") is None:
        _PROVIDERS.append(ThermoCropProvider())
        registry.addProvider(_PROVIDERS[-1])
    return registry.providerById("thermocrop")
