"""Crop codes or names of a parcel layer -> the class names a model learns.

A :class:`ClassMap` maps codes (LPIS crop codes such as the French RPG ``CODE_CULTU``, or any
names) to classes. It is read from a CSV ``code,class[,name]``, from a YAML file in the
reference implementation's layout, or from one of the presets of the paper's three countries
(``france``, ``denmark``, ``austria``, kept under ``resources/classmaps/``).
:func:`assign_classes` turns a column of label values into class indices and a class list:
codes outside the map go to ``unknown`` (counted per code), classes with too few parcels go to
``unknown`` too, and the class list is whatever remains, sorted.

Codes are compared as text after :func:`normalise_code`: ``11``, ``11.0``, ``"11"`` and
``" 11 "`` are the same code (Danish and Austrian codes are numbers and often arrive as floats
from a column with gaps), letter case is ignored (``"bth"`` is ``BTH``), and missing values
(None, NaN, empty text) are no code at all.
"""

from __future__ import annotations

import csv
import io
import logging
import math
import os
import re
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Mapping, Optional, Sequence, Union

import numpy as np

from .crops import UNKNOWN_CLASS
from .errors import InputError
from .io.csv_cells import inert_row
from .io.output import write_text
from .io.safe_read import MAX_NESTING, read_limited
from .quiet_log import QUIET

log = logging.getLogger(__name__)
log.addFilter(QUIET)  # a read a run repeats logs once (core.quiet_log)

PRESETS: tuple[str, ...] = ("austria", "denmark", "france")
"""The preset class maps of the paper's three countries, built from the reference
implementation's published tables (other CSVs in ``resources/classmaps/`` are presets too)."""

_SEASONS = ("spring", "winter")
_INTEGRAL = re.compile(r"^[+-]?\d+(\.0*)?$")


def preset_path(name: str) -> Path:
    """The CSV file of a preset class map (``resources/classmaps/<name>.csv``)."""
    return Path(__file__).resolve().parent.parent / "resources" / "classmaps" / f"{name}.csv"


def available_presets() -> tuple[str, ...]:
    """Names of every preset class map shipped in ``resources/classmaps/``."""
    return tuple(sorted(p.stem for p in preset_path("x").parent.glob("*.csv")))


def _is_missing(value: Any) -> bool:
    if value is None:
        return True
    if isinstance(value, (str, bytes, int, np.integer)):
        return False
    if isinstance(value, (float, np.floating)):
        return math.isnan(value)
    try:  # pandas.NA, NaT and the like, without making pandas a requirement here
        import pandas as pd

        return bool(pd.isna(value))
    except (ImportError, TypeError, ValueError):
        return False


def normalise_code(value: Any) -> Optional[str]:
    """A label value as the text a class map compares, or None when it is missing.

    Integers and integral floats become their integer text (``11.0`` -> ``"11"``), text is
    stripped (``" 11.0 "`` -> ``"11"``), anything else is its ``str``. Letter case is kept;
    matching ignores it.
    """
    if _is_missing(value):
        return None
    if isinstance(value, bytes):
        value = value.decode("utf-8", "replace")
    if isinstance(value, (bool, np.bool_)):
        return str(bool(value))
    if isinstance(value, (int, np.integer)):
        return str(int(value))
    if isinstance(value, (float, np.floating)):
        return str(int(value)) if float(value).is_integer() else repr(float(value))
    text = str(value).strip()
    if not text:
        return None
    if _INTEGRAL.match(text):
        return str(int(float(text)))
    return text


def _key(code: str) -> str:
    return code.casefold()


@dataclass(frozen=True)
class ClassMapEntry:
    """One row of a class map: a code, its class and (optionally) what the code means."""

    code: str
    cls: str
    name: str = ""


