"""The ``tokenizers`` tokenizer an ONNX export runs with: set up as sentence-transformers calls its own.

Both the export (which checks that this tokenizer gives exactly the model's token ids) and the
encoder (which runs it) use it; it needs neither torch nor transformers.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from .cache import INSTALL_HINT, OnnxUnavailable

TOKEN_INPUTS = ("input_ids", "attention_mask", "token_type_ids")
"""The token arrays a model may take, in the order an exported graph takes them."""


def load_tokenizer(
    file: Path,
    max_length: int,
    *,
    pad_id: int = 0,
    pad_token: str = "[PAD]",
    pad_type_id: int = 0,
    padding_side: str = "right",
    truncation_side: str = "right",
) -> Any:
    """A ``tokenizers.Tokenizer`` set up as sentence-transformers calls its tokenizer.

    That is truncation to ``max_length`` and padding to the longest text of the batch; the
    padding and truncation stored in the file (128 fixed for all-MiniLM-L6-v2) are replaced.
    It is configured once here and only read afterwards, so concurrent encodes never
    reconfigure it.
    """
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")  # onnxruntime already uses every core
    try:
        from tokenizers import Tokenizer
    except ImportError as exc:
        raise OnnxUnavailable(f"the tokenizers package is not installed ({exc}): {INSTALL_HINT}") from exc
    try:
        tokenizer = Tokenizer.from_file(str(file))
        tokenizer.enable_truncation(
            max_length=max_length, stride=0, strategy="longest_first", direction=truncation_side
        )
        tokenizer.enable_padding(direction=padding_side, pad_id=pad_id, pad_type_id=pad_type_id, pad_token=pad_token)
    except Exception as exc:  # the library raises bare Exception for a file it cannot read
        raise OnnxUnavailable(f"the tokenizers library cannot load {file}: {exc}") from exc
    return tokenizer


def encode_tokens(tokenizer: Any, texts: Sequence[str | tuple[str, str]]) -> dict[str, Any]:
    """Token ids, attention mask and token types of ``texts`` (or text pairs) as int64 arrays, padded to the longest."""
    import numpy as np

    encode = getattr(tokenizer, "encode_batch_fast", None) or tokenizer.encode_batch
    encodings = encode(texts)
    return {
        "input_ids": np.array([e.ids for e in encodings], dtype=np.int64),
        "attention_mask": np.array([e.attention_mask for e in encodings], dtype=np.int64),
        "token_type_ids": np.array([e.type_ids for e in encodings], dtype=np.int64),
    }


__all__ = ["TOKEN_INPUTS", "encode_tokens", "load_tokenizer"]
