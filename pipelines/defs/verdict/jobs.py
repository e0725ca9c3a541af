import dagster as dg
from pydantic import Field

from pipelines.defs.resources import Warehouse
from pipelines.statistics import db
from pipelines.verdict.against_history import judge_contender
from pipelines.verdict.contender import BadContender
from pipelines.verdict.judge import MIN_EFFECT
from pipelines.verdict.pairwise import judge_pair
from pipelines.verdict.render import headline, render_markdown


class VerdictConfig(dg.Config):
    """Which CSV to judge, as `python -m pipelines verdict` takes it."""

    csv: str = Field(description="the contender CSV's path, on the machine the run executes on")
    gpu: str = Field(default="", description="judge only the contender's runs on this GPU (a filter); empty: all of them")
    backend: str = Field(default="", description="the backend the contender was built for; empty: from its file name")
    baselines: list[str] = Field(
        default_factory=list,
        description="baseline CSVs of the same machine (branch against main); empty: judge against the warehouse's history",
    )
    min_effect: float = Field(default=MIN_EFFECT, ge=0, lt=1, description="the smallest change called slower or faster (0.05: 5%)")


@dg.op(tags={"kind": "verdict"})
def judge_contender_csv(context: dg.OpExecutionContext, config: VerdictConfig, warehouse: Warehouse) -> dg.Output[str]:
    """Judge a contender CSV against the warehouse's history, or against `baselines` CSVs when given (SPEC section
    9), read-only: the markdown a pull request comment would carry goes to the run's log and to the output's
    metadata; the output is the verdict (`slower`, `faster`, `same`, `inconclusive`, `no baseline`), its exit code
    in the metadata. A CSV that cannot be judged fails the run with the reason."""
    gpu, backend = config.gpu or None, config.backend or None
    try:
        if config.baselines:
            verdict = judge_pair(
                config.csv, config.baselines, gpu=gpu, backend=backend, min_effect=config.min_effect, warehouse_dir=warehouse.path
            )
        else:
            verdict = judge_contender(warehouse.path, config.csv, gpu=gpu, backend=backend, min_effect=config.min_effect)
    except (BadContender, db.WarehouseMissing) as exc:
        raise dg.Failure(description=str(exc)) from None
    markdown = render_markdown(verdict)
    context.log.info(markdown)
    kernels = verdict.kernels
    return dg.Output(
        verdict.verdict,
        metadata={
            "verdict": dg.MetadataValue.text(verdict.verdict),
            "exit_code": dg.MetadataValue.int(verdict.exit_code),
            "headline": dg.MetadataValue.text(headline(verdict)),
            "markdown": dg.MetadataValue.md(markdown),
            "contender": dg.MetadataValue.path(str(verdict.contender.path)),
            "runs": dg.MetadataValue.int(verdict.runs.height),
            "kernels": dg.MetadataValue.int(kernels.height),
            "slower_kernels": dg.MetadataValue.int(kernels.filter(kernels["verdict"] == "slower").height),
            "slower_runs": dg.MetadataValue.int(verdict.runs.filter(verdict.runs["verdict"] == "slower").height),
        },
    )


@dg.job(
    description=(
        "Judge a contender CSV (run config: ops.judge_contender_csv.config.csv) against the warehouse, or against "
        "baseline CSVs (config.baselines); writes nothing."
    )
)
def verdict_job():
    judge_contender_csv()
