# Encryption at rest: the owners' data keys are deliberately NOT in the database. They live in the
# keyring file (memory.services.encryption.FileKeyring, MEMORY_KEYRING_PATH), so that a copy of the
# database holds no key, and deleting a key shreds its memories in every backup. This migration stays,
# empty, because 0009 depends on it.

from django.db import migrations


class Migration(migrations.Migration):
    dependencies = [
        ("memory", "0007_memory_providers"),
    ]

    operations = []
