"""Workload parameters of a run: config JSON + x axis, per SPEC section 2.

Everything here depends only on (config text, x_name, x_value), so the
normalizer calls it once per distinct triple, never once per row.
"""

from __future__ import annotations

import functools
import json
import math
import re
from dataclasses import dataclass
from typing import Any

from pipelines.core.canonical import canonical_json, digest_of_canonical, slug_keep_underscore

DROPPED_KEYS = frozenset({"mode", "sweep_dim"})

ALIASES: dict[str, tuple[str, ...]] = {
    "batch": ("B", "bsz", "batch_size"),
    "seq": ("T", "seq_len"),
    "hidden": ("H", "hidden_size"),
    "vocab": ("V", "vocab_size"),
    "tokens": ("BT",),
    "intermediate": ("intermediate_size", "intermediate_dim"),
    "q_heads": ("num_q_heads", "num_attention_heads"),
    "kv_heads": ("num_kv_heads", "num_key_value_heads"),
}
RAW_TO_CANONICAL = {raw: canonical for canonical, raws in ALIASES.items() for raw in raws}

_INT = re.compile(r"[+-]?[0-9]+")
# A kernel name with a workload parameter baked in (upstream's `dyt_beta=False`): the kernel, the parameter's name
# (the text between the last `_` before the `=` and the `=`) and its value.
KERNEL_PARAMETER = r"(?s)^(.+?)_([^_=]+)=(.*)$"
_KERNEL_PARAMETER = re.compile(KERNEL_PARAMETER)
MAX_CONFIG_DEPTH = 32


class ConfigError(ValueError):
    """The config text is not a JSON object; the message is the quarantine reason."""


@dataclass(frozen=True)
class Workload:
    params: dict[str, Any]
    canonical: str
    slug: str
    digest: str


def parse_config(text: str | None) -> dict[str, Any]:
    if text is None or text.strip() in ("", "null"):
        return {}
    try:
        value = json.loads(text, parse_constant=_reject_constant)
    except RecursionError:
        raise ConfigError("extra_benchmark_config_str is nested too deeply to be a benchmark config") from None
    except (ValueError, TypeError) as exc:
        raise ConfigError(f"extra_benchmark_config_str is not valid JSON ({exc})") from None
    if not isinstance(value, dict):
        raise ConfigError(f"extra_benchmark_config_str is JSON {type(value).__name__}, not an object")
    if _depth(value) > MAX_CONFIG_DEPTH:
        raise ConfigError(f"extra_benchmark_config_str is nested deeper than {MAX_CONFIG_DEPTH} levels")
    return value


def _reject_constant(name: str) -> Any:
    # NaN/Infinity are not JSON and cannot be written back as canonical JSON.
    raise ValueError(f"{name} is not a JSON value")


def _depth(value: Any) -> int:
    if isinstance(value, dict):
        return 1 + max((_depth(v) for v in value.values()), default=0)
    if isinstance(value, list):
        return 1 + max((_depth(v) for v in value), default=0)
    return 0


def canonical_key(raw_key: str) -> str:
    return RAW_TO_CANONICAL.get(raw_key, raw_key)


def rename_aliases(config: dict[str, Any]) -> dict[str, Any]:
    """Rename raw keys to canonical names; on a clash the first listed raw key wins.

    A key that is already a canonical name (say `batch`) outranks every alias
    of it; a losing raw key keeps its raw name, so nothing is dropped.
    """
    winners: dict[str, str] = {}
    for canonical, raws in ALIASES.items():
        for candidate in (canonical, *raws):
            if candidate in config:
                winners[canonical] = candidate
                break
    renamed: dict[str, Any] = {}
    for key, value in config.items():
        canonical = canonical_key(key)
        if canonical != key and winners.get(canonical) == key:
            renamed[canonical] = value
        else:
            renamed.setdefault(key, value)
    return renamed


def typed_x_value(text: str) -> int | float | str:
    stripped = text.strip()
    if _INT.fullmatch(stripped):
        return int(stripped)
    try:
        number = float(stripped)
    except ValueError:
        return text
    return number if math.isfinite(number) else text


def dtype_name(value: Any) -> Any:
    if not isinstance(value, str) or not value.startswith("torch."):
        return value
    short = value.removeprefix("torch.")
    return {"bfloat16": "bf16", "float16": "fp16", "float32": "fp32", "float64": "fp64"}.get(short, short)


def split_kernel(kernel_name: str) -> tuple[str, str]:
    """(kernel, `name=value` parameter) of a kernel name: `dyt_beta=False` is the kernel `dyt` with `beta=False`;
    a name without `=` is the kernel, with no parameter ("")."""
    found = _KERNEL_PARAMETER.match(kernel_name)
    return (found.group(1), f"{found.group(2)}={found.group(3)}") if found else (kernel_name, "")


def kernel_parameter(parameter: str) -> dict[str, Any]:
    """`beta=False` as a workload parameter, {"beta": False}: True and False (any case) are booleans, a number is
    typed as an x value is; {} for no parameter."""
    if not parameter:
        return {}
    name, _, text = parameter.partition("=")
    lowered = text.strip().lower()
    value = lowered == "true" if lowered in ("true", "false") else typed_x_value(text)
    return {canonical_key(name): value}


def workload_params(config: dict[str, Any], x_name: str, x_value: str, parameter: str = "") -> dict[str, Any]:
    return _with_axes(_config_params(config), x_name, x_value, parameter)


def _config_params(config: dict[str, Any]) -> dict[str, Any]:
    """The parameters a config gives, before the x axis and the kernel's parameter are added."""
    return rename_aliases({k: v for k, v in config.items() if k not in DROPPED_KEYS and v is not None})


@functools.lru_cache(maxsize=1024)
def _parsed_config_params(config_text: str | None) -> dict[str, Any]:
    # Cached per config text: a config is swept over many x values and kernels, each a workload of its own
    # (upstream's files and the synthetic ones hold about five workloads per config). Callers copy it.
    return _config_params(parse_config(config_text))


def _with_axes(params: dict[str, Any], x_name: str, x_value: str, parameter: str) -> dict[str, Any]:
    params.update(kernel_parameter(parameter))
    params[canonical_key(x_name)] = typed_x_value(x_value)
    if "dtype" in params:
        params["dtype"] = dtype_name(params["dtype"])
    return params


def _slug_value(value: Any) -> str:
    # An int's canonical JSON is its decimal text (not a bool's: `type`, not isinstance); the normalizer slugs
    # tens of thousands of them per million rows, and json.dumps costs several times str().
    return slug_keep_underscore(value if isinstance(value, str) else str(value) if type(value) is int else canonical_json(value))


def workload_slug(params: dict[str, Any]) -> str:
    parts = [slug_keep_underscore(name) + _slug_value(value) for name, value in sorted(params.items()) if name != "dtype"]
    if "dtype" in params:
        parts.append(_slug_value(params["dtype"]))
    return "-".join(parts) or "default"


def build_workload(config_text: str | None, x_name: str, x_value: str, parameter: str = "") -> Workload:
    """Raises ConfigError when the config is not a JSON object. `parameter` is the one a kernel name carried
    (split_kernel)."""
    params = _with_axes(dict(_parsed_config_params(config_text)), x_name, x_value, parameter)
    try:
        canonical = canonical_json(params)
    except ValueError:
        raise ConfigError("extra_benchmark_config_str holds a number too large for JSON") from None
    return Workload(params=params, canonical=canonical, slug=workload_slug(params), digest=digest_of_canonical(canonical))
