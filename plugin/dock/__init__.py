"""The ThermoCrop dock widget, a shell of panels (``shell.py``); see its module for the map."""

from .shell import ThermoCropDock

__all__ = ["ThermoCropDock"]