@dataclass
class ClassMap:
    """Codes or names -> class names.

    Build one with :meth:`load` (a preset name or a CSV / YAML path) or :meth:`from_mapping`.

    Attributes:
        entries: the rows, in file order.
        source: where the map came from (preset name or file path), for messages and provenance.
    """

    entries: list[ClassMapEntry]
    source: str = "class map"
    _lookup: dict[str, str] = field(default_factory=dict, init=False, repr=False)

    def __post_init__(self) -> None:
        lookup: dict[str, tuple[str, str]] = {}
        clean = []
        for entry in self.entries:
            code = normalise_code(entry.code)
            cls = str(entry.cls).strip() if entry.cls is not None else ""
            if code is None:
                raise InputError(f"{self.source}: an entry has no code (class {cls!r}); give every row a code.")
            if not cls:
                raise InputError(f"{self.source}: code {code!r} has no class; give it one (or 'unknown').")
            seen = lookup.get(_key(code))
            if seen is not None and seen[1] != cls:
                raise InputError(f"{self.source}: code {code!r} is mapped to two classes, {seen[1]!r} and "
                                 f"{cls!r}; keep one.")
            if seen is None:
                lookup[_key(code)] = (code, cls)
                clean.append(ClassMapEntry(code, cls, str(entry.name or "").strip()))
        if not clean:
            raise InputError(f"{self.source}: the class map holds no codes.")
        self.entries = clean
        self._lookup = {k: cls for k, (_, cls) in lookup.items()}

    # -- reading -----------------------------------------------------------------------------

    @classmethod
    def load(cls, spec: Union[str, os.PathLike, "ClassMap"]) -> "ClassMap":
        """A class map from a preset name (``france``, ``denmark``, ``austria``, or any other CSV
        in ``resources/classmaps/``), a CSV file
        (``code,class`` with an optional ``name`` column; ``,`` ``;`` or tab separated) or a YAML
        file (``class: {code: description}`` blocks as in the reference implementation, or flat
        ``code: class`` pairs).

        Raises:
            InputError: no such preset or file, an unreadable file, or a code mapped to two classes.
        """
        if isinstance(spec, ClassMap):
            return spec
        text = str(spec)
        presets = available_presets()
        if text.lower() in presets and not Path(spec).is_file():
            path = preset_path(text.lower())
            return cls.from_csv(path, source=f"preset {text.lower()}")
        path = Path(spec)
        if not path.is_file():
            raise InputError(f"Class map {text!r} is neither a preset ({', '.join(presets)}) nor an existing file.")
        if path.suffix.lower() in (".yml", ".yaml"):
            return cls.from_yaml(path)
        if path.suffix.lower() in (".csv", ".txt", ".tsv"):
            return cls.from_csv(path)
        raise InputError(f"Class map {path} must be a .csv or a .yml/.yaml file.")

    @classmethod
    def from_mapping(cls, mapping: Mapping[Any, str], source: str = "class map") -> "ClassMap":
        """A class map from ``{code: class}``."""
        return cls([ClassMapEntry(code, name) for code, name in mapping.items()], source)

    @classmethod
    def from_csv(cls, path: Union[str, os.PathLike], source: Optional[str] = None) -> "ClassMap":
        """Read ``code,class[,name]`` rows; a header row naming ``code`` and ``class`` is
        optional, lines starting with ``#`` are comments."""
        path = Path(path)
        source = source or str(path)
        try:
            text = read_limited(path, what="class map").decode("utf-8-sig")
        except UnicodeDecodeError as exc:
            raise InputError(f"Cannot read class map {path}: {exc}") from exc
        lines = [line for line in text.splitlines() if line.strip() and not line.lstrip().startswith("#")]
        if not lines:
            raise InputError(f"{source}: the class map holds no codes.")
        delimiter = max((",", ";", "\t"), key=lambda d: lines[0].count(d))
        try:
            rows = list(csv.reader(lines, delimiter=delimiter))
        except csv.Error as exc:  # a cell beyond the csv module's field limit, a stray NUL
            raise InputError(f"Cannot read class map {path}: {exc}") from None
        head = [c.strip().lower() for c in rows[0]]
        code_col, class_col, name_col = 0, 1, 2
        if "code" in head and "class" in head:
            code_col, class_col = head.index("code"), head.index("class")
            name_col = head.index("name") if "name" in head else None
            rows = rows[1:]
        entries = []
        for number, row in enumerate(rows, start=1):
            if len(row) <= max(code_col, class_col):
                raise InputError(f"{source}: row {number} ({delimiter.join(row)!r}) needs a code and a class.")
            name = row[name_col] if name_col is not None and name_col < len(row) else ""
            entries.append(ClassMapEntry(row[code_col], row[class_col], name))
        return cls(entries, source)

    @classmethod
    def from_yaml(cls, path: Union[str, os.PathLike], source: Optional[str] = None) -> "ClassMap":
        """Read a YAML class map.

        Two layouts: blocks ``class: {code: description, ...}`` (the reference implementation's),
        where a block holding both ``spring`` and ``winter`` sub-blocks gives the classes
        ``spring_<class>`` and ``winter_<class>``; or flat ``code: class`` pairs. Every scalar is
        read as text (so ``010`` or ``NO`` stay codes, not numbers or booleans), and repeated keys
        are merged rather than refused: a code listed twice under one class is one code.
        """
        path = Path(path)
        source = source or str(path)
        try:
            import yaml
        except ImportError as exc:  # pragma: no cover - PyYAML comes with QGIS and Debian
            raise InputError(f"Reading {path} needs PyYAML (python3-yaml); or give the class map as CSV.") from exc
        try:
            data = yaml.load(read_limited(path, what="class map").decode("utf-8-sig"), Loader=_PairsLoader)
        except (UnicodeDecodeError, yaml.YAMLError) as exc:
            raise InputError(f"Cannot read class map {path}: {exc}") from None
        if not isinstance(data, list):
            raise InputError(f"{source}: expected a mapping of classes to codes (or codes to classes).")
        nested = any(isinstance(value, list) for _, value in data)
        entries: list[ClassMapEntry] = []
        for key, value in data:
            if not nested:
                entries.append(ClassMapEntry(key, value))
                continue
            if isinstance(value, str) and value.strip():
                raise InputError(f"{source}: {key!r} maps to {value!r} among class blocks; write either "
                                 "'class: {code: description}' blocks or flat 'code: class' pairs.")
            entries.extend(_block_entries(str(key).strip(), value, source))
        return cls(entries, source)

    # -- use ---------------------------------------------------------------------------------

    @property
    def classes(self) -> tuple[str, ...]:
        """The classes the map names, sorted."""
        return tuple(sorted({e.cls for e in self.entries}))

    def __len__(self) -> int:
        return len(self.entries)

    def __contains__(self, value: Any) -> bool:
        code = normalise_code(value)
        return code is not None and _key(code) in self._lookup

    def class_of(self, value: Any) -> Optional[str]:
        """The class of one label value; None when the value is missing or not in the map."""
        code = normalise_code(value)
        return None if code is None else self._lookup.get(_key(code))

    def map_labels(self, values: Iterable[Any], *, unknown: str = UNKNOWN_CLASS,
                   missing: Optional[str] = None) -> tuple[np.ndarray, dict[str, int]]:
        """Class names of label values.

        Args:
            values: ``(P,)`` label values of any type (codes or names).
            unknown: the class of codes not in the map.
            missing: the class of missing values (None, NaN, empty); None leaves them unlabelled.

        Returns:
            ``names (P,)`` object array of class names (None where unlabelled) and
            ``{code: parcels}`` of the codes not in the map, most frequent first.
        """
        names, unmapped, memo = [], Counter(), {}
        for value in values:
            code = normalise_code(value)
            if code is None:
                names.append(missing)
                continue
            cls = memo.get(code)
            if cls is None:
                cls = memo[code] = self._lookup.get(_key(code), "")
            if cls == "":
                unmapped[code] += 1
                cls = unknown
            names.append(cls)
        out = np.empty(len(names), dtype=object)
        out[:] = names
        return out, dict(unmapped.most_common())

    def to_csv(self, path: Union[str, os.PathLike], comment: str = "") -> Path:
        """Write the map as ``code,class,name`` (with ``comment`` lines on top, ``#``-prefixed)."""
        buffer = io.StringIO()
        for line in comment.splitlines():
            buffer.write(f"# {line}\n" if line else "#\n")
        writer = csv.writer(buffer, lineterminator="\n")
        writer.writerow(["code", "class", "name"])
        for e in self.entries:
            writer.writerow(inert_row([e.code, e.cls, e.name]))
        return write_text(path, buffer.getvalue(), what="class map")


