"""The QGIS side of ThermoCrop: plugin entry, Processing provider, dock widget and tasks."""
