//! What a guest sees of the machine: a root made for it, as a container's.
//!
//! A guest with its own mount namespace does not see the host's file
//! system. Its root is an empty tmpfs into which the launcher puts, in the
//! child before `exec` (`view_exec.rs`), only this:
//!
//! | path | what |
//! |---|---|
//! | `/usr`, `/etc`, `/opt`, `/bin`, `/sbin`, `/lib*` | the host's, read-only, nosuid, nodev (a symlink stays a symlink) |
//! | `/home`, `/root` | empty and read-only |
//! | `/tmp`, `/var/tmp`, `/dev/shm`, `/run/lock` | a fresh tmpfs each (mode 1777), the guest's alone |
//! | every world-writable directory inside the host trees above | a fresh tmpfs with its mode ([`WorldWritable`]) |
//! | `/var`, `/run` | empty tmpfs with only the entries above (`/var/run`, `/var/lock` links) |
//! | `/dev` | `null`, `zero`, `full`, `random`, `urandom`, `tty`, a `devpts` of its own, `shm`, the `fd`/`std*` links |
//! | `/proc` | a fresh procfs of its own PID namespace (mounted by its first process) |
//! | `/sys` | read-only: only `devices/system/cpu`, `devices/system/node` and `kernel/mm/transparent_hugepage` (what runtimes read to size themselves) |
//! | its sandbox | read-write, at the same path as on the host |
//! | `[isolation] expose` | the owner's choice, read-only unless marked `:rw` |
//! | `[isolation.volumes]` a job names in `+WantVolumes` | the owner's offer, the job's choice |
//! | `/etc/resolv.conf` | the host's, or in a private network the user-mode stack's resolver |
//!
//! Nothing of the daemons is there: the station's state and execute
//! directories (and the CRIU sandboxes) are covered by an empty tmpfs
//! wherever they would show through a tree above, and no other sandbox
//! is ever mounted. Other homes, other pools' state under `/var`, `/srv`,
//! `/mnt` or `/media` do not exist for the guest.
//!
//! This is bubblewrap's model (a tmpfs root, bind mounts from the old
//! root, two `pivot_root`s), done by the launcher itself: the station
//! needs it in the same forked child that drops privileges, joins the
//! cgroup and enters the PID namespace, with async-signal-safe calls only,
//! and bubblewrap as a separate setuid-less program would add a process
//! and a dependency between the daemon and every guest. Read-only binds
//! use the new mount API's `mount_setattr(AT_RECURSIVE)` where the kernel
//! has it (5.12), so that submounts are read-only too.
//!
//! The plan is computed in the daemon ([`GuestView::plan`]), as a list of
//! steps with every path ready as a C string; the child only carries it
//! out.

use super::IsolationError;
use super::view_exec::{MountPlan, Step};
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet};
use std::ffi::CString;
use std::net::Ipv4Addr;
use std::os::unix::ffi::OsStrExt;
use std::path::{Component, Path, PathBuf};
use std::sync::{Arc, OnceLock};

/// The host's trees a guest sees read-only, when they exist.
const OS_TREES: [&str; 9] = [
    "usr", "bin", "sbin", "lib", "lib32", "lib64", "libx32", "etc", "opt",
];

/// The parts of `/sys` a guest sees (read-only).
const SYS_PARTS: [&str; 3] = [
    "/sys/devices/system/cpu",
    "/sys/devices/system/node",
    "/sys/kernel/mm/transparent_hugepage",
];

/// The device nodes a guest gets.
const DEVICES: [&str; 6] = ["null", "zero", "full", "random", "urandom", "tty"];

/// One directory the owner lets guests see: `[isolation] expose` entries
/// and `[isolation.volumes]` values, written `PATH`, `PATH:ro` (the same)
/// or `PATH:rw`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct Exposed {
    pub path: PathBuf,
    /// Guests may write there (`:rw`); read-only otherwise.
    pub writable: bool,
}

