"""Rule-based extraction: the reference's worked examples (§2.6) and tests (§14.1), with our fixes
(B9: more decision phrasings; L3: negative polarity kept) asserted where the reference marks a bug."""

from __future__ import annotations

import random
import re
import time
from datetime import UTC, datetime, timedelta, timezone

import pytest

from memory.extraction import (
    MAX_FACT_LENGTH,
    REGISTRY,
    Fact,
    extract_facts,
    fact_key,
    opposite_key,
    slugify,
)
from memory.extraction.rules import js_regex
from memory.extraction.scanner import scan_text


def triples(text: str | None) -> list[tuple[str, str, str]]:
    return [(fact.key, fact.content, fact.type) for fact in extract_facts(text)]


def keys(text: str | None) -> list[str]:
    return [fact.key for fact in extract_facts(text)]


# --- §2.6 worked examples that hold unchanged -----------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            "I prefer dark mode in my editor.",
            [("preference:dark_mode_in_my_editor", "Prefers dark mode in my editor", "factual")],
        ),
        (
            "I like TypeScript over JavaScript.",
            [("preference:typescript_over_javascript", "Likes TypeScript over JavaScript", "factual")],
        ),
        (
            "My favorite is VS Code for editing.",
            [("preference:vs_code_for_editing", "Favourite: VS Code for editing", "factual")],
        ),
        (
            "I'll use PostgreSQL for this project.",
            [("decision:postgresql_for_this_project", "Will use PostgreSQL for this project", "episodic")],
        ),
        (
            "I decided to migrate to Docker.",
            [("decision:migrate_to_docker", "Decided: migrate to Docker", "episodic")],
        ),
        ("I have decided to go with Rust", [("decision:go_with_rust", "Decided: go with Rust", "episodic")]),
        ("I'm going to use Vite, and Vitest.", [("decision:vite", "Will use Vite", "episodic")]),
        ("Im going with Bun", [("decision:bun", "Will use Bun", "episodic")]),
        (
            "I'm going to adopt Kubernetes next quarter.",
            [("decision:kubernetes_next_quarter", "Will use Kubernetes next quarter", "episodic")],
        ),
        (
            "I usually start with tests first.",
            [("pattern:start_with_tests_first", "Usually start with tests first", "factual")],
        ),
        (
            "I tend to use functional components.",
            [("pattern:use_functional_components", "Tends to use functional components", "factual")],
        ),
        (
            "I often work late! Then sleep",
            [("pattern:work_late_then_sleep", "Often work late! Then sleep", "factual")],
        ),
        ("I typically use pnpm, not npm.", [("pattern:use_pnpm", "Typically use pnpm", "factual")]),
        ("my favourite are dumplings", [("preference:dumplings", "Favourite: dumplings", "factual")]),
        (
            "i PREFER Lowercase Trigger",
            [("preference:lowercase_trigger", "Prefers Lowercase Trigger", "factual")],
        ),
        (
            "I really prefer   tabs\tover spaces",
            [("preference:tabs_over_spaces", "Prefers tabs over spaces", "factual")],
        ),
        ("Hi, I prefer tea\nand coffee", [("preference:tea", "Prefers tea", "factual")]),
        (
            "Yesterday I picked Svelte; it was fine.",
            [("decision:svelte_it_was_fine", "Picked Svelte; it was fine", "episodic")],
        ),
        ("The sky is blue. Water is wet. 2 + 2 = 4.", []),
    ],
)
def test_it_reproduces_the_reference_worked_examples(text, expected):
    assert triples(text) == expected


def test_it_extracts_one_fact_per_category_in_family_order():
    text = "I prefer TypeScript. I'll use Next.js for this project. I usually write tests first."
    assert triples(text) == [
        ("preference:typescript", "Prefers TypeScript", "factual"),
        ("decision:next", "Will use Next", "episodic"),
        ("pattern:write_tests_first", "Usually write tests first", "factual"),
    ]


def test_it_emits_all_preferences_then_decisions_then_patterns():
    # Reference #18, with L3 fixed: the dislike of Python gets its own negative key.
    text = (
        "I prefer TypeScript. I'll use Postgres for this project. I always commit before pushing. "
        "I don't like Python."
    )
    assert keys(text) == [
        "preference:typescript",
        "preference:not:python",
        "decision:postgres_for_this_project",
        "pattern:commit_before_pushing",
    ]


