//! CRIU: detection (version ≥ 4.1 and `criu check`), and the [`Criu`]
//! backend that dumps and restores a job's whole process tree.

use super::bundle::{BundleSource, Manifest};
use super::{CheckpointError, io_err};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

/// Whether this machine has a working CRIU (version ≥ 4.1 and `criu check`
/// passing).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CriuStatus {
    Available { version: String },
    Unavailable { reason: String },
}

impl CriuStatus {
    pub fn available(&self) -> bool {
        matches!(self, CriuStatus::Available { .. })
    }
}

/// Parses `criu --version` output (`Version: 3.17.1`) into (major, minor).
pub fn parse_criu_version(out: &str) -> Option<(u32, u32)> {
    let line = out
        .lines()
        .find(|l| l.trim_start().starts_with("Version:"))?;
    let v = line.split(':').nth(1)?.trim();
    let mut it = v.split(['.', '-']);
    let major = it.next()?.parse().ok()?;
    let minor = it.next().and_then(|m| m.parse().ok()).unwrap_or(0);
    Some((major, minor))
}

/// Probes CRIU (runs `criu --version` and `criu check`).
pub fn detect_criu() -> CriuStatus {
    let out = match Command::new("criu").arg("--version").output() {
        Ok(o) => o,
        Err(e) => {
            return CriuStatus::Unavailable {
                reason: format!("criu not runnable: {e}"),
            };
        }
    };
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let Some((maj, min)) = parse_criu_version(&text) else {
        return CriuStatus::Unavailable {
            reason: format!("unrecognised `criu --version` output {:?}", text.trim()),
        };
    };
    if (maj, min) < (4, 1) {
        return CriuStatus::Unavailable {
            reason: format!("criu {maj}.{min} is older than 4.1"),
        };
    }
    match Command::new("criu").arg("check").output() {
        Ok(o) if o.status.success() => CriuStatus::Available {
            version: format!("{maj}.{min}"),
        },
        Ok(o) => CriuStatus::Unavailable {
            reason: format!(
                "`criu check` failed: {}",
                String::from_utf8_lossy(&o.stderr).trim()
            ),
        },
        Err(e) => CriuStatus::Unavailable {
            reason: format!("`criu check` not runnable: {e}"),
        },
    }
}

/// CRIU status, probed once per process.
pub fn criu_status() -> &'static CriuStatus {
    static S: OnceLock<CriuStatus> = OnceLock::new();
    S.get_or_init(detect_criu)
}

/// Bundle names of CRIU image files carry this prefix; every other file of
/// a CRIU bundle belongs in the sandbox.
pub const CRIU_IMAGE_PREFIX: &str = "criu-image:";
/// Files of the image directory that are never shipped.
const CRIU_LOCAL_FILES: [&str; 3] = ["dump.log", "restore.log", "restore.pid"];

/// Transparent checkpoints with CRIU (issue #6; platform.md §2.3).
///
/// Unlike the papers' Condor, which relinked jobs with a checkpoint library
/// (Mutka 1988 §2.6), nothing is asked of the job: `criu dump` writes its
/// whole process tree (memory, registers, open files) into `images`, and
/// `criu restore` brings it back, here or on another station.
///
/// CRIU runs as the guest's own user with only `CAP_CHECKPOINT_RESTORE`
/// (`--unprivileged`, through `setpriv`): root on these machines lacks
/// `CAP_SYS_RESOURCE` and cannot dump another user's process, and a
/// restore can then never give the job more than the guest user has, even
/// from tampered images. The price is that the job cannot have its own PID
/// namespace (an unprivileged dump cannot mount the namespace's /proc), so
/// a restore fails if one of the job's PIDs is taken on the target; the
/// starter then sends the job elsewhere.
///
/// The images hold files by path: a job must run in the same sandbox path
/// on every station (the starter's `criu_sandbox_dir`), and the bundle
/// carries the sandbox's files beside the images.
#[derive(Clone, Debug)]
pub struct Criu {
    /// Image directory: owned by the guest user, outside its sandbox.
    pub images: PathBuf,
    /// Who the job runs as (`None`: the daemon's own identity).
    pub user: Option<crate::isolation::GuestUser>,
}

