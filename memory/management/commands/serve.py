"""Serve the ASGI app (HTTP + websockets) with one supervised Huey consumer, on one port.

``--workers N`` web processes answer on the port (uvicorn's multi-process mode: N children share
the socket, each imports ``omniroute.asgi:application``; the parent only supervises). The Huey
consumer runs as ``--task-threads`` threads in this command's own process, once, whatever N: its
scheduler enqueues the periodic tasks once, and the SQLite queue gets a single consumer.

With one web process this command is the server itself, so the default in-memory channel layer
carries the events that tasks raise (facts learned, reindex progress) to the Studio's websockets.
With N > 1 the consumer and the web processes are different processes: the events must cross
processes, so N > 1 needs a channel layer that does (Redis, ``REDIS_URL``) and is refused otherwise.
``--no-worker`` leaves the queue to separate ``run_huey`` consumers (docs/deployment.md).

Shutdown (SIGTERM or SIGINT): the consumer stops taking tasks at once; the web processes stop
accepting connections and finish their in-flight requests within ``OMNIROUTE_SHUTDOWN_TIMEOUT_SECONDS``;
then the consumer's running tasks get what is left of that time. Queued tasks that have not started
stay in the queue (the SQLite file or Redis) for the next consumer; a task still running past the
deadline is put back on the queue (``memory.tasks.drain``). The command then exits 0.
"""

from __future__ import annotations

import logging
import os
import signal
import socket
import sys
import threading
import time
from collections.abc import Callable
from types import FrameType
from typing import Any

import uvicorn
from django.conf import settings
from django.core.management.base import BaseCommand, CommandError, CommandParser
from huey.consumer import Consumer
from huey.contrib.djhuey import HUEY
from uvicorn.config import STARTUP_FAILURE
from uvicorn.supervisors import Multiprocess

from memory.bounds import MAX_THREADS, int_option
from memory.tasks.drain import DRAIN
from omniroute.datadir import tighten_install

logger = logging.getLogger("memory.serve")

# Where ``serve`` listens unless told otherwise; ``bootstrap`` takes the same options, so the address it
# prints is the one the server is started on (``make run`` passes its HOST and PORT to both).
DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8000
APP = "omniroute.asgi:application"
# Web processes one command may start: past the cores of any one machine, scale out with machines.
MAX_WEB_WORKERS = 64

# Addresses that mean "every interface": nothing can be opened at them, so the loopback is printed.
_WILDCARDS = {"0.0.0.0": "127.0.0.1", "::": "::1", "": "127.0.0.1"}
_IN_MEMORY_LAYER = "channels.layers.InMemoryChannelLayer"


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


def layout_problem(web_workers: int) -> str | None:
    """Why this many web processes cannot work with the configured channel layer (None when they can)."""
    backend = settings.CHANNEL_LAYERS.get("default", {}).get("BACKEND", "")
    if web_workers > 1 and backend == _IN_MEMORY_LAYER:
        return (
            f"--workers {web_workers} needs a channel layer shared by processes: with the in-memory layer "
            "the Studio's live events, raised by the task consumer in this process, would never reach "
            "the web processes' websockets. Set REDIS_URL (the queue, the channel layer and the cache "
            "then use Redis), or serve with --workers 1."
        )
    return None


def lower_task_priority() -> None:
    """In each task thread of ``serve`` (a Huey startup hook): raise the thread's niceness to
    ``OMNIROUTE_TASK_NICE``, so that the requests this process serves get the CPU first while indexing
    and extraction run beside them. Linux only, where a thread has a priority of its own."""
    nice = settings.OMNIROUTE_TASK_NICE
    if nice <= 0 or not sys.platform.startswith("linux"):
        return
    thread = threading.get_native_id()
    try:
        # Never lower a niceness the process was started with (that would need privileges).
        os.setpriority(os.PRIO_PROCESS, thread, max(nice, os.getpriority(os.PRIO_PROCESS, thread)))
    except OSError as exc:
        logger.warning("task thread priority left unchanged: %s", exc)


class _InProcessConsumer:
    """Huey's consumer without its signal handlers (this command owns the signals)."""

    def __init__(self, threads: int) -> None:
        class Quiet(Consumer):
            def _set_signal_handlers(self) -> None:
                pass

        options = {**settings.HUEY_CONSUMER, "workers": threads, "worker_type": "thread"}
        self.consumer = Quiet(HUEY, periodic=True, **options)
        HUEY.on_startup("lower_task_priority")(lower_task_priority)

    def start(self) -> None:
        self.consumer.start()

    def stop_taking(self) -> None:
        """Stop dequeuing (workers finish the task they hold; the scheduler stops enqueuing)."""
        self.consumer.stop_flag.set()

    def drain(self, timeout: float) -> tuple[int, bool]:
        """Wait up to ``timeout`` seconds for the running tasks; put back on the queue those still
        running then. Returns how many were put back and whether every worker stopped."""
        self.consumer.shutdown_timeout = max(timeout, 0.0)
        self.consumer.stop(graceful=True)
        before = DRAIN.requeued
        HUEY.notify_interrupted_tasks()
        stopped = not any(thread.is_alive() for _, thread in self.consumer.worker_threads)
        return DRAIN.requeued - before, stopped


class _Server(uvicorn.Server):
    """uvicorn's server, telling ``on_exit`` when a stop signal arrives (before it drains)."""

    def __init__(self, config: uvicorn.Config, on_exit: Callable[[], None]) -> None:
        super().__init__(config)
        self.on_exit = on_exit

    def handle_exit(self, sig: int, frame: FrameType | None) -> None:
        self.on_exit()
        super().handle_exit(sig, frame)


