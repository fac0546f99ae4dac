"""The Classify tab's advanced group: where a run goes (this process, local Dask workers or the
cluster of a Dask scheduler), its run folder and the resume of an interrupted run, read as the
request's ``ClusterSpec`` and remembered between sessions (the resume only for the next run)."""

from __future__ import annotations

from qgis.core import QgsSettings
from qgis.gui import QgsCollapsibleGroupBox, QgsFileWidget
from qgis.PyQt.QtWidgets import QCheckBox, QLineEdit, QSpinBox

from ...app import ClusterSpec
from ...core.limits import LIMITS
from ..i18n import tr
from .layout import file_row, wrapping_form


class ClusterBox(QgsCollapsibleGroupBox):
    """Local worker processes, a scheduler address, the run folder and "Resume", collapsed by
    default (a run on this process needs none of them)."""

    def __init__(self) -> None:
        super().__init__(tr("Advanced: partitioned run (Dask)"))
        self.setCollapsed(True)
        form = wrapping_form(self)
        self.workers = QSpinBox()
        self.workers.setRange(1, int(LIMITS["workers"].high))
        self.workers.setToolTip(tr("Worker processes of a Dask cluster started on this computer for the run, "
                                   "which classify the partitions side by side; 1: the run stays in QGIS"))
        form.addRow(tr("Local workers"), self.workers)
        self.scheduler = QLineEdit()
        self.scheduler.setPlaceholderText(tr("tcp://HOST:PORT (empty: this computer)"))
        self.scheduler.setToolTip(tr("Run the partitions on a Dask cluster started apart (SLURM, Kubernetes, "
                                     "'dask scheduler'); the run folder and the input files must be at the same "
                                     "paths on every worker"))
        form.addRow(tr("Scheduler"), self.scheduler)
        self.run_folder = file_row("")
        self.run_folder.setStorageMode(QgsFileWidget.GetDirectory)
        self.run_folder.lineEdit().setPlaceholderText(tr("empty: beside the output"))
        self.run_folder.setToolTip(tr("Where the partitions are written as they finish (removed once the result "
                                      "is written); giving one runs the partitions even in QGIS, so that a "
                                      "cancelled run can be resumed"))
        form.addRow(tr("Run folder"), self.run_folder)
        self.resume = QCheckBox(tr("Resume the interrupted run"))
        self.resume.setToolTip(tr("Take up a cancelled run from the partitions its run folder holds: only the "
                                  "missing ones are computed (same inputs and settings)"))
        form.addRow(self.resume)

    def spec(self) -> ClusterSpec:
        """The choices as typed (the run folder not yet defaulted: ``plugin.task.prepared_cluster``)."""
        return ClusterSpec(workers=self.workers.value(), scheduler=self.scheduler.text().strip() or None,
                           run_folder=self.run_folder.filePath().strip() or None, resume=self.resume.isChecked())

    def save_settings(self, settings: QgsSettings) -> None:
        """Keep the workers, the scheduler and the run folder in ``settings`` (its group begun)."""
        settings.setValue("workers", self.workers.value())
        settings.setValue("scheduler", self.scheduler.text().strip())
        settings.setValue("run_folder", self.run_folder.filePath())

    def restore_settings(self, settings: QgsSettings) -> None:
        """Take back what :meth:`save_settings` kept (the group open when something is set)."""
        self.workers.setValue(settings.value("workers", 1, type=int))
        self.scheduler.setText(settings.value("scheduler", "") or "")
        self.run_folder.setFilePath(settings.value("run_folder", "") or "")
        self.setCollapsed(self.workers.value() == 1 and not self.scheduler.text() and not self.run_folder.filePath())
