"""``make package``: the plugin zip's contents, the plugin repository's checks, and the zip installed
into a fresh QGIS profile running its algorithms headless."""

from __future__ import annotations

import ast
import configparser
import http.server
import importlib.util
import os
import posixpath
import re
import subprocess
import sys
import threading
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _load_packager():
    spec = importlib.util.spec_from_file_location("package_plugin", ROOT / "scripts" / "package_plugin.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


packager = _load_packager()


@pytest.fixture(scope="module")
def plugin_zip(tmp_path_factory):
    return packager.build_package(tmp_path_factory.mktemp("dist"))


def _source_packages() -> list[str]:
    """The checkout's top-level Python packages, the test and tool folders aside."""
    found = sorted(p.name for p in ROOT.iterdir() if (p / "__init__.py").is_file()
                   and p.name not in ("tests", "benchmarks", "scripts"))
    assert {"app", "cli", "core", "plugin", "training"} <= set(found), found
    return found


def test_zip_holds_only_what_the_plugin_runs_on(plugin_zip, tmp_path):
    version = configparser.ConfigParser()
    version.read(ROOT / "metadata.txt")
    assert plugin_zip.name == f"thermocrop-{version['general']['version']}.zip"
    names = zipfile.ZipFile(plugin_zip).namelist()
    assert all(n.startswith("thermocrop/") for n in names)
    inside = [n.removeprefix("thermocrop/") for n in names]
    for excluded in ("tests/", "benchmarks/", "docs/img/", "scripts/"):
        assert not any(n.startswith(excluded) for n in inside), excluded
    # Every module of the package, whether or not an import statement names it (the dialogs'
    # widgets are named in a string), and the project file the installer reads.
    modules = {p.relative_to(ROOT).as_posix() for folder in _source_packages()
               for p in (ROOT / folder).rglob("*.py") if "__pycache__" not in p.parts}
    assert {"plugin/widgets.py", "app/runs.py", "cli/main.py"} <= modules
    assert modules <= set(inside), sorted(modules - set(inside))
    assert "pyproject.toml" in inside
    assert not any(n.endswith(".pyc") or "__pycache__" in n for n in inside)
    # The doc pages, text only: the plugin opens or names them, and every link from one page to
    # another (or to a model card or code table's README) finds its page in the zip.
    pages = sorted(n for n in inside if n.startswith("docs/") and n.endswith(".md"))
    assert pages == sorted(p.relative_to(ROOT).as_posix() for p in (ROOT / "docs").glob("*.md"))
    assert {"docs/plugin.md", "docs/in-season.md", "docs/calibration.md"} <= set(pages)
    assert "resources/models/MODEL_CARD_INSEASON.md" in inside
    archive = zipfile.ZipFile(plugin_zip)
    linked = 0
    for page in (n for n in inside if n.endswith(".md")):
        text = archive.read(f"thermocrop/{page}").decode("utf-8")
        for target in re.findall(r"\]\(([^)#:\s]+\.md)(?:#[^)]*)?\)", text):
            resolved = posixpath.normpath(posixpath.join(posixpath.dirname(page), target))
            assert resolved in inside, (page, target)
            linked += 1
    assert linked > 20, linked
    for needed in ("__init__.py", "metadata.txt", "LICENSE", "plugin/qgis_plugin.py", "plugin/provider.py",
                   "plugin/algorithms/accuracy_assessment.py", "core/accuracy.py", "core/model/networks.py",
                   "training/train.py", "resources/models/default.tcm", "resources/models/default_l2a.tcm",
                   "resources/icons/thermocrop.png"):
        assert needed in inside, needed
    # Every crop-code table the options offer (the checkout's resources/classmaps) is in the zip:
    # without them every preset was "neither a preset () nor an existing file" once installed.
    presets = sorted(p.relative_to(ROOT).as_posix() for p in (ROOT / "resources" / "classmaps").glob("*.csv"))
    assert {"resources/classmaps/france.csv", "resources/classmaps/denmark.csv"} <= set(presets)
    assert set(presets) <= set(inside), sorted(set(presets) - set(inside))
    # Every module a packaged module imports relatively is packaged too.
    for name in (n for n in names if n.endswith(".py")):
        tree = ast.parse(archive.read(name).decode("utf-8"))
        package = name.split("/")[1:-1]
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.level:
                base = package[:len(package) - node.level + 1] if node.level > 1 else package
                target = "/".join(["thermocrop", *base, *(node.module or "").split(".")]).rstrip("/")
                assert f"{target}.py" in names or f"{target}/__init__.py" in names, (name, node.module)
    # The dialogs' Help opens docs/plugin.md#processing-algorithms beside the plugin's modules
    # (plugin/algorithms/base.py: DOCS); the page and its section are in the zip.
    base = archive.read("thermocrop/plugin/algorithms/base.py").decode()
    assert 'parents[2] / "docs" / "plugin.md"' in base and 'setFragment("processing-algorithms")' in base
    assert "\n## Processing algorithms\n" in archive.read("thermocrop/docs/plugin.md").decode()
    assert "GNU GENERAL PUBLIC LICENSE" in archive.read("thermocrop/LICENSE").decode()
    assert "or (at your option) any later version" in archive.read("thermocrop/LICENSE").decode()
    # The same tree gives the same bytes.
    again = packager.build_package(tmp_path)
    assert again.read_bytes() == plugin_zip.read_bytes()


IMPORT_ALL = r"""
import json, pkgutil, importlib, sys
plugins, others = json.loads(sys.argv[1])
sys.path[:] = [plugins, *others]
import thermocrop
failed, outside = {}, []
names = ["thermocrop"] + [m.name for m in pkgutil.walk_packages(thermocrop.__path__, "thermocrop.")]
for name in names:
    try:
        module = importlib.import_module(name)
    except Exception as exc:
        failed[name] = "%s: %s" % (type(exc).__name__, exc)
        continue
    if not module.__file__.startswith(plugins):
        outside.append(name)
from thermocrop.core.classmap import ClassMap, available_presets
presets = {name: len(ClassMap.load(name).entries) for name in available_presets()}
print(json.dumps({"names": names, "failed": failed, "outside": outside, "presets": presets}))
"""


@pytest.mark.qgis
def test_every_module_imports_from_the_unpacked_zip(plugin_zip, tmp_path):
    """Each module of the source tree imports from the unpacked zip, in an interpreter that cannot
    reach the checkout (no site processing, so no editable install; no folder holding it)."""
    import json

    plugins = tmp_path / "plugins"
    zipfile.ZipFile(plugin_zip).extractall(plugins)
    others = [p for p in sys.path if p and not (Path(p) / "thermocrop").exists() and Path(p) != ROOT
              and Path(p).resolve() != ROOT]
    others += ["/usr/share/qgis/python", "/usr/share/qgis/python/plugins"]
    proc = subprocess.run([sys.executable, "-S", "-c", IMPORT_ALL, json.dumps([str(plugins), others])],
                          capture_output=True, text=True, timeout=600, cwd=tmp_path,
                          env=dict(os.environ, QT_QPA_PLATFORM="offscreen"))
    assert proc.returncode == 0, proc.stderr[-3000:]
    found = json.loads(proc.stdout.strip().splitlines()[-1])
    expected = {"thermocrop." + ".".join(p.relative_to(ROOT).with_suffix("").parts).removesuffix(".__init__")
                for folder in _source_packages() for p in (ROOT / folder).rglob("*.py")
                if "__pycache__" not in p.parts}
    assert expected <= set(found["names"]), sorted(expected - set(found["names"]))
    assert found["failed"] == {} and found["outside"] == []
    # The crop-code tables load from the unpacked zip, with the checkout's entries.
    from thermocrop.core.classmap import ClassMap, available_presets

    assert found["presets"] == {name: len(ClassMap.load(name).entries) for name in available_presets()}
    assert {"france", "denmark", "austria"} <= set(found["presets"])


def test_zip_passes_the_repository_checks(plugin_zip):
    result = packager.check_package(plugin_zip)
    assert result.errors == []
    meta = result.metadata
    assert meta["category"] in packager.CATEGORIES
    assert "example.invalid" not in str(meta) and "repository" not in meta and "tracker" not in meta
    # Without a public home, what the repository needs besides is listed, and a release refuses.
    assert any(item.startswith("repository") for item in result.to_upload)
    assert any(item.startswith("tracker") for item in result.to_upload)
    assert not packager.check_package(plugin_zip, release=True).ok


def _rewrite(source: Path, target: Path, change):
    """Copy a zip, passing each (name, data) through ``change`` (None drops it, a list adds)."""
    with zipfile.ZipFile(source) as src, zipfile.ZipFile(target, "w") as dst:
        for name in src.namelist():
            out = change(name, src.read(name))
            for item in ([] if out is None else out if isinstance(out, list) else [out]):
                dst.writestr(*item)
    return target


def _meta_change(old: str, new: str):
    def change(name, data):
        if name.endswith("metadata.txt"):
            return name, data.decode().replace(old, new).encode()
        return name, data
    return change


@pytest.mark.parametrize("change, message", [
    (lambda n, d: None if n.endswith("LICENSE") else (n, d), "LICENSE is missing"),
    (lambda n, d: [(n, d), ("thermocrop/core/__pycache__/x.cpython-311.pyc", b"")] if n.endswith("errors.py")
     else (n, d), "compiled Python"),
    (lambda n, d: [(n, d), ("other/readme.txt", b"")] if n.endswith("LICENSE") else (n, d), "one plugin folder"),
    (lambda n, d: [(n, d), ("thermocrop/../evil.py", b"")] if n.endswith("LICENSE") else (n, d), "inside"),
    (_meta_change("category=Vector", "category=Analysis"), "category 'Analysis'"),
    (_meta_change("icon=resources/icons/thermocrop.png", "icon=resources/icons/thermocrop.svg"),
     "PNG or JPEG"),
    (_meta_change("icon=resources/icons/thermocrop.png", "icon=icon.png"), "not in the zip"),
    (_meta_change("author=ThermoCrop developers", "author=a/b"), "slash"),
    (_meta_change("[general]", "[general]\nrepository=http://repo"), "not a valid http(s) URL"),
    (_meta_change("email=", "email=not-an-address\nold="), "not a valid address"),
    (_meta_change("version=0.1.0", "version=first"), "dotted notation"),
])
def test_checks_catch_what_the_repository_refuses(plugin_zip, tmp_path, change, message):
    bad = _rewrite(plugin_zip, tmp_path / "bad.zip", change)
    result = packager.check_package(bad)
    assert any(message in e for e in result.errors), result.errors


class _Answers(http.server.BaseHTTPRequestHandler):
    def do_HEAD(self):  # noqa: N802 (http.server API)
        self.send_response(200 if self.path.startswith("/thermocrop") else 404)
        self.end_headers()

    def log_message(self, *args):
        pass


def test_release_check_asks_each_url_on_a_local_server(plugin_zip, tmp_path):
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Answers)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    base = f"http://127.0.0.1:{server.server_port}"
    try:
        assert packager.url_answers(f"{base}/thermocrop") and not packager.url_answers(f"{base}/gone")
        good = packager.build_package(tmp_path / "good", overrides={
            "email": "maintainers@thermocrop-plugin.eu", "repository": f"{base}/thermocrop",
            "tracker": f"{base}/thermocrop/issues", "homepage": None})
        result = packager.check_package(good, release=True, check_urls=True)
        assert result.ok, result.errors
        assert result.metadata["repository"] == f"{base}/thermocrop"
        gone = packager.build_package(tmp_path / "gone", overrides={
            "email": "maintainers@thermocrop-plugin.eu", "repository": f"{base}/thermocrop",
            "tracker": f"{base}/gone"})
        errors = packager.check_package(gone, release=True, check_urls=True).errors
        assert errors == [f"tracker {base}/gone does not answer"]
    finally:
        server.shutdown()


