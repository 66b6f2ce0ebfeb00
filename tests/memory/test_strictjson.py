"""Request bodies are read as strict JSON: nothing that could not be written back as JSON gets in."""

import json

import pytest

from memory import strictjson


def test_ordinary_json_reads_as_json_does():
    text = '{"a": [1, 2.5, -3e10, "x", null, true], "b": {"c": 1e308}}'
    assert strictjson.loads(text) == json.loads(text)


@pytest.mark.parametrize("text", ['{"a": NaN}', '{"a": Infinity}', "[-Infinity]"])
def test_the_constants_json_lets_through_are_refused(text):
    with pytest.raises(ValueError, match="is not valid JSON"):
        strictjson.loads(text)


def test_a_number_beyond_a_double_names_its_key():
    with pytest.raises(strictjson.NumberOutOfRange) as caught:
        strictjson.loads('{"outer": {"maxTokens": 1e309}}')
    assert caught.value.field == "maxTokens" and "1e309 is out of range" in str(caught.value)


@pytest.mark.parametrize("text", ["[1e309]", "-1e999"])
def test_a_number_beyond_a_double_outside_an_object_is_refused_too(text):
    with pytest.raises(strictjson.NumberOutOfRange) as caught:
        strictjson.loads(text)
    assert caught.value.field is None