impl Exposed {
    /// Parses `PATH[:ro|:rw]`: an absolute path without `..`, not `/`.
    pub fn parse(s: &str) -> Result<Self, String> {
        let (path, writable) = match s.rsplit_once(':') {
            Some((p, "rw")) => (p, true),
            Some((p, "ro")) => (p, false),
            _ => (s, false),
        };
        let p = Path::new(path);
        if !p.is_absolute()
            || p.components().any(|c| c == Component::ParentDir)
            || p.parent().is_none()
            || path.contains('\0')
        {
            return Err(format!(
                "{s:?}: expected an absolute directory other than `/`, without `..`, \
                 optionally followed by `:ro` or `:rw`"
            ));
        }
        Ok(Exposed {
            path: p.to_path_buf(),
            writable,
        })
    }
}

impl TryFrom<String> for Exposed {
    type Error = String;
    fn try_from(s: String) -> Result<Self, String> {
        Exposed::parse(&s)
    }
}

impl From<Exposed> for String {
    fn from(e: Exposed) -> String {
        let p = e.path.display().to_string();
        if e.writable { format!("{p}:rw") } else { p }
    }
}

/// The job attribute naming the volumes a job wants (`+WantVolumes =
/// "refdata, scratch"`), as HTCondor's docker volumes are chosen by a job
/// attribute (`DOCKER_VOLUME_DIR_xxx_MOUNT_IF`).
pub const WANT_VOLUMES: &str = "WantVolumes";

/// The volume names in a `WantVolumes` value (ClassAd string text, quotes
/// and all): names split at commas and blanks.
pub fn wanted_volumes(attr: Option<&str>) -> Vec<String> {
    let Some(v) = attr else { return Vec::new() };
    v.trim()
        .trim_matches('"')
        .split(|c: char| c == ',' || c.is_whitespace())
        .filter(|s| !s.is_empty())
        .map(str::to_string)
        .collect()
}

/// Where the guest's resolver is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Dns {
    /// The host's `/etc/resolv.conf` (host network).
    Host,
    /// A resolver at this address (the user-mode stack's).
    At(Ipv4Addr),
}

/// The station's half of every guest's view: what exists on this host,
/// found once at start. Cheap to clone.
#[derive(Clone, Debug)]
pub struct GuestView {
    inner: Arc<ViewInner>,
}

impl PartialEq for GuestView {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.inner, &other.inner)
    }
}

impl Eq for GuestView {}

#[derive(Debug)]
struct ViewInner {
    /// `(name, Some(link target))` for a symlink, `(name, None)` for a
    /// directory, of [`OS_TREES`] as they are on the host.
    os: Vec<(String, Option<PathBuf>)>,
    /// World-writable directories inside the trees of `os`, with their
    /// mode: found by a thread started at start (the first guest waits for
    /// it if it has to).
    writable: Arc<OnceLock<Vec<(PathBuf, u32)>>>,
    /// The trees of `os` that are directories.
    trees: Vec<PathBuf>,
    /// The daemons' directories, hidden wherever a tree shows them.
    hide: Vec<PathBuf>,
    expose: Vec<Exposed>,
    volumes: BTreeMap<String, Exposed>,
    sys: Vec<PathBuf>,
    /// The host's resolver file (`/etc/resolv.conf`, links followed).
    resolv: Option<PathBuf>,
}

