"""The one walker of chat bodies: the retrieval query and extraction read the same user message."""

from __future__ import annotations

import pytest

from memory.chatbody import assistant_text, content_text, last_user_text
from memory.injection import last_user_query
from memory.services.extraction import user_text_from_request

BODIES = [
    {"messages": [{"role": "user", "content": "old"}, {"role": "user", "content": "  new  "}]},
    {"messages": [{"role": "user", "content": "q"}, {"role": "assistant", "content": "a"}]},
    {"messages": [{"role": "user", "content": [{"type": "text", "text": "a"}, {"type": "image_url"}, "b"]}]},
    {"messages": [{"role": "user", "content": "chat"}], "input": "responses"},
    {"input": [{"role": "user", "content": "q"}, {"type": "function_call", "arguments": "{}"}]},
    {"input": [{"type": "message", "content": [{"type": "input_text", "text": "typed"}]}]},
    {"input": "  plain  "},
    {"messages": [{"role": "system", "content": "only a system prompt"}], "input": "not read"},
]


@pytest.mark.parametrize("body", BODIES)
def test_retrieval_and_extraction_read_the_same_user_message(body):
    query, learned = last_user_query(body), user_text_from_request(body)
    # The same message; only the joiner of content parts differs (a space for the query).
    assert query == learned.replace("\n", " ")


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        (BODIES[0], "new"),
        (BODIES[1], "q"),
        (BODIES[2], "a\nb"),
        (BODIES[3], "chat"),
        (BODIES[4], "q"),
        (BODIES[5], "typed"),
        (BODIES[6], "plain"),
        (BODIES[7], ""),
        ({"messages": [{"role": "user", "content": "   "}, {"role": "user", "content": []}]}, ""),
        ("not a body", ""),
    ],
)
def test_the_last_user_text(body, expected):
    assert last_user_text(body) == expected


def test_an_empty_last_user_message_gives_way_to_the_one_before():
    body = {"messages": [{"role": "user", "content": "earlier"}, {"role": "user", "content": " "}]}
    assert last_user_text(body) == "earlier"


def test_content_parts_that_are_not_text_are_left_out():
    parts = [{"type": "image_url", "image_url": {"url": "x"}}, {"type": "text", "text": " hi "}, {"text": 3}]
    assert content_text(parts, joiner="|") == "hi"


def test_the_assistant_text_of_each_answer_shape():
    assert assistant_text({"choices": [{"message": {"content": "openai"}}]}) == "openai"
    assert assistant_text({"content": [{"type": "text", "text": "claude"}, {"type": "tool_use"}]}) == "claude"
    assert assistant_text({"output_text": "responses"}) == "responses"
    assert assistant_text({"choices": []}) == ""
