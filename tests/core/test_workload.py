"""SPEC section 2 workload rules, one rule at a time, on configs written here."""

import pytest

from pipelines.core.canonical import canonical_json, digest, slug
from pipelines.core.workload import (
    ConfigError,
    build_workload,
    kernel_parameter,
    parse_config,
    split_kernel,
    typed_x_value,
    workload_params,
)


def params(config: str, x_name: str = "H", x_value: str = "1024") -> dict:
    return build_workload(config, x_name, x_value).params


@pytest.mark.parametrize("text", ["", "  ", "null"])
def test_empty_or_null_config_is_empty_object(text):
    assert parse_config(text) == {}
    assert params(text, "H", "64") == {"hidden": 64}


@pytest.mark.parametrize(
    ("text", "fragment"),
    [("[1, 2]", "JSON list, not an object"), ('"x"', "JSON str"), ("{B: 1}", "not valid JSON"), ('{"a": NaN}', "not valid JSON")],
)
def test_config_that_is_not_an_object_is_refused(text, fragment):
    with pytest.raises(ConfigError, match=fragment):
        parse_config(text)


def test_mode_sweep_dim_and_null_keys_are_dropped():
    got = params('{"mode": "forward", "sweep_dim": "T", "T": null, "M": 8}', "H", "16")
    assert got == {"M": 8, "hidden": 16}


def test_aliases_rename_every_listed_raw_key():
    config = '{"bsz": 2, "seq_len": 3, "hidden_size": 4, "vocab_size": 5, "BT": 6, "intermediate_dim": 7, "num_attention_heads": 8, "num_key_value_heads": 9}'
    assert params(config, "X", "1") == {
        "batch": 2,
        "seq": 3,
        "hidden": 4,
        "vocab": 5,
        "tokens": 6,
        "intermediate": 7,
        "q_heads": 8,
        "kv_heads": 9,
        "X": 1,
    }


def test_alias_clash_first_listed_wins_and_loser_keeps_raw_name():
    # B is listed before bsz and batch_size: it becomes `batch`; the others keep their names.
    assert params('{"batch_size": 1, "bsz": 2, "B": 3}', "X", "0") == {"batch": 3, "bsz": 2, "batch_size": 1, "X": 0}
    assert params('{"seq_len": 5, "T": 6}', "X", "0") == {"seq": 6, "seq_len": 5, "X": 0}


def test_a_key_already_named_canonically_outranks_its_aliases():
    assert params('{"B": 3, "batch": 9}', "X", "0") == {"batch": 9, "B": 3, "X": 0}


def test_x_value_overrides_the_config_default_of_the_same_name():
    # The config holds the sweep's default T=1024; the row ran T=4096.
    assert params('{"T": 1024, "H": 64}', "T", "4096") == {"seq": 4096, "hidden": 64}
    assert params('{"seq": 1, "T": 2}', "T", "7") == {"seq": 7, "T": 2}


@pytest.mark.parametrize(
    ("text", "value"),
    [("4096", 4096), ("-3", -3), ("0.5", 0.5), ("1e3", 1000.0), ("llama_3_8b", "llama_3_8b"), ("nan", "nan"), ("inf", "inf")],
)
def test_x_value_types(text, value):
    got = typed_x_value(text)
    assert got == value and type(got) is type(value)


@pytest.mark.parametrize(
    ("raw", "short"),
    [
        ("torch.bfloat16", "bf16"),
        ("torch.float16", "fp16"),
        ("torch.float32", "fp32"),
        ("torch.float64", "fp64"),
        ("torch.int8", "int8"),
        ("float32", "float32"),
    ],
)
def test_dtype_names(raw, short):
    assert workload_params({"dtype": raw}, "H", "1")["dtype"] == short


