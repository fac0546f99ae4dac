"""``make package``: the installable plugin zip ``thermocrop-<version>.zip`` and its checks.

The zip holds one folder, ``thermocrop/``, with what the plugin needs at run time: the entry
``__init__.py``, ``metadata.txt``, ``LICENSE``, every module of the packages ``cli``,
``core``, ``plugin``, ``synth`` and ``training`` (modules are also named in strings, e.g. the dialogs' widget class
path, and reached through ``importlib``, so following imports is not enough), ``pyproject.toml``
(the installer reads its dependencies), the icons, styles and model bundles of ``resources/``,
compiled translations (``i18n/*.qm``), the documentation pages (``docs/*.md``: the plugin opens
or names them, and they link to each other; no images), the model cards and the crop-code tables'
README. Tests, benchmarks, scripts and caches stay out. Entries are written in a fixed order with
fixed times, so the same tree gives the same bytes.

The checks follow the QGIS plugin repository's upload validator (plugins.qgis.org) and the
metadata table of the PyQGIS cookbook: one top folder named ``[A-Za-z][A-Za-z0-9-_]+`` with
``__init__.py``, ``metadata.txt`` and ``LICENSE``; no ``..`` or absolute paths, no ``.pyc``, no
``__pycache__``, ``.git`` or ``__MACOSX``; at most 25 MB; a ``[general]`` section with name,
description, about, version, qgisMinimumVersion, author (no slash) and email; URLs with a scheme
and a host; a category among Raster, Vector, Database, Mesh and Web; a PNG or JPEG icon that is in
the zip. The repository also requires ``repository`` and ``tracker`` URLs that answer; without a
public home for the project they are left out of metadata.txt, and the check lists them (with an
email on a reserved domain) as what to give before uploading (``--repository``, ``--tracker``,
``--email``; ``--release`` makes them errors).
"""

from __future__ import annotations

import argparse
import ast
import configparser
import re
import sys
import urllib.request
import zipfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional, Sequence

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = "thermocrop"
MAX_SIZE = 25_000_000
REQUIRED_METADATA = ("name", "description", "about", "version", "qgisMinimumVersion", "author", "email")
UPLOAD_METADATA = ("repository", "tracker")
"""Not required by QGIS itself, but by the plugin repository, and they must answer."""
URL_METADATA = ("homepage", "repository", "tracker")
CATEGORIES = ("Raster", "Vector", "Database", "Mesh", "Web")
BOOLEAN_METADATA = ("experimental", "deprecated", "server", "hasProcessingProvider")
RESERVED_DOMAINS = ("example", "invalid", "test", "localhost", "example.com", "example.org", "example.net")
"""Top-level or second-level names (RFC 2606) that never receive mail."""
FORBIDDEN_DIRS = ("__MACOSX", ".git", "__pycache__")
ENTRY_MODULES = ("__init__.py",)
"""Where QGIS enters the plugin (classFactory); everything it imports, directly or not, is packaged."""
NOT_SHIPPED_PACKAGES = ("tests", "benchmarks", "scripts")
"""Top-level folders of the checkout that are not part of the plugin, even where they hold Python."""
RESOURCE_PATTERNS = ("pyproject.toml", "resources/icons/*.svg", "resources/icons/*.png", "resources/styles/*.qml",
                     "resources/models/*.tcm", "resources/classmaps/*.csv", "i18n/*.qm",
                     # The pages the plugin opens (Processing help) or names in its messages, and those
                     # they link to (every page, text only); what the models and code tables are.
                     "docs/*.md", "resources/models/MODEL_CARD*.md", "resources/classmaps/README.md")
ZIP_TIME = (2020, 1, 1, 0, 0, 0)
EMAIL_RE = re.compile(r"^[A-Za-z0-9.!#$%&'*+/=?^_`{|}~-]+@[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?"
                      r"(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?)+$")


# -- what goes in -------------------------------------------------------------------------------

def _module_file(root: Path, dotted: str) -> Optional[Path]:
    path = root.joinpath(*dotted.split(".")) if dotted else root
    if path.with_suffix(".py").is_file():
        return path.with_suffix(".py")
    if (path / "__init__.py").is_file():
        return path / "__init__.py"
    return None


