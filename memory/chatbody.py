"""What memory reads of a chat request and of its answer: the last user message, the assistant's text.

One walker for every reader: the gateway's retrieval query and the extraction that learns from the
exchange both take the user's text from :func:`last_user_text`, so they never disagree on which message
is the user's. Three body shapes are read:

- Chat Completions: ``messages``, each ``{"role", "content"}``; ``content`` a string or a list of parts;
- the Responses API: ``input``, a string, or a list of items (messages, or typed items such as
  ``function_call`` that carry no user text);
- Anthropic-style answers: ``content`` as a list of typed parts.

A body that holds both ``messages`` and ``input`` is read from ``messages``: ``input`` is consulted only
when there are no messages.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

# Responses-API items that are not a message: they never hold the user's text.
NON_MESSAGE_ITEM_TYPES = frozenset(
    {
        "function_call",
        "function_call_output",
        "tool_call",
        "tool_call_output",
        "reasoning",
        "computer_call",
        "computer_call_output",
        "web_search_call",
        "file_search_call",
    }
)
TEXT_PART_TYPES = frozenset({"text", "input_text", "output_text"})


def content_text(content: Any, *, joiner: str) -> str:
    """The text of a message's ``content``: a string trimmed, or the trimmed text parts of a list
    (plain strings, and parts typed as text or untyped) joined by ``joiner``; ``""`` when none."""
    if isinstance(content, str):
        return content.strip()
    if not isinstance(content, list):
        return ""
    texts = []
    for part in content:
        if isinstance(part, str):
            text: Any = part
        elif isinstance(part, Mapping) and part.get("type") in (None, *TEXT_PART_TYPES):
            text = part.get("text", part.get("input_text"))
        else:
            continue
        if isinstance(text, str) and text.strip():
            texts.append(text.strip())
    return joiner.join(texts)


def _is_user_item(item: Mapping[str, Any]) -> bool:
    role = item.get("role")
    if role == "user":
        return True
    # A Responses-API message may leave the role out; a typed non-message item is never the user's.
    return role in (None, "") and item.get("type") not in NON_MESSAGE_ITEM_TYPES


def last_user_text(body: Any, *, joiner: str = "\n") -> str:
    """The text of the last user message that has any (``messages``, else ``input``); ``""`` if none."""
    if not isinstance(body, Mapping):
        return ""
    for field in ("messages", "input"):
        items = body.get(field)
        if isinstance(items, str) and items.strip():
            return items.strip()
        if not isinstance(items, list) or not items:
            continue
        for item in reversed(items):
            if isinstance(item, Mapping) and _is_user_item(item):
                text = content_text(item.get("content", item.get("text")), joiner=joiner)
                if text:
                    return text
        return ""
    return ""


def assistant_text(data: Any) -> str:
    """The assistant's text in a non-streaming answer: OpenAI ``choices[0].message.content``, else
    Anthropic ``content[]`` text parts, else Responses ``output_text``; ``""`` if none."""
    if not isinstance(data, Mapping):
        return ""
    choices = data.get("choices")
    if isinstance(choices, list) and choices and isinstance(choices[0], Mapping):
        message = choices[0].get("message")
        if isinstance(message, Mapping) and isinstance(message.get("content"), str):
            return str(message["content"])
    content = data.get("content")
    if isinstance(content, list):
        text = content_text(
            [p for p in content if isinstance(p, Mapping) and p.get("type") == "text"], joiner="\n"
        )
        if text:
            return text
    output_text = data.get("output_text")
    return output_text if isinstance(output_text, str) else ""
