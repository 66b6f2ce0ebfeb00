"""Recall@1/5/10 per query kind for each strategy on a dataset (shared/eval format)."""

from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from memory.conf import get_memory_settings
from memory.evaluation import STRATEGIES, evaluate, format_table
from memory.services.indexing import vector_context


class Command(BaseCommand):
    help = "Load a labelled dataset under temporary owners, run every strategy, print recall tables."

    def add_arguments(self, parser):
        parser.add_argument("dataset", type=Path)
        parser.add_argument(
            "--strategies",
            default="fts,vector,hybrid",
            help=f"comma-separated, among {', '.join(STRATEGIES)}",
        )
        parser.add_argument("--json", action="store_true", help="print the reports as JSON")
        parser.add_argument("--keep", action="store_true", help="keep the loaded owners and memories")

    def handle(self, *args, dataset, strategies, json: bool, keep, **options):
        import json as jsonlib

        try:
            data = jsonlib.loads(Path(dataset).read_text())
        except (OSError, ValueError) as exc:
            raise CommandError(f"cannot read dataset {dataset}: {exc}") from exc
        for field in ("owners", "memories", "queries"):
            if not isinstance(data.get(field), list):
                raise CommandError(f"dataset has no '{field}' list")
        names = [s.strip() for s in strategies.split(",") if s.strip()]
        unknown = [s for s in names if s not in STRATEGIES]
        if unknown:
            raise CommandError(f"unknown strategies {unknown}; choose among {list(STRATEGIES)}")
        ctx = vector_context(get_memory_settings())
        self.stderr.write(
            f"embedding: {ctx.resolution.source}:{ctx.resolution.model} ({ctx.resolution.reason}); "
            f"vector store: {ctx.store_name}"
        )
        reports = evaluate(data, strategies=names, keep=keep)
        if json:
            self.stdout.write(jsonlib.dumps(reports, indent=2))
        else:
            for report in reports:
                self.stdout.write(format_table(report) + "\n")
