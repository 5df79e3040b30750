//! Slot accounts: dedicated Unix accounts `gleaner-slot1..N`, one per
//! running guest (HTCondor's `SLOT<N>_USER`), so that guests of different
//! users cannot read, signal or trace one another, and so that a guest's
//! processes can be found and killed by uid without cgroups (`reap.rs`).
//!
//! [`SlotAccounts::ensure`] looks the accounts up and, when the daemon is
//! root and allowed to, creates the missing ones with
//! `useradd --system --no-create-home --home-dir /nonexistent
//! --shell /usr/sbin/nologin --user-group`. A package may create them
//! instead (`create_slot_users = false`). Either way every account is
//! checked before a guest may run as it: an account someone could log in
//! to, or whose uid or group it shares with anyone else, is refused,
//! naming the account and the reason.
//!
//! A daemon that is not root has no slot accounts: it runs guests as its
//! own user (the *personal pool* mode of [`super::SlotPool`]).

use super::{GuestUser, IsolationError};
use std::path::Path;
use std::process::Command;
use std::time::Duration;

/// The default account name prefix (`gleaner-slot1`, `gleaner-slot2`, …).
pub const DEFAULT_SLOT_PREFIX: &str = "gleaner-slot";

/// The GECOS field of every slot account a station creates: it marks the
/// account as a guest's, on any station of this machine, so the home never
/// takes it for a user ([`is_slot_account`]).
pub const SLOT_COMMENT: &str = "Gleaner guest slot";

/// Whether the account `name` runs guests rather than being a person's:
/// created as a slot (its GECOS says so) or named like this station's
/// slots. A guest runs as such an account, and must not be able to use the
/// pool as a user from inside its sandbox (through the user socket).
pub fn is_slot_account(name: &str, gecos: &str, prefix: &str) -> bool {
    let numbered = name
        .strip_prefix(prefix)
        .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()));
    gecos.starts_with(SLOT_COMMENT) || (!prefix.is_empty() && numbered)
}

/// Longest account name `useradd` accepts on Debian.
const MAX_NAME: usize = 32;

/// Which slot accounts a station uses.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct SlotConfig {
    /// Names are `<prefix><n>`, n = 1..=count.
    pub prefix: String,
    /// How many guests may run at once (at least 1).
    pub count: u32,
    /// Create missing accounts (root only); `false`: a package made them.
    pub create: bool,
    /// Slot n has uid `first_uid + n - 1` (created so, refused otherwise);
    /// `None`: whatever `useradd --system` picks. A CRIU image restores
    /// its processes' uid, and an unprivileged restore cannot change it:
    /// stations that move CRIU jobs between them need the same slot uids.
    pub first_uid: Option<u32>,
}

/// The station's CPUs (at least 1): the default slot count.
pub fn default_slot_count() -> u32 {
    std::thread::available_parallelism().map_or(1, |n| u32::try_from(n.get()).unwrap_or(1))
}

impl Default for SlotConfig {
    fn default() -> Self {
        SlotConfig {
            prefix: DEFAULT_SLOT_PREFIX.to_string(),
            count: default_slot_count(),
            create: true,
            first_uid: None,
        }
    }
}

impl SlotConfig {
    pub fn new(prefix: impl Into<String>, count: u32) -> Self {
        SlotConfig {
            prefix: prefix.into(),
            count,
            create: true,
            first_uid: None,
        }
    }

    /// The uid slot `index` (0-based) must have, if fixed.
    pub fn uid_of(&self, index: u32) -> Option<u32> {
        self.first_uid.map(|f| f.saturating_add(index))
    }

    /// The account names, in slot order.
    pub fn names(&self) -> Vec<String> {
        (1..=self.count)
            .map(|i| format!("{}{i}", self.prefix))
            .collect()
    }

