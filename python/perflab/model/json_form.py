"""Results objects as JSON types: the one conversion every results file and JSON document
goes through on save (:func:`json_types`)."""

from __future__ import annotations

import math
from dataclasses import fields, is_dataclass
from typing import Any

_FIELD_NAMES: dict[type, tuple[str, ...]] = {}


def json_types(value: Any) -> Any:
    """JSON types from results objects, in one pass: dataclasses become dicts of their
    fields, tuples lists, NaN/inf floats None (JSON has no NaN); other values pass as
    they are.

    Args:
        value: a dataclass, list, tuple, dict or scalar, nested to any depth.

    Returns:
        The same structure built of dict, list, str, int, float, bool and None.

    ``dataclasses.asdict`` would deep-copy every leaf: about 10× slower on a file of
    thousands of raw runs or samples, which every save pays.
    """
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if value is None or isinstance(value, (str, int)):
        return value
    if isinstance(value, (list, tuple)):
        return [json_types(v) for v in value]
    if isinstance(value, dict):
        return {k: json_types(v) for k, v in value.items()}
    names = _FIELD_NAMES.get(type(value))
    if names is None and is_dataclass(value):
        names = _FIELD_NAMES[type(value)] = tuple(f.name for f in fields(value))
    if names is not None:
        return {name: json_types(getattr(value, name)) for name in names}
    return value


def from_known(cls: type, data: dict[str, Any]) -> Any:
    """Dataclass ``cls`` built from its JSON form ``data``, unknown keys ignored (files
    of a newer perflab still load). Raises TypeError when a required field is missing."""
    names = {f.name for f in fields(cls)}
    return cls(**{k: v for k, v in data.items() if k in names})
