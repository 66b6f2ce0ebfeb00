"""The audit action ``credential.delete`` (an API key or token deleted). Choices are state only: no SQL
(``sqlmigrate memory 0010`` is a no-op)."""

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("memory", "0009_pending_provider_writes"),
    ]

    operations = [
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
                    ("settings.change", "Settings Change"),
                ],
                max_length=32,
            ),
        ),
    ]
