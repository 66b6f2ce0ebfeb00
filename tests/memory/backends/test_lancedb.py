"""The LanceDB adapter on real Lance directories (under pytest's tmp_path): what the conformance suite
does not show — persistence across connections, one table per owner, the owner check on every row the
store returns, SQL literals built from user text, a directory that cannot be used, the fixed schema and
the periodic ``optimize()``."""

from __future__ import annotations

import threading
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path

import lancedb
import numpy as np
import pyarrow as pa
import pytest
from django.test import override_settings

from memory.backends import lancedb as lance_backend
from memory.backends.base import BackendConfigError, BackendUnavailable, Filters, MemoryDraft
from memory.backends.lancedb import LanceDBBackend, LanceDBConfig, schema
from memory.backends.registry import build_backend, parse_config

ALICE = uuid.uuid4()
BOB = uuid.uuid4()
DIMENSION = 8


def _backend(path: Path, dimension: int = DIMENSION) -> LanceDBBackend:
    backend = build_backend("lancedb", {"path": str(path), "dimension": dimension})
    assert isinstance(backend, LanceDBBackend)
    return backend


def _vector(seed: int) -> np.ndarray:
    vector = np.random.default_rng(seed).standard_normal(DIMENSION).astype(np.float32)
    return vector / np.linalg.norm(vector)


def test_records_and_vectors_survive_a_new_connection(tmp_path: Path) -> None:
    first = _backend(tmp_path)
    record, _ = first.store_with_embedding(
        MemoryDraft(owner=ALICE, content="Lives in Lisbon", key="home", metadata={"a": [1, 2]}), _vector(1)
    )
    again = _backend(tmp_path)  # another connection to the same directory, as a second process has
    assert again.get(ALICE, record.id) == record
    (hit,) = again.search_similar(ALICE, _vector(1), limit=1)
    assert hit.record.id == record.id
    assert hit.score == pytest.approx(1.0, abs=1e-5)
    assert [h.record.id for h in again.search(ALICE, "lisbon")] == [record.id]


def test_a_write_through_one_connection_is_read_at_once_through_another(tmp_path: Path) -> None:
    reader, writer = _backend(tmp_path), _backend(tmp_path)
    assert reader.count(ALICE) == 0
    writer.store(MemoryDraft(owner=ALICE, content="first"))
    reader_table = reader.count(ALICE)
    writer.store(MemoryDraft(owner=ALICE, content="second"))
    assert (reader_table, reader.count(ALICE)) == (1, 2)


def test_each_owner_has_a_table_of_its_own(tmp_path: Path) -> None:
    backend = _backend(tmp_path)
    backend.store(MemoryDraft(owner=ALICE, content="alice's"))
    backend.store(MemoryDraft(owner=BOB, content="bob's"))
    db = lancedb.connect(str(tmp_path))
    assert sorted(db.list_tables().tables) == sorted(f"memories_{o.hex}" for o in (ALICE, BOB))
    rows = db.open_table(f"memories_{ALICE.hex}").to_arrow().to_pylist()
    assert [(r["owner"], r["content"]) for r in rows] == [(ALICE.hex, "alice's")]
    assert db.open_table(f"memories_{ALICE.hex}").schema == schema(DIMENSION)


def test_a_row_of_another_owner_returned_by_the_store_is_refused_not_shown(tmp_path: Path) -> None:
    backend = _backend(tmp_path)
    backend.store(MemoryDraft(owner=ALICE, content="python notes"))
    # A row of bob's written into alice's table behind the adapter's back (a damaged or shared store).
    intruder = dict(
        owner=BOB.hex,
        id=str(uuid.uuid4()),
        content="bob python secret",
        text="bob python secret",
        type="factual",
        key=None,
        session_id="",
        metadata_json="{}",
        created_at=datetime.now(UTC),
        updated_at=datetime.now(UTC),
        expires_at=None,
        importance=0.5,
        vector=None,
    )
    table = lancedb.connect(str(tmp_path)).open_table(f"memories_{ALICE.hex}")
    table.add(pa.Table.from_pylist([intruder], schema=schema(DIMENSION)), on_bad_vectors="null")
    # Every predicate names the owner, so the intruder is filtered by the store ...
    assert [r.content for r in backend.list(ALICE).records] == ["python notes"]
    assert [h.record.content for h in backend.search(ALICE, "python")] == ["python notes"]
    assert backend.get(ALICE, uuid.UUID(intruder["id"])) is None
    assert backend.count(ALICE) == 1


def test_the_owner_of_every_returned_row_is_checked(tmp_path: Path) -> None:
    backend = _backend(tmp_path)
    record, _ = backend.store(MemoryDraft(owner=ALICE, content="mine"))
    row = {"owner": BOB.hex, "id": str(record.id)}
    with pytest.raises(BackendUnavailable, match="another owner"):
        backend._mine(ALICE, [row])
    assert backend._mine(ALICE, [{"owner": ALICE.hex}]) == [{"owner": ALICE.hex}]


