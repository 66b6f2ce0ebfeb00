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
"""

from __future__ import annotations

from asgiref.sync import iscoroutinefunction
from django.conf import settings
from django.core.exceptions import ImproperlyConfigured
from django.core.handlers.asgi import ASGIHandler
from django.core.handlers.exception import convert_exception_to_response
from django.middleware.clickjacking import XFrameOptionsMiddleware
from django.middleware.common import CommonMiddleware
from django.middleware.security import SecurityMiddleware
from django.utils.module_loading import import_string

HOOKS = ("process_view", "process_template_response", "process_exception")


class ApiASGIHandler(ASGIHandler):
    """Django's ASGI handler with ``settings.API_MIDDLEWARE`` (or the list that ``middleware_setting``
    names) instead of ``settings.MIDDLEWARE``."""

    def __init__(self, middleware_setting: str = "API_MIDDLEWARE") -> None:
        self.middleware_setting = middleware_setting
        super().__init__()

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
