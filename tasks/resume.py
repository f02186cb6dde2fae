"""What a run directory resumes from, and what becomes of a damaged file there (`linrnn.tasks.train`).

A run killed at any moment, or a file damaged afterwards, never blocks the rerun and never passes into a result:

    checkpoint.npz unreadable         set aside (checkpoint.npz.damaged-N); the run resumes from the checkpoint
                                      before it (checkpoint.previous.npz), or trains from step 0
    metrics.jsonl's last line cut     dropped (what a process killed mid-write leaves), and said
    metrics.jsonl damaged otherwise   (a bad line before the last, a step's line missing before the checkpoint)
                                      set aside; the run trains from step 0
    results.json unreadable           rewritten from the log and the final checkpoint (`train`)

Each is one line on stderr naming the file. Training is a pure function of the config and the step, so a run that
resumes from an earlier checkpoint, or from step 0, ends with the same bits as an uninterrupted one.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from linrnn.base.errors import LinrnnError
from linrnn.tasks import checkpoint as ckpt_io


def say(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


def set_aside(path: Path) -> Path:
    """Rename a damaged file (or directory) to NAME.damaged-N, kept whole for whoever wants to look at it."""
    n = 1
    while path.with_name(f"{path.name}.damaged-{n}").exists():
        n += 1
    aside = path.with_name(f"{path.name}.damaged-{n}")
    path.rename(aside)
    return aside


def checkpoint(path: Path) -> ckpt_io.Checkpoint | None:
    """The newest readable checkpoint of `path` and its previous copy (None: neither); an unreadable one is set
    aside, saying so."""
    for candidate in (path, ckpt_io.previous(path)):
        if not candidate.exists():
            continue
        try:
            state = ckpt_io.load(candidate)
        except LinrnnError as err:
            aside = set_aside(candidate)
            say(f"{candidate}: unreadable ({err}); moved to {aside.name}")
            continue
        if candidate != path:
            say(f"{path.parent}: resuming from the checkpoint before the damaged one ({candidate.name}, step "
                f"{state.step})")
        return state
    return None


def kept_log(path: Path, step: int) -> list[str] | None:
    """The lines of the training log `path` up to `step` (a resume keeps them, the rest is written again), or None
    where the log cannot be kept (a damaged line before the last, or a step's line missing up to `step`): the run
    then trains from step 0. A half-written last line is dropped, saying so."""
    if not path.exists():
        return [] if step == 0 else None
    lines = path.read_text(errors="replace").splitlines()
    kept, losses = [], []
    for i, text in enumerate(lines):
        if not text.strip():
            continue
        try:
            line = json.loads(text)
            at = int(line["step"])
        except (ValueError, TypeError, KeyError) as err:
            if i == len(lines) - 1:
                say(f"{path}: dropped its half-written last line ({len(text)} characters; a process stopped while "
                    "writing it)")
                continue
            say(f"{path}: line {i + 1} is damaged ({type(err).__name__}); the log cannot be kept")
            return None
        if at <= step:
            kept.append(text)
            if "loss" in line:
                losses.append(at)
    if losses != list(range(1, step + 1)):
        say(f"{path}: steps 1-{step} (up to the checkpoint) are not each logged once; the log cannot be kept")
        return None
    return kept
