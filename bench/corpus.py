"""Deterministic synthetic memories and queries for benchmarks."""

from __future__ import annotations

import random

SUBJECTS = "I we my team the user our client my manager".split()
VERBS = [
    "prefer",
    "use",
    "like",
    "avoid",
    "deploy",
    "maintain",
    "migrated to",
    "chose",
    "love",
    "hate",
    "review",
    "test",
    "document",
    "monitor",
    "benchmark",
    "configure",
    "learn",
    "teach",
]
TOPICS = """postgresql sqlite redis kafka docker kubernetes terraform ansible python rust golang typescript
javascript react vue svelte django flask fastapi celery huey nginx caddy grafana prometheus vim emacs vscode
tea coffee running cycling hiking chess piano guitar jazz techno sushi pasta ramen tacos curry paris berlin
tokyo lisbon toronto leeds austin spring autumn winter summer mornings evenings weekends dark-mode tabs spaces
unit-tests type-hints code-review pair-programming standups retrospectives kanban scrum linux macos windows
zsh fish bash git mercurial github gitlab jira notion obsidian markdown latex pandas numpy pytorch onnx""".split()
QUALIFIERS = [
    "in production",
    "for side projects",
    "every day",
    "at work",
    "on weekends",
    "since 2021",
    "for the new service",
    "when debugging",
    "for data pipelines",
    "in the mornings",
    "with the team",
]


def sentence(rng: random.Random) -> str:
    topic_a, topic_b = rng.sample(TOPICS, 2)
    return (
        f"{rng.choice(SUBJECTS).capitalize()} {rng.choice(VERBS)} {topic_a} and {topic_b} "
        f"{rng.choice(QUALIFIERS)} (note {rng.randrange(10**6)})."
    )


def memories(n: int, seed: int = 7) -> list[str]:
    rng = random.Random(seed)
    return [sentence(rng) for _ in range(n)]


def queries(n: int, seed: int = 11) -> list[str]:
    rng = random.Random(seed)
    return [f"What do I think about {rng.choice(TOPICS)} {rng.choice(QUALIFIERS)}?" for _ in range(n)]
