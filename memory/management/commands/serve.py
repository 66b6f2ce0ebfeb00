"""Serve the ASGI app (HTTP + websockets) with the Huey consumer in the same process.

With the default in-memory channel layer, events raised by background tasks
(facts learned by extraction, reindex progress) reach the Studio's websockets
only if the tasks run in the web process: this command runs the consumer's
workers as threads beside the server. With Redis (``REDIS_URL``) the channel
layer crosses processes, and separate ``run_huey`` consumers work as well
(``--no-worker`` then leaves the queue to them).
"""

import logging
from typing import Any

import uvicorn
from django.conf import settings
from django.core.management.base import BaseCommand, CommandParser
from huey.consumer import Consumer
from huey.contrib.djhuey import HUEY

from memory.bounds import MAX_THREADS, int_option
from omniroute.datadir import tighten_install

logger = logging.getLogger("memory.serve")

# Where ``serve`` listens unless told otherwise; ``bootstrap`` takes the same options, so the address it
# prints is the one the server is started on (``make run`` passes its HOST and PORT to both).
DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8000

# Addresses that mean "every interface": nothing can be opened at them, so the loopback is printed.
_WILDCARDS = {"0.0.0.0": "127.0.0.1", "::": "::1", "": "127.0.0.1"}


def add_address_arguments(parser: CommandParser) -> None:
    """The ``--host`` and ``--port`` options of ``serve`` and ``bootstrap``, one definition for both."""
    parser.add_argument("--host", default=DEFAULT_HOST, help=f"address to listen on (default {DEFAULT_HOST})")
    parser.add_argument(
        "--port",
        type=int_option(1, 65535),
        default=DEFAULT_PORT,
        help=f"port to listen on (1..65535, default {DEFAULT_PORT})",
    )


def base_url(host: str, port: int) -> str:
    """The address a browser on this machine opens for a server bound to ``host:port``.

    A wildcard bind (``0.0.0.0``, ``::``) is printed as the loopback, and an IPv6 literal gets the
    brackets a URL needs; a host name or a plain address is printed as given.
    """
    host = _WILDCARDS.get(host, host)
    if ":" in host and not host.startswith("["):
        host = f"[{host}]"
    return f"http://{host}:{port}"


class _InProcessConsumer:
    """Huey's consumer without its signal handlers (the server owns the signals)."""

    def __init__(self, workers: int) -> None:
        class Quiet(Consumer):
            def _set_signal_handlers(self) -> None:
                pass

        options = {**settings.HUEY_CONSUMER, "workers": workers, "worker_type": "thread"}
        self.consumer = Quiet(HUEY, periodic=True, **options)

    def start(self) -> None:
        self.consumer.start()

    def stop(self) -> None:
        self.consumer.stop(graceful=True)


class Command(BaseCommand):
    help = "Serve HTTP + websockets (uvicorn) with the background-task workers in the same process."

    def add_arguments(self, parser: CommandParser) -> None:
        add_address_arguments(parser)
        parser.add_argument(
            "--workers",
            type=int_option(1, MAX_THREADS),
            default=2,
            help=f"background-task worker threads (1..{MAX_THREADS}, default 2)",
        )
        parser.add_argument("--no-worker", action="store_true", help="leave the task queue to run_huey")

    def handle(self, *args: Any, host: str, port: int, workers: int, no_worker: bool, **options: Any) -> None:
        tightened = tighten_install()
        if tightened:
            logger.warning(tightened)
        consumer = None
        if not no_worker:
            if settings.HUEY.get("immediate"):
                self.stdout.write("HUEY_IMMEDIATE is on: tasks run inline, no worker threads started.")
            else:
                consumer = _InProcessConsumer(workers)
                consumer.start()
                self.stdout.write(f"Background tasks: {workers} worker thread(s) in this process.")
        url = base_url(host, port)
        self.stdout.write(f"Serving on {url}/  (Studio: {url}/dashboard/memory, API docs: {url}/api/docs/)")
        try:
            uvicorn.run(
                "omniroute.asgi:application",
                host=host,
                port=port,
                lifespan="on",
                log_level="info",
                ws="websockets-sansio",
            )
        finally:
            if consumer is not None:
                consumer.stop()
