//! A DAG node's PRE, POST or HOLD script, run at the home as the DAG's
//! owner ([`super::spawn`]): in the node's directory, with the DAG's
//! environment plus HTCondor's (`_CONDOR_*`, `DAG_STATUS` …), in a cgroup
//! of its own, killed after its time limit. With `DEBUG file type` its
//! standard output and/or error are appended to that file, as the owner,
//! under a banner line as DAGMan writes it; otherwise they are discarded.
//!
//! A script's group is named after its DAG, node and kind, so that a
//! restarted home kills what a killed one left running before it runs the
//! script again ([`kill_leftovers`]).

use super::spawn::{UserProc, kill_group, spawn};
use crate::home::as_owner::{as_owner, io_error};
use crate::isolation::CgroupManager;
use crate::userfs::{Op, UnixUser};
use gleaner_core::dag::command::{Capture, ScriptKind};
use gleaner_core::dag::run::Exit;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;
use tokio::io::AsyncReadExt;

/// What to run.
#[derive(Clone, Debug)]
pub struct ScriptJob {
    pub dag: u64,
    pub node: usize,
    pub node_name: String,
    pub kind: ScriptKind,
    /// Program and arguments, macros expanded.
    pub argv: Vec<String>,
    /// The node's directory (absolute).
    pub dir: String,
    pub owner: String,
    pub env: Vec<(String, String)>,
    pub debug: Option<(String, Capture)>,
    /// Killed after this long (`None`: never).
    pub limit: Option<Duration>,
}

/// How it ended.
#[derive(Clone, Debug)]
pub struct ScriptEnd {
    pub dag: u64,
    pub node: usize,
    pub kind: ScriptKind,
    pub exit: Exit,
    /// Why it did not run, if it did not.
    pub error: Option<String>,
}

/// The cgroup of a script.
pub fn cgroup_name(dag: u64, node: usize, kind: ScriptKind) -> String {
    format!("dag-{dag}-{node}-{}", kind.name().to_ascii_lowercase())
}

/// Kills the scripts a previous run of the daemon left (their nodes run
/// them again).
pub fn kill_leftovers(cg: Option<&CgroupManager>) -> usize {
    let Some(m) = cg else { return 0 };
    let mut n = 0;
    for name in m.list().unwrap_or_default() {
        if name.starts_with("dag-")
            && let Ok(g) = m.open(&name)
        {
            let _ = g.kill();
            let _ = g.remove();
            n += 1;
        }
    }
    n
}

/// The program to run: a bare name is looked for in the node's directory
/// first (DAGMan runs it from there), then on the `PATH`.
fn program(dir: &str, argv0: &str) -> PathBuf {
    if argv0.starts_with('/') {
        return PathBuf::from(argv0);
    }
    let local = Path::new(dir).join(argv0);
    if argv0.contains('/') || local.exists() {
        local
    } else {
        PathBuf::from(argv0)
    }
}

