"""Memory injection (reference §4, §14.5), with the §13 injection defects fixed: the memory goes after
the caller's system prompt instead of before it, Responses API ``input`` requests are injected (L9), and
the provider lists are data."""

from __future__ import annotations

import copy
from dataclasses import dataclass

import pytest

from memory.injection import (
    DEFAULT_PROVIDER_ROLES,
    ProviderRoles,
    format_memories,
    has_cache_control,
    inject_memory,
    should_inject_memory,
)

MEM = "Memory context: User prefers dark mode"


@dataclass
class Row:
    content: str
    key: str = ""
    type: str = "factual"


def mems(*contents: str) -> list[dict]:
    return [{"content": text, "key": f"k{i}", "type": "factual"} for i, text in enumerate(contents)]


def user(text: str) -> dict:
    return {"role": "user", "content": text}


def system(text: str) -> dict:
    return {"role": "system", "content": text}


# --- §4.1 format ----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("contents", "text"),
    [
        ([], ""),
        (["User prefers dark mode"], "Memory context: User prefers dark mode"),
        (["fact one", "fact two"], "Memory context: fact one\nfact two"),
        (["  padded content  "], "Memory context: padded content"),
        (["real content", "   "], "Memory context: real content"),
        (["fact A", "fact B", "fact C"], "Memory context: fact A\nfact B\nfact C"),
    ],
)
def test_it_formats_memories_as_the_reference(contents, text):
    assert format_memories(mems(*contents)) == text


def test_it_formats_objects_and_skips_missing_content():
    assert format_memories([Row("one"), {"content": None}, {"key": "x"}, Row("two")]) == (
        "Memory context: one\ntwo"
    )
    assert format_memories(None) == ""


# --- §4.2 positions -------------------------------------------------------------------------------------


def test_it_puts_a_system_message_first_for_openai():
    result = inject_memory({"messages": [user("Hello")]}, mems("User prefers dark mode"), "openai")
    assert result["messages"] == [system(MEM), user("Hello")]


def test_it_puts_the_memory_after_the_callers_system_prompt():
    # The reference inserted at index 0, before "You are helpful" (§13 Injection defect).
    request = {"messages": [system("You are helpful"), user("Hello")]}
    result = inject_memory(request, mems("User prefers dark mode"), "anthropic")
    assert result["messages"] == [system("You are helpful"), system(MEM), user("Hello")]


def test_it_skips_every_leading_system_and_developer_message():
    developer = {"role": "developer", "content": "Be terse"}
    request = {"messages": [system("A"), developer, user("Hi"), system("late")]}
    result = inject_memory(request, mems("User prefers dark mode"), "openai", cache_safe=False)
    assert result["messages"] == [system("A"), developer, system(MEM), user("Hi"), system("late")]


@pytest.mark.parametrize(
    "provider", ["o1", "o1-mini", "o1-preview", "glm", "glmt", "glm-cn", "zai", "qianfan"]
)
def test_it_uses_a_user_message_for_providers_without_a_system_role(provider):
    result = inject_memory({"messages": [user("Hello")]}, mems("User prefers dark mode"), provider)
    assert result["messages"] == [user(MEM), user("Hello")]


def test_it_injects_into_an_empty_conversation():
    assert inject_memory({"messages": []}, mems("User prefers dark mode"), "openai")["messages"] == [
        system(MEM)
    ]
    assert inject_memory({}, mems("User prefers dark mode"), "openai")["messages"] == [system(MEM)]


@pytest.mark.parametrize(
    ("provider", "supported"),
    [
        ("glm", False),
        ("glmt", False),
        ("glm-cn", False),
        ("zai", False),
        ("qianfan", False),
        ("o1", False),
        (" GLM ", False),
        ("O1-Mini", False),
        ("openai", True),
        ("anthropic", True),
        ("glm-5", True),
        (None, True),
        ("", True),
    ],
)
def test_it_knows_which_providers_accept_a_system_message(provider, supported):
    assert DEFAULT_PROVIDER_ROLES.supports_system_message(provider) is supported