def _block_entries(cls: str, block: Any, source: str) -> list[ClassMapEntry]:
    """The codes of one ``class:`` block of a YAML class map."""
    if not cls:
        raise InputError(f"{source}: a class block has no name.")
    if block is None or block == "":
        return []
    if not isinstance(block, list) or not all(isinstance(p, tuple) and len(p) == 2 for p in block):
        raise InputError(f"{source}: the block of class {cls!r} must give 'code: name' lines, not "
                         f"{block!r}"[:300] + ".")
    keys = [str(k).strip().lower() for k, _ in block]
    seasonal = [k for k in keys if k in _SEASONS]
    if seasonal and set(seasonal) != set(_SEASONS):
        raise InputError(f"{source}: class {cls!r} has a {seasonal[0]!r} block but no "
                         f"{({'spring', 'winter'} - set(seasonal)).pop()!r} block; give both (an empty one "
                         "is fine) to split the class by season, or list its codes directly.")
    entries = []
    for key, value in block:
        season = str(key).strip().lower()
        if seasonal and season in _SEASONS:
            if isinstance(value, list) and all(isinstance(p, tuple) and len(p) == 2 for p in value):
                entries.extend(ClassMapEntry(code, f"{season}_{cls}", _text(name)) for code, name in value)
            elif value not in (None, ""):
                raise InputError(f"{source}: the {season!r} block of class {cls!r} must list codes.")
        elif seasonal:
            raise InputError(f"{source}: class {cls!r} mixes codes ({key!r}) with spring/winter blocks.")
        else:
            entries.append(ClassMapEntry(key, cls, _text(value)))
    return entries


