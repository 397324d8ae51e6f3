"""How the built-in token estimate compares with OpenAI's BPE encodings, on Chinese and English turns.

Budgets and compression thresholds count tokens with ``core.language.tokens.estimate_tokens``
(no model files); this measures it against cl100k_base and o200k_base (``bpe-openai``, which
ships both encodings, so nothing is downloaded) over every turn of the LoCoMo-format
conversations in a directory, and prints characters per token by script.

    python benchmarks/token_estimate.py [DIR ...]   # default: ../shared/data/zh_dev ../shared/data/locomo_dev
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import bpe_openai

from hindsight_integrations.bench.locomo_data import load_directory
from hindsight_integrations.core.language.rules import every
from hindsight_integrations.core.language.tokens import estimate_tokens

SHARED = Path(__file__).resolve().parents[2] / "shared" / "data"
ENCODINGS = ("cl100k_base", "o200k_base")


def turn_texts(directory: Path) -> list[str]:
    """Every turn's text in the directory's conversations, read as ``hindsight bench locomo`` reads them."""
    conversations, _ = load_directory(directory)
    return [turn.text for conversation in conversations for turn in conversation.turns]


def compare(texts: Iterable[str]) -> dict[str, Any]:
    """Ideographs, other characters, the estimate and each encoding's real count, summed over ``texts``."""
    ideograph = every().pattern("text.cjk_char")
    assert ideograph is not None
    texts = list(texts)
    cjk = sum(len(ideograph.findall(t)) for t in texts)
    other = sum(len(t) for t in texts) - cjk
    row: dict[str, Any] = {"texts": len(texts), "cjk_chars": cjk, "other_chars": other}
    row["estimate"] = sum(estimate_tokens(t) for t in texts)
    for name in ENCODINGS:
        encoding = bpe_openai.get_encoding(name)
        row[name] = sum(len(encoding.encode(t)) for t in texts)
        row[f"estimate_over_{name}"] = round(row["estimate"] / max(1, row[name]), 3)
    return row


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("dirs", nargs="*", type=Path, default=[SHARED / "zh_dev", SHARED / "locomo_dev"])
    args = parser.parse_args()
    for directory in args.dirs:
        row = compare(turn_texts(directory))
        print(directory.name, json.dumps(row))


if __name__ == "__main__":
    main()