def test_the_provider_lists_are_configurable_patterns():
    roles = ProviderRoles(without_system_role=("ernie*",), system_first=())
    request = {"messages": [user("Hello")]}
    assert inject_memory(request, mems("m"), "ernie-4.0", roles=roles)["messages"][0]["role"] == "user"
    assert inject_memory(request, mems("m"), "glm", roles=roles)["messages"][0]["role"] == "system"
    assert inject_memory(request, mems("m"), "mimo", roles=roles)["messages"] == [
        system("Memory context: m"),
        user("Hello"),
    ]


# --- system-first providers (#6135) -------------------------------------------------------------------


@pytest.mark.parametrize("provider", ["xiaomi-mimo", "mimo", " MiMo "])
def test_it_merges_into_the_first_system_message_for_system_first_providers(provider):
    request = {"messages": [system("You are helpful"), user("Hello")]}
    result = inject_memory(request, mems("User prefers dark mode"), provider)
    assert result["messages"] == [system(f"{MEM}\nYou are helpful"), user("Hello")]


def test_it_prepends_a_system_message_for_system_first_providers_without_one():
    result = inject_memory({"messages": [user("Hello")]}, mems("User prefers dark mode"), "mimo")
    assert result["messages"] == [system(MEM), user("Hello")]


def test_system_first_ignores_cache_safe_mode():
    request = {"messages": [system("S"), user("t1"), {"role": "assistant", "content": "a1"}, user("t2")]}
    result = inject_memory(request, mems("User prefers dark mode"), "xiaomi-mimo", cache_safe=True)
    assert result["messages"][0] == system(f"{MEM}\nS")
    assert result["messages"][1:] == request["messages"][1:]


def test_system_first_keeps_content_parts_and_adds_the_memory_as_the_first_part():
    parts = [{"type": "text", "text": "You are helpful", "cache_control": {"type": "ephemeral"}}]
    request = {"messages": [{"role": "system", "content": parts}, user("Hello")]}
    result = inject_memory(request, mems("User prefers dark mode"), "mimo")
    assert result["messages"][0] == {"role": "system", "content": [{"type": "text", "text": MEM}, *parts]}
    assert request["messages"][0]["content"] == parts


# --- cache-safe mode (#3890) ------------------------------------------------------------------------------


def cached_conversation(turn_two: str = "turn 2 question") -> dict:
    return {
        "model": "claude",
        "messages": [
            {
                "role": "system",
                "content": [
                    {"type": "text", "text": "SYSTEM PROMPT", "cache_control": {"type": "ephemeral"}}
                ],
            },
            user("turn 1 question"),
            {"role": "assistant", "content": "turn 1 answer"},
            user(turn_two),
        ],
    }


def test_cache_safe_mode_inserts_right_before_the_last_user_message():
    request = cached_conversation()
    result = inject_memory(request, mems("User prefers dark mode"), "anthropic", cache_safe=True)
    assert result["messages"] == [*request["messages"][:3], system(MEM), request["messages"][3]]


def test_cache_safe_mode_is_on_when_the_request_has_cache_control_markers():
    request = cached_conversation()
    assert inject_memory(request, mems("User prefers dark mode"), "anthropic")["messages"][3] == system(MEM)


def test_without_cache_safe_mode_the_memory_goes_after_the_system_prompt():
    # Reference: index 0, which changed the cached system prefix whenever the memories changed.
    request = cached_conversation()
    result = inject_memory(request, mems("User prefers dark mode"), "anthropic", cache_safe=False)
    assert result["messages"] == [request["messages"][0], system(MEM), *request["messages"][1:]]


def test_two_turns_with_different_memories_keep_the_cached_prefix_identical():
    first = inject_memory(cached_conversation("q2"), mems("fact A"), "anthropic", cache_safe=True)
    second = inject_memory(cached_conversation("q3"), mems("fact B"), "anthropic", cache_safe=True)
    assert first["messages"][:3] == second["messages"][:3]
    assert first["messages"][0]["content"][0]["cache_control"] == {"type": "ephemeral"}


def test_cache_safe_mode_without_a_user_message_falls_back_to_after_the_system_prompt():
    # Reference: back to the front, [system:mem, system:"SYS"].
    result = inject_memory(
        {"messages": [system("SYS")]}, mems("User prefers dark mode"), "openai", cache_safe=True
    )
    assert result["messages"] == [system("SYS"), system(MEM)]


