# The durable replay queue of writes kept by a fallback provider (filled by the replay work).

from django.db import migrations


class Migration(migrations.Migration):
    dependencies = [
        ("memory", "0008_encryption_keys"),
    ]

    operations = []