def _relative_imports(root: Path, source: Path) -> set[Path]:
    """Files of the modules ``source`` imports relatively (inside functions too)."""
    package = source.parent.relative_to(root).parts
    if source.name == "__init__.py" and not package:
        package = ()
    found = set()
    for node in ast.walk(ast.parse(source.read_text(encoding="utf-8"), filename=str(source))):
        if not isinstance(node, ast.ImportFrom) or node.level == 0:
            continue
        base = package[:len(package) - (node.level - 1)] if node.level > 1 else package
        module = ".".join(base + tuple((node.module or "").split("."))).strip(".")
        target = _module_file(root, module)
        if target is not None:
            found.add(target)
        for alias in node.names:  # from . import name, where name is a module
            sub = _module_file(root, ".".join(filter(None, (module, alias.name))))
            if sub is not None:
                found.add(sub)
    return found


def shipped_packages(root: Path = ROOT) -> list[str]:
    """The top-level packages taken whole besides what the entry modules import: every folder of
    ``root`` with an ``__init__.py`` except the checkout's own tools, so that a new package cannot be
    left out of the zip (modules loaded by name, through ``importlib`` or a module ``__getattr__``,
    are not found by following imports)."""
    return sorted(p.parent.name for p in root.glob("*/__init__.py") if p.parent.name not in NOT_SHIPPED_PACKAGES)


def runtime_files(root: Path = ROOT) -> list[Path]:
    """Every file of the plugin at run time, relative to ``root``, sorted."""
    todo = [root / m for m in ENTRY_MODULES]
    for package in shipped_packages(root):
        todo += sorted((root / package).rglob("*.py"))
    seen: set[Path] = set()
    while todo:
        path = todo.pop()
        if path in seen:
            continue
        seen.add(path)
        todo += _relative_imports(root, path)
        # A module's packages must come along for it to be importable.
        parent = path.parent
        while parent != root:
            init = parent / "__init__.py"
            if init.is_file():
                todo.append(init)
            parent = parent.parent
    files = {p.relative_to(root) for p in seen}
    for pattern in RESOURCE_PATTERNS:
        files |= {p.relative_to(root) for p in root.glob(pattern) if p.is_file()}
    files |= {Path("metadata.txt"), Path("LICENSE")}
    return sorted(f for f in files if "__pycache__" not in f.parts)


# -- metadata -----------------------------------------------------------------------------------

def read_metadata(text: str) -> configparser.ConfigParser:
    parser = configparser.ConfigParser(interpolation=None)
    parser.optionxform = str  # keys are case-sensitive (qgisMinimumVersion)
    parser.read_string(text)
    return parser


def metadata_text(source: str, overrides: dict[str, Optional[str]]) -> str:
    """``source`` with the ``[general]`` keys in ``overrides`` set (None values left as they are)."""
    lines = source.splitlines()
    for key, value in overrides.items():
        if value is None:
            continue
        pattern = re.compile(rf"^{re.escape(key)}\s*=")
        for i, line in enumerate(lines):
            if pattern.match(line):
                lines[i] = f"{key}={value}"
                break
        else:
            at = next(i for i, line in enumerate(lines) if line.strip() == "[general]") + 1
            lines.insert(at, f"{key}={value}")
    return "\n".join(lines) + "\n"


def project_version(root: Path = ROOT) -> str:
    """The version in ``metadata.txt``, the one place it is written (``thermocrop.__version__`` and
    the Python package's version read it there)."""
    return read_metadata((root / "metadata.txt").read_text(encoding="utf-8"))["general"]["version"]


# -- checks -------------------------------------------------------------------------------------

@dataclass
class CheckResult:
    """What :func:`check_package` found: ``errors`` fail the package, ``to_upload`` lists what
    the plugin repository needs besides (errors too with ``release``)."""

    errors: list[str] = field(default_factory=list)
    to_upload: list[str] = field(default_factory=list)
    metadata: dict[str, str] = field(default_factory=dict)
    names: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.errors


