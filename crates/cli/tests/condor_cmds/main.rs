//! `glean` as HTCondor's commands (`condor_submit`, `condor_q`, …) on real
//! personal pools: the output formats HTCondor documents (`formats`), user
//! text escaped on every terminal (`escaping`), and an unmodified PyPI
//! tool driving a pool through the commands (`pypi`), the station's edit
//! endpoint under attack (`qedit_api`). One test binary;
//! each test starts one pool of its own.

#[path = "../common/mod.rs"]
mod common;
mod escaping;
mod formats;
mod pool;
mod pypi;
mod qedit_api;
