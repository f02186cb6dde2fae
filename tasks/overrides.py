"""The command line's text to a training config's values: `--set FIELD=VALUE` (`apply_overrides`), the typed field
flags of `linrnn train` (`parse_value`) and a config with overrides applied (`replace`). Beside the command line
(`tasks/cli.py`) that reads them; the fields and their types are `TrainConfig`'s (`tasks/config.py`)."""

from __future__ import annotations

import json
import typing
from typing import Any

from linrnn.base.errors import LinrnnError
from linrnn.tasks.config import FIELD_TYPES, MIXER_FIELD_TYPES, MIXER_OPTIONAL, OPTIONAL, TrainConfig


def replace(config: TrainConfig, overrides: list[str]) -> TrainConfig:
    """`config` with `--set FIELD=VALUE` overrides applied (`data_options.KEY=VALUE` sets one option)."""
    return TrainConfig.from_dict(apply_overrides(config.to_dict(), overrides), where="--set")


def parse_value(name: str, text: str, mixer: bool = False) -> Any:
    """A field's value from its text (command line, `--set`): typed by the field's annotation (`mixer`: a mixer
    field's); 'none' or 'null' for an optional field is None; data_options takes a JSON object."""
    flag = f"--{name.replace('_', '-')}"
    hint = (MIXER_FIELD_TYPES if mixer else FIELD_TYPES)[name]
    if text.strip().lower() in ("none", "null") and name in (MIXER_OPTIONAL if mixer else OPTIONAL):
        return None
    kinds = [t for t in typing.get_args(hint) if t is not type(None)] or [hint]
    kind = kinds[0]
    if kind is bool:
        if text.lower() not in ("true", "false"):
            raise LinrnnError(f"{flag}: expected true or false, found {text!r}")
        return text.lower() == "true"
    if kind in (int, float):
        try:
            return kind(text)
        except ValueError:
            raise LinrnnError(f"{flag}: expected {'an integer' if kind is int else 'a number'}, found {text!r}") from None
    if kind is dict:
        try:
            value = json.loads(text)
        except json.JSONDecodeError:
            value = None
        if not isinstance(value, dict):
            raise LinrnnError(f"{flag}: expected a JSON object, found {text!r}")
        return value
    return text


def _option_value(text: str) -> Any:
    """A loader option's value from its text: JSON when it parses (numbers, true/false), else the string."""
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        return text


def apply_overrides(values: dict[str, Any], overrides: list[str]) -> dict[str, Any]:
    """`FIELD=VALUE` items applied to a dict of fields, each field name and value checked.

    `mixer.FIELD=VALUE` sets a field of the model's mixer; a bare `FIELD=VALUE` whose FIELD is not a training
    field but a mixer field of some model does the same (the model decides, once the config is whole, whether
    it has that field: a field it lacks is an error naming both). `data_options.OPTION=VALUE` sets one option."""
    values = dict(values)
    for item in overrides:
        name, sep, text = item.partition("=")
        name = name.strip().replace("-", "_")
        head, dot, option = name.partition(".")
        if not dot and head not in FIELD_TYPES and head in MIXER_FIELD_TYPES:
            head, dot, option = "mixer", ".", head
        if not sep or head not in FIELD_TYPES or (dot and head not in ("data_options", "mixer")) or (dot and not option):
            raise LinrnnError(f"--set: expected FIELD=VALUE with FIELD a TrainConfig field, mixer.FIELD (a field of "
                              f"the model's mixer) or data_options.OPTION, found {item!r}")
        if dot and head == "mixer":
            mixer = values.get("mixer") if isinstance(values.get("mixer"), dict) else {}
            try:
                value = (parse_value(option, text.strip(), mixer=True) if option in MIXER_FIELD_TYPES
                         else _option_value(text.strip()))   # no model has it: the model's check names it
            except LinrnnError as err:   # name the flag that was given
                raise LinrnnError(str(err).replace(f"--{option.replace('_', '-')}", f"--set {name}", 1)) from None
            values["mixer"] = {**mixer, option: value}
        elif dot:
            values["data_options"] = {**values.get("data_options", {}), option: _option_value(text.strip())}
        else:
            try:
                values[name] = parse_value(name, text.strip())
            except LinrnnError as err:   # name the flag that was given
                raise LinrnnError(str(err).replace(f"--{name.replace('_', '-')}", f"--set {name}", 1)) from None
    return values
