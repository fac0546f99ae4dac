"""The dock's status panel below the tabs: Classify / Cancel, the progress bar, the last message and
the button that installs missing packages. It never scrolls away; messages with a level also reach
the ThermoCrop tab of the message log, and the message bar when asked."""

from __future__ import annotations

from typing import Callable, Optional

from qgis.core import Qgis, QgsApplication, QgsMessageLog
from qgis.PyQt.QtCore import Qt
from qgis.PyQt.QtWidgets import (
    QFrame,
    QHBoxLayout,
    QLabel,
    QProgressBar,
    QPushButton,
    QSizePolicy,
    QVBoxLayout,
)

from ..dependencies import dependency_folder, describe_missing, missing_requirements
from ..dependency_install import describe_install, make_install_task
from ..i18n import tr

LOG_TAG = "ThermoCrop"
MESSAGE_LINES = 9
"""Lines of the last message the panel shows at most."""


class StatusPanel(QFrame):
    """Buttons, progress and messages of the dock.

    Args:
        iface: gives the QGIS interface (or None without a desktop) when a message goes to the bar.
        installed: called after missing packages were installed (or failed to install).
    """

    def __init__(self, iface: Callable[[], object], installed: Callable[[], None]) -> None:
        super().__init__()
        self.iface, self.installed = iface, installed
        self.install_task = None
        self.setFrameShape(QFrame.StyledPanel)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(6, 4, 6, 4)
        layout.setSpacing(4)
        row = QHBoxLayout()
        self.run_button = QPushButton(tr("Classify"))
        self.run_button.setDefault(True)
        self.cancel_button = QPushButton(tr("Cancel"))
        self.cancel_button.setEnabled(False)
        row.addWidget(self.run_button)
        row.addWidget(self.cancel_button)
        layout.addLayout(row)
        self.progress = QProgressBar()
        self.progress.setMaximumHeight(18)
        layout.addWidget(self.progress)
        self.message = QLabel()
        self.message.setWordWrap(True)
        # A long message (a path, an error) wraps within the dock and never widens it; an unbreakable
        # path is cut at the dock's edge, and the tooltip holds the whole text.
        self.message.setSizePolicy(QSizePolicy.Ignored, QSizePolicy.Preferred)
        self.message.setMinimumWidth(40)
        # A run's report (classes, the model chosen, the season's status, warnings) may run to many
        # lines: at most MESSAGE_LINES show, so the tabs keep their room; the tooltip and the
        # message log hold it whole.
        self.message.setMaximumHeight(MESSAGE_LINES * self.message.fontMetrics().lineSpacing() + 4)
        self.message.setAlignment(Qt.AlignLeft | Qt.AlignTop)
        self.message.setTextInteractionFlags(Qt.TextSelectableByMouse)
        layout.addWidget(self.message)
        self.install_button = QPushButton(tr("Install missing packages"))
        self.install_button.clicked.connect(self.install_missing)
        self.install_button.setVisible(False)
        layout.addWidget(self.install_button)

    def say(self, text: str, level: Optional[int] = None, bar: bool = False) -> None:
        """Show ``text`` in the status panel; log it, and push it to the message bar when ``bar``.

        ``level``: ``Qgis.Info``, ``Qgis.Warning``, ``Qgis.Critical`` or ``Qgis.Success``; None only
        shows the text (hints while filling in the form).
        """
        colour = {Qgis.Critical: "#b71c1c", Qgis.Warning: "#8a5a00"}.get(level)
        self.message.setStyleSheet(f"color: {colour};" if colour else "")
        self.message.setText(text)
        self.message.setToolTip(text)
        if level is None:
            return
        QgsMessageLog.logMessage(text, LOG_TAG, Qgis.Info if level == Qgis.Success else level)
        iface = self.iface()
        if bar and iface is not None:
            iface.messageBar().pushMessage(LOG_TAG, text.splitlines()[0], level, 0 if level == Qgis.Critical else 8)

    def check_dependencies(self) -> list:
        """Offer the install button for missing packages; no run starts without them."""
        missing = missing_requirements()
        self.install_button.setVisible(any(r.pip for r in missing))
        if missing:
            self.say(describe_missing(missing, dependency_folder()), Qgis.Warning)
        self.run_button.setEnabled(not missing)
        return missing

    def install_missing(self) -> None:
        missing = missing_requirements()
        folder = dependency_folder()
        self.say(tr("Installing into {folder} …").format(folder=folder), Qgis.Info)

        def done(code, output):
            self.install_task = None
            if code != 0:
                QgsMessageLog.logMessage(output, LOG_TAG, Qgis.Critical)
            self.say(describe_install(code, output), Qgis.Success if code == 0 else Qgis.Critical, bar=True)
            self.check_dependencies()
            self.installed()

        self.install_task = make_install_task(missing, folder, done)
        QgsApplication.taskManager().addTask(self.install_task)

    def shutdown(self) -> None:
        if self.install_task is not None:
            # pip is left to finish (killing it could leave a half-installed package) but
            # must not report into a dock that no longer exists.
            self.install_task.on_done = None
