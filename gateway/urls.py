"""OpenAI-compatible routes, included at ``/v1/``. The last one answers every other ``/v1/`` path with
an OpenAI-shaped 404."""

from django.urls import path, re_path

from gateway import views

app_name = "gateway"

urlpatterns = [
    path("chat/completions", views.chat_completions, name="chat-completions"),
    path("embeddings", views.embeddings, name="embeddings"),
    path("models", views.models, name="models"),
    path("models/<path:model_id>", views.model_detail, name="model-detail"),
    re_path(r"^(?P<path>.*)$", views.unknown_route, name="unknown"),
]
