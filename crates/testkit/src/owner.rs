//! Who a test's jobs belong to.
//!
//! A station's jobs belong to Unix accounts: one running as root acts as
//! any account but root, an unprivileged one only as itself. So a test
//! that submits needs a real account: as root a fresh [`TestUser`] (removed
//! on drop), otherwise the account running the test.

use crate::TestUser;
use anyhow::Context;
use std::ffi::OsStr;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::Command;

/// The owner of a test's jobs.
#[derive(Debug)]
pub struct TestOwner {
    made: Option<TestUser>,
    name: String,
    uid: u32,
    gid: u32,
}

impl TestOwner {
    /// As root, a new account named after `prefix`; otherwise the account
    /// running the test.
    pub fn new(prefix: &str) -> anyhow::Result<TestOwner> {
        if crate::is_root() {
            let u = TestUser::create(prefix)?;
            return Ok(TestOwner {
                name: u.name().to_string(),
                uid: u.uid(),
                gid: u.gid(),
                made: Some(u),
            });
        }
        let uid = nix::unistd::geteuid();
        let pw = nix::unistd::User::from_uid(uid)?
            .with_context(|| format!("uid {uid} has no account"))?;
        Ok(TestOwner {
            name: pw.name,
            uid: uid.as_raw(),
            gid: pw.gid.as_raw(),
            made: None,
        })
    }

    /// The account name (what a token for this owner names).
    pub fn name(&self) -> &str {
        &self.name
    }

    pub fn uid(&self) -> u32 {
        self.uid
    }

    pub fn gid(&self) -> u32 {
        self.gid
    }

    /// The account made for the test, if it is not the test's own.
    pub fn test_user(&self) -> Option<&TestUser> {
        self.made.as_ref()
    }

    /// Creates `dir` (and its parents) for this owner's files: owned by
    /// it, mode 0755, with every directory above it searchable by all.
    pub fn dir(&self, dir: &Path) -> anyhow::Result<()> {
        std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
        self.give(dir)?;
        std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o755))?;
        reachable(dir)
    }

    /// Hands `path` (not following a symlink) to this owner.
    pub fn give(&self, path: &Path) -> anyhow::Result<()> {
        if self.made.is_none() {
            return Ok(());
        }
        std::os::unix::fs::lchown(path, Some(self.uid), Some(self.gid))
            .with_context(|| format!("chown {} to {}", path.display(), self.name))
    }

    /// Writes `data` to `path` as a file of this owner's.
    pub fn write(&self, path: &Path, data: impl AsRef<[u8]>) -> anyhow::Result<()> {
        std::fs::write(path, data).with_context(|| format!("writing {}", path.display()))?;
        self.give(path)
    }

    /// A command running `program` as this owner (as the test itself when
    /// the owner is the test's account).
    pub fn command(&self, program: impl AsRef<OsStr>) -> Command {
        match &self.made {
            Some(u) => {
                let mut c = Command::new(program);
                u.as_user(&mut c)
                    .env("HOME", u.home())
                    .env("USER", u.name())
                    .env("LOGNAME", u.name());
                c
            }
            None => Command::new(program),
        }
    }
}

/// Makes every existing directory above `path` searchable by everyone
/// (`o+x`), so that another account can reach it (test temporary
/// directories are 0700). Only directories lacking the bit are changed.
pub fn reachable(path: &Path) -> anyhow::Result<()> {
    for d in path.ancestors().skip(1) {
        if d.as_os_str().is_empty() || d == Path::new("/") || !d.exists() {
            continue;
        }
        let m = std::fs::metadata(d).with_context(|| format!("stat {}", d.display()))?;
        let mode = m.permissions().mode();
        if mode & 0o001 == 0 {
            std::fs::set_permissions(d, std::fs::Permissions::from_mode((mode | 0o011) & 0o7777))
                .with_context(|| format!("chmod o+x {}", d.display()))?;
        }
    }
    Ok(())
}
