"""The injection ledger (issue 17): one row per gateway answer that carried memory."""

import uuid

import django.db.models.deletion
import django.utils.timezone
from django.db import migrations, models

import memory.crypto


class Migration(migrations.Migration):
    dependencies = [
        ("memory", "0011_provider_audit"),
    ]

    operations = [
        migrations.CreateModel(
            name="InjectionEntry",
            fields=[
                (
                    "id",
                    models.UUIDField(default=uuid.uuid4, editable=False, primary_key=True, serialize=False),
                ),
                ("at", models.DateTimeField(db_index=True, default=django.utils.timezone.now)),
                ("session_id", models.CharField(blank=True, default="", max_length=200)),
                ("model", models.CharField(max_length=200)),
                ("strategy", models.CharField(max_length=16)),
                ("tiers", models.JSONField(default=list)),
                ("memories", models.JSONField(default=list)),
                ("total_tokens", models.PositiveIntegerField(default=0)),
                ("latency_ms", models.FloatField(default=0.0)),
                ("system_message", memory.crypto.EncryptedTextField(default="")),
                ("extraction", models.JSONField(blank=True, null=True)),
                ("request_id", models.CharField(blank=True, default="", max_length=64)),
                (
                    "api_key",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="injections",
                        to="memory.apikey",
                    ),
                ),
            ],
            options={
                "verbose_name": "injection ledger entry",
                "verbose_name_plural": "injection ledger entries",
                "db_table": "memory_injections",
                "ordering": ["-at", "-id"],
                "indexes": [models.Index(fields=["api_key", "at"], name="injection_key_at")],
            },
        ),
    ]
