"""Reading downloaded pickles without running their code.

``pickle.load`` calls whatever callables a file names, so a tampered download could run any
command. ``safe_load`` admits only what data files of the field hold: plain containers,
numbers, strings, dates, numpy arrays, scalars and dtypes; any other global is refused with
an error naming the file and the global, before anything is called.
"""

from __future__ import annotations

import importlib
import io
import pickle
from pathlib import Path
from typing import Any, Union

from ...core.errors import InputError

_ALLOWED = {
    # numpy arrays, scalars and dtypes as numpy 1.x (numpy.core) and 2.x (numpy._core) write them
    ("numpy.core.multiarray", "_reconstruct"),
    ("numpy.core.multiarray", "scalar"),
    ("numpy.core.numeric", "_frombuffer"),
    ("numpy", "ndarray"),
    ("numpy", "dtype"),
    # plain values
    ("builtins", "set"),
    ("builtins", "frozenset"),
    ("builtins", "complex"),
    ("builtins", "bytearray"),
    ("builtins", "slice"),
    ("collections", "OrderedDict"),
    ("datetime", "date"),
    ("datetime", "datetime"),
    ("datetime", "time"),
    ("datetime", "timedelta"),
    ("datetime", "timezone"),
    # bytes in protocol 0-2 pickles: _codecs.encode(text, "latin1") (only that encoding passes)
    ("_codecs", "encode"),
    # Python 2 pickles name the builtins module differently
    ("__builtin__", "set"),
    ("__builtin__", "frozenset"),
}


class UnsafePickleError(InputError, pickle.UnpicklingError):
    """A pickle names something other than plain data."""


class _RestrictedUnpickler(pickle.Unpickler):
    def __init__(self, file, source: str) -> None:
        super().__init__(file, encoding="latin1")
        self._source = source

    def find_class(self, module: str, name: str) -> Any:
        plain = module.replace("numpy._core", "numpy.core")
        if (plain, name) not in _ALLOWED:
            raise UnsafePickleError(
                f"{self._source} asks to load {module}.{name}, which is not plain data (containers, "
                "numbers, strings, dates, numpy arrays); it was refused and nothing in the file was "
                "run. Download the file again from its source.")
        if plain == "_codecs":
            return _latin1_bytes
        if plain.startswith("numpy.core"):
            # numpy 2 writes numpy._core; numpy 1 has the same objects under numpy.core.
            for candidate in (module, plain):
                try:
                    return getattr(importlib.import_module(candidate), name)
                except (ImportError, AttributeError):
                    continue
        if plain == "__builtin__":
            plain = "builtins"
        return getattr(importlib.import_module(plain), name)


def _latin1_bytes(text: str, encoding: str = "utf-8") -> bytes:
    if not isinstance(text, str) or encoding.lower().replace("-", "") not in ("latin1", "iso88591"):
        raise UnsafePickleError(f"a pickle asks to encode {type(text).__name__} as {encoding!r}; refused")
    return text.encode("latin1")


def safe_loads(data: bytes, source: str = "the pickle") -> Any:
    """Unpickle ``data`` admitting plain data only (see the module docstring)."""
    try:
        return _RestrictedUnpickler(io.BytesIO(data), source).load()
    except UnsafePickleError:
        raise
    except Exception as exc:  # truncated or damaged files raise many kinds
        raise InputError(f"{source} cannot be read as a pickle ({type(exc).__name__}: {exc}); "
                         "download it again") from None


def safe_load(path: Union[str, Path]) -> Any:
    """Unpickle the file ``path`` admitting plain data only."""
    path = Path(path)
    if not path.is_file():
        raise InputError(f"{path} does not exist")
    return safe_loads(path.read_bytes(), str(path))
