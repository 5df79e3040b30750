//! Real Unix accounts for tests: `useradd` on creation, `userdel -r` on
//! drop.
//!
//! nextest runs each test in its own process, so several processes add and
//! remove accounts at once: names carry the creating pid and a counter, and
//! `useradd`/`userdel` are retried while another process holds the
//! passwd/group locks. Accounts are tagged in their GECOS field with the pid
//! that made them; one left behind by a killed test run (its pid gone) is
//! removed by the next run's first [`TestUser::create`].

use anyhow::{Context, anyhow, bail};
use std::ffi::{CString, OsStr};
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::Once;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

/// Where test users' home directories are made.
const HOME_BASE: &str = "/home";
/// GECOS tag of the accounts this module makes (followed by the pid).
const TAG: &str = "gleaner-testkit pid=";
/// Longest account name `useradd` accepts everywhere.
const MAX_NAME: usize = 32;
/// Attempts at `useradd`/`userdel` while the account files are locked.
const LOCK_ATTEMPTS: u32 = 200;

static SERIAL: AtomicU32 = AtomicU32::new(0);
static REAP: Once = Once::new();

/// A Unix account that exists for the life of this value.
///
/// Its home directory is `/home/NAME`, mode 0700, owned by the account;
/// its primary group is a group of its own. Dropping it kills the
/// account's processes and removes the account and its home.
#[derive(Debug)]
pub struct TestUser {
    name: String,
    uid: u32,
    gid: u32,
    groups: Vec<u32>,
    home: PathBuf,
}

impl TestUser {
    /// Creates an account named `PREFIX-PID-N` (the prefix is reduced to
    /// lower-case letters and digits and shortened so the name fits in 32
    /// characters). Needs root.
    pub fn create(prefix: &str) -> anyhow::Result<TestUser> {
        if !crate::is_root() {
            bail!("creating the test user {prefix:?} needs root");
        }
        REAP.call_once(reap_stale);
        let pid = std::process::id();
        let name = loop {
            let n = SERIAL.fetch_add(1, Ordering::Relaxed);
            let name = account_name(prefix, pid, n);
            match useradd(&name, pid)? {
                Added::Yes => break name,
                // Left by an earlier process that had our pid: next number.
                Added::NameTaken => continue,
            }
        };
        match Self::describe(&name) {
            Ok(user) => Ok(user),
            Err(e) => {
                let _ = userdel(&name);
                Err(e)
            }
        }
    }

    /// Looks the new account up and makes its home private.
    fn describe(name: &str) -> anyhow::Result<TestUser> {
        let pw = nix::unistd::User::from_name(name)
            .with_context(|| format!("looking up the new account {name}"))?
            .ok_or_else(|| anyhow!("useradd succeeded but {name} has no passwd entry"))?;
        let cname = CString::new(name)?;
        let groups = nix::unistd::getgrouplist(&cname, pw.gid)
            .with_context(|| format!("groups of {name}"))?
            .into_iter()
            .map(|g| g.as_raw())
            .collect();
        let home = pw.dir;
        std::fs::set_permissions(&home, std::fs::Permissions::from_mode(0o700))
            .with_context(|| format!("chmod 0700 {}", home.display()))?;
        let meta = std::fs::metadata(&home).with_context(|| format!("stat {}", home.display()))?;
        if meta.uid() != pw.uid.as_raw() {
            bail!(
                "{} is owned by uid {}, not by {name}",
                home.display(),
                meta.uid()
            );
        }
        Ok(TestUser {
            name: name.to_string(),
            uid: pw.uid.as_raw(),
            gid: pw.gid.as_raw(),
            groups,
            home,
        })
    }

    pub fn name(&self) -> &str {
        &self.name
    }

    pub fn uid(&self) -> u32 {
        self.uid
    }

    /// The account's primary group.
    pub fn gid(&self) -> u32 {
        self.gid
    }

