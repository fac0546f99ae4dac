"""The dock's "Search a catalogue" section: the alternative to picking scene files.

Catalogue, season and cloud limit; **Search** runs ``core.scenes.stac.search_items`` in a ``QgsTask``
over the parcel layer and lists the items found as dates with tile and cloud cover. The items
are saved as a STAC item collection under the cache folder, and that file is what the run reads
as its scenes (only the parts of the images that hold parcels are fetched). Credentials, where a
catalogue needs them, come from the environment or from a configuration of QGIS's
authentication manager chosen here; only its id is remembered (in the user's settings, never in
the project).
"""

from __future__ import annotations

from pathlib import Path
from typing import Callable, Optional

from qgis.core import Qgis, QgsApplication, QgsSettings, QgsVectorLayerFeatureSource
from qgis.PyQt.QtCore import QDate, Qt, pyqtSignal
from qgis.PyQt.QtWidgets import (
    QComboBox,
    QDoubleSpinBox,
    QFormLayout,
    QGroupBox,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QListWidget,
    QListWidgetItem,
    QPushButton,
    QSpinBox,
    QWidget,
)

from .catalog import (
    CATALOG_LABELS,
    CATALOGS,
    auth_credentials,
    catalog_spec,
    describe_search,
    describe_summary,
)
from .catalog_search import CatalogSearchTask, SearchParameters, search_file
from .i18n import tr
from .task import LayerSnapshot

SETTINGS_GROUP = "thermocrop/dock/catalog"


