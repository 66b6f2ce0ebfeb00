# The durable replay queue of writes kept by a fallback provider (memory.backends.durable).

import django.utils.timezone
from django.db import migrations, models

import memory.crypto


class Migration(migrations.Migration):
    dependencies = [
        ("memory", "0008_encryption_keys"),
    ]

    operations = [
        migrations.CreateModel(
            name="PendingProviderWrite",
            fields=[
                ("id", models.BigAutoField(primary_key=True, serialize=False)),
                ("owner", models.UUIDField()),
                ("primary", models.CharField(max_length=64)),
                ("fallback", models.CharField(max_length=64)),
                (
                    "operation",
                    models.CharField(
                        choices=[("store", "Store"), ("update", "Update"), ("delete", "Delete")],
                        max_length=8,
                    ),
                ),
                ("memory_id", models.UUIDField()),
                ("payload", memory.crypto.EncryptedTextField(default="")),
                ("created_at", models.DateTimeField(default=django.utils.timezone.now)),
                ("attempts", models.PositiveIntegerField(default=0)),
                ("last_error", models.TextField(blank=True, default="")),
                ("claimed_by", models.CharField(blank=True, default="", max_length=32)),
                ("claimed_until", models.DateTimeField(blank=True, null=True)),
            ],
            options={
                "db_table": "memory_pending_provider_writes",
                "ordering": ["id"],
                "indexes": [models.Index(fields=["owner", "id"], name="pending_write_owner")],
            },
        ),
    ]