class _Supervisor(Multiprocess):
    """uvicorn's multi-process supervisor, telling ``on_exit`` when a stop signal arrives."""

    def __init__(
        self, config: uvicorn.Config, sockets: list[socket.socket], on_exit: Callable[[], None]
    ) -> None:
        super().__init__(config, sockets)
        self.on_exit = on_exit

    def handle_int(self) -> None:
        self.on_exit()
        super().handle_int()

    def handle_term(self) -> None:
        self.on_exit()
        super().handle_term()


class _Shutdown:
    """The stop signal, seen once: it stops the consumer taking tasks and starts the deadline."""

    def __init__(self, consumer: _InProcessConsumer | None) -> None:
        self.consumer = consumer
        self.began: float | None = None
        self._lock = threading.Lock()

    def begin(self) -> None:
        with self._lock:
            if self.began is not None:
                return
            self.began = time.monotonic()
        if self.consumer is not None:
            self.consumer.stop_taking()

    def on_signal(self, signum: int, frame: FrameType | None) -> None:
        # Installed before uvicorn's own handlers, which re-raise the signal once the server has
        # stopped: it lands here, and the command drains and exits 0 instead of dying by the signal.
        self.begin()

    def remaining(self) -> float:
        began = self.began if self.began is not None else time.monotonic()
        return began + settings.OMNIROUTE_SHUTDOWN_TIMEOUT_SECONDS - time.monotonic()


class Command(BaseCommand):
    help = "Serve HTTP + websockets (uvicorn, --workers processes) with one background-task consumer."

    def add_arguments(self, parser: CommandParser) -> None:
        add_address_arguments(parser)
        parser.add_argument(
            "--workers",
            type=int_option(1, MAX_WEB_WORKERS),
            default=1,
            help=f"web processes answering on the port (1..{MAX_WEB_WORKERS}, default 1; above 1 needs REDIS_URL)",
        )
        parser.add_argument(
            "--task-threads",
            type=int_option(1, MAX_THREADS),
            default=2,
            help=f"background-task worker threads of this process's consumer (1..{MAX_THREADS}, default 2)",
        )
        parser.add_argument("--no-worker", action="store_true", help="leave the task queue to run_huey")

    def handle(
        self,
        *args: Any,
        host: str,
        port: int,
        workers: int,
        task_threads: int,
        no_worker: bool,
        **options: Any,
    ) -> None:
        problem = layout_problem(workers)
        if problem is not None:
            raise CommandError(problem)
        tightened = tighten_install()
        if tightened:
            logger.warning(tightened)
        shutdown = _Shutdown(None)
        for signum in (signal.SIGTERM, signal.SIGINT):
            signal.signal(signum, shutdown.on_signal)
        shutdown.consumer = consumer = self._consumer(task_threads, no_worker)
        url = base_url(host, port)
        self.stdout.write(f"Serving on {url}/  (Studio: {url}/dashboard/memory, API docs: {url}/api/docs/)")
        self.stdout.write(
            f"Web processes: {workers}" + (" (uvicorn's supervisor is this process)" if workers > 1 else "")
        )
        self.stdout.flush()
        started = True
        try:
            if shutdown.began is None:  # a signal during the start: nothing to serve
                started = self._serve(host, port, workers, shutdown.begin)
        finally:
            shutdown.begin()
            if consumer is not None:
                self._drain(consumer, shutdown.remaining())
        if not started:
            sys.exit(STARTUP_FAILURE)

    def _consumer(self, threads: int, no_worker: bool) -> _InProcessConsumer | None:
        if no_worker:
            return None
        if settings.HUEY.get("immediate"):
            self.stdout.write("HUEY_IMMEDIATE is on: tasks run inline, no worker threads started.")
            return None
        consumer = _InProcessConsumer(threads)
        consumer.start()
        self.stdout.write(
            f"Background tasks: {threads} worker thread(s) in this process (pid {os.getpid()})."
        )
        return consumer

    def _serve(self, host: str, port: int, workers: int, on_exit: Callable[[], None]) -> bool:
        """Run uvicorn until it stops; returns whether it had started."""
        config = uvicorn.Config(
            APP,
            host=host,
            port=port,
            workers=workers,
            lifespan="on",
            log_level="info",
            ws="websockets-sansio",
            timeout_graceful_shutdown=settings.OMNIROUTE_SHUTDOWN_TIMEOUT_SECONDS,
        )
        if workers == 1:
            server = _Server(config, on_exit)
            server.run()
            return server.started
        sock = config.bind_socket()
        try:
            _Supervisor(config, [sock], on_exit).run()
        finally:
            sock.close()
        return True

    def _drain(self, consumer: _InProcessConsumer, timeout: float) -> None:
        requeued, stopped = consumer.drain(timeout)
        try:
            pending: int | str = HUEY.pending_count()
        except Exception as exc:  # the queue gone (Redis down): the count is only reported
            pending = f"unknown ({type(exc).__name__})"
        if requeued:
            self.stdout.write(
                f"Background tasks: {requeued} still running at the deadline put back on the queue; "
                f"{pending} queued for the next consumer."
            )
        else:
            self.stdout.write(f"Background tasks: drained; {pending} queued for the next consumer.")
        if not stopped:
            logger.warning("background tasks still running at exit: they end with the process")
        self.stdout.flush()