    /// Checks what the types cannot; the message names the key.
    pub fn validate(&self) -> Result<(), String> {
        let p = &self.prefix;
        // Debian's NAME_REGEX: a lower-case letter or `_`, then letters,
        // digits, `_` and `-`.
        let ok_first = p
            .chars()
            .next()
            .is_some_and(|c| c.is_ascii_lowercase() || c == '_');
        let ok_rest = p
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_' || c == '-');
        if !ok_first || !ok_rest {
            return Err(format!(
                "isolation.slot_prefix {p:?}: must start with a lower-case letter or `_` and \
                 hold only lower-case letters, digits, `_` and `-`"
            ));
        }
        if self.count == 0 {
            return Err("isolation.slot_count: must be at least 1".to_string());
        }
        if let Some(f) = self.first_uid {
            let last = u64::from(f) + u64::from(self.count) - 1;
            if f == 0 || last >= 65534 {
                return Err(format!(
                    "isolation.slot_first_uid {f}: slots would take uids {f}..={last}; \
                     they must lie between 1 and 65533"
                ));
            }
        }
        let longest = p.len() + self.count.to_string().len();
        if longest > MAX_NAME {
            return Err(format!(
                "isolation.slot_prefix {p:?}: account names would be {longest} characters, \
                 more than {MAX_NAME}"
            ));
        }
        Ok(())
    }
}

/// One slot: its account name and identity.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Slot {
    pub name: String,
    pub user: GuestUser,
}

/// A `/etc/passwd` entry, as far as the checks need it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct PwEntry {
    pub name: String,
    pub uid: u32,
    pub gid: u32,
    pub home: String,
    pub shell: String,
}

/// The local account files: who else holds a uid or a group.
#[derive(Clone, Debug, Default)]
pub(crate) struct AccountDb {
    users: Vec<PwEntry>,
    /// (gid, members)
    groups: Vec<(u32, Vec<String>)>,
}

impl AccountDb {
    /// `/etc/passwd` and `/etc/group` (missing files read as empty).
    fn load() -> Self {
        let read = |p: &str| std::fs::read_to_string(p).unwrap_or_default();
        Self::parse(&read("/etc/passwd"), &read("/etc/group"))
    }

    pub(crate) fn parse(passwd: &str, group: &str) -> Self {
        let users = passwd
            .lines()
            .filter_map(|l| {
                let f: Vec<&str> = l.split(':').collect();
                Some(PwEntry {
                    name: f.first()?.to_string(),
                    uid: f.get(2)?.parse().ok()?,
                    gid: f.get(3)?.parse().ok()?,
                    home: f.get(5)?.to_string(),
                    shell: f.get(6)?.to_string(),
                })
            })
            .collect();
        let groups = group
            .lines()
            .filter_map(|l| {
                let f: Vec<&str> = l.split(':').collect();
                let members = f
                    .get(3)?
                    .split(',')
                    .filter(|m| !m.is_empty())
                    .map(str::to_string)
                    .collect();
                Some((f.get(2)?.parse().ok()?, members))
            })
            .collect();
        AccountDb { users, groups }
    }

    fn user(&self, name: &str) -> Option<&PwEntry> {
        self.users.iter().find(|u| u.name == name)
    }
}

/// A shell nobody can log in with.
fn is_nologin(shell: &str) -> bool {
    matches!(
        Path::new(shell).file_name().and_then(|n| n.to_str()),
        Some("nologin" | "false")
    )
}

