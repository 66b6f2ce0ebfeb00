# Encryption at rest: the owners' data keys (filled by the encryption work).

from django.db import migrations


class Migration(migrations.Migration):
    dependencies = [
        ("memory", "0007_memory_providers"),
    ]

    operations = []
