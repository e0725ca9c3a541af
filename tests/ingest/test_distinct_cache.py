"""The per-value lookup: every row gets its key's answer, computed once per key, whatever mix of keys known
before and keys new to it a chunk brings."""

import polars as pl

from pipelines.ingest.normalize.distinct_cache import Lookup


def test_a_chunk_of_known_and_new_keys_gets_every_answer_in_row_order():
    calls: list[tuple] = []

    def compute(keys: pl.DataFrame) -> pl.DataFrame:
        calls.extend(keys.rows())
        return keys.with_columns(pl.concat_str(pl.col("a").fill_null("~"), pl.col("b").fill_null("~"), separator="|").alias("answer"))

    lookup = Lookup(["a", "b"], {"answer": pl.String}, compute, track=True)
    first = pl.DataFrame({"a": ["x", "y", "x"], "b": ["1", None, "1"], "n": [1, 2, 3]})
    assert lookup.attach(first).to_dict(as_series=False) == {
        "a": ["x", "y", "x"],
        "b": ["1", None, "1"],
        "n": [1, 2, 3],
        "answer": ["x|1", "y|~", "x|1"],
    }
    # New keys between and around known ones, a null key known already, a key repeated.
    second = pl.DataFrame({"a": ["z", "x", "y", "z", None, "w"], "b": ["2", "1", None, "2", "3", "1"], "n": [4, 5, 6, 7, 8, 9]})
    attached = lookup.attach(second)
    assert attached.to_dict(as_series=False) == {
        "a": ["z", "x", "y", "z", None, "w"],
        "b": ["2", "1", None, "2", "3", "1"],
        "n": [4, 5, 6, 7, 8, 9],
        "answer": ["z|2", "x|1", "y|~", "z|2", "~|3", "w|1"],
    }
    assert sorted(calls, key=str) == sorted([("x", "1"), ("y", None), ("z", "2"), (None, "3"), ("w", "1")], key=str)
    # Every key asked for is among the answers used, once.
    assert lookup.used_answers().height == 5