impl GuestView {
    /// Looks at this host: its trees, the world-writable directories in
    /// them ([`super::writable::scan`]), `/sys`, the resolver file.
    /// `hide`: the station's state, execute and CRIU directories. Every
    /// exposed directory must exist.
    pub fn for_host(
        expose: Vec<Exposed>,
        volumes: BTreeMap<String, Exposed>,
        hide: Vec<PathBuf>,
    ) -> Result<Self, IsolationError> {
        let mut os = Vec::new();
        for name in OS_TREES {
            let p = Path::new("/").join(name);
            match std::fs::symlink_metadata(&p) {
                Ok(m) if m.file_type().is_symlink() => {
                    let t = std::fs::read_link(&p).map_err(|e| IsolationError::io(&p, e))?;
                    os.push((name.to_string(), Some(t)));
                }
                Ok(m) if m.is_dir() => os.push((name.to_string(), None)),
                _ => {}
            }
        }
        let trees: Vec<PathBuf> = os
            .iter()
            .filter(|(_, link)| link.is_none())
            .map(|(n, _)| Path::new("/").join(n))
            .collect();
        let writable: Arc<OnceLock<Vec<(PathBuf, u32)>>> = Arc::new(OnceLock::new());
        {
            let (cell, scanned) = (writable.clone(), trees.clone());
            let spawned = std::thread::Builder::new()
                .name("view-scan".into())
                .spawn(move || {
                    cell.get_or_init(|| super::writable::scan(&scanned));
                });
            if spawned.is_err() {
                writable.get_or_init(|| super::writable::scan(&trees));
            }
        }
        let canonical = |e: Exposed, what: &str| -> Result<Exposed, IsolationError> {
            let path = std::fs::canonicalize(&e.path).map_err(|err| {
                IsolationError::io(
                    &e.path,
                    std::io::Error::new(err.kind(), format!("{what}: {err}")),
                )
            })?;
            if !path.is_dir() || path == Path::new("/") {
                return Err(IsolationError::io(
                    &e.path,
                    std::io::Error::other(format!("{what}: not a directory other than /")),
                ));
            }
            Ok(Exposed { path, ..e })
        };
        let expose = expose
            .into_iter()
            .map(|e| canonical(e, "isolation.expose"))
            .collect::<Result<Vec<_>, _>>()?;
        let volumes = volumes
            .into_iter()
            .map(|(k, e)| Ok((k.clone(), canonical(e, &format!("isolation.volumes.{k}"))?)))
            .collect::<Result<BTreeMap<_, _>, IsolationError>>()?;
        let hide = hide
            .into_iter()
            .map(|h| std::fs::canonicalize(&h).unwrap_or(h))
            .collect();
        let sys = SYS_PARTS
            .iter()
            .map(PathBuf::from)
            .filter(|p| p.is_dir())
            .collect();
        let resolv = std::fs::canonicalize("/etc/resolv.conf")
            .ok()
            .filter(|p| p.is_file());
        let view = GuestView {
            inner: Arc::new(ViewInner {
                os,
                writable,
                trees,
                hide,
                expose,
                volumes,
                sys,
                resolv,
            }),
        };
        tracing::info!(
            trees = ?view.inner.os.iter().map(|(n, _)| n.as_str()).collect::<Vec<_>>(),
            expose = ?view.inner.expose,
            volumes = ?view.inner.volumes.keys().collect::<Vec<_>>(),
            "guests see a root of their own"
        );
        Ok(view)
    }

    /// The names of the volumes the owner offers (`[isolation.volumes]`).
    pub fn volume_names(&self) -> Vec<String> {
        self.inner.volumes.keys().cloned().collect()
    }

