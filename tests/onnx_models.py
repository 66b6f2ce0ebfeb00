"""Small ONNX models with a known answer, for tests where the weights are not the thing under test.

They are real files in the layout ``build_embedding_models`` writes (``model.onnx`` + ``tokenizer.json``),
loaded and run by our code through onnxruntime and tokenizers like the real ones.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper
from tokenizers import Tokenizer
from tokenizers.models import WordLevel
from tokenizers.pre_tokenizers import Whitespace
from tokenizers.processors import TemplateProcessing

from memory.embeddings.build import MODEL_FILENAME, SCORE_OUTPUT_NAME, TOKENIZER_FILENAME

_SPECIAL = {"[PAD]": 0, "[UNK]": 1, "[CLS]": 2, "[SEP]": 3}


def build_word_counting_cross_encoder(folder: Path, *, word: str, logit_per_word: float = 5.0) -> Path:
    """A cross-encoder whose logit for a (query, text) pair is ``logit_per_word`` times the number of
    times ``word`` occurs in the pair (0 without it), written into ``folder``.

    The tokenizer knows only ``word`` (everything else is ``[UNK]``), pads each batch to its longest
    pair and gives the three inputs the real cross-encoder takes (``input_ids``, ``attention_mask``,
    ``token_type_ids``); the graph outputs ``logits`` of shape ``(batch, 1)``.
    """
    folder.mkdir(parents=True, exist_ok=True)
    word_id = len(_SPECIAL)
    tokenizer = Tokenizer(WordLevel({**_SPECIAL, word: word_id}, unk_token="[UNK]"))
    tokenizer.pre_tokenizer = Whitespace()
    tokenizer.post_processor = TemplateProcessing(
        single="[CLS] $A [SEP]",
        pair="[CLS] $A [SEP] $B:1 [SEP]:1",
        special_tokens=[("[CLS]", _SPECIAL["[CLS]"]), ("[SEP]", _SPECIAL["[SEP]"])],
    )
    tokenizer.enable_padding(pad_id=_SPECIAL["[PAD]"], pad_token="[PAD]")
    tokenizer.save(str(folder / TOKENIZER_FILENAME))

    batch = ["batch", "sequence"]
    inputs = [
        helper.make_tensor_value_info(name, TensorProto.INT64, batch)
        for name in ("input_ids", "attention_mask", "token_type_ids")
    ]
    output = helper.make_tensor_value_info(SCORE_OUTPUT_NAME, TensorProto.FLOAT, ["batch", 1])
    constants = [
        numpy_helper.from_array(np.array(word_id, dtype=np.int64), "word_id"),
        numpy_helper.from_array(np.array([1], dtype=np.int64), "sequence_axis"),
        numpy_helper.from_array(np.array(logit_per_word, dtype=np.float32), "logit_per_word"),
    ]
    nodes = [
        helper.make_node("Equal", ["input_ids", "word_id"], ["is_word"]),
        helper.make_node("Cast", ["is_word"], ["is_word_float"], to=TensorProto.FLOAT),
        helper.make_node("ReduceSum", ["is_word_float", "sequence_axis"], ["count"], keepdims=1),
        helper.make_node("Mul", ["count", "logit_per_word"], [SCORE_OUTPUT_NAME]),
    ]
    graph = helper.make_graph(nodes, "word_counting_cross_encoder", inputs, [output], initializer=constants)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8  # readable by every onnxruntime of the last years
    onnx.checker.check_model(model)
    onnx.save(model, str(folder / MODEL_FILENAME))
    return folder
