"""Background classification for the dock: plain parameters in, a ``QgsTask`` running core."""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Any, Callable, Optional

from qgis.core import QgsTask

log = logging.getLogger(__name__)


@dataclass
class ClassificationParameters:
    """What the dock hands to the task; no QGIS objects, so the worker thread touches none.

    Attributes:
        parcels: GeoDataFrame of the parcels to classify (column ``parcel_id``).
        fids: ``(P,)`` feature ids of the parcels, in frame order.
        scenes: scene files or folders.
        weather: temperature file.
        model: model bundle path, or None for the shipped default.
        label_field, confidence_field: output field names.
    """

    parcels: Any
    fids: list
    scenes: list
    weather: str
    model: Optional[str] = None
    label_field: str = "crop_pred"
    confidence_field: str = "crop_conf"
    extra: dict = field(default_factory=dict)


class ClassificationTask(QgsTask):
    """Runs ``classify_parcels`` off the main thread; ``on_done(task)`` runs in the main thread.

    After it ends, ``result`` holds the ``ClassificationResult`` and ``bundle`` the model, or
    ``error`` the message of what went wrong (``cancelled`` tells a user stop from a failure).
    """

    def __init__(self, params: ClassificationParameters, on_done: Callable[["ClassificationTask"], None]):
        super().__init__("ThermoCrop: classify parcels", QgsTask.CanCancel)
        self.params = params
        self.on_done = on_done
        self.result = None
        self.bundle = None
        self.error: Optional[str] = None
        self.cancelled = False

    def run(self) -> bool:
        from ..core.errors import CancelledError, ThermoCropError
        from ..core.progress import Progress

        progress = Progress(lambda f: self.setProgress(100.0 * f), self.isCanceled)
        try:
            from ..core.bundle import default_bundle_path, load_bundle
            from ..core.classify import classify_parcels

            self.bundle = load_bundle(self.params.model or default_bundle_path())
            progress.check()
            self.result = classify_parcels(self.params.parcels, self.params.scenes, self.params.weather,
                                           self.bundle, progress=progress, **self.params.extra)
            return True
        except CancelledError:
            self.cancelled = True
            return False
        except ThermoCropError as exc:
            self.error = str(exc)
            return False
        except Exception as exc:  # a worker thread must report, not crash QGIS
            log.exception("Classification failed")
            self.error = f"{type(exc).__name__}: {exc}"
            return False

    def finished(self, ok: bool) -> None:
        if self.isCanceled():
            self.cancelled = True
        self.on_done(self)
