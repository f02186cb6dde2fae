"""Training logs people read: TensorBoard and Weights & Biases, fed the same records as `metrics.jsonl`.

    linrnn train ... --log tensorboard,wandb          live, on rank 0, beside metrics.jsonl
    linrnn runs export DIR --to tensorboard           the same for runs already stored (their metrics.jsonl)

A sink receives the run's resolved config once, then every line `linrnn.tasks.train` writes to `metrics.jsonl`:
`{"step", "loss", "lr"}` per step and `{"step", "eval": {...}}` per evaluation. Each becomes scalars at its step:

    train/loss, train/lr                        every step
    eval/r2, eval/mse                           a synthetic task's evaluation
    eval/val/accuracy, eval/test/loss, ...      a data task's (every metric of each split), and eval/epoch

`tensorboard` writes event files to RUN_DIR/tensorboard/ through `torch.utils.tensorboard` (or `tensorboardX` where
PyTorch's needs the missing `tensorboard` package), each scalar in float64 (a new-style tensor summary, so it reads
back equal to the JSON's number) and the config as text. The folder is rebuilt from metrics.jsonl whenever a run
starts, resumes or is exported: a resumed run's events are its log up to the checkpoint (the JSON log is truncated
there too) and then the live ones, so every reader (TensorBoard's older ones do not honour `purge_step`, which is
still set) sees each step once, and `runs export` twice writes the same events as once. `wandb` logs to Weights &
Biases (`WANDB_PROJECT`, default "linrnn"; `WANDB_MODE=offline` writes RUN_DIR/wandb/ without an account), the
config as the run's config; the run's W&B id is kept in RUN_DIR/wandb-run.json, so that a resumed run goes on in the
same W&B run (`resume="allow"` by that id) rather than making a second one of the same name. (Steps W&B already had
past the checkpoint keep their first values: a resumed run logs the same values again, to the bit.) Both packages
are optional: asking for one that is not installed is a one-line error naming what to install.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

from linrnn.base.errors import LinrnnError

SINKS = ("tensorboard", "wandb")


def parse_sinks(text: str | None) -> tuple[str, ...]:
    """`--log tensorboard,wandb` -> ("tensorboard", "wandb"); an unknown name is a one-line error."""
    if not text:
        return ()
    names = tuple(n.strip() for n in text.split(",") if n.strip())
    bad = [n for n in names if n not in SINKS]
    if not names or bad:
        raise LinrnnError(f"--log: expected a comma-separated list of {', '.join(SINKS)}, found {text!r}")
    return tuple(dict.fromkeys(names))


def scalars(line: dict) -> dict[str, float]:
    """A metrics.jsonl line as {tag: value}: train/loss and train/lr, or eval/... (finite numbers only)."""
    out: dict[str, float] = {}

    def put(tag: str, value) -> None:
        if isinstance(value, dict):
            for k, v in value.items():
                put(f"{tag}/{k}", v)
        elif isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value):
            out[tag] = float(value)

    if "eval" in line:
        put("eval", line["eval"])
    else:
        for k, v in line.items():
            if k != "step":
                put(f"train/{k}", v)
    return out


def _summary_writer():
    try:
        from torch.utils.tensorboard import SummaryWriter
    except ImportError:
        try:
            from tensorboardX import SummaryWriter
        except ImportError:
            raise LinrnnError("--log tensorboard: expected the tensorboard package (pip install tensorboard) "
                              "or tensorboardX") from None
    return SummaryWriter


def read_log(run_dir: Path) -> list[dict]:
    """RUN_DIR/metrics.jsonl's lines (a half-written last line, what a killed process leaves, dropped)."""
    log = Path(run_dir) / "metrics.jsonl"
    texts = [t for t in log.read_text(errors="replace").splitlines() if t.strip()] if log.exists() else []
    lines = []
    for i, text in enumerate(texts):
        try:
            lines.append(json.loads(text))
        except ValueError as err:
            if i < len(texts) - 1:
                raise LinrnnError(f"{log}: line {i + 1} is not JSON ({err})") from None
    return lines