    /// The steps that build the root of a guest whose sandbox is
    /// `sandbox` (canonical), that asked for `volumes` (unknown names are
    /// ignored), with its resolver at `dns`. `base`: an existing
    /// directory of the host the scratch tmpfs goes on (any will do: the
    /// first `pivot_root` keeps what it hides reachable).
    pub fn plan(
        &self,
        base: &Path,
        sandbox: &Path,
        volumes: &[String],
        dns: Dns,
    ) -> Result<MountPlan, IsolationError> {
        let v = &self.inner;
        let mut b = Builder::default();
        // The host's trees, read-only.
        for (name, link) in &v.os {
            let at = Path::new("/").join(name);
            match link {
                Some(target) => b.symlink(target, &at),
                None => b.bind(&at, &at, false),
            }
        }
        b.mkdir_p(Path::new("/proc"), 0o555);
        // Empty homes.
        b.tmpfs(Path::new("/home"), "mode=0755", true);
        b.tmpfs(Path::new("/root"), "mode=0700", true);
        // Private scratch.
        b.tmpfs(Path::new("/tmp"), "mode=1777", false);
        b.tmpfs(Path::new("/var"), "mode=0755", true);
        b.tmpfs(Path::new("/var/tmp"), "mode=1777", false);
        b.symlink(Path::new("../run"), Path::new("/var/run"));
        b.symlink(Path::new("../run/lock"), Path::new("/var/lock"));
        b.tmpfs(Path::new("/run"), "mode=0755", true);
        b.tmpfs(Path::new("/run/lock"), "mode=1777", false);
        // A minimal /dev.
        b.tmpfs(Path::new("/dev"), "mode=0755", true);
        for d in DEVICES {
            let p = Path::new("/dev").join(d);
            if p.exists() {
                b.device(&p);
            }
        }
        for (link, target) in [
            ("fd", "/proc/self/fd"),
            ("stdin", "/proc/self/fd/0"),
            ("stdout", "/proc/self/fd/1"),
            ("stderr", "/proc/self/fd/2"),
            ("ptmx", "pts/ptmx"),
        ] {
            b.symlink(Path::new(target), &Path::new("/dev").join(link));
        }
        b.mkdir_p(Path::new("/dev/pts"), 0o755);
        b.steps.push(Step::Devpts {
            path: b.c_new(Path::new("/dev/pts")),
        });
        b.tmpfs(Path::new("/dev/shm"), "mode=1777", false);
        // What runtimes read of /sys.
        b.tmpfs(Path::new("/sys"), "mode=0755", true);
        for p in &v.sys {
            b.bind(p, p, false);
        }
        // World-writable places inside the host's trees: the guest's own.
        let writable = v.writable.get_or_init(|| super::writable::scan(&v.trees));
        for (p, mode) in writable {
            b.tmpfs(p, &format!("mode={:o}", mode & 0o7777), false);
        }
        // What the owner shows.
        let wanted: BTreeSet<&str> = volumes.iter().map(String::as_str).collect();
        let shown: Vec<&Exposed> = v
            .expose
            .iter()
            .chain(
                v.volumes
                    .iter()
                    .filter(|(k, _)| wanted.contains(k.as_str()))
                    .map(|(_, e)| e),
            )
            .collect();
        for e in &shown {
            b.bind(&e.path, &e.path, e.writable);
        }
        // The daemons' directories, wherever a tree or an exposed
        // directory shows them.
        let bound: Vec<PathBuf> =
            v.os.iter()
                .filter(|(_, l)| l.is_none())
                .map(|(n, _)| Path::new("/").join(n))
                .chain(shown.iter().map(|e| e.path.clone()))
                .collect();
        for h in &v.hide {
            if bound.iter().any(|t| h.starts_with(t)) {
                b.tmpfs(h, "mode=0711", true);
            }
        }
        // The sandbox itself.
        b.bind(sandbox, sandbox, true);
        // The resolver, at the path /etc/resolv.conf leads to (a link
        // into /run, on systemd-resolved hosts).
        if let Some(r) = &v.resolv {
            let shown =
                v.os.iter()
                    .any(|(n, link)| link.is_none() && r.starts_with(Path::new("/").join(n)));
            match dns {
                Dns::Host if shown => {}
                Dns::Host => b.bind_file(r, r, false),
                Dns::At(ip) => {
                    let content = format!("nameserver {ip}\n");
                    b.write_and_bind(content.into_bytes(), r);
                }
            }
        }
        Ok(b.finish(base, sandbox))
    }
}

/// Builds the step list; paths are in the new root until `c_new`/`c_old`
/// prefix them.
#[derive(Default)]
struct Builder {
    steps: Vec<Step>,
    /// Directories made (or known to exist) in the new root.
    made: BTreeSet<PathBuf>,
    /// Mounts to make read-only at the end (tmpfs filled in place).
    read_only: Vec<PathBuf>,
    /// A counter for file sources written in the scratch root.
    files: usize,
}

fn c(p: &Path) -> CString {
    // Paths come from the host's file system, the configuration (checked
    // for NUL) or constants: a NUL cannot occur; an empty string would
    // only make the step fail.
    CString::new(p.as_os_str().as_bytes()).unwrap_or_default()
}

impl Builder {
    /// `/newroot` + `p`.
    fn c_new(&self, p: &Path) -> CString {
        c(&Path::new("/newroot").join(p.strip_prefix("/").unwrap_or(p)))
    }

    /// `/oldroot` + `p`.
    fn c_old(&self, p: &Path) -> CString {
        c(&Path::new("/oldroot").join(p.strip_prefix("/").unwrap_or(p)))
    }

    fn mkdir_p(&mut self, p: &Path, mode: u32) {
        let mut cur = PathBuf::from("/");
        for comp in p.components().skip(1) {
            cur.push(comp);
            if self.made.insert(cur.clone()) {
                let path = self.c_new(&cur);
                self.steps.push(Step::Mkdir {
                    path,
                    mode: if cur == p { mode } else { 0o755 },
                });
            }
        }
    }