impl Criu {
    /// `criu` itself, or `setpriv … criu --unprivileged` as the guest user.
    pub fn program_and_args(&self) -> (PathBuf, Vec<std::ffi::OsString>) {
        match self.user {
            Some(u) => (
                PathBuf::from("setpriv"),
                [
                    format!("--reuid={}", u.uid),
                    format!("--regid={}", u.gid),
                    // The groups the launcher gives a guest: CRIU's
                    // restorer skips setgroups (which needs CAP_SETGID)
                    // only when they already match.
                    format!("--groups={}", u.gid),
                    "--inh-caps=-all,+checkpoint_restore".into(),
                    "--ambient-caps=+checkpoint_restore".into(),
                    "--".into(),
                    "criu".into(),
                ]
                .into_iter()
                .map(Into::into)
                .collect(),
            ),
            None => (PathBuf::from("criu"), Vec::new()),
        }
    }

    fn command(&self, action: &str) -> Command {
        let (prog, mut args) = self.program_and_args();
        args.push(action.into());
        if self.user.is_some() {
            args.push("--unprivileged".into());
        }
        let mut c = Command::new(prog);
        c.args(args)
            .arg("-D")
            .arg(&self.images)
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null());
        c
    }

    /// The error lines of a CRIU log, for a useful message.
    fn log_errors(&self, log: &str) -> String {
        let text = std::fs::read_to_string(self.images.join(log)).unwrap_or_default();
        let errs: Vec<&str> = text
            .lines()
            .filter(|l| l.contains("Error") && !l.contains("RLIMIT_NOFILE"))
            .collect();
        let tail = errs.len().saturating_sub(3);
        errs[tail..].join(" | ")
    }

    /// Empties the image directory (keeps the directory itself).
    pub fn clear(&self) -> Result<(), CheckpointError> {
        let rd = match std::fs::read_dir(&self.images) {
            Ok(rd) => rd,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
            Err(e) => return Err(io_err(&self.images, e)),
        };
        for e in rd.flatten() {
            let p = e.path();
            let r = if e.file_type().is_ok_and(|t| t.is_dir()) {
                std::fs::remove_dir_all(&p)
            } else {
                std::fs::remove_file(&p)
            };
            r.map_err(|e| io_err(&p, e))?;
        }
        Ok(())
    }

    /// Whether the directory holds a complete dump.
    pub fn has_images(&self) -> bool {
        self.images.join("inventory.img").is_file()
    }

    /// Dumps the tree rooted at `pid` into the (emptied) image directory.
    /// The tree is gone afterwards; on failure CRIU leaves it running.
    pub fn dump(&self, pid: u32) -> Result<(), CheckpointError> {
        self.clear()?;
        let st = self
            .command("dump")
            .args(["-t", &pid.to_string(), "-o", "dump.log"])
            .status()
            .map_err(|e| CheckpointError::Criu(format!("cannot run criu: {e}")))?;
        if !st.success() {
            return Err(CheckpointError::Criu(format!(
                "dump of {pid} failed ({st}): {}",
                self.log_errors("dump.log")
            )));
        }
        Ok(())
    }

    /// Where a restore writes the restored root's PID.
    pub fn pidfile(&self) -> PathBuf {
        self.images.join("restore.pid")
    }

    /// Program and arguments that restore the dump, detached (the caller
    /// reaps the tree as a child subreaper and learns its root from
    /// [`Criu::pidfile`]). `inherit` maps file descriptors of the restoring
    /// process onto files the job had open, by their paths at dump time
    /// (the capture files of stdout and stderr, which are new on a new
    /// host).
    pub fn restore_command(&self, inherit: &[(i32, &Path)]) -> (PathBuf, Vec<std::ffi::OsString>) {
        let (prog, mut args) = self.program_and_args();
        args.push("restore".into());
        if self.user.is_some() {
            args.push("--unprivileged".into());
        }
        for a in [
            "-d",
            "-o",
            "restore.log",
            "--manage-cgroups=ignore",
            "--pidfile",
        ] {
            args.push(a.into());
        }
        args.push(self.pidfile().into_os_string());
        args.push("-D".into());
        args.push(self.images.clone().into_os_string());
        for (fd, path) in inherit {
            // CRIU names a file by its path without the leading slash.
            let key = path.to_string_lossy();
            args.push("--inherit-fd".into());
            args.push(format!("fd[{fd}]:{}", key.trim_start_matches('/')).into());
        }
        (prog, args)
    }

    /// How the launcher starts [`Criu::restore_command`]: as root (CRIU
    /// drops to the guest user itself, keeping its one capability, so no
    /// `no_new_privs`), under a reaping waiter that learns the restored
    /// root from the pidfile. The caller sets the standard streams (those
    /// named in `inherit`).
    pub fn restore_spec(
        &self,
        sandbox: &Path,
        inherit: &[(i32, &Path)],
    ) -> crate::isolation::GuestSpec {
        let _ = std::fs::remove_file(self.pidfile());
        let (program, args) = self.restore_command(inherit);
        crate::isolation::GuestSpec {
            program,
            args,
            env: vec![(
                "PATH".into(),
                "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin".into(),
            )],
            no_new_privs: false,
            reaper: true,
            restore_pidfile: Some(self.pidfile()),
            ..crate::isolation::GuestSpec::new("", sandbox)
        }
    }

    /// Why the last restore failed, from its log.
    pub fn restore_errors(&self) -> String {
        self.log_errors("restore.log")
    }

    /// The files of a CRIU checkpoint: every image, and every regular file
    /// at the top of the sandbox except `skip` (the output capture files,
    /// which the home already has). CRIU reopens files by path and checks
    /// their sizes, so the sandbox goes along.
    pub fn bundle_sources(
        &self,
        sandbox: &Path,
        skip: &[&str],
    ) -> Result<Vec<BundleSource>, CheckpointError> {
        let mut out = Vec::new();
        for (dir, prefix) in [
            (&self.images, CRIU_IMAGE_PREFIX),
            (&sandbox.to_path_buf(), ""),
        ] {
            let mut names: Vec<String> = std::fs::read_dir(dir)
                .map_err(|e| io_err(dir, e))?
                .flatten()
                .filter(|e| e.file_type().is_ok_and(|t| t.is_file()))
                .filter_map(|e| e.file_name().to_str().map(str::to_string))
                .collect();
            names.sort();
            for n in names {
                let local = prefix.is_empty();
                if (local && (skip.contains(&n.as_str()) || n.starts_with(CRIU_IMAGE_PREFIX)))
                    || (!local && CRIU_LOCAL_FILES.contains(&n.as_str()))
                {
                    continue;
                }
                out.push(BundleSource {
                    name: format!("{prefix}{n}"),
                    path: dir.join(&n),
                });
            }
        }
        if !out
            .iter()
            .any(|s| s.name == format!("{CRIU_IMAGE_PREFIX}inventory.img"))
        {
            return Err(CheckpointError::Criu("no dump to collect".into()));
        }
        Ok(out)
    }

    /// Where a file of a CRIU bundle goes: images into the image
    /// directory, the rest into the sandbox.
    pub fn destination(&self, sandbox: &Path, name: &str) -> PathBuf {
        match name.strip_prefix(CRIU_IMAGE_PREFIX) {
            Some(img) => self.images.join(img),
            None => sandbox.join(name),
        }
    }

    /// Unpacks a CRIU bundle file (images into the image directory, the
    /// rest into the sandbox), every file owned by the guest user: CRIU
    /// runs as that user and reads them.
    pub fn unpack(&self, bundle: &Path, sandbox: &Path) -> Result<Manifest, CheckpointError> {
        self.clear()?;
        let f = std::fs::File::open(bundle).map_err(|e| io_err(bundle, e))?;
        let route = |name: &str| self.destination(sandbox, name);
        let got = super::unpack::restore(
            &mut std::io::BufReader::with_capacity(1 << 20, f),
            &super::unpack::Restore {
                route: &route,
                owner: self.user.map(|u| (u.uid, u.gid)),
                threads: super::pack::default_threads(),
            },
        )?;
        Ok(got.manifest)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn criu_versions_parse() {
        assert_eq!(parse_criu_version("Version: 3.17.1\n"), Some((3, 17)));
        assert_eq!(parse_criu_version("Version: 4.1\nGitID: x"), Some((4, 1)));
        assert_eq!(parse_criu_version("garbage"), None);
    }
}
