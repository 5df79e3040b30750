//! The demo's two users (`glean up --demo`).
//!
//! Users are Unix users on the home (issue 12): a job runs as its owner's
//! account, never root's. So when `glean up --demo` runs as root it makes
//! two real accounts for the demo, `gleaner-demo-heavy` and
//! `gleaner-demo-light` (no login shell, a group of their own, tagged in
//! their GECOS field), gives each a submit directory of its own under
//! `/var/lib/gleaner/up-<port>/demo/`, and removes the accounts when the
//! demo ends (their files are handed to root first, and stay for
//! inspection). An account left by a demo that was killed is recognised
//! by its tag and reused; an account of that name that is not the demo's
//! stops the demo.
//!
//! Run as an ordinary user, the stations are unprivileged and each serves
//! only that user (a single-user personal pool): both demo users are then
//! the invoking account, and the demo says so.

use anyhow::{Context, bail};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Command;

/// GECOS tag of the demo's accounts.
const TAG: &str = "gleaner demo account";

/// One user of the demo.
pub struct DemoAccount {
    /// `heavy` or `light`.
    pub role: &'static str,
    /// The Unix account.
    pub name: String,
    /// Its submit directory (owned by it).
    pub dir: PathBuf,
    /// Whether this run made (or adopted) the account and must remove it.
    made: bool,
}

/// The demo's accounts; removed on drop when they were made for the demo.
pub struct DemoAccounts(pub Vec<DemoAccount>);

/// Where a root demo keeps its users' directories: under
/// `/var/lib/gleaner/up-<port>/demo`, or `/tmp/gleaner-up-<port>/demo`
/// when a directory above the first is closed to other users (a station's
/// private state directory, say).
pub fn root_base(port: u16) -> PathBuf {
    let preferred = PathBuf::from(format!("/var/lib/gleaner/up-{port}/demo"));
    let open = preferred
        .ancestors()
        .skip(1)
        .all(|d| std::fs::metadata(d).map_or(true, |m| m.permissions().mode() & 0o001 != 0));
    if open {
        preferred
    } else {
        PathBuf::from(format!("/tmp/gleaner-up-{port}/demo"))
    }
}

/// As root: two demo accounts with submit directories under `base`. As
/// anyone else: the invoking account twice, with directories under `base`.
pub fn prepare(base: &Path, me: &str) -> anyhow::Result<DemoAccounts> {
    let root = nix::unistd::geteuid().is_root();
    let mut accounts = DemoAccounts(Vec::new());
    if root {
        // Every directory above the submit directories must be searchable
        // by the demo accounts.
        for d in base.ancestors().collect::<Vec<_>>().into_iter().rev() {
            if d.as_os_str().is_empty() || d == Path::new("/") {
                continue;
            }
            if !d.exists() {
                std::fs::create_dir(d).with_context(|| format!("creating {}", d.display()))?;
                std::fs::set_permissions(d, std::fs::Permissions::from_mode(0o755))?;
            }
        }
    } else {
        std::fs::create_dir_all(base).with_context(|| format!("creating {}", base.display()))?;
    }
    for role in ["heavy", "light"] {
        let (name, made) = if root {
            (ensure_account(&format!("gleaner-demo-{role}"))?, true)
        } else {
            (me.to_string(), false)
        };
        let dir = base.join(role);
        std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
        if root {
            chown_tree(&dir, &name)?;
            std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o755))?;
        }
        accounts.0.push(DemoAccount {
            role,
            name,
            dir,
            made,
        });
    }
    Ok(accounts)
}

impl Drop for DemoAccounts {
    fn drop(&mut self) {
        for a in &self.0 {
            if !a.made {
                continue;
            }
            // Outputs stay for inspection, owned by root once the account
            // is gone.
            if let Err(e) = chown_tree(&a.dir, "root") {
                eprintln!("[demo] cannot hand {} to root: {e:#}", a.dir.display());
            }
            match Command::new("userdel").arg(&a.name).output() {
                Ok(o) if o.status.success() => println!("[demo] removed the account {}", a.name),
                Ok(o) => eprintln!(
                    "[demo] cannot remove the account {}: {}",
                    a.name,
                    String::from_utf8_lossy(&o.stderr).trim()
                ),
                Err(e) => eprintln!("[demo] cannot run userdel: {e}"),
            }
        }
    }
}

/// The account `name`, made now (or a demo account left by an earlier
/// run, recognised by its tag).
fn ensure_account(name: &str) -> anyhow::Result<String> {
    if let Some(pw) = nix::unistd::User::from_name(name)? {
        let gecos = pw.gecos.to_string_lossy().into_owned();
        if !gecos.starts_with(TAG) {
            bail!(
                "the account {name} exists and is not a Gleaner demo account; remove it or run the demo elsewhere"
            );
        }
        println!("[demo] reusing the demo account {name} left by an earlier run");
        return Ok(name.to_string());
    }
    let out = Command::new("useradd")
        .args(["--no-create-home", "--user-group", "--no-log-init"])
        .args(["--shell", "/usr/sbin/nologin", "--home-dir", "/nonexistent"])
        .args(["--comment", TAG, name])
        .output()
        .context("running useradd")?;
    if !out.status.success() {
        bail!(
            "useradd {name} failed ({}): {}",
            out.status,
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
    println!("[demo] created the Unix account {name}");
    Ok(name.to_string())
}

/// `chown -R user:user` without following symlinks.
fn chown_tree(dir: &Path, user: &str) -> anyhow::Result<()> {
    let pw = nix::unistd::User::from_name(user)?.with_context(|| format!("no account {user}"))?;
    let (uid, gid) = (pw.uid.as_raw(), pw.gid.as_raw());
    let mut todo = vec![dir.to_path_buf()];
    while let Some(p) = todo.pop() {
        std::os::unix::fs::lchown(&p, Some(uid), Some(gid))
            .with_context(|| format!("chown {}", p.display()))?;
        if std::fs::symlink_metadata(&p)?.is_dir() {
            for e in std::fs::read_dir(&p)? {
                todo.push(e?.path());
            }
        }
    }
    Ok(())
}
