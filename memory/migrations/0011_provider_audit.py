"""The audit actions of memory providers and API keys (``provider.save``, ``provider.delete``,
``credential.create``, ``credential.update``). Choices are state only: no SQL."""

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("memory", "0010_audit_key_delete"),
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
                    ("credential.create", "Credential Create"),
                    ("credential.update", "Credential Update"),
                    ("provider.save", "Provider Save"),
                    ("provider.delete", "Provider Delete"),
                    ("settings.change", "Settings Change"),
                ],
                max_length=32,
            ),
        ),
    ]
