"""Recall@1/5/10 and Hit@5 per query kind for each strategy, on the dev sets or the datasets named."""

import json as jsonlib
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError, CommandParser

from memory import conversations
from memory.conf import get_memory_settings
from memory.evaluation import STRATEGIES, evaluate, format_table
from memory.retrieval.rerank import LOCAL_RERANK, RERANK_DEPTH
from memory.services.indexing import vector_context


def default_datasets() -> list[Path]:
    """The two dev sets: our conversations (bench/data/conversations) and the short facts of
    ``../shared/eval/dev-recall.json`` (beside the checkout), those that exist."""
    root = Path(settings.BASE_DIR)
    candidates = [
        root / "bench" / "data" / "conversations",
        root.parent / "shared" / "eval" / "dev-recall.json",
    ]
    return [path for path in candidates if path.exists()]


def read_dataset(path: Path) -> dict[str, Any]:
    """A ``shared/eval`` JSON file, one conversation directory, or a directory of conversations."""
    if path.is_dir():
        found = (
            [conversations.load(path)]
            if (path / "conversation.json").exists()
            else conversations.load_all(path)
        )
        if not found:
            raise CommandError(f"{path} holds no conversation (no */conversation.json)")
        return conversations.to_dataset(found, name=path.name)
    data = jsonlib.loads(path.read_text())
    if not isinstance(data, dict):
        raise CommandError(f"dataset {path} is not a JSON object")
    for name in ("owners", "memories", "queries"):
        if not isinstance(data.get(name), list):
            raise CommandError(f"dataset {path} has no '{name}' list")
    owners = set(data["owners"])
    fields: dict[str, dict[str, type]] = {
        "memories": {"id": str, "owner": str, "content": str},
        "queries": {"owner": str, "query": str, "kind": str, "relevant": list},
    }
    for name, wanted in fields.items():
        for number, row in enumerate(data[name], 1):
            bad = [
                f
                for f, kind in wanted.items()
                if not isinstance(row, dict) or not isinstance(row.get(f), kind)
            ]
            if bad:
                raise CommandError(f"dataset {path}: {name} #{number} needs {', '.join(bad)}")
            if row["owner"] not in owners:
                raise CommandError(
                    f"dataset {path}: {name} #{number} names owner {row['owner']!r}, not in 'owners'"
                )
    return data


def parse_as_of(text: str | None) -> Literal["latest"] | datetime | None:
    """``--as-of``: None, "latest", or an ISO date-time (UTC when it names no offset)."""
    if text is None or text == "latest":
        return text  # type: ignore[return-value]  # None or the literal "latest"
    try:
        moment = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError as exc:
        raise CommandError(f"--as-of: {exc} (give an ISO date-time or 'latest')") from exc
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)


class Command(BaseCommand):
    help = "Load labelled datasets under temporary owners, run every strategy, print recall tables."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "datasets",
            nargs="*",
            type=Path,
            help="JSON datasets or conversation directories (default: both dev sets)",
        )
        parser.add_argument(
            "--strategies",
            default="keyword,vector,hybrid,composite",
            help=f"comma-separated, among {', '.join(STRATEGIES)}",
        )
        parser.add_argument(
            "--as-of",
            default=None,
            help="ask every question as of this ISO date-time, or 'latest': as of its owner's newest "
            "memory (default: now)",
        )
        parser.add_argument("--json", action="store_true", help="print the reports as JSON")
        parser.add_argument("--keep", action="store_true", help="keep the loaded owners and memories")
        parser.add_argument(
            "--no-served", action="store_true", help="skip the gateway-floor pass (served / given nothing)"
        )
        parser.add_argument(
            "--rerank",
            action="store_true",
            help=f"rerank with the local cross-encoder ({LOCAL_RERANK}, top {RERANK_DEPTH}), whatever is stored",
        )

    def handle(
        self,
        *args: Any,
        datasets: list[Path],
        strategies: str,
        json: bool,
        keep: bool,
        no_served: bool,
        rerank: bool,
        as_of: str | None,
        **options: Any,
    ) -> None:
        paths = datasets or default_datasets()
        if not paths:
            raise CommandError("no dataset given and no dev set found")
        names = [s.strip() for s in strategies.split(",") if s.strip()]
        unknown = [s for s in names if s not in STRATEGIES]
        if unknown:
            raise CommandError(f"unknown strategies {unknown}; choose among {list(STRATEGIES)}")
        asked = parse_as_of(as_of)
        try:
            loaded = [(path, read_dataset(path)) for path in paths]
        except (OSError, ValueError, conversations.FormatError) as exc:
            raise CommandError(f"cannot read dataset: {exc}") from exc
        memory_settings = get_memory_settings()
        if rerank:
            memory_settings = replace(memory_settings, rerankEnabled=True, rerankProviderModel=LOCAL_RERANK)
        ctx = vector_context(memory_settings)
        self.stderr.write(
            f"embedding: {ctx.resolution.source}:{ctx.resolution.model} ({ctx.resolution.reason}); "
            f"vector store: {ctx.store_name}; rerank: "
            f"{memory_settings.rerankProviderModel if memory_settings.rerankEnabled else 'off'}"
        )
        everything = {}
        for path, data in loaded:
            reports = evaluate(
                data,
                strategies=names,
                keep=keep,
                served=not no_served,
                settings=memory_settings,
                as_of=asked,
            )
            everything[str(path)] = reports
            if not json:
                self.stdout.write(
                    f"== {data.get('name') or path} ({len(data['memories'])} memories, "
                    f"{len(data['queries'])} queries)\n"
                )
                for report in reports:
                    self.stdout.write(format_table(report) + "\n")
        if json:
            self.stdout.write(jsonlib.dumps(everything, indent=2))