/// Why `e` must not be a slot account, if it must not. `forbidden` holds
/// uids that must never run a guest (the daemon's own, the owner's);
/// `home_exists` is the file system's answer for the home directory.
pub(crate) fn refusal(
    e: &PwEntry,
    db: &AccountDb,
    forbidden: &[u32],
    home_exists: impl Fn(&str) -> bool,
) -> Option<String> {
    if e.uid == 0 || e.gid == 0 {
        return Some(format!("uid {} / gid {} is root's", e.uid, e.gid));
    }
    // `nobody` is shared by every daemon that wants "no rights": a guest
    // as nobody could signal them all (and they it).
    if e.name == "nobody" || e.uid == 65534 || e.gid == 65534 {
        return Some("it is (or shares its ids with) `nobody`".to_string());
    }
    if forbidden.contains(&e.uid) {
        return Some(format!("uid {} is the daemon's or the owner's own", e.uid));
    }
    if !is_nologin(&e.shell) {
        return Some(format!(
            "it has a login shell ({:?}); slot accounts use /usr/sbin/nologin",
            e.shell
        ));
    }
    if home_exists(&e.home) {
        return Some(format!(
            "its home directory {:?} exists; slot accounts have /nonexistent",
            e.home
        ));
    }
    if let Some(o) = db.users.iter().find(|o| o.name != e.name && o.uid == e.uid) {
        return Some(format!("uid {} is also {:?}'s", e.uid, o.name));
    }
    if let Some(o) = db.users.iter().find(|o| o.name != e.name && o.gid == e.gid) {
        return Some(format!(
            "its group {} is also {:?}'s primary group",
            e.gid, o.name
        ));
    }
    if let Some((_, m)) = db
        .groups
        .iter()
        .find(|(g, m)| *g == e.gid && m.iter().any(|n| n != &e.name))
    {
        return Some(format!(
            "its group {} has other members: {}",
            e.gid,
            m.join(",")
        ));
    }
    None
}

/// The account as the system's name service sees it.
fn lookup(name: &str) -> Option<PwEntry> {
    let u = nix::unistd::User::from_name(name).ok()??;
    Some(PwEntry {
        name: u.name,
        uid: u.uid.as_raw(),
        gid: u.gid.as_raw(),
        home: u.dir.to_string_lossy().into_owned(),
        shell: u.shell.to_string_lossy().into_owned(),
    })
}

fn nologin_shell() -> &'static str {
    ["/usr/sbin/nologin", "/sbin/nologin"]
        .into_iter()
        .find(|p| Path::new(p).exists())
        .unwrap_or("/bin/false")
}

/// `useradd` exit statuses worth another try: 1 ("cannot lock
/// /etc/passwd", another tool holds the lock) and 10 (the same for
/// /etc/group). 9 means someone else created the name meanwhile.
const USERADD_LOCKED: [i32; 2] = [1, 10];
const USERADD_EXISTS: i32 = 9;

/// Create one slot account (with `uid` if given, its group preferably with
/// the same number), retrying while the account files are locked.
fn create_account(name: &str, uid: Option<u32>) -> Result<(), IsolationError> {
    let err = |why: String| IsolationError::SlotAccount {
        name: name.to_string(),
        why,
    };
    let mut last = String::new();
    for attempt in 0..40u32 {
        let mut cmd = Command::new("useradd");
        if let Some(u) = uid {
            cmd.arg("--uid").arg(u.to_string());
        }
        let out = cmd
            .args([
                "--system",
                "--no-create-home",
                "--home-dir",
                "/nonexistent",
                "--shell",
                nologin_shell(),
                "--user-group",
                "--comment",
                SLOT_COMMENT,
                name,
            ])
            .env("PATH", "/usr/sbin:/usr/bin:/sbin:/bin")
            .output()
            .map_err(|e| err(format!("cannot run useradd: {e}")))?;
        let code = out.status.code().unwrap_or(-1);
        last = String::from_utf8_lossy(&out.stderr).trim().to_string();
        if out.status.success() {
            tracing::info!(account = name, "slot account created");
            return Ok(());
        }
        if code == USERADD_EXISTS {
            return Ok(());
        }
        if !USERADD_LOCKED.contains(&code) && !last.contains("lock") {
            return Err(err(format!("useradd exited with {code}: {last}")));
        }
        // Other tools (or another station's tests) hold the lock: back off.
        std::thread::sleep(Duration::from_millis(25 * u64::from(attempt + 1).min(8)));
    }
    Err(err(format!("useradd: account files stayed locked: {last}")))
}