    /// All the account's groups, primary included (`getgrouplist`).
    pub fn groups(&self) -> &[u32] {
        &self.groups
    }

    /// The account's home directory (0700, owned by it).
    pub fn home(&self) -> &Path {
        &self.home
    }

    /// A command that runs `program` as this user (uid, gid and groups),
    /// in its home directory, with `HOME`, `USER` and `LOGNAME` set.
    pub fn command(&self, program: impl AsRef<OsStr>) -> Command {
        let mut cmd = Command::new(program);
        self.as_user(&mut cmd);
        cmd.current_dir(&self.home)
            .env("HOME", &self.home)
            .env("USER", &self.name)
            .env("LOGNAME", &self.name);
        cmd
    }

    /// Makes `cmd` run as this user: supplementary groups, then gid, then
    /// uid (real, effective and saved), set in the child before `exec`.
    pub fn as_user<'c>(&self, cmd: &'c mut Command) -> &'c mut Command {
        let (uid, gid) = (self.uid, self.gid);
        // Allocated here: the child must not allocate between fork and exec.
        let groups: Vec<libc::gid_t> = self.groups.clone();
        // SAFETY: the closure only makes async-signal-safe system calls on
        // memory allocated before the fork.
        unsafe {
            cmd.pre_exec(move || {
                if libc::setgroups(groups.len(), groups.as_ptr()) != 0
                    || libc::setresgid(gid, gid, gid) != 0
                    || libc::setresuid(uid, uid, uid) != 0
                {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            })
        }
    }

    /// Runs `program args…` as this user and returns its output; an error
    /// if it cannot start.
    pub fn run(&self, program: &str, args: &[&str]) -> anyhow::Result<Output> {
        self.command(program)
            .args(args)
            .output()
            .with_context(|| format!("running {program} as {}", self.name))
    }

    /// Kills every process of this user (waits up to 5 s for them to go).
    pub fn kill_processes(&self) {
        let left = crate::kill_user_processes(self.uid, Duration::from_secs(5));
        if !left.is_empty() {
            eprintln!(
                "testkit: processes of {} survive SIGKILL: {left:?}",
                self.name
            );
        }
    }
}

impl Drop for TestUser {
    fn drop(&mut self) {
        self.kill_processes();
        if let Err(e) = userdel(&self.name) {
            eprintln!("testkit: cannot remove test user {}: {e:#}", self.name);
        }
    }
}

/// `PREFIX-PID-N`, the prefix cleaned to `[a-z0-9]` (starting with a
/// letter) and cut so the whole fits in [`MAX_NAME`].
fn account_name(prefix: &str, pid: u32, n: u32) -> String {
    let suffix = format!("-{pid}-{n}");
    let mut clean: String = prefix
        .chars()
        .filter(char::is_ascii_alphanumeric)
        .map(|c| c.to_ascii_lowercase())
        .collect();
    if !clean.starts_with(|c: char| c.is_ascii_lowercase()) {
        clean.insert_str(0, "gl");
    }
    clean.truncate(MAX_NAME.saturating_sub(suffix.len()));
    clean + &suffix
}

enum Added {
    Yes,
    NameTaken,
}

/// `useradd` exit status for "user name already in use".
const USERADD_NAME_IN_USE: i32 = 9;

fn useradd(name: &str, pid: u32) -> anyhow::Result<Added> {
    std::fs::create_dir_all(HOME_BASE).with_context(|| format!("creating {HOME_BASE}"))?;
    let home = Path::new(HOME_BASE).join(name);
    let comment = format!("{TAG}{pid}");
    let mut cmd = Command::new("useradd");
    cmd.args(["--create-home", "--user-group", "--no-log-init"])
        .args(["--shell", "/bin/sh", "--key", "UMASK=077"])
        .arg("--home-dir")
        .arg(&home)
        .args(["--comment", &comment, name]);
    let out = retry_locked(&mut cmd)?;
    if out.status.success() {
        return Ok(Added::Yes);
    }
    if out.status.code() == Some(USERADD_NAME_IN_USE) {
        return Ok(Added::NameTaken);
    }
    bail!(
        "useradd {name} failed ({}): {}",
        out.status,
        String::from_utf8_lossy(&out.stderr).trim()
    )
}

