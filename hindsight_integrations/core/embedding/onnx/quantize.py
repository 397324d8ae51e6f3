"""An int8 copy of an ONNX export, for the vectors where speed matters more than the last digit.

A conversation turn costs two model runs: its own text (~40 word pieces on LoCoMo) and its
*context vector*, the turn framed by the turns before it (~110 word pieces, ``indexing.framed_text``),
which is most of the model's time. Dynamic int8 quantisation of the MatMul weights, per output
channel, runs that framed text in about half the CPU time of float32 (all-MiniLM-L6-v2: 24 ms
against 44 in a batch on two cores) and its vectors agree with the float32 model's at cosine 0.993
on average (0.97 at worst over LoCoMo's turns). Per-tensor quantisation was faster still but agreed
at only 0.95, so it is not used.

Weights and activations are both unsigned (U8U8). The signed-weight form (U8S8) is ~20 % faster on
CPUs with AVX-512 VNNI, but without VNNI onnxruntime computes it with an instruction that
saturates, so the same text got other vectors on another CPU: a write near a threshold then went
another way (the demo's output differed between two machines). U8U8 products are exact on every
x86 CPU, so a store, a benchmark and the demo give the same vectors wherever they run.

The copy embeds what memories are stored under, their own vectors and their context vectors
(``protocol.embed_index_matrix``); every query stays float32. A store written before keeps its
float32 vectors beside the new int8 ones (the same text agrees at cosine 0.98 at worst), which
ranking does not notice; ``HINDSIGHT_INDEX_PRECISION=float32`` keeps the float32 model for
everything. The copy is derived from the float32 export once per machine (~2 s) and cached
beside it; deriving it needs the ``onnx`` package, which the ``local`` extra installs.
"""

from __future__ import annotations

import logging
import os
from pathlib import Path

from .cache import OnnxUnavailable, installed_version, private_dir, temp_file

logger = logging.getLogger(__name__)

# Bump when the quantisation recipe changes: older copies are then made again.
_RECIPE = 3


def int8_path(fp32: Path) -> Path:
    """Where the int8 copy of the export ``fp32`` is cached: beside it, named by recipe and quantiser version."""
    version = installed_version("onnxruntime").replace(".", "_")
    return fp32.with_name(f"{fp32.stem}.int8-r{_RECIPE}-ort{version}.onnx")


def int8_copy(fp32: Path) -> Path:
    """The int8 copy of the export ``fp32``, made now if not cached; raises ``OnnxUnavailable`` if it cannot be.

    The copy is written to a temporary name and renamed, so a process never opens another's
    half-written file; a cache directory that cannot be written gets the copy in a private one.
    """
    target = int8_path(fp32)
    if target.is_file():
        return target
    try:
        from onnxruntime.quantization import QuantType, quantize_dynamic
    except ImportError as exc:  # onnx missing: the quantiser imports it
        raise OnnxUnavailable(f"int8 quantisation needs the onnx package ({exc})") from exc
    directory = target.parent
    try:
        temp = temp_file(directory, target.name)
    except OSError:
        directory = private_dir()
        target = directory / target.name
        if target.is_file():
            return target
        temp = temp_file(directory, target.name)
    logger.info("making the int8 copy of %s for stored vectors (once per machine): %s", fp32.name, target)
    quiet = _QuietPreprocessingHint()
    root = logging.getLogger()  # the quantiser warns on the root logger about optional pre-processing
    root.addFilter(quiet)
    try:
        quantize_dynamic(
            str(fp32),
            temp,
            weight_type=QuantType.QUInt8,
            op_types_to_quantize=["MatMul"],
            per_channel=True,
        )
        os.chmod(temp, 0o644)
        os.replace(temp, target)
    except Exception as exc:  # the quantiser raises many kinds; all mean "use float32"
        raise OnnxUnavailable(f"int8 quantisation of {fp32.name} failed: {type(exc).__name__}: {exc}") from exc
    finally:
        root.removeFilter(quiet)
        if os.path.exists(temp):
            os.unlink(temp)
    return target


class _QuietPreprocessingHint(logging.Filter):
    """Drops the quantiser's advice to pre-process the model (it does not apply to this graph), nothing else."""

    def filter(self, record: logging.LogRecord) -> bool:
        return "pre-processing before quantization" not in record.getMessage()


__all__ = ["int8_copy", "int8_path"]
