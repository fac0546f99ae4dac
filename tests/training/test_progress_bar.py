"""Log lines and progress bars on one stream stay on separate lines."""

from __future__ import annotations

import io
import logging
import re

from thermocrop.cli.progress_bar import LOG_FORMAT, TqdmLoggingHandler, progress_bar


def _screen_lines(text: str) -> list[str]:
    """What a terminal would leave on each line: a carriage return rewinds the line."""
    lines = []
    for raw in text.split("\n"):
        line = ""
        for part in raw.split("\r"):
            line = part + line[len(part):]
        lines.append(line.rstrip())
    return lines


def _run(handler: logging.Handler, stream: io.StringIO) -> str:
    from tqdm import tqdm

    log = logging.getLogger("thermocrop.test_progress_bar")
    log.propagate = False
    log.addHandler(handler)
    log.setLevel(logging.INFO)
    try:
        with tqdm(total=10, desc="classify", file=stream, mininterval=0, ascii=True) as bar:
            bar.update(3)
            log.info("numexpr says hello")
            bar.update(7)
    finally:
        log.removeHandler(handler)
    return stream.getvalue()


def test_log_line_gets_a_line_of_its_own():
    stream = io.StringIO()
    handler = TqdmLoggingHandler(stream)
    handler.setFormatter(logging.Formatter(LOG_FORMAT))
    lines = _screen_lines(_run(handler, stream))
    message = [line for line in lines if "numexpr says hello" in line]
    assert message == ["INFO thermocrop.test_progress_bar: numexpr says hello"]
    # The bar is drawn again after the message and ends at 100 %.
    after = lines[lines.index(message[0]) + 1:]
    assert any(re.search(r"classify: 100%\|#+\| 10/10", line) for line in after)


def test_a_plain_handler_would_run_into_the_bar():
    # The failure the handler prevents: the message lands on the bar's line.
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    handler.setFormatter(logging.Formatter(LOG_FORMAT))
    lines = _screen_lines(_run(handler, stream))
    assert any("classify:" in line and "numexpr says hello" in line for line in lines)


def test_progress_bar_reaches_100_percent(capsys):
    with progress_bar("extract") as progress:
        progress(0.25)
        progress(0.5)
    err = capsys.readouterr().err
    assert "extract: 100%" in err


def test_other_libraries_notes_only_with_verbose():
    """At the default level a user sees ThermoCrop's notes and everyone's warnings, not numexpr's
    thread count or GDAL's raw error lines; --verbose (DEBUG) shows them all."""
    from thermocrop.cli.progress_bar import log_handler

    for level, expected in ((logging.INFO, ["INFO thermocrop.core.x: ours", "WARNING rasterio._env: theirs, loud"]),
                            (logging.DEBUG, ["INFO thermocrop.core.x: ours", "INFO rasterio._env: theirs, quiet",
                                             "WARNING rasterio._env: theirs, loud"])):
        stream = io.StringIO()
        handler = log_handler(level, stream)
        for name, lvl, text in (("thermocrop.core.x", logging.INFO, "ours"),
                                ("rasterio._env", logging.INFO, "theirs, quiet"),
                                ("rasterio._env", logging.WARNING, "theirs, loud")):
            handler.handle(logging.LogRecord(name, lvl, __file__, 1, text, None, None))
        assert stream.getvalue().splitlines() == expected
