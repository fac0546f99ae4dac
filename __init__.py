"""ThermoCrop: crop-type classification of parcels with Thermal Positional Encoding.

The repository root is both the QGIS plugin folder and the Python package ``thermocrop``.
QGIS calls :func:`classFactory`; everything heavy (torch, the geo stack) is imported later,
when the user asks for it, so that QGIS starts fast and a missing dependency is reported
instead of breaking the plugin load.
"""

__version__ = "0.1.0"


def classFactory(iface):  # noqa: N802 (name fixed by QGIS)
    """Return the plugin instance QGIS asks for at start-up."""
    from .plugin.main import ThermoCropPlugin

    return ThermoCropPlugin(iface)