def test_it_deduplicates_within_a_batch():
    assert triples("I prefer vim. I prefer vim.") == [("preference:vim", "Prefers vim", "factual")]


def test_the_first_rule_producing_a_key_wins_the_dedup():
    assert triples("I enjoy hiking. I love hiking.") == [("preference:hiking", "Enjoys hiking", "factual")]


def test_it_keeps_matches_of_several_rules_in_one_text():
    assert keys("I enjoy hiking. I love my dog.") == ["preference:hiking", "preference:my_dog", "pet:dog"]


@pytest.mark.parametrize(
    "text", ["I prefer Go", "I prefer C#, Rust and Go.", "I decided Go", "I selected Go."]
)
def test_it_drops_phrases_shorter_than_three_characters(text):
    assert extract_facts(text) == []


@pytest.mark.parametrize("text", ["I'd like coffee.", "I dislike: colons"])
def test_it_ignores_phrasings_outside_the_patterns(text):
    assert extract_facts(text) == []


def test_it_learns_a_named_favourite_that_the_reference_missed():
    # The reference needed "my favorite is X": "my favorite color is blue" taught nothing.
    assert triples("My favorite color is blue.") == [
        ("preference:color_is_blue", "Favourite color is blue", "factual")
    ]


def test_it_cuts_the_slug_at_forty_characters():
    assert keys("I prefer the extremely long descriptive configuration name here") == [
        "preference:the_extremely_long_descriptive_configura"
    ]


def test_it_strips_a_trailing_underscore_after_cutting_the_slug():
    facts = extract_facts("I prefer a really-long   --- name with punctuation!!! and more words")
    assert [(f.key, f.content) for f in facts] == [
        (
            "preference:a_really_long_name_with_punctuation_and",
            "Prefers a really-long --- name with punctuation!!! and more words",
        )
    ]


def test_it_turns_non_ascii_letters_into_underscores_in_keys():
    assert keys("I prefer naïve café résumé style") == ["preference:na_ve_caf_r_sum_style"]


def test_it_keeps_a_leading_underscore_in_the_slug():
    assert triples("I love 🍕 pizza") == [("preference:_pizza", "Loves 🍕 pizza", "factual")]


def test_it_caps_content_at_500_characters():
    facts = extract_facts("I prefer " + "a" * 600 + ".")
    assert len(facts) == 1
    assert len(facts[0].content) == MAX_FACT_LENGTH
    assert facts[0].key == "preference:" + "a" * 40


def test_it_counts_the_500_cap_in_utf16_units_without_splitting_a_surrogate_pair():
    # "Prefers " and 491 ASCII units are 499, then an emoji (2 units) straddles the cut: JavaScript
    # would keep half of it.
    facts = extract_facts("I prefer " + "a" * 491 + "🍕🍕.")
    assert facts[0].content == "Prefers " + "a" * 491


def test_it_scans_only_the_last_64_kib():
    text = "I prefer prefix-only-editor. " + "x" * (70 * 1024) + " I prefer tail-only-editor."
    assert keys(text) == ["preference:tail_only_editor"]


def test_it_counts_the_64_kib_tail_in_utf16_units():
    # 33 000 emoji are 66 000 UTF-16 units: the head fact falls outside the JavaScript tail.
    text = "I prefer head-editor. " + "🍕" * 33_000 + " I prefer tail-editor."
    assert keys(text) == ["preference:tail_editor"]


# --- B9: decision phrasings the original missed ------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected_key"),
    [
        ("I will use PostgreSQL for this project.", "decision:postgresql_for_this_project"),
        ("I am going to use Vite.", "decision:vite"),
        ("I'm going with Bun today", "decision:bun_today"),
        ("I am going with Bun today", "decision:bun_today"),
        ("I've decided to use Go", "decision:use_go"),
    ],
)
def test_it_matches_the_decision_phrasings_of_b9(text, expected_key):
    assert keys(text) == [expected_key]


@pytest.mark.parametrize("text", ["Ill use Redis here", "I'll use Redis here", "Iwill use Redis here"])
def test_the_b9_fix_still_matches_the_original_contractions(text):
    assert keys(text) == ["decision:redis_here"]


# --- L3: polarity -----------------------------------------------------------------------------------


def test_it_keeps_negative_polarity():
    (fact,) = extract_facts("I don't like JavaScript callbacks.")
    assert fact == Fact(
        category="preference",
        type="factual",
        key="preference:not:javascript_callbacks",
        content="Dislikes: JavaScript callbacks",
        polarity="negative",
        source="user_message",
    )


