"""Provider API keys and the secret runtime settings encrypted at rest (memory.crypto).

The column becomes an ``EncryptedTextField``; the keys already stored in clear, and the two secret
settings rows (the remote embedding endpoint's ``memory.customApiKey``, Qdrant's ``qdrant.apiKey``),
are encrypted in place, each bound to its row. The settings rows belong to the ``memory`` app; they
are encrypted here, with the provider keys, because both use the same master key and the same
decision (memory/conf.py reads them through ``StoredSettings(secret_fields=…)``). Reversible: the
reverse writes the clear values back.
"""

import django.core.validators
from django.db import migrations
from django.db.backends.base.schema import BaseDatabaseSchemaEditor
from django.db.migrations.state import StateApps

import memory.crypto

# The secret settings rows as they are named when this migration runs (frozen here on purpose).
SECRET_SETTING_KEYS = ("memory.customApiKey", "qdrant.apiKey")


def scrub_freed_pages(apps: StateApps, schema_editor: BaseDatabaseSchemaEditor) -> None:
    # The column's rebuild and the updates below free the pages and cells that held the clear keys;
    # SQLite keeps such bytes in the file unless secure_delete zeroes them.
    if schema_editor.connection.vendor == "sqlite":
        with schema_editor.connection.cursor() as cursor:
            cursor.execute("PRAGMA secure_delete = ON")


def encrypt_stored_secrets(apps: StateApps, schema_editor: BaseDatabaseSchemaEditor) -> None:
    Provider = apps.get_model("gateway", "UpstreamProvider")
    for provider in Provider.objects.exclude(api_key=""):
        # Reading opens a value already encrypted; saving encrypts it, bound to the row's id.
        provider.save(update_fields=["api_key"])
    Setting = apps.get_model("memory", "Setting")
    for row in Setting.objects.filter(key__in=SECRET_SETTING_KEYS):
        if isinstance(row.value, str) and row.value and not memory.crypto.is_encrypted(row.value):
            row.value = memory.crypto.encrypt_field(
                row.value, table=Setting._meta.db_table, row_id=row.key, field="value"
            )
            row.save(update_fields=["value"])


def decrypt_stored_secrets(apps: StateApps, schema_editor: BaseDatabaseSchemaEditor) -> None:
    Provider = apps.get_model("gateway", "UpstreamProvider")
    table = Provider._meta.db_table
    with schema_editor.connection.cursor() as cursor:
        for provider in Provider.objects.exclude(api_key=""):
            # The field refuses clear writes; the reverse writes them past it, on purpose.
            cursor.execute(f"UPDATE {table} SET api_key = %s WHERE id = %s", [provider.api_key, provider.pk])
    Setting = apps.get_model("memory", "Setting")
    for row in Setting.objects.filter(key__in=SECRET_SETTING_KEYS):
        if memory.crypto.is_encrypted(row.value):
            row.value = memory.crypto.decrypt_field(
                row.value, table=Setting._meta.db_table, row_id=row.key, field="value"
            )
            row.save(update_fields=["value"])


class Migration(migrations.Migration):
    dependencies = [
        ("gateway", "0001_initial"),
        ("memory", "0005_turn_context"),
    ]

    operations = [
        migrations.RunPython(scrub_freed_pages, migrations.RunPython.noop),
        migrations.AlterField(
            model_name="upstreamprovider",
            name="api_key",
            field=memory.crypto.EncryptedTextField(
                blank=True,
                help_text="Sent upstream as a Bearer token; stored encrypted.",
                validators=[django.core.validators.MaxLengthValidator(500)],
            ),
        ),
        migrations.RunPython(encrypt_stored_secrets, decrypt_stored_secrets),
    ]
