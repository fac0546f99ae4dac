"""Score a model bundle on the real Bavarian parcels and write the result into its model card
(the section between the real-data markers is replaced; the rest of the card is kept).

Usage: python scripts/real_data_card.py [--model resources/models/default.tcm]
       [--card resources/models/MODEL_CARD.md] [--work runs/realdata]
"""

from __future__ import annotations

import argparse
import logging
from pathlib import Path

from thermocrop.training.realdata import bavaria_card_section, update_model_card

ROOT = Path(__file__).resolve().parent.parent


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", type=Path, default=ROOT / "resources" / "models" / "default.tcm")
    parser.add_argument("--card", type=Path, help="model card to update (default: MODEL_CARD.md beside the model)")
    parser.add_argument("--work", type=Path, default=ROOT / "runs" / "realdata",
                        help="where the Bavarian dataset is imported (once)")
    parser.add_argument("--realdata", type=Path, help="folder holding bavaria2018/ and duernast-weather/")
    args = parser.parse_args()
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    section = bavaria_card_section(args.model, args.work, args.realdata)
    card = update_model_card(args.card or args.model.parent / "MODEL_CARD.md", section)
    print(section)
    print(f"written into {card}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