fn userdel(name: &str) -> anyhow::Result<()> {
    let out = retry_locked(Command::new("userdel").args(["--force", "--remove", name]))?;
    // userdel -r warns (and may exit 12) when there is no mail spool; the
    // account is gone all the same.
    if out.status.success() || nix::unistd::User::from_name(name).ok().flatten().is_none() {
        return Ok(());
    }
    bail!(
        "userdel {name} failed ({}): {}",
        out.status,
        String::from_utf8_lossy(&out.stderr).trim()
    )
}

/// Runs `cmd` until it does not fail on a locked passwd/group/shadow file,
/// with a growing pause (another test process holds the lock for the few
/// milliseconds of its own `useradd`/`userdel`).
pub(crate) fn retry_locked(cmd: &mut Command) -> anyhow::Result<Output> {
    let mut pause = Duration::from_millis(10);
    for _ in 0..LOCK_ATTEMPTS {
        let out = cmd
            .output()
            .with_context(|| format!("running {:?}", cmd.get_program()))?;
        let err = String::from_utf8_lossy(&out.stderr).to_lowercase();
        let locked = err.contains("lock") || err.contains("try again");
        if out.status.success() || !locked {
            return Ok(out);
        }
        std::thread::sleep(pause);
        pause = (pause * 2).min(Duration::from_millis(250));
    }
    bail!("{:?}: account files stayed locked", cmd.get_program())
}

/// Removes accounts tagged by a process that no longer exists (a test run
/// killed before its `Drop`s ran).
fn reap_stale() {
    let Ok(passwd) = std::fs::read_to_string("/etc/passwd") else {
        return;
    };
    for line in passwd.lines() {
        let fields: Vec<&str> = line.split(':').collect();
        let (Some(name), Some(uid), Some(gecos)) = (fields.first(), fields.get(2), fields.get(4))
        else {
            continue;
        };
        let Some(pid) = gecos.strip_prefix(TAG).and_then(|p| p.parse::<u32>().ok()) else {
            continue;
        };
        if Path::new(&format!("/proc/{pid}")).exists() {
            continue;
        }
        if let Ok(uid) = uid.parse::<u32>() {
            crate::kill_user_processes(uid, Duration::from_secs(5));
        }
        if let Err(e) = userdel(name) {
            eprintln!("testkit: cannot remove stale test user {name}: {e:#}");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_fit_and_start_with_a_letter() {
        assert_eq!(account_name("UserFS_a", 42, 3), "userfsa-42-3");
        assert_eq!(account_name("9lives", 1, 0), "gl9lives-1-0");
        let long = account_name(&"x".repeat(80), 4_194_304, 4_000_000_000);
        assert_eq!(long.len(), MAX_NAME);
        assert!(long.ends_with("-4194304-4000000000"));
    }

    #[test]
    fn creates_and_removes_an_account() {
        if crate::skip_unless_root("creates a Unix account") {
            return;
        }
        let user = TestUser::create("tkself").expect("create");
        let home = user.home().to_path_buf();
        let meta = std::fs::metadata(&home).expect("home");
        assert_eq!(meta.uid(), user.uid());
        assert_eq!(meta.mode() & 0o777, 0o700);
        assert!(user.groups().contains(&user.gid()));
        let out = user.run("id", &["-u"]).expect("id");
        assert_eq!(
            String::from_utf8_lossy(&out.stdout).trim(),
            user.uid().to_string()
        );
        let name = user.name().to_string();
        drop(user);
        assert!(
            nix::unistd::User::from_name(&name)
                .expect("lookup")
                .is_none()
        );
        assert!(!home.exists());
    }
}
