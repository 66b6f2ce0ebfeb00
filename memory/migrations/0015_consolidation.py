"""Consolidation (memory.services.consolidation): its undo records (ConsolidationRun, ConsolidationMerge),
the audit actions and the contradiction resolution it adds; and a key's own composite weights and
half-life (ApiKey.composite_weights, recency_half_life_days: nullable columns, added in place)."""

import uuid

import django.db.models.deletion
import django.utils.timezone
from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("memory", "0014_injection_query"),
    ]

    operations = [
        migrations.AddField(
            model_name="apikey",
            name="composite_weights",
            field=models.JSONField(blank=True, null=True),
        ),
        migrations.AddField(
            model_name="apikey",
            name="recency_half_life_days",
            field=models.FloatField(blank=True, null=True),
        ),
        migrations.AlterField(
            model_name="auditevent",
            name="action",
            field=models.CharField(
                choices=[
                    ("memory.delete", "Memory Delete"),
                    ("memory.clear", "Memory Clear"),
                    ("memory.bulk_delete", "Memory Bulk Delete"),
                    ("memory.summarize", "Memory Summarize"),
                    ("memory.compact", "Memory Compact"),
                    ("credential.revoke", "Credential Revoke"),
                    ("credential.delete", "Credential Delete"),
                    ("credential.create", "Credential Create"),
                    ("credential.update", "Credential Update"),
                    ("provider.save", "Provider Save"),
                    ("provider.delete", "Provider Delete"),
                    ("settings.change", "Settings Change"),
                    ("contradiction.resolve", "Contradiction Resolve"),
                    ("memory.consolidate", "Memory Consolidate"),
                    ("memory.consolidate_undo", "Memory Consolidate Undo"),
                ],
                max_length=32,
            ),
        ),
        migrations.AlterField(
            model_name="contradiction",
            name="resolution",
            field=models.CharField(
                blank=True,
                choices=[
                    ("keep_old", "Keep Old"),
                    ("keep_new", "Keep New"),
                    ("keep_both", "Keep Both"),
                    ("merge", "Merge"),
                    ("auto", "Auto"),
                    ("consolidated", "Consolidated"),
                ],
                default="",
                max_length=16,
            ),
        ),
        migrations.CreateModel(
            name="ConsolidationRun",
            fields=[
                (
                    "id",
                    models.UUIDField(default=uuid.uuid4, editable=False, primary_key=True, serialize=False),
                ),
                ("created_at", models.DateTimeField(default=django.utils.timezone.now)),
                ("actor", models.CharField(blank=True, default="", max_length=200)),
                (
                    "status",
                    models.CharField(
                        choices=[("applied", "Applied"), ("undone", "Undone")],
                        default="applied",
                        max_length=8,
                    ),
                ),
                ("undone_at", models.DateTimeField(blank=True, null=True)),
                ("groups", models.PositiveIntegerField(default=0)),
                ("merged", models.PositiveIntegerField(default=0)),
                ("resolved", models.PositiveIntegerField(default=0)),
                ("contradictions", models.JSONField(blank=True, default=list)),
                (
                    "owner",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="consolidation_runs",
                        to="memory.apikey",
                    ),
                ),
            ],
            options={
                "db_table": "memory_consolidation_runs",
                "ordering": ["-created_at", "-id"],
            },
        ),
        migrations.CreateModel(
            name="ConsolidationMerge",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                ("survivor", models.BigIntegerField()),
                ("survivor_uuid", models.UUIDField()),
                ("survivor_before", models.JSONField()),
                ("survivor_written_at", models.DateTimeField()),
                ("removed", models.JSONField(default=list)),
                ("reasons", models.JSONField(blank=True, default=list)),
                (
                    "run",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="merges",
                        to="memory.consolidationrun",
                    ),
                ),
            ],
            options={
                "db_table": "memory_consolidation_merges",
                "ordering": ["id"],
            },
        ),
        migrations.AddIndex(
            model_name="consolidationrun",
            index=models.Index(fields=["owner", "-created_at"], name="consolidation_owner_at"),
        ),
    ]
