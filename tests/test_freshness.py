"""pipelines.storage.freshness: an output is rebuilt when its inputs, code or files changed, or its stamp is damaged."""

import json

import pytest

from pipelines.storage import freshness


@pytest.fixture
def export(tmp_path):
    table = tmp_path / "runs.parquet"
    table.write_bytes(b"v1")
    out = tmp_path / "out.json"
    builds = []

    def build():
        builds.append(1)
        out.write_text("{}")
        return {"out.json": len(builds)}

    def run():
        key = freshness.fingerprint([table], [freshness])
        return freshness.rebuild_if_stale(tmp_path / "stamp.json", key, lambda result: [tmp_path / f for f in result], build)

    return table, out, tmp_path / "stamp.json", run


def test_kept_until_an_input_is_replaced_or_an_output_is_missing(export, tmp_path):
    table, out, _, run = export
    assert run() == (True, {"out.json": 1})
    assert run() == (False, {"out.json": 1})
    out.unlink()
    assert run() == (True, {"out.json": 2})
    replacement = tmp_path / "new.parquet"
    replacement.write_bytes(b"v2")
    replacement.replace(table)
    assert run() == (True, {"out.json": 3})
    assert run() == (False, {"out.json": 3})


@pytest.mark.parametrize("damaged", ["not json", "[]", "{}", json.dumps({"key": "x"}), json.dumps({"key": None, "result": 3})], ids=repr)
def test_a_damaged_stamp_means_a_rebuild(export, damaged):
    _, _, stamp, run = export
    run()
    key = json.loads(stamp.read_text())["key"]
    stamp.write_text(damaged.replace('"x"', json.dumps(key)).replace("null", json.dumps(key)))
    assert run() == (True, {"out.json": 2})
    assert run() == (False, {"out.json": 2})
