"""The code location has one fixed name, whichever command loads it.

Dagster keeps a sensor's and a schedule's state (on or off, cursor, ticks) and every run's origin per code
location name, so `dg dev` one day and `dagster-daemon run` the next must name it alike. Without the
`code_location_name` of `[tool.dg.project]`, `dg dev` would take the checkout folder's name and the daemon
(given `-m pipelines.definitions`) the module's.
"""

from __future__ import annotations

import dagster as dg
from dagster._cli.workspace.cli_target import workspace_opts_to_load_target
from dagster._core.workspace.context import WorkspaceProcessContext
from dagster_dg_core.context import DgContext
from dagster_shared.cli import WorkspaceOpts
from postgres import write_instance_home

from pipelines.core import settings

LOCATION = "liger_warehouse"


def test_dg_dev_names_the_location_liger_warehouse_whatever_the_checkout_folder():
    context = DgContext.for_project_environment(settings.PROJECT_ROOT, {})
    assert context.root_path.name != LOCATION, "the checkout's folder would give the name by accident"
    # The name `dg dev` writes into the workspace it starts the webserver and daemon on.
    assert context.code_location_name == LOCATION


def test_the_daemon_and_webserver_started_from_the_root_load_the_location_as_liger_warehouse(monkeypatch, tmp_path):
    """`dagster-daemon run`, `dagster dev` and `dagster-webserver` with no target read pyproject.toml in the
    folder they start in; the location is loaded here (in this process) as they load it."""
    monkeypatch.chdir(settings.PROJECT_ROOT)
    monkeypatch.setenv("WAREHOUSE_DIR", str(tmp_path / "warehouse"))
    target = workspace_opts_to_load_target(WorkspaceOpts(), allow_in_process=True)
    assert [origin.location_name for origin in target.create_origins()] == [LOCATION]
    home = write_instance_home(tmp_path / "dagster-home", "sqlite")  # the project's instance, as the daemon opens it
    with dg.DagsterInstance.from_config(str(home)) as instance, WorkspaceProcessContext(instance, target) as workspace:
        request = workspace.create_request_context()
        assert request.code_location_names == [LOCATION]
        location = request.get_code_location(LOCATION)
        assert location.get_repository_names() == ["__repository__"]
        assert "upstream_data_sensor" in {sensor.name for sensor in location.get_repository("__repository__").get_sensors()}


def test_a_module_target_would_not_carry_the_name():
    """Why the README and the tests start the daemon with no `-m`: a module target names the location after the module."""
    target = workspace_opts_to_load_target(WorkspaceOpts(module_name=["pipelines.definitions"]))
    assert [origin.location_name for origin in target.create_origins()] == ["pipelines.definitions"]