class TensorBoardSink:
    def __init__(self, run_dir: Path, config: dict, start: int = 0, export: bool = False):
        import shutil

        SummaryWriter = _summary_writer()
        folder = Path(run_dir) / "tensorboard"
        # rebuilt from the log: the events of metrics.jsonl up to `start` (a resumed run's checkpoint; the log is
        # truncated there), then the live ones; purge_step as well, for readers that honour it
        replay = [line for line in read_log(run_dir) if line.get("step", 0) <= start] if start else []
        shutil.rmtree(folder, ignore_errors=True)
        self.writer = SummaryWriter(log_dir=str(folder), purge_step=start + 1 if start else 0)
        self.writer.add_text("config", "```\n" + json.dumps(config, indent=1) + "\n```", 0)
        for line in replay:
            self.write(line)

    def write(self, line: dict) -> None:
        for tag, value in scalars(line).items():
            self.writer.add_scalar(tag, value, line["step"], new_style=True, double_precision=True)

    def close(self) -> None:
        self.writer.flush()
        self.writer.close()


class WandbSink:
    def __init__(self, run_dir: Path, config: dict, start: int = 0, export: bool = False):
        import os

        try:
            import wandb
        except ImportError:
            raise LinrnnError("--log wandb: expected the wandb package (pip install wandb; WANDB_MODE=offline logs "
                              "without an account)") from None
        # console="off": wandb would otherwise take over this process's stdout and stderr (file descriptors 1 and 2)
        # to record them, under the progress bar, a sweep's job log or a test's capture
        # a run that starts afresh is a new W&B run; a resumed run, or an export, goes on in the stored one ("allow":
        # W&B makes it where it has none yet)
        keep = bool(start) or export
        self.run = wandb.init(project=os.environ.get("WANDB_PROJECT", "linrnn"), dir=str(run_dir),
                              name=Path(run_dir).name, id=wandb_run_id(Path(run_dir), fresh=not keep), config=config,
                              resume="allow" if keep else None, settings=wandb.Settings(console="off"))

    def write(self, line: dict) -> None:
        values = scalars(line)
        if values:
            self.run.log(values, step=line["step"])

    def close(self) -> None:
        self.run.finish()


WANDB_RUN = "wandb-run.json"        # RUN_DIR's W&B run id: {"id": ...}


def wandb_run_id(run_dir: Path, fresh: bool) -> str:
    """The W&B run id of the run in `run_dir`: the stored one when it resumes, else a new one, stored (atomically)
    before W&B sees it, so that a run killed at any moment resumes into its own W&B run."""
    import os
    import secrets

    path = run_dir / WANDB_RUN
    if not fresh:
        try:
            found = json.loads(path.read_text()).get("id")
            if isinstance(found, str) and found:
                return found
        except (OSError, ValueError, AttributeError):
            pass
    run_id = secrets.token_hex(8)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_text(json.dumps({"id": run_id}))
    os.replace(tmp, path)
    return run_id


def open_sinks(names: tuple[str, ...], run_dir: Path, config: dict, start: int = 0, export: bool = False) -> list:
    """The sinks `names` for the run in `run_dir` (its resolved config; `start`: the step a resumed run goes on
    from; `export`: the whole stored log is about to be replayed, `export`)."""
    kinds = {"tensorboard": TensorBoardSink, "wandb": WandbSink}
    opened = []
    try:
        for name in names:
            opened.append(kinds[name](run_dir, config, start, export))
    except BaseException:
        for sink in opened:
            sink.close()
        raise
    return opened


def export(run_dir: Path, to: str) -> int:
    """Replay a stored run's metrics.jsonl into the sink `to` (its config from config.json); the lines written."""
    run_dir = Path(run_dir)
    log, config = run_dir / "metrics.jsonl", run_dir / "config.json"
    if not log.exists():
        raise LinrnnError(f"runs export: expected a run directory with metrics.jsonl, found {run_dir}")
    lines = read_log(run_dir)
    try:
        resolved = json.loads(config.read_text()) if config.exists() else {}
    except ValueError as err:
        raise LinrnnError(f"runs export: {config}: unreadable JSON ({err})") from None
    # TensorBoard: the folder is rebuilt (an export twice gives the same events); W&B: the run's stored id, so
    # that an export of a run logged live (or exported before) goes on in that W&B run
    [sink] = open_sinks((to,), run_dir, resolved, export=True)
    try:
        for line in lines:
            sink.write(line)
    finally:
        sink.close()
    return len(lines)
