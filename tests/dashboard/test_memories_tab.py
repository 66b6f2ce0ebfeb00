"""The Memories tab: stats, list, search, type filter, pagination, and its htmx regions."""

from __future__ import annotations

import pytest

from tests.factories import make_memory

URL = "/dashboard/memory"


@pytest.fixture
def alice_memories(alice):
    return [make_memory(alice, f"alice likes topic {i}", key=f"topic:{i:02d}") for i in range(25)]


def test_the_list_shows_this_owners_memories_newest_first_with_stats(studio, alice, bob, alice_memories):
    make_memory(bob, "bob secret", key="bob:secret")
    html = studio.get(URL, {"owner": str(alice.pk)}).content.decode()
    assert "topic:24" in html and "topic:05" in html and "topic:04" not in html  # 20 per page
    assert html.index("topic:24") < html.index("topic:23")
    assert "bob:secret" not in html
    assert "Page 1 of 2 (25 total)" in html
    assert 'data-stat="total">25<' in html


def test_the_list_region_is_rendered_alone_for_htmx_with_counters_out_of_band(studio, alice, alice_memories):
    response = studio.hx_get(URL, {"owner": str(alice.pk), "page": 2}, target="memory-list")
    html = response.content.decode()
    assert "<html" not in html and "Conversational Memory" not in html
    assert "Page 2 of 2 (25 total)" in html
    assert "topic:04" in html and "topic:05" not in html
    assert 'id="memory-stats" class="stats-contents" hx-swap-oob="true"' in html
    assert 'id="export-link"' in html and 'hx-swap-oob="true"' in html


def test_search_matches_key_and_content_and_resets_the_pagination(studio, alice, alice_memories):
    make_memory(alice, "prefers vim over emacs", key="preference:editor")
    html = studio.hx_get(URL, {"owner": str(alice.pk), "q": "vim"}, target="memory-list").content.decode()
    assert "preference:editor" in html and "topic:01" not in html
    assert "Page 1 of 1 (1 total)" in html
    html = studio.hx_get(
        URL, {"owner": str(alice.pk), "q": "topic:07"}, target="memory-list"
    ).content.decode()
    assert "topic:07" in html and "(1 total)" in html


def test_the_type_filter(studio, alice):
    make_memory(alice, "ran the migration yesterday", key="event:migration", type="episodic")
    make_memory(alice, "likes tea", key="preference:tea")
    html = studio.hx_get(
        URL, {"owner": str(alice.pk), "type": "episodic"}, target="memory-list"
    ).content.decode()
    assert "event:migration" in html and "preference:tea" not in html


def test_a_page_past_the_end_shows_the_last_page(studio, alice, alice_memories):
    html = studio.hx_get(URL, {"owner": str(alice.pk), "page": 99}, target="memory-list").content.decode()
    assert "Page 2 of 2 (25 total)" in html


def test_previous_and_next_are_real_links_that_keep_the_filters(studio, alice, alice_memories):
    html = studio.get(URL, {"owner": str(alice.pk), "q": "topic"}).content.decode()
    assert f'href="/dashboard/memory?tab=memories&amp;owner={alice.pk}&amp;page=2&amp;q=topic"' in html
    assert 'aria-disabled="true">← Previous' in html


def test_no_filter_and_nothing_stored_shows_the_empty_state(studio, alice):
    html = studio.get(URL).content.decode()
    assert "No memories yet" in html and "Page 1 of 1 (0 total)" in html


def test_all_owners_lists_every_owner_with_the_owner_column(studio, alice, bob):
    make_memory(alice, "alice fact", key="a:1")
    make_memory(bob, "bob fact", key="b:1")
    html = studio.get(URL, {"owner": "all"}).content.decode()
    assert "a:1" in html and "b:1" in html and ">Owner</th>" in html


def test_the_search_input_is_debounced_by_htmx(studio, alice):
    html = studio.get(URL).content.decode()
    assert 'hx-trigger="keyup changed delay:300ms, search"' in html


def test_the_list_refreshes_on_the_live_event_not_by_polling(studio, alice):
    html = studio.get(URL).content.decode()
    assert 'hx-trigger="refresh-list from:body"' in html
    assert "every" not in html.split('id="memory-list"')[1].split(">")[0]


def _count(django_assert_max_num_queries, fn, limit):
    with django_assert_max_num_queries(limit) as captured:
        fn()
    return len(captured.captured_queries)


def test_the_list_region_runs_a_constant_number_of_queries(studio, alice, django_assert_max_num_queries):
    make_memory(alice, "one", key="k:one")

    def fetch():
        return studio.hx_get(URL, {"owner": str(alice.pk)}, target="memory-list")

    fetch()  # the first request also stores the chosen owner in the session
    few = _count(django_assert_max_num_queries, fetch, 10)
    for i in range(40):
        make_memory(alice, f"more {i}", key=f"k:{i}")
    many = _count(django_assert_max_num_queries, fetch, 10)
    assert many == few


def test_the_all_owners_list_does_not_query_per_row(studio, alice, bob, django_assert_max_num_queries):
    for i in range(15):
        make_memory(alice if i % 2 else bob, f"fact {i}", key=f"k:{i}")
    with django_assert_max_num_queries(10):
        response = studio.hx_get(URL, {"owner": "all"}, target="memory-list")
    assert response.content.decode().count("<tr id=") == 15


def test_the_full_memories_page_stays_within_a_query_budget(studio, alice, django_assert_max_num_queries):
    for i in range(30):
        make_memory(alice, f"fact {i}", key=f"k:{i}")
    with django_assert_max_num_queries(14):
        assert studio.get(URL).status_code == 200