/// The station's slot accounts, all checked.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SlotAccounts {
    slots: Vec<Slot>,
}

impl SlotAccounts {
    /// Look up every account of `cfg`, creating the missing ones when
    /// `cfg.create` is set and the daemon is root, and check each (see the
    /// module comment). Fails on the first missing or refused account.
    pub fn ensure(cfg: &SlotConfig) -> Result<Self, IsolationError> {
        Self::ensure_excluding(cfg, &[])
    }

    /// [`SlotAccounts::ensure`], also refusing accounts whose uid is in
    /// `forbidden` (the owner's, say). The daemon's own uids are always
    /// refused.
    pub fn ensure_excluding(cfg: &SlotConfig, forbidden: &[u32]) -> Result<Self, IsolationError> {
        cfg.validate().map_err(|why| IsolationError::SlotAccount {
            name: cfg.prefix.clone(),
            why,
        })?;
        let root = nix::unistd::geteuid().is_root();
        let mut created = false;
        for (i, name) in (0u32..).zip(cfg.names()) {
            if lookup(&name).is_some() {
                continue;
            }
            if !cfg.create {
                return Err(IsolationError::SlotAccount {
                    name,
                    why: "no such account, and create_slot_users is off".to_string(),
                });
            }
            if !root {
                return Err(IsolationError::SlotAccount {
                    name,
                    why: "no such account, and only root can create it".to_string(),
                });
            }
            create_account(&name, cfg.uid_of(i))?;
            created = true;
        }
        let mut forbidden = forbidden.to_vec();
        forbidden.push(nix::unistd::getuid().as_raw());
        forbidden.push(nix::unistd::geteuid().as_raw());
        let db = AccountDb::load();
        let mut slots = Vec::new();
        for (i, name) in (0u32..).zip(cfg.names()) {
            let e = lookup(&name)
                .or_else(|| db.user(&name).cloned())
                .ok_or_else(|| IsolationError::SlotAccount {
                    name: name.clone(),
                    why: "not found after creation".to_string(),
                })?;
            if let Some(why) = refusal(&e, &db, &forbidden, |h| Path::new(h).exists()) {
                return Err(IsolationError::SlotAccount { name, why });
            }
            if let Some(want) = cfg.uid_of(i)
                && e.uid != want
            {
                return Err(IsolationError::SlotAccount {
                    name,
                    why: format!("uid {} where slot_first_uid asks for {want}", e.uid),
                });
            }
            if let Some(o) = slots.iter().find(|s: &&Slot| s.user.uid == e.uid) {
                return Err(IsolationError::SlotAccount {
                    name,
                    why: format!("uid {} is also slot {:?}'s", e.uid, o.name),
                });
            }
            slots.push(Slot {
                name,
                user: GuestUser {
                    uid: e.uid,
                    gid: e.gid,
                },
            });
        }
        if created {
            tracing::info!(count = slots.len(), prefix = %cfg.prefix, "slot accounts ready");
        }
        Ok(SlotAccounts { slots })
    }

    pub fn slots(&self) -> &[Slot] {
        &self.slots
    }

    pub fn uids(&self) -> Vec<u32> {
        self.slots.iter().map(|s| s.user.uid).collect()
    }
}

#[cfg(test)]
mod tests {

    #[test]
    fn slot_accounts_are_known_by_mark_or_by_this_stations_prefix() {
        assert!(is_slot_account("gleaner-slot3", "", "gleaner-slot"));
        assert!(is_slot_account("other-slot1", SLOT_COMMENT, "gleaner-slot"));
        assert!(!is_slot_account("gleaner-slotter", "", "gleaner-slot"));
        assert!(!is_slot_account("gleaner-slot", "", "gleaner-slot"));
        assert!(!is_slot_account("alice", "Alice Liddell", "gleaner-slot"));
        assert!(!is_slot_account("alice", "", ""));
    }

