import dagster as dg
from pydantic import Field

from pipelines.defs.resources import Warehouse
from pipelines.duck import db
from pipelines.verdict.contender import BadContender
from pipelines.verdict.render import render_markdown
from pipelines.verdict.verdict import judge_contender


class VerdictConfig(dg.Config):
    """Which CSV to judge, as `python -m pipelines verdict` takes it."""

    csv: str = Field(description="the contender CSV's path, on the machine the run executes on")
    gpu: str = Field(default="", description="judge only the contender's runs on this GPU (a filter); empty: all of them")
    backend: str = Field(default="", description="the backend the contender was built for; empty: from its file name")


@dg.op(tags={"kind": "verdict"})
def judge_contender_csv(context: dg.OpExecutionContext, config: VerdictConfig, warehouse: Warehouse) -> dg.Output[str]:
    """Judge a contender CSV against the warehouse's history (SPEC section 9), read-only: the markdown a pull
    request comment would carry goes to the run's log and to the output's metadata; the output is the verdict
    (`slower`, `faster`, `same`, `no baseline`). A CSV that cannot be judged fails the run with the reason."""
    try:
        verdict = judge_contender(warehouse.path, config.csv, gpu=config.gpu or None, backend=config.backend or None)
    except (BadContender, db.WarehouseMissing) as exc:
        raise dg.Failure(description=str(exc)) from None
    markdown = render_markdown(verdict)
    context.log.info(markdown)
    kernels = verdict.kernels
    return dg.Output(
        verdict.verdict,
        metadata={
            "verdict": dg.MetadataValue.text(verdict.verdict),
            "markdown": dg.MetadataValue.md(markdown),
            "contender": dg.MetadataValue.path(str(verdict.contender.path)),
            "runs": dg.MetadataValue.int(verdict.runs.height),
            "kernels": dg.MetadataValue.int(kernels.height),
            "slower_kernels": dg.MetadataValue.int(kernels.filter(kernels["verdict"] == "slower").height),
            "slower_runs": dg.MetadataValue.int(verdict.runs.filter(verdict.runs["verdict"] == "slower").height),
        },
    )


@dg.job(description="Judge a contender CSV (run config: ops.judge_contender_csv.config.csv) against the warehouse; writes nothing.")
def verdict_job():
    judge_contender_csv()