def _text(value: Any) -> str:
    return "" if value is None or isinstance(value, list) else str(value)


def _make_pairs_loader():
    """A YAML loader that reads every scalar as text and every mapping as ``[(key, value)]``,
    keeping repeated keys (the Danish reference table repeats some) instead of failing or
    silently dropping one. It builds no object a tag names (``BaseLoader``), refuses aliases
    (``*name``, which let a small file expand to a huge one) and nesting deeper than
    ``MAX_NESTING``, before PyYAML's recursive composer could exhaust the stack."""
    import yaml
    from yaml.composer import ComposerError

    class PairsLoader(yaml.BaseLoader):
        depth = 0

        def compose_node(self, parent, index):
            event = self.peek_event()
            if isinstance(event, yaml.AliasEvent):
                raise ComposerError(None, None, "aliases (*name) are not read in a class map; write the "
                                    "codes out", event.start_mark)
            if self.depth >= MAX_NESTING:
                raise ComposerError(None, None, f"lists and mappings nest more than {MAX_NESTING} deep",
                                    event.start_mark)
            self.depth += 1
            try:
                return super().compose_node(parent, index)
            finally:
                self.depth -= 1

    def pairs(loader, node):
        return [(loader.construct_object(k, deep=True), loader.construct_object(v, deep=True))
                for k, v in node.value]

    PairsLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, pairs)
    return PairsLoader


class _LazyLoader:
    """Builds the PyYAML loader class on first use, so that importing this module needs no PyYAML."""

    _cls = None

    def __call__(self, stream):
        if _LazyLoader._cls is None:
            _LazyLoader._cls = _make_pairs_loader()
        return _LazyLoader._cls(stream)


_PairsLoader = _LazyLoader()


def normalise_label(value: Any) -> Optional[str]:
    """A label value used as a class name directly (no class map): stripped text, integral
    numbers as integers, None when missing."""
    return normalise_code(value)


