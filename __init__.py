"""ThermoCrop: crop-type classification of parcels with Thermal Positional Encoding.

The repository root is both the QGIS plugin folder and the Python package ``thermocrop``.
QGIS calls :func:`classFactory`; everything heavy (torch, the geo stack) is imported later,
when the user asks for it, so that QGIS starts fast and a missing dependency is reported
instead of breaking the plugin load.
"""

import configparser
from pathlib import Path


def __getattr__(name):
    """``__version__``: the version of ``metadata.txt``, the one place it is written (QGIS reads it
    there; ``pyproject.toml`` takes it from here)."""
    if name != "__version__":
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    metadata = configparser.ConfigParser(interpolation=None)
    metadata.read(Path(__file__).with_name("metadata.txt"), encoding="utf-8")
    return metadata["general"]["version"]


def classFactory(iface):  # noqa: N802 (name fixed by QGIS)
    """Return the plugin instance QGIS asks for at start-up."""
    from .plugin.qgis_plugin import ThermoCropPlugin

    return ThermoCropPlugin(iface)
