"""Translation of the plugin's user-facing text: ``tr()`` and loading the user's ``.qm`` file.

Every string a user reads goes through :func:`tr` (context ``ThermoCrop``). ``make
translations`` collects them with pylupdate5 into ``i18n/thermocrop.ts`` (pylupdate5 files
bare ``tr()`` calls under ``@default``; the Makefile renames that context) and builds each
``i18n/thermocrop_<lang>.ts`` into a ``.qm`` that :func:`install_translator` loads.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Optional

from qgis.PyQt.QtCore import QCoreApplication, QLocale, QTranslator

log = logging.getLogger(__name__)

CONTEXT = "ThermoCrop"
I18N_FOLDER = Path(__file__).resolve().parents[1] / "i18n"


def tr(text: str) -> str:
    """``text`` in the user's language when a translation is loaded, else unchanged."""
    return QCoreApplication.translate(CONTEXT, text)


def user_locale() -> str:
    """The locale QGIS is set to (``locale/userLocale``, e.g. ``de`` or ``pt_BR``), else the system's."""
    from qgis.core import QgsSettings

    return str(QgsSettings().value("locale/userLocale", "") or QLocale.system().name())


def translation_file(locale: str, folder: Path = I18N_FOLDER) -> Optional[Path]:
    """``thermocrop_<locale>.qm`` in ``folder``, falling back from ``pt_BR`` to ``pt``; None if none."""
    for name in (locale, locale.split("_")[0]):
        path = folder / f"thermocrop_{name}.qm"
        if name and path.is_file():
            return path
    return None


def install_translator(locale: Optional[str] = None, folder: Path = I18N_FOLDER) -> Optional[QTranslator]:
    """Load and install the translation for ``locale`` (default: the user's).

    Returns:
        The installed translator (keep it referenced; remove it on unload), or None when there is
        no translation for that language.
    """
    path = translation_file(locale or user_locale(), folder)
    if path is None:
        return None
    translator = QTranslator()
    if not translator.load(str(path)):
        log.warning("Could not load the translation %s", path)
        return None
    QCoreApplication.installTranslator(translator)
    return translator
