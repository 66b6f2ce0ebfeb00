"""WSGI entry point (HTTP only; websockets need the ASGI app)."""

import os

from django.core.wsgi import get_wsgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "omniroute.settings")

application = get_wsgi_application()
