"""The ThermoCrop library: thermal time, weather, scenes, pixel sets, models, classification.

Nothing here imports QGIS or Qt; the plugin and the command line are two doors into it.
"""