def apply_min_parcels(names: Sequence[Optional[str]], min_parcels: int, *,
                      unknown: str = UNKNOWN_CLASS) -> tuple[np.ndarray, dict[str, int]]:
    """Send classes with fewer than ``min_parcels`` parcels to ``unknown``.

    Args:
        names: ``(P,)`` class names, None where unlabelled.
        min_parcels: the fewest parcels a class needs to stay a class of its own (0 or 1: all stay).
        unknown: the class rare ones join (never itself folded).

    Returns:
        The new ``(P,)`` names and ``{rare class: parcels}``.
    """
    names = np.asarray(names, dtype=object)
    counts = Counter(n for n in names if n is not None)
    rare = {c: n for c, n in sorted(counts.items()) if n < min_parcels and c != unknown}
    if rare:
        names = np.array([unknown if n in rare else n for n in names], dtype=object)
    return names, rare


@dataclass
class ClassAssignment:
    """Labels of a layer as class indices.

    Attributes:
        labels: ``(P,)`` int16 index into ``classes``, -1 where unlabelled.
        classes: the class names, sorted unless a fixed list was given.
        counts: ``{class: parcels}`` in ``classes`` order.
        unmapped: ``{code: parcels}`` of codes that were not in the class map (now ``unknown``).
        rare: ``{class: parcels}`` of classes sent to ``unknown`` by ``min_parcels``.
        dropped: ``{class: parcels}`` of labels outside a fixed class list (now unlabelled).
    """

    labels: np.ndarray
    classes: tuple[str, ...]
    counts: dict[str, int]
    unmapped: dict[str, int] = field(default_factory=dict)
    rare: dict[str, int] = field(default_factory=dict)
    dropped: dict[str, int] = field(default_factory=dict)

    def summary(self) -> dict[str, Any]:
        """What the assignment did, as plain JSON-ready values (for dataset provenance)."""
        return {"classes": list(self.classes), "class_counts": dict(self.counts),
                "unmapped_codes": dict(self.unmapped), "rare_classes": dict(self.rare),
                "dropped_labels": dict(self.dropped)}


@dataclass
class LabelTally:
    """Label values counted as a layer is read, batch by batch: each distinct code
    (:func:`normalise_code`; None for a missing value) once, in the order first met, with its
    number of parcels. What :func:`assign_tallied` needs of a whole layer's labels, without them."""

    codes: list[Optional[str]] = field(default_factory=list)
    counts: list[int] = field(default_factory=list)
    _positions: dict[Optional[str], int] = field(default_factory=dict, repr=False)

    def add(self, values: Iterable[Any]) -> np.ndarray:
        """Count ``values``; returns ``(n,)`` int32, each value's position in :attr:`codes`."""
        out = []
        for value in values:
            code = normalise_code(value)
            k = self._positions.get(code)
            if k is None:
                k = self._positions[code] = len(self.codes)
                self.codes.append(code)
                self.counts.append(0)
            self.counts[k] += 1
            out.append(k)
        return np.asarray(out, dtype=np.int32)


def assign_classes(values: Iterable[Any], class_map: Union[None, str, os.PathLike, ClassMap] = None, *,
                   min_parcels: int = 0, classes: Optional[Sequence[str]] = None,
                   unknown: str = UNKNOWN_CLASS, missing: Optional[str] = None,
                   source: str = "labels") -> ClassAssignment:
    """Label values -> class indices and the class list, logging what was folded or left out.

    Order of work: values are mapped through ``class_map`` (codes outside it become
    ``unknown``, counted per code) or used as class names as they are; classes with fewer than
    ``min_parcels`` parcels become ``unknown``; then either the sorted set of the remaining
    names is the class list, or, with ``classes`` given, names outside that list become
    unlabelled (-1).

    Args:
        values: ``(P,)`` label values (codes or names, any type; None/NaN/empty = unlabelled).
        class_map: a :class:`ClassMap`, a preset name or a class map file; None uses the values.
        min_parcels: classes with fewer parcels join ``unknown``.
        classes: a fixed class list instead of the one found.
        unknown: the catch-all class name.
        missing: the class of missing values (default: unlabelled).
        source: the layer's name for log lines.

    Returns:
        A :class:`ClassAssignment`.
    """
    tally = LabelTally()
    positions = tally.add(values)
    assigned = assign_tallied(tally, class_map, min_parcels=min_parcels, classes=classes, unknown=unknown,
                              missing=missing, source=source)
    assigned.labels = assigned.labels[positions]
    return assigned