def valid_url(url: str) -> bool:
    """A URL with an http(s) scheme and a host name with a domain (or an IP address); the plugin
    template's placeholders (``http://repo``, ``http://bugs``, ``http://homepage``) are not."""
    from urllib.parse import urlparse

    try:
        parsed = urlparse(url)
        host = parsed.hostname or ""
    except ValueError:
        return False
    return (parsed.scheme in ("http", "https") and " " not in url
            and ("." in host.strip(".") or host.startswith("[") or ":" in host))


def url_answers(url: str, timeout: float = 10.0) -> bool:
    """Whether a HEAD request to ``url`` gets a status below 400 (the repository's test)."""
    request = urllib.request.Request(url, method="HEAD", headers={"User-Agent": "thermocrop-package-check"})
    try:
        with urllib.request.urlopen(request, timeout=timeout) as answer:
            return answer.status < 400
    except Exception:
        return False


def check_email(email: str) -> Optional[str]:
    """Why ``email`` is not a valid address for the plugin repository, or None."""
    if not EMAIL_RE.match(email or ""):
        return f"email {email!r} is not a valid address"
    domain = email.rsplit("@", 1)[1].lower()
    labels = domain.split(".")
    if labels[-1] in RESERVED_DOMAINS or ".".join(labels[-2:]) in RESERVED_DOMAINS:
        return f"email {email!r} is on a reserved domain that receives no mail"
    return None


def check_package(zip_path: Path, *, release: bool = False, check_urls: bool = False) -> CheckResult:
    """Check a plugin zip as the QGIS plugin repository would (see the module docstring)."""
    result = CheckResult()
    err = result.errors.append
    if zip_path.stat().st_size > MAX_SIZE:
        err(f"the zip is {zip_path.stat().st_size / 1e6:.1f} MB; the repository takes at most 25 MB")
    try:
        archive = zipfile.ZipFile(zip_path)
    except zipfile.BadZipFile:
        err("not a zip file")
        return result
    with archive:
        names = archive.namelist()
        result.names = names
        bad = archive.testzip()
        if bad:
            err(f"corrupt entry {bad}")
        for name in names:
            parts = name.split("/")
            if ".." in parts or name.startswith("/") or "\\" in name:
                err(f"{name}: paths must stay inside the plugin folder")
            if name.endswith(".pyc"):
                err(f"{name}: compiled Python files are not accepted")
            for folder in FORBIDDEN_DIRS:
                if folder in parts[:-1] or (folder == parts[-1] and name.endswith("/")):
                    err(f"{name}: a {folder} folder is not accepted")
        tops = sorted({n.split("/")[0] for n in names})
        if len(tops) != 1:
            err(f"the zip must hold one plugin folder, not {tops}")
            return result
        top = tops[0]
        if not re.match(r"^[A-Za-z][A-Za-z0-9-_]+$", top):
            err(f"folder name {top!r} must start with a letter and hold only letters, digits, - and _")
        for required in ("__init__.py", "metadata.txt", "LICENSE"):
            if f"{top}/{required}" not in names:
                err(f"{top}/{required} is missing")
        if f"{top}/metadata.txt" not in names:
            return result
        try:
            parser = read_metadata(archive.read(f"{top}/metadata.txt").decode("utf-8"))
        except (configparser.Error, UnicodeDecodeError) as exc:
            err(f"metadata.txt cannot be read: {exc}")
            return result
        if not parser.has_section("general"):
            err("metadata.txt has no [general] section")
            return result
        meta = {k: v.strip() for k, v in parser.items("general")}
        result.metadata = meta
        for key in REQUIRED_METADATA:
            if not meta.get(key):
                err(f"metadata.txt lacks {key}")
        if "/" in meta.get("author", ""):
            err("the author may not contain a slash")
        if not re.match(r"^\d+(\.\d+){1,2}$", meta.get("version", "")):
            err(f"version {meta.get('version')!r} is not in dotted notation")
        if not re.match(r"^3\.\d+(\.\d+)?$", meta.get("qgisMinimumVersion", "")):
            err(f"qgisMinimumVersion {meta.get('qgisMinimumVersion')!r} is not a QGIS 3 version")
        for key in BOOLEAN_METADATA:
            if key in meta and meta[key].lower() not in ("true", "false", "yes", "no", "1", "0"):
                err(f"{key} must be True or False, not {meta[key]!r}")
        category = meta.get("category")
        if category and category not in CATEGORIES:
            err(f"category {category!r} is not one of {', '.join(CATEGORIES)}")
        icon = meta.get("icon", "")
        if not icon:
            err("metadata.txt names no icon")
        elif f"{top}/{icon.removeprefix('./')}" not in names:
            err(f"the icon {icon} is not in the zip")
        elif not icon.lower().endswith((".png", ".jpg", ".jpeg")):
            err(f"the icon {icon} should be a PNG or JPEG for the repository's web pages")
        for key in URL_METADATA:
            if key in meta and not valid_url(meta[key]):
                err(f"{key} {meta[key]!r} is not a valid http(s) URL")
            elif key in meta and check_urls and not url_answers(meta[key]):
                err(f"{key} {meta[key]} does not answer")
        email_problem = check_email(meta.get("email", ""))
        if email_problem and not EMAIL_RE.match(meta.get("email", "")):
            err(email_problem)
        elif email_problem:
            result.to_upload.append(f"{email_problem}: give the maintainers' address (--email)")
        for key in UPLOAD_METADATA:
            if key not in meta:
                result.to_upload.append(f"{key}: the repository requires a public URL that answers "
                                        f"(--{key})")
    if release:
        result.errors += result.to_upload
    return result


