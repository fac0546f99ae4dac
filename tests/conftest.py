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
