"""``Contradiction.confidence``: the rules' confidence (0..1) that the two memories conflict.

A nullable column, so SQLite adds it with ``ALTER TABLE … ADD COLUMN`` (no table rebuild) and
PostgreSQL likewise; contradictions recorded before this migration keep ``NULL`` (not scored).
"""

from django.db import migrations, models


class Migration(migrations.Migration):
    # After 0017 (PostgreSQL's keyword postings, written at the same time): one leaf, not two.
    dependencies = [("memory", "0016_postgres"), ("memory", "0017_pg_keyword_index")]

    operations = [
        migrations.AddField(
            model_name="contradiction",
            name="confidence",
            field=models.FloatField(blank=True, null=True),
        ),
    ]
