"""OpenAI-compatible routes, included at ``/v1/``."""

from django.urls import path

from gateway import views

app_name = "gateway"

urlpatterns = [
    path("chat/completions", views.chat_completions, name="chat-completions"),
    path("models", views.models, name="models"),
]
