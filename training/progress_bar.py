"""A tqdm progress bar behind core's two progress callables, for the command line."""

from __future__ import annotations

import contextlib
from typing import Iterator

from ..core.progress import Progress


@contextlib.contextmanager
def progress_bar(description: str, unit: str = "%") -> Iterator[Progress]:
    """Yield a :class:`Progress` whose reports move a tqdm bar from 0 to 100 %."""
    from tqdm import tqdm

    with tqdm(total=100, desc=description, unit=unit, bar_format="{l_bar}{bar}| {elapsed}<{remaining}") as bar:
        def report(fraction: float) -> None:
            bar.n = round(100 * fraction, 1)
            bar.refresh()

        yield Progress(report=report)
        bar.n = 100
        bar.refresh()
