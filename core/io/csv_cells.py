"""Text cells of the CSV files ThermoCrop writes, made inert for spreadsheets.

Class names, parcel ids and crop codes come from other people's files. A spreadsheet opening
a CSV runs a cell beginning with ``=``, ``+``, ``-`` or ``@`` as a formula (``=HYPERLINK(...)``,
``=cmd|' /C calc'!A0``), and some take a leading tab or carriage return the same way. Such a
text cell is written with a leading apostrophe, which spreadsheets show as text and do not
evaluate. Numbers (and text that is only a number, such as a parcel id ``-12``) are left as
they are.
"""

from __future__ import annotations

import re
from typing import Any, Iterable

import numpy as np

FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")
"""The first characters that make a spreadsheet read a cell as a formula."""

_PLAIN_NUMBER = re.compile(r"^[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?$")


def inert_text(value: Any) -> Any:
    """``value`` as a CSV cell no spreadsheet evaluates: text starting like a formula gets a
    leading apostrophe; numbers, plain numeric text and anything else are returned unchanged."""
    if isinstance(value, (str, np.str_)) and value.startswith(FORMULA_STARTS) and not _PLAIN_NUMBER.match(value):
        return "'" + str(value)
    return value


def inert_row(values: Iterable[Any]) -> list[Any]:
    """A CSV row with every text cell passed through ``inert_text``."""
    return [inert_text(v) for v in values]


def inert_frame(frame):
    """A copy of a pandas DataFrame whose text cells (and column names) are ``inert_text``;
    numeric columns are not touched."""
    out = frame.copy()
    for column in out.columns:
        if out[column].dtype == object or str(out[column].dtype) in ("string", "str"):
            out[column] = out[column].map(inert_text)
    out.columns = [inert_text(c) for c in out.columns]
    return out


def inert_feature(feature: Any) -> None:
    """Make every text field of an OGR feature ``inert_text``, in place (for the CSV driver)."""
    for index in range(feature.GetFieldCount()):
        if feature.IsFieldSetAndNotNull(index) and feature.GetFieldDefnRef(index).GetTypeName() == "String":
            text = feature.GetFieldAsString(index)
            safe = inert_text(text)
            if safe is not text:
                feature.SetField(index, safe)
