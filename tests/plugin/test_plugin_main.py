"""Plugin entry: initProcessing / initGui / unload with a stand-in for the QGIS main window."""

from __future__ import annotations

import importlib
import subprocess
import sys

import pytest

pytestmark = pytest.mark.qgis


class _Iface:
    """The part of QgisInterface the plugin uses, recording what was added and removed."""

    def __init__(self):
        from qgis.gui import QgsMessageBar
        from qgis.PyQt.QtWidgets import QMainWindow

        self.window = QMainWindow()
        self.bar = QgsMessageBar()
        self.menu, self.toolbar, self.docks = [], [], []

    def mainWindow(self):  # noqa: N802
        return self.window

    def messageBar(self):  # noqa: N802
        return self.bar

    def addPluginToMenu(self, name, action):  # noqa: N802
        self.menu.append(action)

    def removePluginMenu(self, name, action):  # noqa: N802
        self.menu.remove(action)

    def addToolBarIcon(self, action):  # noqa: N802
        self.toolbar.append(action)

    def removeToolBarIcon(self, action):  # noqa: N802
        self.toolbar.remove(action)

    def addDockWidget(self, area, dock):  # noqa: N802
        self.docks.append(dock)

    def removeDockWidget(self, dock):  # noqa: N802
        self.docks.remove(dock)


def test_class_factory_init_and_unload_leave_nothing_behind(qgis_app):
    from qgis.core import QgsApplication

    import thermocrop

    registry = QgsApplication.processingRegistry()
    before = registry.providerById("thermocrop")
    if before is not None:
        registry.removeProvider(before)
    iface = _Iface()
    plugin = thermocrop.classFactory(iface)
    plugin.initGui()
    provider = registry.providerById("thermocrop")
    assert provider is not None
    assert {a.name() for a in provider.algorithms()} == {
        "classifyparcels", "parcelgdd", "exporttrainingdata", "trainmodel", "accuracyassessment", "searchcatalog",
        "calibratemodel", "inseasonaccuracy"}
    assert len(iface.menu) == 1 and len(iface.toolbar) == 1
    plugin.action.setChecked(True)
    assert len(iface.docks) == 1
    # The core's warnings reach QGIS's message log under the plugin's tag (they went to a Python
    # log QGIS never shows: codes a class map does not map, a model without a calibration...).
    import logging

    from qgis.core import Qgis
    from qgis.core import QgsApplication as App

    said = []
    App.messageLog().messageReceived.connect(lambda message, tag, level: said.append((tag, message, level)))
    logging.getLogger("thermocrop.core.classmap").warning("4 parcels have 1 codes that preset france does not map")
    logging.getLogger("thermocrop.core.classify").info("an info line stays out")
    App.processEvents()
    assert ("ThermoCrop", "4 parcels have 1 codes that preset france does not map", Qgis.Warning) in said
    assert not any("info line" in message for _, message, _ in said)
    plugin.unload()
    assert registry.providerById("thermocrop") is None
    assert iface.menu == [] and iface.toolbar == [] and iface.docks == []
    assert not any(type(h).__name__ == "MessageLogHandler" for h in logging.getLogger("thermocrop").handlers)


def test_every_parameter_has_help(provider):
    for algorithm in provider.algorithms():
        for parameter in algorithm.parameterDefinitions():
            assert parameter.help(), f"{algorithm.id()} {parameter.name()} has no help text"
            assert parameter.description() in algorithm.shortHelpString()


def test_plugin_loads_and_reports_when_torch_is_missing(tmp_path):
    # A fresh interpreter with torch blocked, as on a machine without it.
    code = """
import sys
sys.modules['torch'] = None
from qgis.core import QgsApplication
app = QgsApplication([], False); app.initQgis()
from thermocrop.plugin.dependencies import missing_requirements, describe_missing
import thermocrop
class I:
    pass
plugin = thermocrop.classFactory(I())
plugin.initProcessing()
print('PROVIDER', QgsApplication.processingRegistry().providerById('thermocrop') is not None)
print('MISSING', [r.module for r in plugin.missing])
print(describe_missing(plugin.missing))
from thermocrop.plugin.dock import ThermoCropDock
dock = ThermoCropDock()
print('RUN_ENABLED', dock.run_button.isEnabled(), 'INSTALL_OFFERED', not dock.install_button.isHidden())
print('DOCK_SAYS', dock.message.text().splitlines()[1])
plugin.unload()
"""
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert "PROVIDER True" in proc.stdout
    assert "MISSING ['torch']" in proc.stdout
    assert "torch==2.13.0" in proc.stdout and "pip install" in proc.stdout
    assert "RUN_ENABLED False INSTALL_OFFERED True" in proc.stdout
    assert "DOCK_SAYS   - torch (pip: torch==2.13.0)" in proc.stdout