    fn tmpfs(&mut self, p: &Path, data: &str, read_only_later: bool) {
        self.mkdir_p(p, 0o755);
        let data = CString::new(data).unwrap_or_default();
        let path = self.c_new(p);
        self.steps.push(Step::Tmpfs { path, data });
        if read_only_later {
            self.read_only.push(p.to_path_buf());
        }
    }

    fn bind(&mut self, src: &Path, dst: &Path, writable: bool) {
        self.mkdir_p(dst, 0o755);
        let (src, dst) = (self.c_old(src), self.c_new(dst));
        self.steps.push(Step::Bind { src, dst, writable });
    }

    fn bind_file(&mut self, src: &Path, dst: &Path, writable: bool) {
        if let Some(parent) = dst.parent() {
            self.mkdir_p(parent, 0o755);
        }
        let (src, dst) = (self.c_old(src), self.c_new(dst));
        self.steps.push(Step::Touch { path: dst.clone() });
        self.steps.push(Step::Bind { src, dst, writable });
    }

    /// The host's device node `p` at the same path.
    fn device(&mut self, p: &Path) {
        if let Some(parent) = p.parent() {
            self.mkdir_p(parent, 0o755);
        }
        let (src, dst) = (self.c_old(p), self.c_new(p));
        self.steps.push(Step::Touch { path: dst.clone() });
        self.steps.push(Step::Device { src, dst });
    }

    /// Writes `content` into a file of the scratch root and binds it,
    /// read-only, at `dst` of the new root.
    fn write_and_bind(&mut self, content: Vec<u8>, dst: &Path) {
        self.files += 1;
        let src = CString::new(format!("/file{}", self.files)).unwrap_or_default();
        self.steps.push(Step::Write {
            path: src.clone(),
            content,
        });
        if let Some(parent) = dst.parent() {
            self.mkdir_p(parent, 0o755);
        }
        let dst = self.c_new(dst);
        self.steps.push(Step::Touch { path: dst.clone() });
        self.steps.push(Step::Bind {
            src,
            dst,
            writable: false,
        });
    }

    fn symlink(&mut self, target: &Path, at: &Path) {
        if let Some(parent) = at.parent() {
            self.mkdir_p(parent, 0o755);
        }
        self.made.insert(at.to_path_buf());
        let (target, path) = (c(target), self.c_new(at));
        self.steps.push(Step::Symlink { target, path });
    }

