//! Stage 3b, launch (each start of the program): the guest started
//! unprivileged in its cgroup (or restored by CRIU), its control, its exit
//! waiter, the output streamer, and the ladder's first actions.

use super::super::config::io_err;
use super::super::control::{Control, parent_of};
use super::super::criu::await_restore;
use super::super::sandbox::{local_name, open_output};
use super::{GuestRun, StarterError, Stop, prepare::Prepared, setup::Launchpad};
use crate::checkpoint::Criu;
use crate::isolation::{
    GuestLauncher, GuestNet, GuestProcess, GuestSpec, IsolationError, WANT_VOLUMES, wanted_volumes,
};
use gleaner_proto::job::{JobEventKind, JobState};
use gleaner_proto::wire::hold_code;
use std::ffi::OsString;
use std::fs::File;
use std::path::Path;
use std::process::{ExitStatus, Stdio};
use std::time::{Duration, Instant};
use tokio::sync::oneshot;

/// The exit status as the waiter thread sends it.
pub(crate) type ExitWait = oneshot::Receiver<std::io::Result<ExitStatus>>;

/// One start of the program.
pub(crate) struct Pass {
    pub(crate) ctl: Control,
    /// The job's root process: the program, the job under its reaping
    /// waiter, or the restored root.
    pub(crate) pid: u32,
    pub(crate) exit: ExitWait,
    /// Why the guest must leave at once (from the ladder's first actions).
    pub(crate) leave: Option<String>,
    /// The job was restored by CRIU rather than started.
    pub(crate) restored: bool,
    /// The guest's own network (its helper stops when the pass is over).
    pub(crate) _net: Option<GuestNet>,
}