    use super::*;

    const PASSWD: &str = "\
root:x:0:0:root:/root:/bin/bash
nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin
alice:x:1000:1000:Alice:/home/alice:/bin/bash
gleaner-slot1:x:990:990:Gleaner guest slot:/nonexistent:/usr/sbin/nologin
gleaner-slot2:x:989:989:Gleaner guest slot:/nonexistent:/usr/sbin/nologin
twin:x:989:500::/nonexistent:/usr/sbin/nologin
shared:x:988:1000::/nonexistent:/usr/sbin/nologin
grouped:x:987:987::/nonexistent:/bin/false
";
    const GROUP: &str = "\
root:x:0:
alice:x:1000:
gleaner-slot1:x:990:
gleaner-slot2:x:989:
grouped:x:987:alice
";

    fn check(name: &str, forbidden: &[u32]) -> Option<String> {
        let db = AccountDb::parse(PASSWD, GROUP);
        let e = db.user(name).unwrap().clone();
        refusal(&e, &db, forbidden, |h| h != "/nonexistent")
    }

    #[test]
    fn a_proper_slot_account_passes() {
        assert_eq!(check("gleaner-slot1", &[]), None);
    }

    #[test]
    fn unsafe_accounts_are_refused_with_the_reason() {
        let why = |n: &str, f: &[u32]| check(n, f).unwrap_or_else(|| panic!("{n} accepted"));
        assert!(why("root", &[]).contains("root"));
        assert!(why("nobody", &[]).contains("nobody"));
        // Login shell, and an existing home.
        assert!(why("alice", &[]).contains("login shell"));
        assert!(why("gleaner-slot2", &[]).contains("also \"twin\"'s"));
        assert!(why("shared", &[]).contains("primary group"));
        assert!(why("grouped", &[]).contains("other members: alice"));
        assert!(why("gleaner-slot1", &[990]).contains("daemon's or the owner's"));
        let db = AccountDb::parse(PASSWD, GROUP);
        let e = db.user("gleaner-slot1").unwrap();
        assert!(
            refusal(e, &db, &[], |_| true)
                .unwrap()
                .contains("home directory")
        );
    }

    #[test]
    fn names_and_validation() {
        let c = SlotConfig::new("gleaner-slot", 3);
        assert_eq!(
            c.names(),
            ["gleaner-slot1", "gleaner-slot2", "gleaner-slot3"]
        );
        assert!(c.validate().is_ok());
        for bad in ["", "Slot", "1slot", "a/b", "a:b"] {
            assert!(SlotConfig::new(bad, 1).validate().is_err(), "{bad:?}");
        }
        assert!(SlotConfig::new("s", 0).validate().is_err());
        let mut fixed = SlotConfig::new("s", 4);
        fixed.first_uid = Some(61000);
        assert!(fixed.validate().is_ok());
        assert_eq!(
            (fixed.uid_of(0), fixed.uid_of(3)),
            (Some(61000), Some(61003))
        );
        fixed.first_uid = Some(65531);
        assert!(fixed.validate().unwrap_err().contains("slot_first_uid"));
        fixed.first_uid = Some(0);
        assert!(fixed.validate().is_err());
        assert!(SlotConfig::new("x".repeat(31), 10).validate().is_err());
        assert!(SlotConfig::default().count >= 1);
    }

    #[test]
    fn shells_that_cannot_log_in() {
        for s in [
            "/usr/sbin/nologin",
            "/sbin/nologin",
            "/bin/false",
            "/usr/bin/false",
        ] {
            assert!(is_nologin(s), "{s}");
        }
        for s in ["/bin/sh", "", "/bin/bash", "/usr/sbin/nologin-not"] {
            assert!(!is_nologin(s), "{s}");
        }
    }
}