    fn finish(mut self, base: &Path, sandbox: &Path) -> MountPlan {
        // The deepest first: a read-only parent would refuse nothing
        // (remounts change flags only), but order them anyway.
        self.read_only
            .sort_by_key(|p| std::cmp::Reverse(p.components().count()));
        // The root itself last: every directory is made by then.
        self.read_only.push(PathBuf::from("/"));
        for p in std::mem::take(&mut self.read_only) {
            let path = self.c_new(&p);
            self.steps.push(Step::ReadOnly { path });
        }
        MountPlan::new(c(base), self.steps, c(sandbox))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exposed_entries_parse_and_print() {
        assert_eq!(
            Exposed::parse("/data").unwrap(),
            Exposed {
                path: "/data".into(),
                writable: false
            }
        );
        assert!(Exposed::parse("/scratch:rw").unwrap().writable);
        assert!(!Exposed::parse("/scratch:ro").unwrap().writable);
        for bad in ["data", "/", "/a/../etc", ""] {
            assert!(Exposed::parse(bad).is_err(), "{bad:?}");
        }
        assert_eq!(
            String::from(Exposed::parse("/scratch:rw").unwrap()),
            "/scratch:rw"
        );
        let v: Vec<Exposed> =
            toml::from_str::<BTreeMap<String, Vec<Exposed>>>("expose = [\"/data\", \"/s:rw\"]")
                .unwrap()
                .remove("expose")
                .unwrap();
        assert_eq!(v.len(), 2);
        assert!(toml::from_str::<BTreeMap<String, Vec<Exposed>>>("expose = [\"rel\"]").is_err());
    }

    #[test]
    fn wanted_volumes_from_the_job_attribute() {
        assert_eq!(
            wanted_volumes(Some("\"refdata, scratch  other\"")),
            vec!["refdata", "scratch", "other"]
        );
        assert!(wanted_volumes(None).is_empty());
        assert!(wanted_volumes(Some("\"\"")).is_empty());
    }

    fn view(hide: &[&str], expose: &[&str]) -> GuestView {
        GuestView {
            inner: Arc::new(ViewInner {
                os: vec![
                    ("usr".into(), None),
                    ("bin".into(), Some("usr/bin".into())),
                    ("etc".into(), None),
                    ("opt".into(), None),
                ],
                writable: Arc::new(OnceLock::from(vec![("/usr/local/drop".into(), 0o41777)])),
                trees: vec!["/usr".into(), "/etc".into(), "/opt".into()],
                hide: hide.iter().map(PathBuf::from).collect(),
                expose: expose.iter().map(|e| Exposed::parse(e).unwrap()).collect(),
                volumes: [("ref".to_string(), Exposed::parse("/srv/ref").unwrap())].into(),
                sys: vec!["/sys/devices/system/cpu".into()],
                resolv: Some("/run/systemd/resolve/stub-resolv.conf".into()),
            }),
        }
    }

    fn lines(p: &MountPlan) -> Vec<String> {
        p.describe()
    }

    #[test]
    fn a_plan_shows_the_os_read_only_and_nothing_of_the_daemons() {
        let v = view(&["/opt/gl/state", "/var/lib/gleaner"], &["/data"]);
        let p = v
            .plan(
                Path::new("/exec"),
                Path::new("/opt/gl/state/execute/g1"),
                &["ref".into(), "nope".into()],
                Dns::At(Ipv4Addr::new(10, 0, 2, 3)),
            )
            .unwrap();
        let l = lines(&p);
        let has = |s: &str| l.iter().any(|x| x == s);
        assert!(has("bind ro /oldroot/usr -> /newroot/usr"), "{l:#?}");
        assert!(has("symlink /newroot/bin -> usr/bin"));
        assert!(has("tmpfs /newroot/home mode=0755"));
        assert!(has("tmpfs /newroot/tmp mode=1777"));
        assert!(has("tmpfs /newroot/usr/local/drop mode=1777"));
        assert!(has("bind ro /oldroot/data -> /newroot/data"));
        assert!(has("bind ro /oldroot/srv/ref -> /newroot/srv/ref"));
        // The state dir under /opt is covered; the one under /var needs
        // nothing (/var is the guest's own).
        assert!(has("tmpfs /newroot/opt/gl/state mode=0711"));
        assert!(!l.iter().any(|x| x.contains("/var/lib/gleaner")));
        // The sandbox after the cover, writable.
        let cover = l
            .iter()
            .position(|x| x == "tmpfs /newroot/opt/gl/state mode=0711")
            .unwrap();
        let sb = l
            .iter()
            .position(|x| {
                x == "bind rw /oldroot/opt/gl/state/execute/g1 -> /newroot/opt/gl/state/execute/g1"
            })
            .unwrap();
        assert!(cover < sb);
        // The resolver of the private network, at the host's link target.
        assert!(has("write /file1 (20 bytes)"));
        assert!(has(
            "bind ro /file1 -> /newroot/run/systemd/resolve/stub-resolv.conf"
        ));
        // Made read-only at the end.
        assert!(has("read-only /newroot/home"));
        assert!(has("read-only /newroot/opt/gl/state"));
        assert!(l.iter().all(|x| !x.contains("nope")));
        // Each directory is made once.
        let mkdirs: Vec<&String> = l.iter().filter(|x| x.starts_with("mkdir")).collect();
        let set: BTreeSet<&&String> = mkdirs.iter().collect();
        assert_eq!(set.len(), mkdirs.len());
    }

    #[test]
    fn host_dns_binds_the_hosts_file() {
        let v = view(&[], &[]);
        let p = v
            .plan(
                Path::new("/exec"),
                Path::new("/tmp/x/execute/g"),
                &[],
                Dns::Host,
            )
            .unwrap();
        let l = lines(&p);
        assert!(l.iter().any(|x| x
            == "bind ro /oldroot/run/systemd/resolve/stub-resolv.conf -> \
                /newroot/run/systemd/resolve/stub-resolv.conf"));
        // A sandbox below /tmp: made in the guest's own /tmp.
        assert!(
            l.iter()
                .any(|x| x == "bind rw /oldroot/tmp/x/execute/g -> /newroot/tmp/x/execute/g")
        );
    }
}