def test_workload_slug_matches_the_spec_example():
    workload = build_workload('{"T": 1024, "H": 4096, "V": 128256, "mode": "forward", "dtype": "torch.bfloat16"}', "B", "4")
    assert workload.slug == "batch4-hidden4096-seq1024-vocab128256-bf16"
    assert workload.canonical == '{"batch":4,"dtype":"bf16","hidden":4096,"seq":1024,"vocab":128256}'
    assert workload.digest == digest(workload.params)


def test_workload_slug_keeps_underscores_and_slugs_values():
    workload = build_workload('{"hidden_act": "gelu_pytorch_tanh", "eps": 1e-06, "bias": true}', "H", "8")
    assert workload.slug == "biastrue-eps1e-06-hidden8-hidden_actgelu_pytorch_tanh"


def test_workloads_of_one_config_do_not_share_their_axes():
    # The parsed config is kept per text: a workload must not see the x axis, kernel parameter or dtype of another.
    config = '{"T": 1024, "dtype": "torch.bfloat16", "flags": [1, 2]}'
    first = build_workload(config, "B", "4", "beta=False")
    second = build_workload(config, "V", "32000")
    assert first.params == {"seq": 1024, "dtype": "bf16", "flags": [1, 2], "beta": False, "batch": 4}
    assert second.params == {"seq": 1024, "dtype": "bf16", "flags": [1, 2], "vocab": 32000}
    assert build_workload(config, "B", "4", "beta=False") == first
    assert workload_params({"T": 1024, "bsz": None}, "H", "2.5") == {"seq": 1024, "hidden": 2.5}


def test_an_int_value_slugs_as_its_json_and_a_bool_as_json_too():
    workload = build_workload('{"n": -3, "flag": false, "big": 12345678901234567890}', "H", "1")
    assert workload.slug == "big12345678901234567890-flagfalse-hidden1-n3"


def test_workload_without_parameters_is_default():
    from pipelines.core.workload import workload_slug

    assert workload_slug({}) == "default"
    assert workload_slug({"dtype": "fp32"}) == "fp32"


def test_canonical_json_form():
    assert canonical_json({"b": 1, "a": [1.5, "é"], "c": {"z": True, "y": None}}) == '{"a":[1.5,"é"],"b":1,"c":{"y":null,"z":true}}'
    assert digest({"a": 1}) == "015abd7f5cc57a2dd94b7590f04ad8084273905ee33ec5cebeae62276a97f862"


def test_slug_rules():
    assert slug("  NVIDIA A100-SXM4-80GB ") == "nvidia-a100-sxm4-80gb"
    assert slug("__a__b__") == "a-b"


def test_too_large_number_is_a_config_error():
    with pytest.raises(ConfigError, match="too large"):
        build_workload('{"a": 1e999}', "H", "1")


@pytest.mark.parametrize(
    ("name", "kernel", "parameter"),
    [
        ("dyt_beta=False", "dyt", "beta=False"),
        ("dyt_beta=True", "dyt", "beta=True"),
        ("fused_linear_cross_entropy", "fused_linear_cross_entropy", ""),
        ("fused_linear_jsd_temperature=0.5", "fused_linear_jsd", "temperature=0.5"),
        ("beta=1", "beta=1", ""),  # no kernel before the parameter: the name is the kernel
    ],
)
def test_a_kernel_name_with_a_parameter_is_the_kernel_and_a_workload_parameter(name, kernel, parameter):
    assert split_kernel(name) == (kernel, parameter)


def test_the_kernel_names_parameter_is_typed_and_joins_the_workload():
    assert kernel_parameter("beta=False") == {"beta": False} and kernel_parameter("beta=TRUE") == {"beta": True}
    assert kernel_parameter("B=4") == {"batch": 4} and kernel_parameter("") == {}
    with_beta = build_workload('{"dtype": "torch.float32"}', "hidden_size", "4096", "beta=False")
    assert with_beta.params == {"beta": False, "dtype": "fp32", "hidden": 4096}
    assert with_beta.slug == "betafalse-hidden4096-fp32"
    assert with_beta.digest != build_workload('{"dtype": "torch.float32"}', "hidden_size", "4096", "beta=True").digest