def test_cache_safe_mode_uses_the_user_role_for_providers_without_a_system_role():
    request = {"messages": [user("t1"), {"role": "assistant", "content": "a1"}, user("t2")]}
    result = inject_memory(request, mems("User prefers dark mode"), "glm", cache_safe=True)
    assert result["messages"] == [user("t1"), {"role": "assistant", "content": "a1"}, user(MEM), user("t2")]


@pytest.mark.parametrize(
    ("request_body", "marked"),
    [
        (cached_conversation(), True),
        ({"system": [{"type": "text", "text": "S", "cache_control": {"type": "ephemeral"}}]}, True),
        ({"tools": [{"name": "t", "cache_control": {"type": "ephemeral"}}]}, True),
        ({"input": [{"role": "user", "content": [{"type": "input_text", "cache_control": {}}]}]}, True),
        ({"request": {"contents": [{"parts": [{"cache_control": {}}]}]}}, True),
        ({"messages": [user("Hello")], "metadata": {"cache_control": True}}, False),
        ({"messages": [user("Hello")]}, False),
        ("not a request", False),
    ],
)
def test_it_detects_cache_control_markers(request_body, marked):
    assert has_cache_control(request_body) is marked


# --- purity ------------------------------------------------------------------------------------------------


def test_it_never_mutates_the_request_and_keeps_other_fields():
    request = {
        "model": "gpt-4o",
        "temperature": 0.2,
        "max_tokens": 100,
        "stream": True,
        "messages": [system("You are helpful"), user("Hello")],
    }
    before = copy.deepcopy(request)
    result = inject_memory(request, mems("User prefers dark mode"), "openai")
    assert request == before
    assert result is not request
    assert result["messages"] is not request["messages"]
    assert {k: v for k, v in result.items() if k != "messages"} == {
        k: v for k, v in before.items() if k != "messages"
    }


@pytest.mark.parametrize("memories", [None, [], mems("   ", "")])
def test_without_memory_text_it_returns_an_unchanged_new_dict(memories):
    request = {"model": "m", "messages": [user("Hello")]}
    result = inject_memory(request, memories, "openai")
    assert result == request
    assert result is not request


def test_it_accepts_memory_objects():
    result = inject_memory({"messages": [user("Hello")]}, [Row("User prefers dark mode")], "openai")
    assert result["messages"][0] == system(MEM)


# --- Responses API input (L9) ----------------------------------------------------------------------------


def test_it_injects_into_a_string_input():
    request = {"model": "gpt-4o", "input": "Hello"}
    result = inject_memory(request, mems("User prefers dark mode"), "openai")
    assert result["input"] == [system(MEM), user("Hello")]
    assert "messages" not in result
    assert request["input"] == "Hello"


def test_it_injects_into_an_input_list_after_its_leading_system_items():
    items = [
        {"role": "developer", "content": "Be terse"},
        {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "Hi"}]},
    ]
    result = inject_memory({"input": items, "messages": []}, mems("User prefers dark mode"), "openai")
    assert result["input"] == [items[0], system(MEM), items[1]]
    assert result["messages"] == []


def test_it_prefers_messages_over_input():
    request = {"messages": [user("Hello")], "input": "ignored"}
    result = inject_memory(request, mems("User prefers dark mode"), "openai")
    assert result["messages"] == [system(MEM), user("Hello")]
    assert result["input"] == "ignored"


# --- §4.3 should_inject_memory -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("request_body", "enabled", "expected"),
    [
        ({"messages": [user("Hello")]}, True, True),
        ({"messages": [user("Hello")]}, False, False),
        ({"messages": []}, True, False),
        ({}, True, False),
        ({"messages": "Hello"}, True, False),
        ({"input": "Hello"}, True, True),  # L9: the reference said False
        ({"input": [user("Hello")]}, True, True),
        ({"input": "   "}, True, False),
        ({"input": []}, True, False),
        (None, True, False),
    ],
)
def test_it_decides_whether_to_inject(request_body, enabled, expected):
    assert should_inject_memory(request_body, enabled=enabled) is expected
