"""A second Django ASGI handler for machine clients: the OpenAI-compatible API (``/v1/``) and the REST
API (``/api/``) when called with a bearer token and no cookie.

The site's middleware (sessions, CSRF, authentication, messages, clickjacking,
HTMX) serves browsers. A client of ``/v1/`` authenticates with a bearer key and
reads JSON, so none of it applies; yet in an async stack every one of those
middleware classes runs its hooks through a thread hop (``sync_to_async``),
which was about half of the gateway's CPU per request. ``/v1/`` is therefore
served by this handler: the same project, URLconf, views and error handlers,
with the middleware listed in ``settings.API_MIDDLEWARE`` — which must all be
natively async and have no ``process_view`` / ``process_exception`` hooks.

A REST client with a bearer token and no cookie (``omniroute.asgi``) has no session, so no CSRF to check
and no staff user to find: it is served the same way, with ``settings.REST_API_MIDDLEWARE``, which keeps
the headers the site's stack gives every response (``Content-Length``, ``X-Frame-Options``). A request
with a cookie (the Studio's, or a browser's) always gets the whole stack.

Under ASGI, Django runs a request's synchronous code (signal receivers, a sync view, closing the
response) on a thread made for that request, and a second thread joins it at the end: two threads
started per request, about 0.8 ms of the gateway's and the REST API's time on the machines we measure.
This handler keeps those threads (:class:`RequestThreads`): each request still has a thread of its own
for its synchronous code, as Django's contract wants, taken from the idle ones when one is idle. A
thread is reused only once nothing of its request is left on it (a request whose client went away may
leave its view running; that thread finishes it and ends).
"""

from __future__ import annotations

import os
import threading
from concurrent.futures import Future, ThreadPoolExecutor

from asgiref.sync import ThreadSensitiveContext, iscoroutinefunction
from django.conf import settings
from django.core.exceptions import ImproperlyConfigured
from django.core.handlers.asgi import ASGIHandler
from django.core.handlers.exception import convert_exception_to_response
from django.middleware.clickjacking import XFrameOptionsMiddleware
from django.middleware.common import CommonMiddleware
from django.middleware.security import SecurityMiddleware
from django.utils.module_loading import import_string

HOOKS = ("process_view", "process_template_response", "process_exception")


class RequestThread(ThreadPoolExecutor):
    """One worker thread that counts the work still queued or running on it."""

    def __init__(self) -> None:
        super().__init__(max_workers=1, thread_name_prefix="omniroute-request")
        self.pending = 0
        self._count = threading.Lock()

    def submit(self, fn, /, *args, **kwargs) -> Future:
        with self._count:
            self.pending += 1
        try:
            future = super().submit(fn, *args, **kwargs)
        except BaseException:
            self._done(None)
            raise
        future.add_done_callback(self._done)  # before the caller's callbacks: counted when it resumes
        return future

    def _done(self, _future: Future | None) -> None:
        with self._count:
            self.pending -= 1


class RequestThreads:
    """Idle :class:`RequestThread` executors, at most ``keep`` of them, for this process's requests."""

    def __init__(self, keep: int = 32) -> None:
        self.keep = keep
        self._idle: list[RequestThread] = []
        self._lock = threading.Lock()
        self._pid = os.getpid()

    def take(self) -> RequestThread:
        with self._lock:
            if self._pid != os.getpid():  # a forked child: its parent's threads do not exist here
                self._idle, self._pid = [], os.getpid()
            if self._idle:
                return self._idle.pop()
        return RequestThread()

    def give(self, executor: RequestThread) -> None:
        """Keep ``executor`` for another request if nothing of its request is left on it and fewer than
        ``keep`` are idle; else let its thread finish what it has and end."""
        with self._lock:
            if executor.pending == 0 and len(self._idle) < self.keep and self._pid == os.getpid():
                self._idle.append(executor)
                return
        executor.shutdown(wait=False)

    def idle(self) -> int:
        with self._lock:
            return len(self._idle)


REQUEST_THREADS = RequestThreads()


class ApiASGIHandler(ASGIHandler):
    """Django's ASGI handler with ``settings.API_MIDDLEWARE`` (or the list that ``middleware_setting``
    names) instead of ``settings.MIDDLEWARE``, whose requests run their synchronous code on a thread kept
    from an earlier request (:data:`REQUEST_THREADS`) rather than on a new one."""

    def __init__(self, middleware_setting: str = "API_MIDDLEWARE") -> None:
        self.middleware_setting = middleware_setting
        super().__init__()

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            raise ValueError(f"Django can only handle ASGI/HTTP connections, not {scope['type']}.")
        executor = REQUEST_THREADS.take()
        try:
            # The context routes the request's thread-sensitive calls to ``executor``, and leaves it open.
            async with ThreadSensitiveContext(executor=executor):
                await self.handle(scope, receive, send)
        finally:
            REQUEST_THREADS.give(executor)

    def load_middleware(self, is_async=False):
        if not is_async:
            raise ImproperlyConfigured("ApiASGIHandler serves ASGI only")
        self._view_middleware = []
        self._template_response_middleware = []
        self._exception_middleware = []
        handler = convert_exception_to_response(self._get_response_async)
        for path in reversed(getattr(settings, self.middleware_setting)):
            factory = import_string(path)
            if not getattr(factory, "async_capable", False):
                raise ImproperlyConfigured(f"API middleware {path} must be async-capable")
            instance = factory(handler)
            if not iscoroutinefunction(instance):
                raise ImproperlyConfigured(f"API middleware {path} did not run in async mode")
            hooks = [hook for hook in HOOKS if hasattr(instance, hook)]
            if hooks:
                raise ImproperlyConfigured(
                    f"API middleware {path} has hooks this handler does not run: {hooks}"
                )
            handler = convert_exception_to_response(instance)
        self._middleware_chain = handler


class AsyncSecurityMiddleware(SecurityMiddleware):
    """Django's ``SecurityMiddleware`` (HTTPS redirect, HSTS, nosniff, referrer
    and opener policies) with its two hooks called inline in async mode: they
    only read settings and set headers, so they need no thread."""

    async def __acall__(self, request):
        response = self.process_request(request)
        if response is None:
            response = await self.get_response(request)
        return self.process_response(request, response)


class AsyncCommonMiddleware(CommonMiddleware):
    """Django's ``CommonMiddleware`` (refused user agents, slash redirects, ``Content-Length``) with its
    hooks called inline in async mode: they read settings, the URLconf and the response only."""

    async def __acall__(self, request):
        response = self.process_request(request)
        if response is None:
            response = await self.get_response(request)
        return self.process_response(request, response)


class AsyncXFrameOptionsMiddleware(XFrameOptionsMiddleware):
    """Django's ``XFrameOptionsMiddleware`` with its one hook (a header) called inline in async mode."""

    async def __acall__(self, request):
        response = await self.get_response(request)
        return self.process_response(request, response)