@pytest.mark.parametrize("text", ["it's", "x' OR owner != '", "back\\slash", "100% _match_", '"; DROP'])
def test_user_text_in_predicates_is_a_literal(tmp_path: Path, text: str) -> None:
    backend = _backend(tmp_path)
    record, _ = backend.store(MemoryDraft(owner=ALICE, content="quoted", key=text, session_id=text))
    backend.store(MemoryDraft(owner=ALICE, content="plain", key="plain", session_id="plain"))
    again, created = backend.store(
        MemoryDraft(owner=ALICE, content="quoted again", key=text, session_id=text)
    )
    assert (again.id, created) == (record.id, False)
    assert [r.id for r in backend.list(ALICE, filters=Filters(session_id=text)).records] == [record.id]
    assert backend.count(ALICE, filters=Filters(session_id="' OR '1'='1")) == 0
    assert backend.count(ALICE) == 2


def test_a_directory_that_cannot_be_used_is_unavailable(tmp_path: Path) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("not a directory")
    backend = _backend(blocker / "lancedb")
    health = backend.health()
    assert health.ok is False
    assert "lancedb" in (health.error or "")
    with pytest.raises(BackendUnavailable) as caught:
        backend.store(MemoryDraft(owner=ALICE, content="kept nowhere"))
    assert caught.value.status == 503
    with pytest.raises(BackendUnavailable):
        backend.count(ALICE)


def test_a_table_whose_files_are_gone_is_unavailable_not_empty(tmp_path: Path) -> None:
    backend = _backend(tmp_path)
    backend.store(MemoryDraft(owner=ALICE, content="soon unreadable"))
    for data in (tmp_path / f"memories_{ALICE.hex}.lance" / "data").iterdir():
        data.unlink()
    with pytest.raises(BackendUnavailable):
        backend.list(ALICE)


def test_a_directory_made_for_another_dimension_is_a_configuration_error(tmp_path: Path) -> None:
    _backend(tmp_path, dimension=16).store_with_embedding(
        MemoryDraft(owner=ALICE, content="sixteen"), np.ones(16)
    )
    with pytest.raises(BackendConfigError) as caught:
        _backend(tmp_path, dimension=DIMENSION).count(ALICE)
    assert caught.value.details[0]["field"] == "config.dimension"


def test_concurrent_stores_of_one_key_keep_one_record(tmp_path: Path) -> None:
    backend = _backend(tmp_path)
    results: list[uuid.UUID] = []

    def write(i: int) -> None:
        results.append(backend.store(MemoryDraft(owner=ALICE, content=f"value {i}", key="same"))[0].id)

    threads = [threading.Thread(target=write, args=(i,)) for i in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(set(results)) == 1
    assert backend.count(ALICE) == 1


def test_writes_are_folded_into_the_text_index_every_optimize_every(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(lance_backend, "OPTIMIZE_EVERY", 5)
    backend = _backend(tmp_path)
    for i in range(4):
        backend.store(MemoryDraft(owner=ALICE, content=f"python note {i}"))
    table = lancedb.connect(str(tmp_path), read_consistency_interval=timedelta(0)).open_table(
        f"memories_{ALICE.hex}"
    )
    (index,) = table.list_indices()
    assert table.index_stats(index.name).num_unindexed_rows == 4
    backend.store(MemoryDraft(owner=ALICE, content="python note 4"))
    assert table.index_stats(index.name).num_unindexed_rows == 0
    assert len(backend.search(ALICE, "python", limit=10)) == 5


def test_health_describes_the_directory(tmp_path: Path) -> None:
    backend = _backend(tmp_path)
    backend.store(MemoryDraft(owner=ALICE, content="one"))
    health = backend.health()
    assert health.ok is True
    assert health.detail["directory"] == str(tmp_path.resolve())
    assert (health.detail["dimension"], health.detail["owners"]) == (DIMENSION, 1)
    assert health.detail["version"] == lancedb.__version__


def test_a_relative_or_empty_path_lives_in_the_data_directory(tmp_path: Path) -> None:
    with override_settings(DATA_DIR=tmp_path):
        assert LanceDBConfig(dimension=4).directory == tmp_path / "lancedb"
        assert LanceDBConfig(dimension=4, path="stores/m").directory == tmp_path / "stores" / "m"


@pytest.mark.parametrize(
    ("config", "field"),
    [
        ({}, "config.dimension"),
        ({"dimension": 0}, "config.dimension"),
        ({"dimension": "8"}, "config.dimension"),
        ({"dimension": 8, "path": "db://remote"}, "config.path"),
        ({"dimension": 8, "table_prefix": "no spaces"}, "config.table_prefix"),
        ({"dimension": 8, "table_prefix": ""}, "config.table_prefix"),
        ({"dimension": 8, "endpoint": "https://x"}, "config.endpoint"),
    ],
)
def test_a_bad_configuration_names_the_field(config: dict[str, object], field: str) -> None:
    with pytest.raises(BackendConfigError) as caught:
        parse_config("lancedb", config)
    assert caught.value.details[0]["field"] == field
