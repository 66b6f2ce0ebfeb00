"""Memory injection into a chat request: messages in, messages out. Pure functions.

What goes in: ``"Memory context: "`` + the trimmed, non-empty contents of the memories joined by
``"\\n"`` (:func:`format_memories`), as one message:

* role ``system``, or ``user`` for providers without a system role (:data:`PROVIDERS_WITHOUT_SYSTEM_ROLE`);
* providers that require the system message to come first (:data:`SYSTEM_FIRST_PROVIDERS`) get the
  text merged at the head of their first system message instead (``text + "\\n" + original``);
* position: right after the leading system/developer messages, so the caller's own system prompt stays
  first and byte-identical (the original put memory at index 0, *before* it, which also broke prompt
  caching of that prefix whenever the memories changed); in cache-safe mode, right before the last user
  message, so everything before it stays byte-identical across turns (#3890); cache-safe mode is on when
  the request carries ``cache_control`` markers, unless the caller says otherwise.

Both OpenAI Chat (``messages``) and Responses (``input``) requests are handled: the original ignored
requests that only have ``input``.

The provider lists are data (the original hard-coded them): a :class:`ProviderRoles` holds
case-insensitive ``fnmatch`` patterns and can be built from settings and passed in.

Memories are anything with a ``content`` (:class:`MemoryLike`: a ``Memory`` row, a dataclass) or a
mapping with a ``"content"`` key; ``key`` and ``type`` are part of the protocol for callers but are not
rendered (the original renders content only).
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from fnmatch import fnmatchcase
from typing import Any, Protocol

from memory.chatbody import last_user_text

__all__ = [
    "CACHE_CONTROL_FIELDS",
    "DEFAULT_PROVIDER_ROLES",
    "MEMORY_CONTEXT_PREFIX",
    "PROVIDERS_WITHOUT_SYSTEM_ROLE",
    "SYSTEM_FIRST_PROVIDERS",
    "MemoryLike",
    "ProviderRoles",
    "format_memories",
    "has_cache_control",
    "inject_memory",
    "should_inject_memory",
]

logger = logging.getLogger(__name__)

MEMORY_CONTEXT_PREFIX = "Memory context: "

# Providers that reject a "system" role (#1701). GLM 5.1+ accepts it (#5610) but the provider id
# "glm" covers older models too, so it stays listed.
PROVIDERS_WITHOUT_SYSTEM_ROLE: tuple[str, ...] = (
    "o1",
    "o1-mini",
    "o1-preview",
    "glm",
    "glmt",
    "glm-cn",
    "zai",
    "qianfan",
)
# Providers whose templates reject a system message anywhere but first (#6135, Xiaomi MiMo).
SYSTEM_FIRST_PROVIDERS: tuple[str, ...] = ("xiaomi-mimo", "mimo")

# Request fields searched for cache_control markers (Chat, Responses, Anthropic and Gemini shapes).
CACHE_CONTROL_FIELDS: tuple[str, ...] = ("system", "tools", "messages", "input", "contents", "request")

_SYSTEM_ROLES = frozenset({"system", "developer"})
_MAX_MARKER_DEPTH = 32  # requests are JSON; anything deeper is not a chat payload worth walking


class MemoryLike(Protocol):
    """What injection needs from a memory. A mapping with the same keys is accepted too."""

    @property
    def content(self) -> str | None: ...

    @property
    def key(self) -> str | None: ...

    @property
    def type(self) -> str | None: ...


@dataclass(frozen=True, slots=True)
class ProviderRoles:
    """How providers accept the memory message.

    Each entry is an ``fnmatch`` pattern (``"glm"``, ``"o1*"``) matched against the trimmed, lower-cased
    provider id. A provider in ``without_system_role`` gets a ``user`` message; one in ``system_first``
    (and not in ``without_system_role``) gets the text merged into its first system message. ``None``,
    blank and unknown providers get a ``system`` message.
    """

    without_system_role: tuple[str, ...] = PROVIDERS_WITHOUT_SYSTEM_ROLE
    system_first: tuple[str, ...] = SYSTEM_FIRST_PROVIDERS

    def supports_system_message(self, provider: str | None) -> bool:
        """Whether ``provider`` accepts a message with role ``system``."""
        return not _matches(provider, self.without_system_role)

    def requires_system_first(self, provider: str | None) -> bool:
        """Whether ``provider`` accepts a system message only as the first message."""
        return self.supports_system_message(provider) and _matches(provider, self.system_first)


DEFAULT_PROVIDER_ROLES = ProviderRoles()


def _matches(provider: str | None, patterns: Sequence[str]) -> bool:
    if not isinstance(provider, str):
        return False
    name = provider.strip().lower()
    return bool(name) and any(fnmatchcase(name, pattern.strip().lower()) for pattern in patterns)


def format_memories(memories: Iterable[MemoryLike | Mapping[str, Any]] | None) -> str:
    """Return ``"Memory context: " + "\\n".join(contents)``, or ``""`` when no content is left.

    Each content is trimmed; empty, blank and non-string contents are dropped. No bullets, keys, types
    or trailing newline.
    """
    contents = [text for text in (_content(memory).strip() for memory in memories or ()) if text]
    return MEMORY_CONTEXT_PREFIX + "\n".join(contents) if contents else ""


def _content(memory: Any) -> str:
    value = memory.get("content") if isinstance(memory, Mapping) else getattr(memory, "content", None)
    return value if isinstance(value, str) else ""


def should_inject_memory(request: Any, *, enabled: bool) -> bool:
    """Whether memory should be injected: ``enabled``, and the request has a conversation — a non-empty
    ``messages`` list, or (Responses API) a non-empty ``input`` list or non-blank ``input`` string."""
    return bool(enabled) and isinstance(request, Mapping) and _conversation_field(request) is not None


def has_cache_control(request: Any) -> bool:
    """Whether any ``cache_control`` key appears in the request's :data:`CACHE_CONTROL_FIELDS`, at any
    depth (Anthropic-style prompt-caching markers)."""
    if not isinstance(request, Mapping):
        return False
    stack: list[tuple[Any, int]] = [(request.get(field), 0) for field in CACHE_CONTROL_FIELDS]
    while stack:
        node, depth = stack.pop()
        if depth > _MAX_MARKER_DEPTH:
            continue
        if isinstance(node, Mapping):
            if "cache_control" in node:
                return True
            stack.extend((child, depth + 1) for child in node.values())
        elif isinstance(node, list):
            stack.extend((child, depth + 1) for child in node)
    return False


def inject_memory(
    request: Mapping[str, Any],
    memories: Iterable[MemoryLike | Mapping[str, Any]] | None,
    provider: str | None,
    *,
    cache_safe: bool | None = None,
    roles: ProviderRoles = DEFAULT_PROVIDER_ROLES,
) -> dict[str, Any]:
    """Return a new request with the memory message inserted (see the module docstring for where).

    The input is never mutated. The result is a shallow copy: every other field is kept as is, the
    conversation list is a new list, and the messages it shares with the input are the same objects
    (treat them as read-only). Without memories, or when all contents are blank, the result is an
    unchanged copy. ``cache_safe=None`` means :func:`has_cache_control`; ``True`` or ``False`` forces it.
    The conversation is ``messages``, or ``input`` when only that one is non-empty (a string ``input``
    becomes one user message).
    """
    result = dict(request)
    text = format_memories(memories)
    if not text:
        logger.debug("memory.injection.skipped", extra={"reason": "no_memories_or_empty_context"})
        return result
    field = _conversation_field(request) or "messages"
    conversation = _conversation(request.get(field))

    if roles.requires_system_first(provider):
        strategy = "system-first"
        if conversation and _role(conversation[0]) == "system":
            conversation[0] = _merged_system_message(conversation[0], text)
        else:
            conversation.insert(0, {"role": "system", "content": text})
    else:
        role = "system" if roles.supports_system_message(provider) else "user"
        if cache_safe is None:
            cache_safe = has_cache_control(request)
        anchor = _last_user_index(conversation) if cache_safe else -1
        if anchor >= 0:
            strategy = f"{role}-cache-safe"
        else:
            strategy = role
            anchor = _after_leading_system(conversation)
        conversation.insert(anchor, {"role": role, "content": text})

    logger.debug("memory.injection.applied", extra={"strategy": strategy, "field": field})
    result[field] = conversation
    return result


def _conversation_field(request: Mapping[str, Any]) -> str | None:
    messages = request.get("messages")
    if isinstance(messages, list) and messages:
        return "messages"
    payload = request.get("input")
    if (isinstance(payload, list) and payload) or (isinstance(payload, str) and payload.strip()):
        return "input"
    return None


def _conversation(value: Any) -> list[Any]:
    if isinstance(value, list):
        return list(value)
    if isinstance(value, str) and value.strip():
        return [{"role": "user", "content": value}]
    return []


def _role(message: Any) -> Any:
    return message.get("role") if isinstance(message, Mapping) else None


def _last_user_index(conversation: Sequence[Any]) -> int:
    for index in range(len(conversation) - 1, -1, -1):
        if _role(conversation[index]) == "user":
            return index
    return -1


def _after_leading_system(conversation: Sequence[Any]) -> int:
    index = 0
    while index < len(conversation) and _role(conversation[index]) in _SYSTEM_ROLES:
        index += 1
    return index


def _merged_system_message(message: Mapping[str, Any], text: str) -> dict[str, Any]:
    content = message.get("content")
    if isinstance(content, str):
        merged: Any = f"{text}\n{content}"
    elif isinstance(content, list):  # content parts: keep them intact, the memory becomes the first part
        merged = [{"type": "text", "text": text}, *content]
    else:
        merged = text
    return {**message, "content": merged}


def last_user_query(body: Mapping[str, Any]) -> str:
    """The retrieval query: the text of the last user message (``memory.chatbody``), its parts joined
    by a space."""
    return last_user_text(body, joiner=" ")