class CatalogWidget(QGroupBox):
    """A checkable group: ticked, its search results are the run's scenes instead of the scene list.

    Signals:
        message(str, int): a line for the dock's status panel (text, ``Qgis`` message level).
        itemsChanged(): the items found (or whether they are used) changed.
    """

    message = pyqtSignal(str, int)
    itemsChanged = pyqtSignal()

    def __init__(self, current_layer: Callable, parent: Optional[QWidget] = None, cache_dir=None) -> None:
        super().__init__(tr("Search a catalogue (instead of scene files)"), parent)
        self.current_layer = current_layer
        self.cache_dir = cache_dir
        self.task: Optional[CatalogSearchTask] = None
        self.items_path: Optional[str] = None
        self.summaries: list = []
        self.setCheckable(True)
        self.setChecked(False)
        self.setToolTip(tr("Find Sentinel-2 L2A scenes over the parcel layer in a STAC catalogue; only the parts "
                           "of the images that hold parcels are read, and kept in the cache."))
        form = QFormLayout(self)
        form.setFieldGrowthPolicy(QFormLayout.AllNonFixedFieldsGrow)
        self.body = QWidget()
        body = QFormLayout(self.body)
        body.setContentsMargins(0, 0, 0, 0)
        body.setFieldGrowthPolicy(QFormLayout.AllNonFixedFieldsGrow)
        form.addRow(self.body)

        self.catalog = QComboBox()
        self.catalog.addItems([tr(label) for label in CATALOG_LABELS])
        self.catalog.currentIndexChanged.connect(self._catalog_changed)
        body.addRow(tr("Catalogue"), self.catalog)
        self.url = QLineEdit()
        self.url.setPlaceholderText(tr("https://…/v1"))
        self.url.setToolTip(tr("The address of the STAC API (its landing page)"))
        self.url_label = QLabel(tr("STAC API"))
        body.addRow(self.url_label, self.url)
        row = QHBoxLayout()
        self.season = QSpinBox()
        self.season.setRange(1900, 2100)
        self.season.setValue(QDate.currentDate().year() - 1)
        self.season.setToolTip(tr("Calendar year searched (1 January to 31 December)"))
        self.max_cloud = QDoubleSpinBox()
        self.max_cloud.setRange(0.0, 100.0)
        self.max_cloud.setDecimals(0)
        self.max_cloud.setValue(60.0)
        self.max_cloud.setSuffix(" %")
        self.max_cloud.setToolTip(tr("Largest cloud cover of an item (eo:cloud_cover)"))
        row.addWidget(self.season)
        row.addWidget(QLabel(tr("clouds ≤")))
        row.addWidget(self.max_cloud)
        body.addRow(tr("Season"), row)
        self.auth = self._auth_selector()
        if self.auth is not None:
            body.addRow(tr("Credentials"), self.auth)
        self.search_button = QPushButton(tr("Search"))
        self.search_button.clicked.connect(self.search)
        self.summary = QLabel()
        self.summary.setWordWrap(True)
        row = QHBoxLayout()
        row.addWidget(self.search_button)
        row.addWidget(self.summary, 1)
        body.addRow(row)
        self.results = QListWidget()
        self.results.setMinimumHeight(60)
        self.results.setMaximumHeight(110)
        self.results.setHorizontalScrollBarPolicy(Qt.ScrollBarAlwaysOff)
        self.results.setToolTip(tr("The items found: date, tile and cloud cover; all of them are used"))
        body.addRow(self.results)
        self.toggled.connect(self._toggled)
        self._toggled(False)
        self.restore_settings()
        self._catalog_changed(self.catalog.currentIndex())

    @staticmethod
    def _auth_selector():
        """QGIS's authentication configuration picker (None where QGIS lacks it)."""
        try:
            from qgis.gui import QgsAuthConfigSelect
        except ImportError:
            return None
        selector = QgsAuthConfigSelect()
        selector.setToolTip(tr("A Basic configuration of QGIS's authentication manager: S3 access key and secret for "
                               "the Copernicus Data Space, or a Planetary Computer subscription key as password. "
                               "Empty: the environment's variables."))
        return selector

    # ----- state
    def _toggled(self, on: bool) -> None:
        self.body.setVisible(on)
        self.itemsChanged.emit()

    def _catalog_changed(self, index: int) -> None:
        custom = CATALOGS[index] == "url"
        self.url.setVisible(custom)
        self.url_label.setVisible(custom)

    def catalog_name(self) -> str:
        return CATALOGS[self.catalog.currentIndex()]

    def auth_id(self) -> str:
        return self.auth.configId() if self.auth is not None else ""

    def in_use(self) -> bool:
        """Ticked: the run's scenes are the items found here."""
        return self.isChecked()

    def scene_paths(self) -> list:
        """The saved item collection, as the dock's scene list would give files ([] before a search)."""
        return [self.items_path] if self.items_path and Path(self.items_path).is_file() else []

    def credentials(self) -> dict:
        """Credentials of the chosen authentication configuration ({} for none).

        Raises:
            ValueError: the configuration cannot be used (the message says why).
        """
        return auth_credentials(self.auth_id(), self.catalog_name())

    # ----- search
    def search(self) -> Optional[CatalogSearchTask]:
        """Start the search over the current parcel layer in a background task."""
        layer = self.current_layer()
        if layer is None:
            self.message.emit(tr("Choose a parcel layer to search a catalogue over."), Qgis.Warning)
            return None
        try:
            catalog = catalog_spec(self.catalog_name(), self.url.text())
        except ValueError as exc:
            self.message.emit(str(exc), Qgis.Warning)
            return None
        if self.task is not None:
            return self.task
        self.save_settings()
        snapshot = LayerSnapshot(QgsVectorLayerFeatureSource(layer), layer.crs(), layer.name(), [], None)
        out = search_file(self.cache_dir, catalog, self.season.value(), self.max_cloud.value(), layer.id())
        params = SearchParameters(snapshot, catalog, self.season.value(), self.max_cloud.value(), str(out))
        self.task = CatalogSearchTask(params, self._found)
        self.search_button.setEnabled(False)
        self.summary.setText(tr("Searching…"))
        self.message.emit(tr("Searching {catalog} for the scenes of {season} over {layer} …").format(
            catalog=catalog, season=self.season.value(), layer=layer.name()), Qgis.Info)
        QgsApplication.taskManager().addTask(self.task)
        return self.task

    def _found(self, task: CatalogSearchTask) -> None:
        self.task = None
        self.search_button.setEnabled(True)
        if task.cancelled:
            self.summary.setText(tr("Search cancelled."))
            return
        if task.error:
            self.summary.setText(tr("Search failed."))
            self.message.emit(tr("The catalogue search failed: {error}").format(error=task.error), Qgis.Critical)
            return
        self.show_results(task.summaries, task.path)
        if not task.summaries:
            self.message.emit(tr("The search found no scenes; widen the season or the cloud limit."), Qgis.Warning)
        else:
            self.message.emit(tr("Found {summary}; they are the scenes of the next run.").format(
                summary=describe_search(task.summaries)), Qgis.Success)

    def show_results(self, summaries: list, path: Optional[str]) -> None:
        """List ``summaries`` (date, tile, cloud cover) and use the collection saved at ``path``."""
        self.summaries = list(summaries)
        self.items_path = path if summaries else None
        self.results.clear()
        for s in self.summaries:
            item = QListWidgetItem(describe_summary(s))
            item.setToolTip(s.id)
            item.setData(Qt.UserRole, s.id)
            self.results.addItem(item)
        self.summary.setText(describe_search(self.summaries) if self.summaries else tr("No scenes found."))
        if path:
            self.summary.setToolTip(path)
        self.itemsChanged.emit()

    def shutdown(self) -> None:
        """Cancel a running search; it must not call back into a widget that is gone."""
        if self.task is not None:
            self.task.on_done = lambda task: None
            try:
                self.task.cancel()
            except RuntimeError:  # the task has ended and been deleted
                pass
            self.task = None

    # ----- settings (the user's profile, never the project)
    def save_settings(self) -> None:
        settings = QgsSettings()
        settings.beginGroup(SETTINGS_GROUP)
        settings.setValue("used", self.isChecked())
        settings.setValue("catalog", self.catalog_name())
        settings.setValue("url", self.url.text())
        settings.setValue("season", self.season.value())
        settings.setValue("max_cloud", self.max_cloud.value())
        settings.setValue("auth", self.auth_id())
        settings.setValue("items", self.items_path or "")
        settings.endGroup()

    def restore_settings(self) -> None:
        settings = QgsSettings()
        settings.beginGroup(SETTINGS_GROUP)
        catalog = settings.value("catalog", "")
        if catalog in CATALOGS:
            self.catalog.setCurrentIndex(CATALOGS.index(catalog))
        self.url.setText(settings.value("url", "") or "")
        season = settings.value("season", None)
        if season not in (None, ""):
            self.season.setValue(int(season))
        cloud = settings.value("max_cloud", None)
        if cloud not in (None, ""):
            self.max_cloud.setValue(float(cloud))
        if self.auth is not None and settings.value("auth", ""):
            self.auth.setConfigId(settings.value("auth", ""))
        items = settings.value("items", "") or ""
        used = str(settings.value("used", False)).lower() == "true"
        settings.endGroup()
        if items and Path(items).is_file():
            from ..core.errors import ThermoCropError
            from ..core.scenes.stac import load_items, summarize

            try:
                self.show_results(summarize(load_items(items)), items)
            except ThermoCropError:  # a damaged file: start without it
                self.show_results([], None)
        self.setChecked(used)
