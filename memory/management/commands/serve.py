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
        parser.add_argument("--host", default="127.0.0.1")
        parser.add_argument("--port", type=int_option(1, 65535), default=8000)
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
        self.stdout.write(
            f"Serving on http://{host}:{port}/  (Studio: /dashboard/memory, API docs: /api/docs/)"
        )
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