@pytest.mark.parametrize(
    "text",
    [
        "I don't like PHP",
        "I dont like PHP",
        "I do not like PHP",
        "I hate PHP",
        "I dislike PHP",
        "I avoid PHP",
    ],
)
def test_every_negative_preference_gets_the_dislike_key_and_content(text):
    assert triples(text) == [("preference:not:php", "Dislikes: PHP", "factual")]


def test_a_dislike_does_not_overwrite_the_like_of_the_same_thing():
    # Reference #20 gave a single "preference:cats" (sentiment lost, L3).
    facts = extract_facts("I like cats. I hate cats.")
    assert [(f.key, f.content, f.polarity) for f in facts] == [
        ("preference:cats", "Likes cats", "positive"),
        ("preference:not:cats", "Dislikes: cats", "negative"),
    ]
    assert opposite_key(facts[0].key) == facts[1].key


def test_a_never_habit_does_not_share_a_key_with_an_always_habit():
    facts = extract_facts("I always commit directly to main. I never commit directly to main.")
    assert [(f.key, f.content, f.polarity) for f in facts] == [
        ("pattern:commit_directly_to_main", "Always commit directly to main", "positive"),
        ("pattern:not:commit_directly_to_main", "Never: commit directly to main", "negative"),
    ]


def test_decisions_have_no_polarity():
    (fact,) = extract_facts("I chose React for the frontend.")
    assert fact.polarity is None


def test_it_finds_the_dislike_but_not_the_ai_like():
    # Reference #35: no word boundary before the "I" of "AI".
    assert triples("AI like models. I avoid PHP") == [("preference:not:php", "Dislikes: PHP", "factual")]


def test_negative_content_stays_within_500_characters():
    (fact,) = extract_facts("I hate " + "b" * 600)
    assert len(fact.content) == MAX_FACT_LENGTH
    assert fact.content.startswith("Dislikes: bbb")


# --- §14.1 (tests/unit/memory-extraction.test.ts) ----------------------------------------------------


@pytest.mark.parametrize(
    ("text", "category", "memory_type", "phrase"),
    [
        ("I prefer dark mode in my editor.", "preference", "factual", "dark mode"),
        ("I like TypeScript over JavaScript.", "preference", "factual", "typescript"),
        ("My favorite is VS Code for editing.", "preference", "factual", "vs code"),
        ("I don't like JavaScript callbacks.", "preference", "factual", "javascript callbacks"),
        ("I'll use PostgreSQL for this project.", "decision", "episodic", "postgresql"),
        ("I chose React for the frontend.", "decision", "episodic", "react"),
        ("I decided to migrate to Docker.", "decision", "episodic", "migrate to docker"),
        ("I went with Tailwind for styling.", "decision", "episodic", "tailwind"),
        ("I usually start with tests first.", "pattern", "factual", "start with tests"),
        ("I always use ESLint before committing.", "pattern", "factual", "eslint"),
        ("I never commit directly to main.", "pattern", "factual", "commit directly to main"),
        ("I tend to use functional components.", "pattern", "factual", "functional components"),
    ],
)
def test_it_detects_each_single_pattern(text, category, memory_type, phrase):
    (fact,) = extract_facts(text)
    assert (fact.category, fact.type) == (category, memory_type)
    assert phrase in fact.content.lower()


def test_a_three_fact_sentence_covers_all_three_categories():
    facts = extract_facts("I prefer Python. I decided to use FastAPI. I always write docstrings.")
    assert len(facts) >= 3
    assert {f.category for f in facts} == {"preference", "decision", "pattern"}


@pytest.mark.parametrize("text", ["", None, "Hello, how are you today?", "   \n\t "])
def test_it_returns_nothing_for_empty_or_unrelated_text(text):
    assert extract_facts(text) == []


@pytest.mark.parametrize("value", [42, b"I prefer bytes", ["I prefer lists"], {"text": "I prefer x"}, 3.5])
def test_it_never_raises_on_non_string_input(value):
    assert extract_facts(value) == []


def test_preference_keys_start_with_the_category():
    assert all(key.startswith("preference:") for key in keys("I prefer tabs. I hate spaces. I love vim."))


