"""The ``thermocrop`` command line: discovers the sub-commands in ``training.commands``."""

from __future__ import annotations

import argparse
import importlib
import logging
import pkgutil
import sys
from typing import Optional, Sequence

from ..core.errors import ThermoCropError
from . import commands


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="thermocrop",
        description="Crop-type classification of parcels with thermal positional encoding.",
    )
    parser.add_argument("-v", "--verbose", action="store_true", help="log more detail")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for info in sorted(pkgutil.iter_modules(commands.__path__), key=lambda m: m.name):
        if info.name.startswith("_"):
            continue
        module = importlib.import_module(f"{commands.__name__}.{info.name}")
        # NAME lets a command be called what no module can be (``import``, ``import-weights``).
        cmd = sub.add_parser(getattr(module, "NAME", info.name), help=module.HELP, description=module.HELP)
        module.configure(cmd)
        cmd.set_defaults(_run=module.run)
    return parser


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    logging.basicConfig(
        level=logging.DEBUG if args.verbose else logging.INFO,
        format="%(levelname)s %(name)s: %(message)s",
    )
    try:
        return int(args._run(args) or 0)
    except ThermoCropError as exc:
        print(f"thermocrop {args.command}: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(f"thermocrop {args.command}: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
