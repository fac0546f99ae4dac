"""The QGIS adapter: plugin entry, Processing provider and algorithms, dock widget."""