def test_install_command_pins_qgis_numpy(tmp_path):
    import numpy

    from thermocrop.plugin.dependencies import REQUIREMENTS
    from thermocrop.plugin.dependency_install import install_command

    command, constraints = install_command([REQUIREMENTS[0]], tmp_path)
    assert command[1:4] == ["-m", "pip", "install"]
    assert "--target" in command and str(tmp_path) in command
    assert command[-1] == "torch==2.13.0"
    assert constraints == f"numpy=={numpy.__version__}\n"


def test_torch_comes_from_the_cpu_index_without_a_gpu(tmp_path):
    from thermocrop.plugin.dependencies import REQUIREMENTS, TORCH_CPU_INDEX
    from thermocrop.plugin.dependency_install import install_command

    torch_req, safetensors_req = REQUIREMENTS[0], REQUIREMENTS[1]
    without_gpu, _ = install_command([torch_req, safetensors_req], tmp_path, gpu=False)
    with_gpu, _ = install_command([torch_req, safetensors_req], tmp_path, gpu=True)
    only_safetensors, _ = install_command([safetensors_req], tmp_path, gpu=False)
    assert without_gpu[without_gpu.index("--extra-index-url") + 1] == TORCH_CPU_INDEX
    assert "--extra-index-url" not in with_gpu and "--extra-index-url" not in only_safetensors
    assert with_gpu[-2:] == without_gpu[-2:] == ["torch==2.13.0", "safetensors>=0.4"]


def test_dependency_folder_becomes_importable(tmp_path):
    from thermocrop.plugin.dependencies import activate_dependency_folder

    folder = tmp_path / "pkgs"
    assert not activate_dependency_folder(folder)
    folder.mkdir()
    (folder / "tc_probe_module.py").write_text("VALUE = 42\n")
    try:
        assert activate_dependency_folder(folder)
        assert importlib.import_module("tc_probe_module").VALUE == 42
    finally:
        sys.path.remove(str(folder))
        sys.modules.pop("tc_probe_module", None)


def test_dependency_folder_is_inside_the_qgis_profile(qgis_app):
    from pathlib import Path

    from qgis.core import QgsApplication

    from thermocrop.plugin.dependencies import dependency_folder

    folder = dependency_folder()
    assert Path(QgsApplication.qgisSettingsDirPath()) in folder.parents
    assert folder.parent.name == "thermocrop-packages"
    assert folder.name == f"python{sys.version_info[0]}.{sys.version_info[1]}"


def test_installer_stops_when_cancelled(tmp_path):
    from thermocrop.plugin.dependencies import REQUIREMENTS
    from thermocrop.plugin.dependency_install import run_install

    code, _ = run_install([REQUIREMENTS[1]], tmp_path / "pkgs", cancelled=lambda: True)
    assert code == -1
    assert (tmp_path / "pkgs" / "constraints.txt").is_file()
    assert not list((tmp_path / "pkgs").glob("safetensors*"))


def test_init_processing_twice_registers_one_provider(qgis_app):
    from qgis.core import QgsApplication

    import thermocrop

    registry = QgsApplication.processingRegistry()
    before = registry.providerById("thermocrop")
    if before is not None:
        registry.removeProvider(before)
    plugin = thermocrop.classFactory(_Iface())
    plugin.initProcessing()
    first = plugin.provider
    plugin.initProcessing()
    assert plugin.provider is first
    assert [p.id() for p in registry.providers()].count("thermocrop") == 1
    plugin.unload()
    assert registry.providerById("thermocrop") is None


HEAVY_PACKAGES = ("torch", "geopandas", "pandas", "rasterio", "xarray", "netCDF4", "dask", "distributed", "scipy",
                  "matplotlib", "shapely", "pyproj")
"""What a run needs and loading the plugin does not: each takes from a tenth of a second to seconds to
import, paid by every start of QGIS and every ``qgis_process`` call before it prints anything."""


def test_loading_the_plugin_imports_none_of_the_heavy_packages():
    # A fresh interpreter does what qgis_process does before it prints its inputs: load the plugin,
    # register the provider and create every algorithm with its parameters.
    code = f"""
import sys
from qgis.core import QgsApplication
app = QgsApplication([], False); app.initQgis()
import thermocrop
plugin = thermocrop.classFactory(None)
plugin.initProcessing()
provider = QgsApplication.processingRegistry().providerById('thermocrop')
for algorithm in provider.algorithms():
    algorithm.create().parameterDefinitions()
print('ALGORITHMS', len(provider.algorithms()))
print('LOADED', sorted(name for name in {HEAVY_PACKAGES!r} if name in sys.modules))
"""
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert "ALGORITHMS 8" in proc.stdout, proc.stdout
    assert "LOADED []" in proc.stdout, proc.stdout