def test_make_package_writes_the_zip(tmp_path):
    proc = subprocess.run(["make", "-s", "package", f"DIST={tmp_path}"], cwd=ROOT, capture_output=True,
                          text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert len(list(tmp_path.glob("thermocrop-*.zip"))) == 1
    assert "before uploading to plugins.qgis.org: repository" in proc.stdout


@pytest.mark.qgis
@pytest.mark.slow
def test_zip_installed_in_a_fresh_profile_runs_headless(installed_profile, tiny_region, tmp_path):
    """The zip unpacked where QGIS's plugin manager puts plugins, its packages installed by the dock's
    installer (tests/plugin/installed_qgis.py), and nothing of the test environment in reach (no
    PYTHONPATH, no virtual environment, no QGIS_PLUGINPATH): classify with the shipped model and
    assess the result through qgis_process."""
    import csv

    import geopandas as gpd
    from installed_qgis import analyst_environment

    from thermocrop.plugin.headless import qgis_process_program

    env = analyst_environment(QGIS_CUSTOM_CONFIG_PATH=str(installed_profile.profiles), QT_QPA_PLATFORM="offscreen")
    program = qgis_process_program()

    def qgis_process(*args, timeout=600):
        proc = subprocess.run([program, *args], env=env, capture_output=True, text=True, timeout=timeout)
        assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
        return proc.stdout

    # Install from ZIP enabled the plugin in the profile's QGIS3.ini; qgis_process finds it so.
    assert "thermocrop" in qgis_process("plugins")
    classified = tmp_path / "classified.gpkg"
    qgis_process("run", "thermocrop:classifyparcels", "--", f"INPUT={tiny_region / 'parcels.gpkg'}",
                 f"SCENE_FOLDER={tiny_region / 'scenes'}", f"WEATHER={tiny_region / 'weather.nc'}",
                 f"OUTPUT={classified}")
    out = qgis_process("run", "thermocrop:accuracyassessment", "--", f"INPUT={classified}",
                       "PREDICTED_FIELD=crop_pred", "REFERENCE_FIELD=crop",
                       f"OUTPUT_HTML={tmp_path / 'report.html'}", f"OUTPUT_CSV={tmp_path / 'report.csv'}")
    # The modules ran from the unpacked zip: Python left its caches there.
    assert list((installed_profile.plugin / "core").glob("__pycache__/accuracy*.pyc"))
    frame = gpd.read_file(classified)
    ok = frame["crop_status"] == "ok"
    expected_oa = float((frame.loc[ok, "crop_pred"] == frame.loc[ok, "crop"]).mean())
    rows = {r["class"]: r for r in csv.DictReader(open(tmp_path / "report.csv", newline=""))}
    assert float(rows["overall"]["overall_accuracy"]) == pytest.approx(expected_oa, abs=1e-6)
    assert int(rows["overall"]["n_mapped"]) == ok.sum()
    assert "OVERALL_ACCURACY" in out
