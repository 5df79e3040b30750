//! Job DAGs: DMW's dependence graph, HTCondor's DAG language loaded into
//! one DAG, and DAGMan's run of it as a state machine.

mod graph;
mod load;
mod run;
mod sim;
