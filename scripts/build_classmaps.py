"""Rebuild the preset class maps (resources/classmaps/<country>.csv) from the reference
implementation's published tables.

The reference tables are ``class_mapping/{austria,denmark,france}_class_mapping.yml`` in the
jnyborg/tpe repository (the same files are in jnyborg/timematch). Download them into one folder
and run:

    python scripts/build_classmaps.py FOLDER

Each YAML file is read with ``ClassMap.from_yaml`` (blocks of ``class: {code: description}``,
``spring_``/``winter_`` classes where a block holds both sub-blocks, the Danish table's repeated
codes merged), and written as ``code,class,name`` with the description cleaned of the parcel
counts the reference appended to it.
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

from thermocrop.core.classmap import PRESETS, ClassMap, ClassMapEntry, preset_path

SOURCE = "https://github.com/jnyborg/tpe/tree/0c91df4e7246ceb742e694a286ef3d7ef3b33773/class_mapping"

_COUNT = re.compile(r"\s*\(\d+\)\s*$")          # "Vårbyg (19799)" -> "Vårbyg"
_TABLE_COLUMNS = re.compile(r",\d+,[^,]*$")      # "Other Phalaris-type cereal,4,Other cereals"


def clean_name(text: str) -> str:
    """A code's description without the reference's parcel count or pasted table columns."""
    return _TABLE_COLUMNS.sub("", _COUNT.sub("", text)).strip()


def build(folder: Path, country: str) -> Path:
    source = folder / f"{country}_class_mapping.yml"
    cmap = ClassMap.from_yaml(source)
    cleaned = ClassMap([ClassMapEntry(e.code, e.cls, clean_name(e.name)) for e in cmap.entries],
                       f"preset {country}")
    comment = (f"ThermoCrop class map preset '{country}': {len(cleaned)} crop codes -> {len(cleaned.classes)} classes.\n"
               f"Facts from {SOURCE}/{country}_class_mapping.yml\n"
               "(Nyborg et al., thermal positional encoding / TimeMatch): classes split into spring_ and winter_\n"
               "where the reference lists both seasons; codes not listed here count as 'unknown' there and here.\n"
               "Rebuilt by scripts/build_classmaps.py.")
    out = preset_path(country)
    out.parent.mkdir(parents=True, exist_ok=True)
    return cleaned.to_csv(out, comment=comment)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folder", type=Path, help="folder holding the reference *_class_mapping.yml files")
    args = parser.parse_args(argv)
    for country in PRESETS:
        path = build(args.folder, country)
        print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
