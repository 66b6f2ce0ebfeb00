"""Check that the FTS index, the vectors and the mirrors agree with the memories; repair with --fix."""

import json
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from memory.services.integrity import repair, verify


class Command(BaseCommand):
    help = (
        "Compare memories with their FTS documents, vectors (and pgvector's copy of them) and mirror (Qdrant) "
        "points, and run PRAGMA integrity_check and FTS5's integrity-check. Exits 1 when something disagrees (after --fix: "
        "when something is still wrong)."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--fix",
            action="store_true",
            help="index missing FTS rows (or rebuild the FTS index), delete vectors and points of gone "
            "memories, requeue memories without a vector, re-copy pgvector's missing rows and delete its orphans",
        )
        parser.add_argument("--json", action="store_true", dest="as_json", help="print the report as JSON")

    def handle(self, *args: Any, fix: bool, as_json: bool, **options: Any) -> None:
        report = verify()
        result: dict[str, Any] = {"before": report.as_dict()}
        if fix and not report.ok:
            done = repair(report)
            result["repairs"] = done.__dict__
            report = verify()
            result["after"] = report.as_dict()
        if as_json:
            self.stdout.write(json.dumps(result, indent=2, default=str))
        else:
            self._print(result["before"], "before" if "after" in result else None)
            if "repairs" in result:
                self.stdout.write("repairs: " + ", ".join(f"{k}={v}" for k, v in result["repairs"].items()))
                self._print(result["after"], "after")
        if not report.ok:
            raise CommandError(f"indexes disagree: {'; '.join(report.problems)}")

    def _print(self, report: dict[str, Any], label: str | None) -> None:
        head = f"[{label}] " if label else ""
        vectors = "no vector table" if report["vectors"] is None else f"{report['vectors']} vectors"
        self.stdout.write(
            f"{head}{report['memories']} memories ({report['pending']} waiting for a vector), "
            f"{report['fts_documents']} FTS documents, {vectors}"
        )
        self.stdout.write(
            f"{head}integrity_check: {report['database_integrity']}; FTS5 integrity-check: {report['fts_integrity']}"
        )
        for mirror in report["mirrors"]:
            state = mirror["error"] or f"{mirror['points']} points for {mirror['expected']} vectors"
            self.stdout.write(f"{head}{mirror['name']}: {state}")
        copy = report.get("pgvector")
        if copy is not None:
            rows = "no table" if copy["rows"] is None else f"{copy['rows']} rows, dimension {copy['dim']}"
            self.stdout.write(
                f"{head}memory_pgvec: {rows} ({copy['missing']} missing, {copy['orphans']} orphans, "
                f"{copy['owners']} owners differ)"
            )
        for problem in report["problems"]:
            self.stdout.write(f"{head}problem: {problem}")
        if report["ok"]:
            self.stdout.write(f"{head}ok: every index agrees with the memories")
