"""The ``thermocrop`` command line: discovers the sub-commands in ``cli.commands``.

Exit codes (the same for every command; ``docs/reliability.md`` says more):

====  =====================  ==================================================================
code  name                   meaning
====  =====================  ==================================================================
0     ``EXIT_OK``            done; every output written
1     ``EXIT_INTERNAL``      an unexpected failure (a bug): Python's traceback is printed
2     ``EXIT_USAGE``         the command line is wrong (unknown option, value out of range)
3     ``EXIT_INPUT``         an input cannot be used (parcels, scenes, weather, model, dataset,
                             checkpoint); nothing was written
4     ``EXIT_NOTHING``       the run finished but no parcel could be classified / extracted /
                             given GDD; nothing was written, the message counts the parcels
                             by status
5     ``EXIT_OUTPUT``        the output was refused or could not be written; what was there
                             before is unchanged
6     ``EXIT_FAILED``        processing failed for another reason ThermoCrop names
130   ``EXIT_INTERRUPTED``   cancelled (Ctrl+C); nothing was written
====  =====================  ==================================================================
"""

from __future__ import annotations

import argparse
import importlib
import logging
import pkgutil
import sys
from typing import Optional, Sequence

from ..core.errors import CancelledError, InputError, NoUsableParcelsError, OutputError, ThermoCropError
from ..core.redact import install_redaction, redact
from . import commands, interrupts
from .progress_bar import configure_logging

# A module ``cli/commands/<name>_command.py`` is the command ``<name>``.
COMMAND_SUFFIX = "_command"

EXIT_OK = 0
EXIT_INTERNAL = 1
EXIT_USAGE = 2
EXIT_INPUT = 3
EXIT_NOTHING = 4
EXIT_OUTPUT = 5
EXIT_FAILED = 6
EXIT_INTERRUPTED = 130

EXIT_CODES: dict[int, str] = {
    EXIT_OK: "done",
    EXIT_INTERNAL: "unexpected failure (a bug; the traceback says where)",
    EXIT_USAGE: "wrong command line",
    EXIT_INPUT: "an input cannot be used",
    EXIT_NOTHING: "no parcel could be processed",
    EXIT_OUTPUT: "the output was refused or could not be written",
    EXIT_FAILED: "processing failed",
    EXIT_INTERRUPTED: "cancelled",
}


def exit_code(exc: BaseException) -> int:
    """The exit code of a run that ended with ``exc``."""
    if isinstance(exc, OutputError):
        return EXIT_OUTPUT
    if isinstance(exc, (CancelledError, KeyboardInterrupt)):
        return EXIT_INTERRUPTED
    if isinstance(exc, NoUsableParcelsError):
        return EXIT_NOTHING
    if isinstance(exc, InputError):
        return EXIT_INPUT
    if isinstance(exc, ThermoCropError):
        return EXIT_FAILED
    return EXIT_INTERNAL


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="thermocrop",
        description="Crop-type classification of parcels with thermal positional encoding.",
        epilog="exit codes: " + "; ".join(f"{c} {t}" for c, t in EXIT_CODES.items()),
    )
    parser.add_argument("-v", "--verbose", action="store_true", help="log more detail")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    names = [m.name for m in pkgutil.iter_modules(commands.__path__) if m.name.endswith(COMMAND_SUFFIX)]
    for name in sorted(names, key=lambda n: n[: -len(COMMAND_SUFFIX)]):
        module = importlib.import_module(f"{commands.__name__}.{name}")
        # NAME lets a command be called what no module can be (``import``, ``import-weights``).
        default = name[: -len(COMMAND_SUFFIX)]
        # help= is %-formatted by argparse, a description is not
        cmd = sub.add_parser(getattr(module, "NAME", default), help=module.HELP,
                             description=module.HELP.replace("%%", "%"))
        module.configure(cmd)
        cmd.set_defaults(_run=module.run, _check=getattr(module, "check_args", None), _parser=cmd)
    return parser


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if args._check is not None:
        problem = args._check(args)
        if problem:
            args._parser.error(problem)  # exits with EXIT_USAGE
    # Log lines go through tqdm so they never run into a progress bar.
    configure_logging(logging.DEBUG if args.verbose else logging.INFO)
    install_redaction()  # no credential or signed URL in any log line
    try:
        with interrupts.taken():  # an interrupt a library loses still stops the run
            return int(args._run(args) or EXIT_OK)
    except (ThermoCropError, KeyboardInterrupt) as exc:
        code = exit_code(exc)
        text = ("interrupted" if isinstance(exc, KeyboardInterrupt) or interrupts.interrupted()
                else f"error: {redact(str(exc))}")
        print(f"thermocrop {args.command}: {text}", file=sys.stderr)
        return code


if __name__ == "__main__":
    sys.exit(main())
