"""memory.conf: one mechanism for every group of runtime settings (memory.*, qdrant.*)."""

from dataclasses import dataclass

import pytest

from memory import conf, qdrant_conf
from memory.conf import StoredSettings, boolean, clamped
from memory.models import Setting

pytestmark = pytest.mark.django_db


@dataclass(frozen=True)
class Knobs:
    on: bool = False
    size: int = 3


def knobs(**kwargs) -> StoredSettings[Knobs]:
    return StoredSettings(
        prefix="test.",
        model=Knobs,
        normalisers={"on": boolean, "size": clamped(1, 9)},
        defaults=Knobs,
        **kwargs,
    )


def test_both_groups_are_stored_settings_of_their_own_prefix():
    assert isinstance(conf.STORE, StoredSettings) and isinstance(qdrant_conf.STORE, StoredSettings)
    assert (conf.STORE.prefix, qdrant_conf.STORE.prefix) == ("memory.", "qdrant.")


def test_every_field_has_one_normaliser():
    with pytest.raises(TypeError, match="size"):
        StoredSettings(prefix="test.", model=Knobs, normalisers={"on": boolean}, defaults=Knobs)


def test_a_group_reads_its_rows_over_the_defaults_normalised_and_skips_other_keys():
    Setting.objects.create(key="test.size", value=42)
    Setting.objects.create(key="test.gone", value="old field")
    Setting.objects.create(key="memory.maxTokens", value=100)
    assert knobs().get() == Knobs(on=False, size=9)


def test_an_update_is_read_back_at_once_and_announced_after_commit(django_capture_on_commit_callbacks):
    seen = []
    group = knobs(on_commit=seen.append)
    assert group.get() == Knobs()
    with django_capture_on_commit_callbacks(execute=True):
        assert group.update({"on": True}) == Knobs(on=True)
        assert seen == []
    assert seen == [Knobs(on=True)] and group.get() == Knobs(on=True)


def test_unknown_fields_are_not_written():
    with pytest.raises(ValueError, match="surprise"):
        knobs().update({"surprise": 1})
    assert not Setting.objects.filter(key__startswith="test.").exists()