# The cost of extraction is checked as ratios of CPU times measured in the same run (absolute speed is
# `make bench`'s business): CPU time of this process, the best of a few runs, so that a busy machine or
# parallel test workers shift both sides alike.


def _random_text(size: int, seed: int = 7) -> str:
    rng = random.Random(seed)
    vocabulary = (
        "I we you it is the a prefer like use always never decided going my favorite love hate code "
        "project test server and, to. with in on\n"
    ).split(" ")
    return " ".join(rng.choice(vocabulary) for _ in range(size // 3))[:size]


def _best_cpu(text: str, runs: int = 5) -> float:
    return min(_cpu_seconds(lambda: extract_facts(text)) for _ in range(runs))


def test_its_cost_grows_linearly_with_the_text():
    """No rule backtracks catastrophically: 8 times the text costs about 8 times as much (a quadratic
    pattern would cost 64 times)."""
    small, large = _best_cpu(_random_text(8 * 1024)), _best_cpu(_random_text(64 * 1024))
    assert large < 16 * small


def test_it_reads_only_the_tail_of_a_huge_text():
    """A 1 MiB message costs about what its 64 KiB tail does: what is read is bounded."""
    tail, huge = _best_cpu(_random_text(64 * 1024)), _best_cpu(_random_text(1024 * 1024), runs=3)
    assert huge < 3 * tail


def _cpu_seconds(work) -> float:
    start = time.process_time()
    work()
    return time.process_time() - start


# --- JavaScript regex semantics (§2.1 porting notes) -------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected_keys"),
    [
        # JS \b is ASCII: "é" is not a word character, so "I" after it starts a word.
        ("éI prefer xyz", ["preference:xyz"]),
        # JS \s is Unicode: no-break space, ideographic space and BOM separate words.
        ("I\u00a0prefer\u3000tea", ["preference:tea"]),
        ("I\ufeffprefer tea", ["preference:tea"]),
        # ...but not the information separators that Python's \s accepts.
        ("I\x1cprefer tea", []),
        # JS `i` without `u` folds ASCII only: dotless ı and the Kelvin sign do not match I / k.
        ("\u0131 prefer tea", []),
        ("I li\u212ae tea", []),
        ("\u0130 prefer tea", []),
        # \s+ between trigger words spans newlines.
        ("I avoid \n newlines", ["preference:not:newlines"]),
    ],
)
def test_it_follows_javascript_regex_semantics(text, expected_keys):
    assert keys(text) == expected_keys


def test_the_capture_keeps_punctuation_other_than_period_comma_and_newline():
    (fact,) = extract_facts("I prefer tabs! spaces? never; ok: sure\rdone")
    assert fact.content == "Prefers tabs! spaces? never; ok: sure done"


def test_the_content_keeps_the_original_case_and_characters():
    (fact,) = extract_facts("I PREFER NaÏve İstanbul Kelvin\u212a")
    assert fact.content == "Prefers NaÏve İstanbul Kelvin\u212a"


_FUZZ_WORDS = (
    "I i I' Im I'm I am my My favorite favourite is are prefer PREFER like Like really don't dont do not "
    "hate dislike avoid enjoy love 'll will use chose have 've decided to going with adopt selected "
    "picked went usually always never typically tend often frequently regularly tea Go naïve 🍕 é İ "
    "\u212a AI x name is called live in work at as use using have a two dog cat wife kids next friday on the "
    "15th married fan of je j'habite à préfère suis eu moro em sou tenho gosto de não uma"
).split(" ")
_FUZZ_TRIGGERS = (
    "I_prefer I_really_like I_like I_don't_like I_do_not_like I_hate my_favourite_are I'll_use "
    "I_will_use Iwill_use I_am_going_to_use I'm_going_with Im_going_adopt I've_decided_to I_have_decided "
    "I_chose I_picked I_went_with I_tend_to I_frequently I_never I_usually i_LOVE I_enjoy my_name_is "
    "I'm_called I_live_in I've_moved_to I_work_at I'm_a I_use we're_using my_wife I_have_two my_dog "
    "I_have_a I'm_married I'm_getting_married_on je_m'appelle j'habite_à je_travaille_chez j'ai_un "
    "eu_moro_em me_chamo não_gosto_de tenho_um"
).split(" ")
_FUZZ_SEPARATORS = [
    " ",
    " ",
    " ",
    "  ",
    "\n",
    "\u00a0",
    "\t",
    ".",
    ",",
    "!",
    "\u3000",
    "\x1c",
    "",
    "\ufeff",
    "_",
]
_FUZZ_SPACES = [" ", " ", " ", "  ", " \n ", "\u00a0", "\t", "\u3000", "\x1c", "\ufeff", "\r"]


def _fuzz_text(rng: random.Random) -> str:
    parts = []
    for _ in range(rng.randint(1, 12)):
        if rng.random() < 0.3:
            parts.append(
                "".join(rng.choice(_FUZZ_SPACES) if c == "_" else c for c in rng.choice(_FUZZ_TRIGGERS))
            )
        else:
            parts.append(rng.choice(_FUZZ_WORDS))
        parts.append(rng.choice(_FUZZ_SEPARATORS))
    return "".join(parts)


def test_the_fast_scanner_finds_exactly_what_the_faithful_regexes_find():
    # Rule by rule, the scanner on the scan text captures exactly the spans the faithful translation
    # captures on the original text (what is then made of a capture is tested above).
    rng = random.Random(1234)
    for _ in range(3000):
        text = _fuzz_text(rng)
        scanned = scan_text(text)
        words = set(re.findall(r"[^\W\d_]+", scanned)) | set(re.findall(r"[a-z]+", scanned))
        for family in REGISTRY:
            for rule in family.rules:
                fast = [m.span(1) for m in rule.pattern.finditer(scanned)]
                faithful = [m.span(1) for m in js_regex(rule.source).finditer(text)]
                assert fast == faithful, (rule.name, text)
                # A match always contains one of the rule's anchor words, so skipping is safe.
                assert not fast or not words.isdisjoint(rule.anchors), (rule.name, text)


def test_every_rule_anchor_appears_in_its_source():
    for family in REGISTRY:
        for rule in family.rules:
            assert rule.anchors
            assert all(anchor in rule.source.lower() for anchor in rule.anchors), rule.name


# --- metadata -----------------------------------------------------------------------------------------


def test_metadata_records_category_time_source_and_polarity():
    (fact,) = extract_facts("I hate yaml files", source="llm_response")
    assert fact.metadata(datetime(2024, 5, 6, 7, 8, 9, 123_456, tzinfo=UTC)) == {
        "category": "preference",
        "extractedAt": "2024-05-06T07:08:09.123Z",
        "source": "llm_response",
        "polarity": "negative",
    }


def test_metadata_omits_polarity_when_the_fact_has_none():
    (fact,) = extract_facts("I chose SQLite for storage")
    assert "polarity" not in fact.metadata(datetime(2024, 1, 1, tzinfo=UTC))
    assert fact.source == "user_message"


def test_metadata_time_is_converted_to_utc_and_naive_means_utc():
    (fact,) = extract_facts("I prefer vim keys")
    paris = timezone(timedelta(hours=2))
    assert (
        fact.metadata(datetime(2024, 5, 6, 9, 0, tzinfo=paris))["extractedAt"] == "2024-05-06T07:00:00.000Z"
    )
    assert fact.metadata(datetime(2024, 5, 6, 9, 0))["extractedAt"] == "2024-05-06T09:00:00.000Z"


def test_facts_are_immutable():
    (fact,) = extract_facts("I prefer vim keys")
    with pytest.raises(AttributeError):
        fact.content = "emacs"  # type: ignore[misc]


# --- keys -------------------------------------------------------------------------------------------


def test_fact_key_derives_category_and_slug():
    assert fact_key("preference", "TypeScript over JavaScript") == "preference:typescript_over_javascript"
    assert fact_key("preference", "TypeScript over JavaScript", negative=True) == (
        "preference:not:typescript_over_javascript"
    )
    assert slugify("Dark   Mode!!") == "dark_mode"


def test_opposite_key_maps_both_ways():
    assert opposite_key("preference:cats") == "preference:not:cats"
    assert opposite_key("preference:not:cats") == "preference:cats"
    assert opposite_key("no-category") == "no-category"


def test_a_phrase_without_ascii_letters_gets_a_stable_hashed_slug():
    # The original gave every such phrase the key "preference:", so they overwrote each other.
    tower, castle = fact_key("preference", "東京タワー"), fact_key("preference", "大阪城")
    assert tower != castle
    assert tower == fact_key("preference", "東京タワー")
    assert re.fullmatch(r"preference:[0-9a-f]{12}", tower)
    assert keys("I love 東京タワー. I love 大阪城.") == [tower, castle]
