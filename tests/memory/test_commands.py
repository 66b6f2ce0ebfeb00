"""create_api_key / create_management_token print id=… then the secret alone on the last line."""

import io

import pytest
from django.core.management import CommandError, call_command

from memory.models import ApiKey, ManagementToken, hash_secret

pytestmark = pytest.mark.django_db


def run(*args) -> list[str]:
    out = io.StringIO()
    call_command(*args, stdout=out, stderr=io.StringIO())
    return out.getvalue().strip().splitlines()


def test_create_api_key_prints_the_id_and_the_secret_once():
    lines = run("create_api_key", "--name", "laptop")
    assert lines[0].startswith("id=") and len(lines) == 2
    key = ApiKey.objects.get(pk=lines[0].removeprefix("id="))
    assert key.key_hash == hash_secret(lines[-1]) and lines[-1].startswith("sk-omr-")
    assert lines[-1] not in (key.key_hash, key.prefix)


def test_create_management_token_binds_owners_and_scope():
    key_id = run("create_api_key", "--name", "a")[0].removeprefix("id=")
    lines = run("create_management_token", "--name", "ci", "--scope", "write", "--owner", key_id)
    token = ManagementToken.objects.get(pk=lines[0].removeprefix("id="))
    assert token.scope == "write"
    assert [str(pk) for pk in token.owners.values_list("pk", flat=True)] == [key_id]
    assert token.token_hash == hash_secret(lines[-1])


def test_an_unknown_owner_is_a_clear_error():
    with pytest.raises(CommandError, match="not an existing API key"):
        run("create_management_token", "--name", "x", "--owner", "nope")


@pytest.mark.parametrize("scope", [None, "read", "write"])
def test_create_management_token_refuses_a_read_or_write_token_without_an_owner(scope):
    args = ("--scope", scope) if scope else ()
    with pytest.raises(CommandError, match=r"bound to at least one API key: only admin .* Pass --owner"):
        run("create_management_token", "--name", "ci", *args)
    assert not ManagementToken.objects.exists()
    lines = run("create_management_token", "--name", "root", "--scope", "admin")
    assert not ManagementToken.objects.get(pk=lines[0].removeprefix("id=")).owners.exists()


def test_integer_options_are_bounded_with_the_option_named(alice):
    problems = []
    cases = (("reindex_memories", "--batch", ()), ("summarize_memories", "--budget-tokens", ("--dry-run",)))
    for command, option, extra in cases:
        for value in (str(2**63), str(10**30), "-1", "abc", "1e309"):
            try:
                run(command, option, value, *extra)
            except CommandError as exc:
                if f"argument {option}: must be between" not in str(exc):
                    problems.append(f"{command} {option} {value}: {exc}")
            except Exception as exc:
                problems.append(f"{command} {option} {value}: crashed with {type(exc).__name__}: {exc}")
            else:
                problems.append(f"{command} {option} {value}: accepted")
    assert problems == []


def test_bootstrap_creates_an_admin_once(settings, tmp_path):
    settings.DATA_DIR = tmp_path
    first = run("bootstrap")
    assert any("password=" in line for line in first)
    assert (tmp_path / "first-run-credentials.txt").exists()
    assert run("bootstrap") == ["Admin user exists; nothing to bootstrap."]


def test_reindex_memories_embeds_pending_memories_with_progress(alice):
    from memory.embeddings import runtime
    from tests.factories import make_memory

    if not runtime.static_built():
        pytest.skip("run `manage.py build_embedding_models` (make test does)")
    from memory.conf import update_memory_settings

    update_memory_settings({"embeddingSource": "static"})
    make_memory(alice, content="one")
    make_memory(alice, content="two")
    lines = run("reindex_memories", "--batch", "1")
    assert lines[0].startswith("[") and lines[-1].startswith("2 indexed, 0 errors, 0 still pending")


def test_reindex_memories_refuses_without_a_vector_tier(db, settings):
    settings.VECTOR_STORE_DISABLE_VEC = True
    from memory.conf import update_memory_settings

    update_memory_settings({"embeddingSource": "remote"})
    with pytest.raises(CommandError, match="no vector tier"):
        run("reindex_memories")
