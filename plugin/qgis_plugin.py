"""The plugin object QGIS loads: registers the Processing provider, the dock and its menu entries."""

from __future__ import annotations

import logging

from qgis.core import Qgis, QgsApplication, QgsMessageLog
from qgis.PyQt.QtCore import QCoreApplication
from qgis.PyQt.QtGui import QIcon
from qgis.PyQt.QtWidgets import QAction

from .algorithms.base import ICON
from .dependencies import activate_dependency_folder, describe_missing, missing_requirements
from .i18n import install_translator, tr

log = logging.getLogger(__name__)


class ThermoCropPlugin:
    """Entry point: ``initProcessing`` (also run headless), ``initGui`` and ``unload``."""

    def __init__(self, iface) -> None:
        self.iface = iface
        self.provider = None
        self.dock = None
        self.action = None
        self.missing = []
        self.translator = None
        self.log_handler = None

    def initProcessing(self) -> None:  # noqa: N802 (QGIS API)
        """Register the provider; qgis_process calls only this, the desktop calls it from initGui."""
        if self.provider is not None:  # a second call must not register a second provider
            return
        if self.translator is None:
            try:
                self.translator = install_translator()
            except Exception as exc:  # a broken translation file must not stop the plugin
                log.warning("Could not load the ThermoCrop translation: %s", exc)
        activate_dependency_folder_safely()
        self.missing = missing_requirements()
        if self.missing:
            QgsMessageLog.logMessage(describe_missing(self.missing), "ThermoCrop", Qgis.Warning)
        from .provider import ThermoCropProvider

        self.provider = ThermoCropProvider()
        QgsApplication.processingRegistry().addProvider(self.provider)

    def initGui(self) -> None:  # noqa: N802
        self.initProcessing()
        from .log_forwarding import forward_warnings

        if self.log_handler is None:
            self.log_handler = forward_warnings()
        self.action = QAction(QIcon(str(ICON)), tr("ThermoCrop"), self.iface.mainWindow())
        self.action.setCheckable(True)
        self.action.setToolTip(tr("Classify parcels with ThermoCrop"))
        self.action.toggled.connect(self._toggle_dock)
        self.iface.addPluginToMenu(tr("&ThermoCrop"), self.action)
        self.iface.addToolBarIcon(self.action)
        if self.missing:
            self.iface.messageBar().pushMessage(
                "ThermoCrop", tr("Missing Python packages: {names}. Open the ThermoCrop dock to install them.").format(
                    names=", ".join(r.module for r in self.missing)), Qgis.Warning, 15)

    def _toggle_dock(self, visible: bool) -> None:
        if self.dock is None:
            from qgis.PyQt.QtCore import Qt

            from .dock import ThermoCropDock

            self.dock = ThermoCropDock(self.iface)
            self.iface.addDockWidget(Qt.RightDockWidgetArea, self.dock)
            self.dock.visibilityChanged.connect(self.action.setChecked)
        self.dock.setVisible(visible)

    def unload(self) -> None:
        """Remove everything initGui and initProcessing added."""
        if self.dock is not None:
            self.dock.shutdown()
            self.iface.removeDockWidget(self.dock)
            self.dock.deleteLater()
            self.dock = None
        if self.action is not None:
            self.iface.removePluginMenu(tr("&ThermoCrop"), self.action)
            self.iface.removeToolBarIcon(self.action)
            self.action.deleteLater()
            self.action = None
        if self.provider is not None:
            QgsApplication.processingRegistry().removeProvider(self.provider)
            self.provider = None
        if self.translator is not None:
            QCoreApplication.removeTranslator(self.translator)
            self.translator = None
        if self.log_handler is not None:
            from .log_forwarding import stop_forwarding

            stop_forwarding(self.log_handler)
            self.log_handler = None


def activate_dependency_folder_safely() -> None:
    """Make the plugin-owned package folder importable, if there is one (never fails the load)."""
    try:
        activate_dependency_folder()
    except Exception as exc:  # the profile folder may be unreadable; plugins must still load
        log.warning("Could not use the ThermoCrop package folder: %s", exc)