# -- building -----------------------------------------------------------------------------------

def build_package(out_dir: Path, *, root: Path = ROOT, overrides: Optional[dict[str, Optional[str]]] = None
                  ) -> Path:
    """Write ``out_dir/thermocrop-<version>.zip`` (replacing it) and return its path."""
    version = project_version(root)
    out_dir.mkdir(parents=True, exist_ok=True)
    target = out_dir / f"{PACKAGE}-{version}.zip"
    part = target.with_name(target.name + ".part")
    metadata = metadata_text((root / "metadata.txt").read_text(encoding="utf-8"), overrides or {})
    try:
        with zipfile.ZipFile(part, "w", compression=zipfile.ZIP_DEFLATED, compresslevel=9) as archive:
            for rel in runtime_files(root):
                data = metadata.encode("utf-8") if rel == Path("metadata.txt") else (root / rel).read_bytes()
                info = zipfile.ZipInfo(f"{PACKAGE}/{rel.as_posix()}", ZIP_TIME)
                info.compress_type = zipfile.ZIP_DEFLATED
                info.external_attr = 0o644 << 16
                archive.writestr(info, data)
        part.replace(target)
    finally:
        part.unlink(missing_ok=True)
    return target


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default="dist", help="folder of the zip (default dist)")
    parser.add_argument("--email", help="maintainers' email written into the zip's metadata.txt")
    parser.add_argument("--repository", help="public source repository URL (required for an upload)")
    parser.add_argument("--tracker", help="public issue tracker URL (required for an upload)")
    parser.add_argument("--homepage", help="public home page URL")
    parser.add_argument("--release", action="store_true",
                        help="fail unless the zip is ready for the plugin repository (URLs that answer, "
                             "a real email)")
    parser.add_argument("--check", metavar="ZIP", help="only check an existing zip")
    args = parser.parse_args(argv)
    if args.check:
        zip_path = Path(args.check)
    else:
        zip_path = build_package(Path(args.out), overrides={
            "email": args.email, "repository": args.repository, "tracker": args.tracker,
            "homepage": args.homepage})
    result = check_package(zip_path, release=args.release, check_urls=args.release)
    size = zip_path.stat().st_size
    print(f"{zip_path}: {len(result.names)} files, {size / 1e6:.2f} MB")
    for problem in result.errors:
        print(f"  error: {problem}")
    if not args.release:
        for item in result.to_upload:
            print(f"  before uploading to plugins.qgis.org: {item}")
    return 0 if result.ok else 1


if __name__ == "__main__":
    sys.exit(main())