/// Runs `job` to its end.
pub async fn run(job: ScriptJob, cg: Option<CgroupManager>) -> ScriptEnd {
    let end = |exit: Exit, error: Option<String>| ScriptEnd {
        dag: job.dag,
        node: job.node,
        kind: job.kind,
        exit,
        error,
    };
    let Some(argv0) = job.argv.first() else {
        return end(Exit::Code(1), Some("empty script command".into()));
    };
    let user = if nix::unistd::geteuid().is_root() {
        match UnixUser::lookup(&job.owner) {
            Ok(u) => Some(u),
            Err(e) => return end(Exit::Code(1), Some(e.to_string())),
        }
    } else {
        None
    };
    let (out, err) = match job.debug.as_ref().map(|d| d.1) {
        Some(Capture::Stdout) => (Stdio::piped(), Stdio::null()),
        Some(Capture::Stderr) => (Stdio::null(), Stdio::piped()),
        Some(Capture::All) => (Stdio::piped(), Stdio::piped()),
        None => (Stdio::null(), Stdio::null()),
    };
    let proc = UserProc {
        program: program(&job.dir, argv0),
        args: job.argv[1..].iter().map(Into::into).collect(),
        env: job.env.iter().map(|(k, v)| (k.into(), v.into())).collect(),
        cwd: PathBuf::from(&job.dir),
        user,
        stdin: Stdio::null(),
        stdout: out,
        stderr: err,
    };
    let name = cgroup_name(job.dag, job.node, job.kind);
    let group = cg.as_ref().and_then(|m| m.create(&name).ok());
    let mut child = match spawn(proc, group.as_ref()) {
        Ok(c) => c,
        Err(e) => {
            if let Some(g) = &group {
                let _ = g.remove();
            }
            // As a shell says when it cannot run a program.
            return end(Exit::Code(127), Some(e.to_string()));
        }
    };
    let pid = child.id().unwrap_or(0);
    let mut so = child.stdout.take();
    let mut se = child.stderr.take();
    // Both streams at once: a script filling one pipe must not block on
    // it while the other is read.
    let read = async move {
        let a = async {
            let mut v = Vec::new();
            if let Some(s) = so.as_mut() {
                let _ = (&mut *s).take(1 << 20).read_to_end(&mut v).await;
                // More than kept is read and dropped, never left to block.
                let _ = tokio::io::copy(s, &mut tokio::io::sink()).await;
            }
            v
        };
        let b = async {
            let mut v = Vec::new();
            if let Some(s) = se.as_mut() {
                let _ = (&mut *s).take(1 << 20).read_to_end(&mut v).await;
                let _ = tokio::io::copy(s, &mut tokio::io::sink()).await;
            }
            v
        };
        tokio::join!(a, b)
    };
    let wait = async {
        let (o, e) = read.await;
        (child.wait().await, o, e)
    };
    let result = match job.limit {
        Some(d) => tokio::time::timeout(d, wait).await.ok(),
        None => Some(wait.await),
    };
    if let Some(g) = &group {
        let _ = g.kill();
        let _ = g.remove();
    }
    let (exit, out, err) = match result {
        None => {
            kill_group(pid);
            tracing::warn!(dag = job.dag, node = %job.node_name, kind = job.kind.name(), "script over its time limit: killed");
            (Exit::Signal(9), Vec::new(), Vec::new())
        }
        Some((Ok(s), o, e)) => {
            use std::os::unix::process::ExitStatusExt;
            let exit = match (s.code(), s.signal()) {
                (Some(c), _) => Exit::Code(c),
                (None, Some(sig)) => Exit::Signal(sig),
                _ => Exit::Code(1),
            };
            (exit, o, e)
        }
        Some((Err(e), _, _)) => return end(Exit::Code(1), Some(e.to_string())),
    };
    if let Some((file, capture)) = &job.debug {
        write_debug(&job, file, *capture, exit, &out, &err).await;
    }
    end(exit, None)
}

/// Appends a script's captured output to its `DEBUG` file, as the owner,
/// under DAGMan's banner.
async fn write_debug(
    job: &ScriptJob,
    file: &str,
    capture: Capture,
    exit: Exit,
    out: &[u8],
    err: &[u8],
) {
    let (what, value) = match exit {
        Exit::Code(c) => ("ExitCode", c),
        Exit::Signal(s) => ("Signal", s),
    };
    let secs = crate::clock::now().as_micros() / 1_000_000;
    let mut text = format!(
        "*** Node={} Type={} {what}={value} Completion={secs} Cmd='{}'\n",
        job.node_name,
        job.kind.name(),
        job.argv.join(" ")
    )
    .into_bytes();
    if matches!(capture, Capture::Stdout | Capture::All) {
        text.extend_from_slice(out);
    }
    if matches!(capture, Capture::Stderr | Capture::All) {
        text.extend_from_slice(err);
    }
    let path = PathBuf::from(file);
    let res = as_owner(&job.owner, move |u| {
        let mut f = u.open_append_create(&path, 0o644)?;
        f.write_all(&text)
            .map_err(|e| io_error(Op::Append, &path, &u.user().name, e))
    })
    .await;
    if let Err(e) = res {
        tracing::warn!(file, error = %e, "cannot write a script's DEBUG file");
    }
}
