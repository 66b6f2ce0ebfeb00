"""/dashboard/settings: the form that writes what PUT /api/settings/memory writes."""

from __future__ import annotations

from memory.conf import get_memory_settings

URL = "/dashboard/settings"
VALID = {
    "enabled": "on",
    "maxTokens": "3500",
    "retentionDays": "90",
    "strategy": "semantic",
}


def test_the_form_shows_the_current_settings(studio):
    html = studio.get(URL).content.decode()
    assert 'name="maxTokens"' in html and 'value="2000"' in html
    assert '<input type="radio" name="strategy" value="hybrid" checked>' in html
    assert "billed by the upstream provider" in html


def test_saving_writes_the_database_settings(studio):
    response = studio.post(URL, VALID)
    assert response.status_code == 200 and "Settings saved." in response.content.decode()
    current = get_memory_settings()
    assert (current.enabled, current.maxTokens, current.retentionDays, current.strategy) == (
        True,
        3500,
        90,
        "semantic",
    )
    assert current.autoSummarize is False


def test_the_page_offers_no_switch_that_nothing_reads(studio):
    html = studio.get(URL).content.decode()
    assert 'name="autoSummarize"' in html and "skillsEnabled" not in html and "Skills" not in html


def test_a_post_from_an_older_page_still_saves(studio):
    response = studio.post(URL, {**VALID, "skillsEnabled": "on"})
    assert response.status_code == 200 and get_memory_settings().maxTokens == 3500


def test_the_api_sees_what_the_studio_saved(studio, admin_api):
    studio.post(URL, VALID)
    assert admin_api.get("/api/settings/memory").json()["maxTokens"] == 3500


def test_out_of_range_values_are_errors_next_to_the_field(studio):
    response = studio.post(URL, {**VALID, "maxTokens": "20000", "retentionDays": "0"})
    html = response.content.decode()
    assert response.status_code == 400
    assert "Ensure this value is less than or equal to 16000." in html
    assert "Ensure this value is greater than or equal to 1." in html
    assert get_memory_settings().maxTokens == 2000


def test_htmx_gets_the_form_region_only(studio):
    html = studio.hx_post(URL, VALID).content.decode()
    assert html.strip().startswith('<form id="settings-form"') and "Settings saved." in html


def test_operators_can_read_but_not_save(operator):
    html = operator.get(URL).content.decode()
    assert "Only administrators can change these settings." in html and "<fieldset disabled>" in html
    assert operator.post(URL, VALID).status_code == 403
    assert get_memory_settings().maxTokens == 2000


def test_the_composite_weights_and_half_life_are_shown_and_saved(studio):
    html = studio.get(URL).content.decode()
    assert 'name="strategy" value="composite"' in html
    assert 'name="compositeSemantic"' in html and 'value="0.5"' in html and 'value="730.0"' in html
    fields = {"compositeSemantic": "0.6", "compositeRecency": "0.2", "compositeImportance": "0.2"}
    response = studio.post(URL, {**VALID, "strategy": "composite", **fields, "recencyHalfLifeDays": "14"})
    assert response.status_code == 200 and "Settings saved." in response.content.decode()
    current = get_memory_settings()
    assert current.strategy == "composite" and current.recencyHalfLifeDays == 14.0
    assert current.compositeWeights == {"semantic": 0.6, "recency": 0.2, "importance": 0.2}


def test_bad_composite_weights_are_errors_next_to_the_field(studio):
    fields = {"compositeSemantic": "0", "compositeRecency": "0", "compositeImportance": "0"}
    response = studio.post(URL, {**VALID, **fields, "recencyHalfLifeDays": "0"})
    html = response.content.decode()
    assert response.status_code == 400
    assert "At least one weight must be above 0." in html
    assert "Ensure this value is greater than or equal to" in html
    assert get_memory_settings().compositeWeights == {"semantic": 0.5, "recency": 0.3, "importance": 0.2}