def assign_tallied(tally: LabelTally, class_map: Union[None, str, os.PathLike, ClassMap] = None, *,
                   min_parcels: int = 0, classes: Optional[Sequence[str]] = None,
                   unknown: str = UNKNOWN_CLASS, missing: Optional[str] = None,
                   source: str = "labels", unmapped_as: Optional[str] = UNKNOWN_CLASS) -> ClassAssignment:
    """:func:`assign_classes` of the values counted in ``tally``: the same classes, counts and log
    lines, but ``labels`` holds one class index per code of ``tally.codes`` (index it with the
    positions ``LabelTally.add`` returned for the parcels' labels). Codes ``class_map`` does not
    map get the class ``unmapped_as``, or no label where it is None (a reference to score or
    calibrate against, where "unknown" is a class the model predicts, not a missing entry)."""
    if min_parcels < 0:
        raise InputError(f"The minimum of parcels per class must be 0 or more, not {min_parcels}.")
    weights = tally.counts
    unmapped: Counter = Counter()
    if class_map is not None:
        cmap = ClassMap.load(class_map)
        names: list[Optional[str]] = []
        for k, code in enumerate(tally.codes):
            cls = missing if code is None else (cmap._lookup.get(_key(code), "") or None)
            if code is not None and cls is None:
                unmapped[code] += weights[k]
                cls = unmapped_as
            names.append(cls)
        if unmapped:
            total = sum(unmapped.values())
            listed = list(unmapped.most_common())
            shown = ", ".join(f"{code} ({n})" for code, n in listed[:30])
            more = f" and {len(listed) - 30} more" if len(listed) > 30 else ""
            fate = f"they count as {unmapped_as!r}" if unmapped_as else "they are left out"
            log.warning("%s: %d parcels have %d codes that %s does not map; %s. "
                        "Codes (parcels): %s%s", source, total, len(listed), cmap.source, fate,
                        shown, more)
    else:
        names = [missing if code is None else code for code in tally.codes]
    rare: dict[str, int] = {}
    if min_parcels > 1:
        per_class = _weighted(names, weights)
        rare = {c: n for c, n in sorted(per_class.items()) if n < min_parcels and c != unknown}
        if rare:
            names = [unknown if n in rare else n for n in names]
            log.warning("%s: %d classes have fewer than %d parcels and count as %r: %s", source, len(rare),
                        min_parcels, unknown, ", ".join(f"{c} ({n})" for c, n in rare.items()))
    dropped: dict[str, int] = {}
    if classes is None:
        found = tuple(sorted({n for n in names if n is not None}))
    else:
        found = tuple(str(c) for c in classes)
        dropped = dict(sorted(_weighted([n if n not in set(found) else None for n in names], weights).items()))
        if dropped:
            log.warning("%s: %d parcels have labels outside the class list and count as unlabelled: %s",
                        source, sum(dropped.values()), ", ".join(f"{c} ({n})" for c, n in dropped.items()))
    if len(found) > np.iinfo(np.int16).max:
        raise InputError(f"{source}: {len(found)} classes are more than a dataset can index; use a class map.")
    index = {c: i for i, c in enumerate(found)}
    labels = np.array([index.get(n, -1) if n is not None else -1 for n in names], dtype=np.int16)
    per_label = _weighted([c if i >= 0 else None for c, i in zip(names, labels)], weights)
    return ClassAssignment(labels, found, {c: int(per_label.get(c, 0)) for c in found},
                           dict(unmapped.most_common()), rare, dropped)


def _weighted(names: Sequence[Optional[str]], weights: Sequence[int]) -> dict[str, int]:
    """Parcels per name, ``names[k]`` standing for ``weights[k]`` parcels (None: not counted)."""
    counts: Counter = Counter()
    for k, name in enumerate(names):
        if name is not None:
            counts[name] += weights[k]
    return dict(counts)