impl GuestRun<'_> {
    /// Starts the program once: spawns it (a CRIU job with a dump at hand
    /// is restored, not started), finds its root process, and hands it
    /// to a waiter thread.
    pub(super) async fn launch(
        &self,
        pad: &mut Launchpad,
        prepared: &Prepared,
    ) -> Result<Pass, Stop> {
        let restoring = self.criu().filter(Criu::has_images);
        let mut spec = self.spec(pad, prepared, restoring.as_ref())?;
        let net = self.network().await?;
        spec.netns = net.as_ref().map(GuestNet::fd);
        self.entry.slot.starting();
        // Idle at all times, own PID and mount namespaces where allowed
        // (not for CRIU jobs), umask 077: the station's confinement.
        let proc = match GuestLauncher::new().spawn_confined(
            spec,
            pad.iso.cgroup.as_ref(),
            &self.starter.confinement,
        ) {
            Ok(p) => p,
            // Whatever made the exec fail (E2BIG, ENOENT, EACCES, ENOEXEC,
            // a NUL byte in an argument), it is a failed start: the home
            // counts them and holds a job that keeps failing (issue 14).
            Err(IsolationError::Spawn { source, .. }) if restoring.is_none() => {
                return Err(Stop::start_failed(
                    hold_code::FAILED_TO_EXECUTE,
                    source.raw_os_error().unwrap_or(0),
                    format!(
                        "cannot execute {:?}: {}",
                        self.req.description.executable,
                        describe_errno(&source)
                    ),
                ));
            }
            Err(e) => return Err(e.into()),
        };
        // The launched process: with a reaper, the waiter, whose
        // descendants are the whole job.
        pad.iso.record.spawned(proc.pid());
        let (mut proc, pid) = match &restoring {
            Some(c) => self.restored_root(c, proc, pad).await?,
            None => {
                let pid = self.job_root(&proc).await;
                (proc, pid)
            }
        };
        let pgid = i32::try_from(pid).unwrap_or(0);
        pad.iso.guard.pgid = Some(pgid);
        let ctl = Control::new(
            pgid,
            pad.iso.cgroup.clone(),
            self.starter.config.checkpoint_signal,
            self.user().map(|u| u.uid),
            proc.has_namespaces(),
        );
        let (exit_tx, exit) = oneshot::channel();
        std::thread::spawn(move || {
            let _ = exit_tx.send(proc.wait());
        });
        let mut pass = Pass {
            ctl,
            pid,
            exit,
            leave: None,
            restored: restoring.is_some(),
            _net: net,
        };
        // Output streaming: one streamer for all passes.
        pad.streams.start(&self.home);
        self.announce(pad, &mut pass);
        Ok(pass)
    }

    /// What to start: the program, or CRIU's restore of the dump. Either
    /// writes to this run's capture files.
    fn spec(
        &self,
        pad: &Launchpad,
        prepared: &Prepared,
        restoring: Option<&Criu>,
    ) -> Result<GuestSpec, Stop> {
        let d = &self.req.description;
        let stdin = match &d.input {
            // `transfer_input = false`: the file stays at home.
            Some(i) if !d.untransferred.input => {
                let p = self.sandbox.join(local_name(i)?);
                Stdio::from(open_output(&p).map_err(|e| io_err(&p, e))?.ok_or_else(|| {
                    io_err(&p, std::io::Error::from(std::io::ErrorKind::NotFound))
                })?)
            }
            _ => Stdio::null(),
        };
        let dup = |f: &File, p: &Path| f.try_clone().map_err(|e| io_err(p, e));
        let c = &pad.capture;
        Ok(match restoring {
            Some(criu) => GuestSpec {
                // The restored job writes to this run's capture files.
                stdin,
                stdout: Stdio::from(dup(&c.out, &c.out_path)?),
                stderr: Stdio::from(dup(&c.err, &c.err_path)?),
                ..criu.restore_spec(&self.sandbox, &[(1, &c.out_path), (2, &c.err_path)])
            },
            None => GuestSpec {
                program: prepared.program.clone(),
                args: d.arguments.iter().map(OsString::from).collect(),
                env: pad.env.clone().into_iter().collect(),
                user: self.user(),
                sandbox: self.sandbox.clone(),
                // Idle from the first instruction, whatever the owner does
                // (issue 12); the confinement pins it.
                sched_idle: true,
                // Namespaces come from the confinement, which leaves them
                // to non-CRIU jobs: an unprivileged CRIU dump cannot
                // handle a PID namespace (see `Criu`).
                pid_namespace: false,
                no_new_privs: true,
                reaper: self.is_criu(),
                restore_pidfile: None,
                netns: None,
                volumes: wanted_volumes(d.custom_attrs.get(WANT_VOLUMES).map(String::as_str)),
                stdin,
                stdout: Stdio::from(dup(&c.out, &c.out_path)?),
                stderr: Stdio::from(dup(&c.err, &c.err_path)?),
            },
        })
    }

    /// A network of its own for a guest that gets namespaces, where the
    /// station gives guests one (`isolation::GuestNet`); `None`: the
    /// host's. CRIU jobs keep the host's namespaces, the network's too.
    async fn network(&self) -> Result<Option<GuestNet>, Stop> {
        let Some(stack) = self.starter.net.clone() else {
            return Ok(None);
        };
        if self.is_criu() || !self.starter.confinement.namespaces {
            return Ok(None);
        }
        let net = tokio::task::spawn_blocking(move || {
            GuestNet::new(&stack, crate::isolation::lifeline())
        })
        .await
        .map_err(|e| Stop::Failed(StarterError::Http(format!("network task: {e}"))))??;
        Ok(Some(net))
    }

    /// Waits for CRIU to hand over the restored job; its root process (the
    /// waiter if the job already finished). A failed restore evicts the
    /// guest: not the job's fault, maybe this host's (a PID in use), and
    /// the home avoids us next time.
    async fn restored_root(
        &self,
        c: &Criu,
        mut proc: GuestProcess,
        pad: &Launchpad,
    ) -> Result<(GuestProcess, u32), Stop> {
        let waiter = proc.pid();
        match await_restore(c, waiter).await {
            Ok(root) => {
                let pid = root.unwrap_or(waiter);
                tracing::info!(job = %self.req.job_id, pid, "guest restored by CRIU");
                Ok((proc, pid))
            }
            Err(why) => {
                let _ = c.clear();
                if let Some(g) = &pad.iso.cgroup {
                    let _ = g.kill();
                }
                let _ = tokio::task::spawn_blocking(move || proc.wait()).await;
                Err(Stop::evicted(format!("CRIU restore failed: {why}")))
            }
        }
    }

    /// The process to control: the launched one, or the job below the
    /// waiter that launched it: a CRIU job's reaping waiter (CRIU dumps
    /// the job, not the waiter), or the waiter of a guest in its own PID
    /// namespace (the job is the namespace's first process).
    async fn job_root(&self, proc: &GuestProcess) -> u32 {
        let mut pid = proc.pid();
        if !self.is_criu() && !proc.has_namespaces() {
            return pid;
        }
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            if let Some(p) = first_child(pid) {
                pid = p;
                break;
            }
            if Instant::now() > deadline || parent_of(pid).is_none() {
                break;
            }
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        pid
    }

    /// `started` on the first start; then the ladder's first actions. The
    /// guest is idle from its first instruction either way.
    fn announce(&self, pad: &mut Launchpad, pass: &mut Pass) {
        if pad.runs == 0 {
            self.home.report(
                JobEventKind::Started,
                JobState::Running,
                format!("pid {} on {}", pass.pid, self.starter.config.host),
            );
        } else {
            tracing::info!(job = %self.req.job_id, pid = pass.pid, runs = pad.runs, "guest restarted in place after a checkpoint");
        }
        if let Some(f) = pad.first.take() {
            pass.leave = self.apply(&mut pass.ctl, &f, &pad.ladder);
        }
        // A restored job has the priority it was dumped with (idle, as
        // every guest): make sure of it.
        if pass.restored && pass.leave.is_none() {
            pass.ctl.keep_idle();
        }
    }
}

/// An exec error as a user can act on it: the OS's text and the errno's
/// name (`Argument list too long (E2BIG, errno 7)`).
fn describe_errno(e: &std::io::Error) -> String {
    let name = match e.raw_os_error() {
        Some(libc::E2BIG) => "E2BIG",
        Some(libc::ENOENT) => "ENOENT",
        Some(libc::EACCES) => "EACCES",
        Some(libc::ENOEXEC) => "ENOEXEC",
        Some(libc::ENOMEM) => "ENOMEM",
        Some(libc::ETXTBSY) => "ETXTBSY",
        Some(libc::ELOOP) => "ELOOP",
        Some(libc::ENOTDIR) => "ENOTDIR",
        Some(libc::EPERM) => "EPERM",
        Some(_) => "",
        None => return e.to_string(),
    };
    let code = e.raw_os_error().unwrap_or(0);
    // io::Error's text ends with "(os error N)": name it instead.
    let text = e.to_string();
    let text = text
        .rsplit_once(" (os error")
        .map_or(text.as_str(), |(t, _)| t);
    if name.is_empty() {
        format!("{text} (errno {code})")
    } else {
        format!("{text} ({name}, errno {code})")
    }
}

/// The first child of `pid` (a waiter has exactly one).
fn first_child(pid: u32) -> Option<u32> {
    std::fs::read_to_string(format!("/proc/{pid}/task/{pid}/children"))
        .ok()?
        .split_whitespace()
        .next()?
        .parse()
        .ok()
}
