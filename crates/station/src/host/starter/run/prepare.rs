//! Stage 1, prepare: the sandbox, then the executable and the input files
//! from home.

use super::super::jic::FetchError;
use super::super::sandbox::{local_name, write_input};
use super::{Command, GuestRun, StarterError, Stop};
use crate::isolation::prepare_sandbox;
use gleaner_proto::wire::hold_code;
use std::path::PathBuf;
use tokio::sync::mpsc;

/// What `prepare` hands on.
pub(crate) struct Prepared {
    /// The program to start: transferred into the sandbox, or a path on
    /// this host.
    pub(crate) program: PathBuf,
}

impl GuestRun<'_> {
    /// Makes the sandbox and fills it. A home that cannot be reached
    /// evicts the guest (it goes back to its queue); a file that is
    /// missing or refused holds it. A vacate that arrived meanwhile ends
    /// the run here.
    pub(super) async fn prepare(
        &self,
        rx: &mut mpsc::UnboundedReceiver<Command>,
    ) -> Result<Prepared, Stop> {
        self.make_sandbox().await?;
        let program = self.program().await?;
        self.fetch_inputs().await?;
        while let Ok(cmd) = rx.try_recv() {
            match cmd {
                Command::Vacate(why, _) => return Err(Stop::evicted(why)),
                // Applied once the program runs (`supervise.rs`).
                Command::GangHold(h, _) => {
                    self.gang_held.store(h, std::sync::atomic::Ordering::SeqCst)
                }
            }
        }
        Ok(Prepared { program })
    }

    /// The sandbox: a file system of the job's `request_disk` (or the
    /// station's default) where the station bounds sandboxes, else a plain
    /// directory (`isolation::SandboxDisks`). A CRIU job's is a plain
    /// directory at the path every station gives it.
    async fn make_sandbox(&self) -> Result<(), Stop> {
        if self.is_criu() {
            prepare_sandbox(&self.sandbox, self.user())?;
            return Ok(());
        }
        let kib = self.disk_request_kib();
        let (disks, sandbox, user) = (
            self.starter.disks.clone(),
            self.sandbox.clone(),
            self.user(),
        );
        let disk = tokio::task::spawn_blocking(move || disks.make(&sandbox, kib, user))
            .await
            .map_err(|e| Stop::Failed(StarterError::Http(format!("sandbox task: {e}"))))??;
        if let Ok(mut d) = self.disk.lock() {
            *d = Some(disk);
        }
        Ok(())
    }

    /// The sandbox's size: `request_disk`, else the station's default.
    pub(super) fn disk_request_kib(&self) -> u64 {
        self.req
            .description
            .request_disk_kb
            .unwrap_or_else(|| self.starter.config.default_disk_mb.saturating_mul(1024))
    }

    /// The executable: fetched, or an absolute path that exists here.
    async fn program(&self) -> Result<PathBuf, Stop> {
        let d = &self.req.description;
        if d.transfer_executable {
            return match self.fetch(&d.executable, 0o755).await {
                Ok(p) => Ok(p),
                Err(FetchError::Transient(e)) => Err(Stop::evicted(format!("executable: {e}"))),
                Err(FetchError::Permanent(e)) => Err(Stop::held(format!("executable: {e}"))),
            };
        }
        let p = PathBuf::from(&d.executable);
        if !p.is_absolute() || !p.is_file() {
            // Maybe only this host lacks it: a failed start, counted by
            // the home, which holds the job if it keeps failing.
            return Err(Stop::start_failed(
                hold_code::FAILED_TO_EXECUTE,
                libc::ENOENT,
                format!(
                    "executable {:?} not found on {}",
                    d.executable, self.starter.config.host
                ),
            ));
        }
        Ok(p)
    }

    /// `transfer_input_files`, and `input` if not among them.
    async fn fetch_inputs(&self) -> Result<(), Stop> {
        let d = &self.req.description;
        let mut inputs: Vec<&String> = d.transfer_input_files.iter().collect();
        if let Some(i) = &d.input
            && !d.untransferred.input
            && !inputs.contains(&i)
        {
            inputs.push(i);
        }
        for name in inputs {
            match self.fetch(name, 0o644).await {
                Ok(_) => {}
                Err(FetchError::Transient(e)) => {
                    return Err(Stop::evicted(format!("input transfer interrupted: {e}")));
                }
                Err(FetchError::Permanent(e)) => {
                    return Err(Stop::held(format!("input transfer failed: {e}")));
                }
            }
        }
        Ok(())
    }

    /// Fetches one file from the home's shadow into the sandbox, as a new
    /// file with `mode` owned by the guest user.
    async fn fetch(&self, name: &str, mode: u32) -> Result<PathBuf, FetchError> {
        let local = local_name(name).map_err(|e| FetchError::Permanent(e.to_string()))?;
        let bytes = self.home.get_input(name).await?;
        let path = self.sandbox.join(&local);
        let user = self.user();
        let p = path.clone();
        let bounded = self
            .disk
            .lock()
            .ok()
            .is_some_and(|d| d.as_ref().is_some_and(|d| d.bounded()));
        let kib = self.disk_request_kib();
        tokio::task::spawn_blocking(move || write_input(&p, &bytes, mode, user))
            .await
            .map_err(|e| FetchError::Permanent(e.to_string()))?
            .map_err(|e| {
                if crate::disk::is_full(&e) && bounded {
                    // The job's own sandbox is full: its inputs do not fit
                    // in what it asked for, here or anywhere.
                    FetchError::Permanent(format!(
                        "the input files do not fit in request_disk ({kib} KiB): {} is full",
                        path.display()
                    ))
                } else if crate::disk::is_full(&e) {
                    // A full disk here is this host's trouble, not the
                    // job's: it goes back to its queue (issue 14).
                    FetchError::Transient(crate::disk::describe(&path, &e))
                } else {
                    FetchError::Permanent(format!("cannot write {}: {e}", path.display()))
                }
            })?;
        Ok(path)
    }
}
