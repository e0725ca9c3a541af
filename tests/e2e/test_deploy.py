"""The team instance (deploy/postgres/dagster.yaml) is the local one with its storage on PostgreSQL."""

import pytest
import yaml
from postgres import CONFIGS, unavailable


def test_postgres_instance_differs_from_the_local_one_only_in_storage():
    local, team = (yaml.safe_load(CONFIGS[kind].read_text()) for kind in ("sqlite", "postgres"))
    assert set(local) == set(team)
    assert {key: value for key, value in local.items() if key != "storage"} == {
        key: value for key, value in team.items() if key != "storage"
    }
    database = team["storage"]["postgres"]["postgres_db"]
    variables = {name: database[name]["env"] for name in ("hostname", "port", "username", "password", "db_name")}
    assert variables == {
        "hostname": "DAGSTER_PG_HOST",
        "port": "DAGSTER_PG_PORT",
        "username": "DAGSTER_PG_USER",
        "password": "DAGSTER_PG_PASSWORD",
        "db_name": "DAGSTER_PG_DB",
    }


def test_a_missing_server_skips_locally_and_fails_in_ci(monkeypatch):
    monkeypatch.delenv("REQUIRE_REAL_DATA", raising=False)
    with pytest.raises(pytest.skip.Exception, match="no PostgreSQL"):
        unavailable("no PostgreSQL server binaries")
    monkeypatch.setenv("REQUIRE_REAL_DATA", "1")
    with pytest.raises(pytest.fail.Exception, match="REQUIRE_REAL_DATA=1 but no PostgreSQL"):
        unavailable("no PostgreSQL server binaries")
