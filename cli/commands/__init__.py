"""One module per ``thermocrop`` sub-command.

Each module defines ``HELP`` (one line), ``configure(parser)`` and ``run(args) -> int``, and
``NAME`` when the command's name is not the module's (``import`` is a Python keyword). Modules
import only light things at module level; torch and the geo stack are imported inside ``run``
so that ``thermocrop --help`` answers at once.
"""
