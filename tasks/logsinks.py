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
back equal to the JSON's number) and the config as text; a resumed run purges the events past its checkpoint, as the
JSON log is truncated. `wandb` logs to Weights & Biases (`WANDB_PROJECT`, default "linrnn"; `WANDB_MODE=offline`
writes RUN_DIR/wandb/ without an account), the config as the run's config. Both packages are optional: asking for
one that is not installed is a one-line error naming what to install.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

from linrnn.impls.errors import LinrnnError

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


class TensorBoardSink:
    def __init__(self, run_dir: Path, config: dict, start: int = 0):
        try:
            from torch.utils.tensorboard import SummaryWriter
        except ImportError:
            try:
                from tensorboardX import SummaryWriter
            except ImportError:
                raise LinrnnError("--log tensorboard: expected the tensorboard package (pip install tensorboard) "
                                  "or tensorboardX") from None
        # purge_step: TensorBoard drops earlier writers' events at or past it: a resumed run's past its checkpoint
        # (metrics.jsonl is truncated there too), every earlier one for a run that starts afresh or an export
        self.writer = SummaryWriter(log_dir=str(Path(run_dir) / "tensorboard"), purge_step=start + 1 if start else 0)
        if not start:
            self.writer.add_text("config", "```\n" + json.dumps(config, indent=1) + "\n```", 0)

    def write(self, line: dict) -> None:
        for tag, value in scalars(line).items():
            self.writer.add_scalar(tag, value, line["step"], new_style=True, double_precision=True)

    def close(self) -> None:
        self.writer.flush()
        self.writer.close()


class WandbSink:
    def __init__(self, run_dir: Path, config: dict, start: int = 0):
        import os

        try:
            import wandb
        except ImportError:
            raise LinrnnError("--log wandb: expected the wandb package (pip install wandb; WANDB_MODE=offline logs "
                              "without an account)") from None
        # console="off": wandb would otherwise take over this process's stdout and stderr (file descriptors 1 and 2)
        # to record them, under the progress bar, a sweep's job log or a test's capture
        self.run = wandb.init(project=os.environ.get("WANDB_PROJECT", "linrnn"), dir=str(run_dir),
                              name=Path(run_dir).name, config=config, resume="allow" if start else None,
                              settings=wandb.Settings(console="off"))

    def write(self, line: dict) -> None:
        values = scalars(line)
        if values:
            self.run.log(values, step=line["step"])

    def close(self) -> None:
        self.run.finish()


def open_sinks(names: tuple[str, ...], run_dir: Path, config: dict, start: int = 0) -> list:
    """The sinks `names` for the run in `run_dir` (its resolved config; `start`: the step a resumed run goes on
    from)."""
    kinds = {"tensorboard": TensorBoardSink, "wandb": WandbSink}
    opened = []
    try:
        for name in names:
            opened.append(kinds[name](run_dir, config, start))
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
    try:
        lines = [json.loads(text) for text in log.read_text().splitlines() if text.strip()]
        resolved = json.loads(config.read_text()) if config.exists() else {}
    except ValueError as err:
        raise LinrnnError(f"runs export: {run_dir}: unreadable JSON ({err})") from None
    [sink] = open_sinks((to,), run_dir, resolved)
    try:
        for line in lines:
            sink.write(line)
    finally:
        sink.close()
    return len(lines)
