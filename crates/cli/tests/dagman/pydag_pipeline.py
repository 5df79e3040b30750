"""Writes a DAGMan workflow with HTCondor's own Python DAG writer
(`htcondor2.dags`, in PyPI's `htcondor` wheel), for Gleaner's `pydags`
test (tests/dagman/pydags.rs).

usage: pydag_pipeline.py DIR write            writes DIR/pipeline.dag and the
                                              submit files it names
       pydag_pipeline.py DIR rescue FILE      reads rescue DAG FILE with
                                              htcondor2.dags.rescue and prints
                                              the done nodes, one a line

The workflow: a `prep` node with PRE and POST scripts; a layer of six
`work` nodes (one fails once and is retried) fed by prep; two `merge`
nodes, each after three work nodes (a Grouper edge, which the writer
turns into a join node); a FINAL `report` node; a node status file, a
jobstate log, a DOT file and DAGMan configuration. (The writer's
`max_jobs_by_category` is not used: it writes `CATEGORY name limit`
where DAGMan's syntax is `MAXJOBS name limit`, which HTCondor refuses.)
A work node whose `fail_always` file exists keeps failing (for the rescue
run).
"""

import sys
from pathlib import Path

import htcondor2 as htcondor
from htcondor2 import dags


def sh(script):
    return {
        "executable": "/bin/sh",
        "arguments": f"\"-c '{script}'\"",
        "log": "pipeline.log",
    }


def build(base: Path) -> dags.DAG:
    dag = dags.DAG(
        dagman_config={"DAGMAN_MAX_JOBS_IDLE": 10, "DAGMAN_USE_STRICT": 1},
        dot_config=dags.DotConfig(Path("pipeline.dot"), update=True),
        jobstate_log=Path("pipeline.jobstate.log"),
        node_status_file=dags.NodeStatusFile(Path("pipeline.status"), update_time=1),
    )
    prep = dag.layer(
        name="prep",
        submit_description=htcondor.Submit(
            {**sh("echo prep > prep.out"), "universe": "local"}
        ),
        pre=dags.Script(executable=str(base / "note.sh"), arguments=["pre", "$JOB", "$RETRY"]),
        post=dags.Script(executable=str(base / "note.sh"), arguments=["post", "$JOB", "$RETURN"]),
    )
    work = prep.child_layer(
        name="work",
        submit_description=htcondor.Submit(
            {
                "executable": str(base / "work.sh"),
                "arguments": "$(i)",
                "universe": "local",
                "output": "work.$(i).out",
                "log": "pipeline.log",
            }
        ),
        vars=[{"i": str(i)} for i in range(6)],
        retries=2,
        category="work",
    )
    merge = work.child_layer(
        name="merge",
        submit_description=htcondor.Submit(
            {**sh("cat work.$(first).out work.$(second).out work.$(third).out > merge.$(m).out"), "universe": "local"}
        ),
        vars=[{"m": "a", "first": "0", "second": "1", "third": "2"},
              {"m": "b", "first": "3", "second": "4", "third": "5"}],
        edge=dags.Grouper(parent_chunk_size=3, child_chunk_size=1),
    )
    dag.final(
        name="report",
        submit_description=htcondor.Submit(
            {**sh("cat merge.a.out merge.b.out > report.out"), "universe": "local"}
        ),
        post=dags.Script(executable=str(base / "note.sh"), arguments=["final", "$JOB", "$DAG_STATUS", "$RETURN"]),
    )
    return dag


def main():
    base = Path(sys.argv[1]).resolve()
    if sys.argv[2] == "write":
        dags.write_dag(build(base), base, dag_file_name="pipeline.dag")
    elif sys.argv[2] == "rescue":
        dag = build(base)
        dags.rescue(dag, Path(sys.argv[3]))
        for layer in dag.nodes:
            for index, done in sorted(layer.done.items()):
                if done:
                    print(f"{layer.name}:{index}")
    else:
        sys.exit(f"unknown command {sys.argv[2]}")


if __name__ == "__main__":
    main()
