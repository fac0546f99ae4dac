"""The ``thermocrop`` Processing provider: Toolbox, models, scripts and ``qgis_process``."""

from __future__ import annotations

from qgis.core import QgsProcessingProvider
from qgis.PyQt.QtGui import QIcon

from .algorithms.accuracy_assessment import AccuracyAssessment
from .algorithms.base import ICON
from .algorithms.calibrate_model import CalibrateModel
from .algorithms.classify_parcels import ClassifyParcels
from .algorithms.export_training_data import ExportTrainingData
from .algorithms.inseason_accuracy import InSeasonAccuracy
from .algorithms.parcel_gdd import ParcelGDD
from .algorithms.search_catalog import SearchCatalog
from .algorithms.train_model import TrainModel


class ThermoCropProvider(QgsProcessingProvider):
    """Provides classifyparcels, parcelgdd, exporttrainingdata, trainmodel, calibratemodel,
    accuracyassessment, inseasonaccuracy and searchcatalog."""

    def id(self) -> str:
        return "thermocrop"

    def name(self) -> str:
        return "ThermoCrop"

    def icon(self) -> QIcon:
        return QIcon(str(ICON))

    def loadAlgorithms(self) -> None:  # noqa: N802 (QGIS API)
        for algorithm in (ClassifyParcels(), ParcelGDD(), ExportTrainingData(), TrainModel(),
                          CalibrateModel(), AccuracyAssessment(), InSeasonAccuracy(), SearchCatalog()):
            self.addAlgorithm(algorithm)
