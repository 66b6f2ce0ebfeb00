from django.urls import path

from memory.api import views_keys, views_providers

urlpatterns = [
    path("memory/providers", views_providers.ProviderCollectionView.as_view(), name="memory-providers"),
    path(
        "memory/providers/<str:name>/test",
        views_providers.ProviderTestView.as_view(),
        name="memory-provider-test",
    ),
    path("memory/providers/<str:name>", views_providers.ProviderDetailView.as_view(), name="memory-provider"),
    path("keys", views_keys.KeyCollectionView.as_view(), name="keys"),
    path("keys/<str:key_id>", views_keys.KeyDetailView.as_view(), name="key-detail"),
    path("keys/<str:key_id>/rotate", views_keys.KeyRotateView.as_view(), name="key-rotate"),
]
