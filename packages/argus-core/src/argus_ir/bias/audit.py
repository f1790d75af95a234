"""The bias audit as one run: load a Re-DocRED file, build the pairs, and score them step by step
under BM25, each retriever and each remedy's foil rerun, reusing the steps an earlier report of
the same pairs already holds.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path

from argus_ir.bias.data import load_redocred, load_templates
from argus_ir.bias.pairs import SETTINGS, build_pairs, pair_corpus, pairs_fingerprint
from argus_ir.bias.report import BiasReport
from argus_ir.bias.scoring import (
    Scorer,
    augmented_scorer,
    bm25_scorer,
    dense_scorer,
    score_settings,
)
from argus_ir.bias.stats import BiasStat
from argus_ir.errors import ArgusInputError


def _step_name(retriever: str, settings: Sequence[str]) -> str:
    return f"{retriever}: {', '.join(settings)}"


def audit_biases(
    path: str | Path,
    retrievers: Sequence[str] = ("minilm",),
    *,
    bm25: bool = True,
    n: int = 250,
    seed: int = 0,
    per_doc: int = 3,
    augment: Sequence[str] = (),
    templates: str | Path | None = None,
    show_progress: bool = False,
    previous: BiasReport | None = None,
    on_step: Callable[[BiasReport], object] | None = None,
) -> BiasReport:
    """Build the pairs from a Re-DocRED file and score every setting under each retriever.

    The work runs in steps: BM25, then each retriever's six settings, then each retriever's foil
    reruns after each remedy (the slow part: every view is embedded). ``on_step`` sees the report
    after every step, so a caller can save it as it grows; ``previous`` (an earlier, possibly
    partial, report of the same pairs) supplies the steps it already holds.

    Args:
        path: A Re-DocRED-format JSON file.
        retrievers: argus retriever names, model ids or folders.
        bm25: Add BM25 as a reference row.
        n: Pairs per setting (fewer when the data has fewer; counted in the notes).
        seed: Seed of the sample order and of the foil's filler documents.
        per_doc: Most samples taken from one document.
        augment: Remedies (``descriptor``, ``expansion``...) after which the foil test runs
            again, each document scored by its best entry (original or view).
        templates: A JSON file of relation id -> template (default: Table A.5).
        show_progress: Progress bars while embedding.
        previous: Statistics to reuse; its pairs must be these pairs (same fingerprint).
        on_step: Called with the report so far after each step.

    Raises:
        ArgusInputError: ``previous`` was made from other pairs (data, seed, n, per_doc or
            templates differ).
    """
    from argus_ir.encoder import load_encoder

    docs, notes = load_redocred(path)
    pairs, more = build_pairs(
        docs, n=n, seed=seed, templates=load_templates(templates), per_doc=per_doc
    )
    notes.update(more)
    report = BiasReport(
        str(path),
        [],
        {k: len(v) for k, v in pairs.items()},
        dict(notes),
        seed,
        pairs_fingerprint(pairs),
    )
    if previous is not None and not previous.pairs_sha256:
        raise ArgusInputError(
            f"the earlier report ({previous.data}) has no pairs fingerprint (an older argus wrote "
            "it), so its steps cannot be checked; write to a new folder or leave it out"
        )
    if previous is not None and previous.pairs_sha256 != report.pairs_sha256:
        raise ArgusInputError(
            f"the earlier report ({previous.data}, seed {previous.seed}) was built from other "
            "pairs than this audit's (data, seed, --n, --per-doc or templates differ); "
            "write to a new folder or leave out the earlier report"
        )
    done = {(s.retriever, s.setting): s for s in (previous.stats if previous else [])}

    def step(retriever: str, settings: Sequence[str], run: Callable[[], list[BiasStat]]) -> None:
        report.pending.remove(_step_name(retriever, settings))
        if all((retriever, s) in done for s in settings):
            report.stats += [done[retriever, s] for s in settings]
            if previous is not None:
                for key, count in previous.notes.items():
                    if any(key.startswith(f"{s} under {retriever}: ") for s in settings):
                        report.notes[key] = count
        else:
            report.stats += run()
        if on_step is not None:
            on_step(report)

    encoders: dict[str, Scorer] = {}

    def scorer(name: str) -> Scorer:
        if name not in encoders:
            encoders[name] = dense_scorer(load_encoder(name), show_progress)
        return encoders[name]

    main = [s for s in SETTINGS if pairs.get(s)]
    remedies = list(augment) if pairs.get("foil") else []  # the reruns need foil pairs
    report.pending = [_step_name("bm25", main)] if bm25 else []
    report.pending += [_step_name(name, main) for name in retrievers]
    report.pending += [_step_name(n, [f"foil+{r}"]) for n in retrievers for r in remedies]
    if bm25:
        step("bm25", main, lambda: score_settings(pairs, bm25_scorer(pair_corpus(pairs)), "bm25"))
    for name in retrievers:

        def settings(name: str = name) -> list[BiasStat]:
            return score_settings(pairs, scorer(name), name)

        step(name, main, settings)
    for name in retrievers:
        for remedy in remedies:

            def rerun(name: str = name, remedy: str = remedy) -> list[BiasStat]:
                from argus_ir.pipeline import Argus

                argus = Argus(retriever=name, remedy=remedy)
                boosted, counts = augmented_scorer(argus, scorer(name))
                stats = score_settings({"foil": pairs["foil"]}, boosted, name)
                for what, count in counts.items():
                    report.notes[f"foil+{remedy} under {name}: {what}"] = count
                return [replace(stat, setting=f"foil+{remedy}") for stat in stats]

            step(name, [f"foil+{remedy}"], rerun)
    return report
