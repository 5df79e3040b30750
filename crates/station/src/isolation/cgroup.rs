//! A thin cgroupfs driver for guest groups, v2 and hybrid v1+v2.
//!
//! Which hierarchy serves which function is decided once, in
//! [`CgroupManager::new`]:
//!
//! | function | v2 (preferred when the controller is there) | v1 | last resort |
//! |---|---|---|---|
//! | idle CPU priority | `cpu.idle=1` (else `cpu.weight=1`) | `cpu.idle=1` (else `cpu.shares=2`) | per-task `SCHED_IDLE` only |
//! | memory bounds | `memory.high` / `memory.max` | `memory.soft_limit_in_bytes` / `memory.limit_in_bytes` | none |
//! | freeze | `cgroup.freeze` + `cgroup.events frozen 1` | `freezer.state` | SIGSTOP/SIGCONT every pid |
//! | kill | `cgroup.kill` | — | SIGKILL every pid until empty |
//! | CPU usage | `cpu.stat usage_usec` | `cpuacct.usage` | — |
//!
//! On the development machines (platform.md §1.2) this resolves to: cpu and
//! memory on v1, freeze/kill/usage on the v2 mount at
//! `/sys/fs/cgroup/unified`.
//!
//! Control files are opened for writing without `O_CREAT`, as on cgroupfs a
//! missing file means "not supported here"; tests build fake hierarchies by
//! pre-creating the files they expect.

use super::IsolationError;
use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;
use std::collections::BTreeSet;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// v1 hierarchy mount points (a co-mounted `cpu,cpuacct` has the same path
/// in both fields).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct V1Roots {
    pub cpu: Option<PathBuf>,
    pub cpuacct: Option<PathBuf>,
    pub memory: Option<PathBuf>,
    pub freezer: Option<PathBuf>,
    /// `blkio`: the guests' I/O weight (`cgroup_io.rs`).
    pub blkio: Option<PathBuf>,
}

/// Where the cgroup hierarchies are.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CgroupLayout {
    /// Pure cgroup v2 (one unified hierarchy, normally `/sys/fs/cgroup`).
    V2 { root: PathBuf },
    /// v1 controller hierarchies plus, optionally, a v2 mount (normally
    /// `/sys/fs/cgroup/unified`).
    Hybrid {
        unified: Option<PathBuf>,
        v1: V1Roots,
    },
}

impl CgroupLayout {
    /// The development machines' layout at its real paths.
    pub fn default_hybrid() -> Self {
        let p = |s: &str| Some(PathBuf::from("/sys/fs/cgroup").join(s));
        CgroupLayout::Hybrid {
            unified: p("unified"),
            v1: V1Roots {
                cpu: p("cpu"),
                cpuacct: p("cpuacct"),
                memory: p("memory"),
                freezer: p("freezer"),
                blkio: p("blkio"),
            },
        }
    }

    /// Detect from `/proc/self/mountinfo`.
    pub fn detect() -> Result<Self, IsolationError> {
        Self::detect_from(Path::new("/proc/self/mountinfo"))
    }

    pub fn detect_from(mountinfo: &Path) -> Result<Self, IsolationError> {
        let text =
            std::fs::read_to_string(mountinfo).map_err(|e| IsolationError::io(mountinfo, e))?;
        parse_mountinfo(&text).ok_or_else(|| IsolationError::NoHierarchy(mountinfo.to_path_buf()))
    }
}

/// Find the cgroup mounts in mountinfo text. Pure v2 when a `cgroup2` mount
/// exists and no v1 mount carries cpu, cpuacct, memory or freezer.
pub fn parse_mountinfo(text: &str) -> Option<CgroupLayout> {
    let mut unified = None;
    let mut v1 = V1Roots::default();
    for line in text.lines() {
        // id parent maj:min root mountpoint opts [optional...] - fstype source superopts
        let Some((left, right)) = line.split_once(" - ") else {
            continue;
        };
        let Some(mountpoint) = left.split_ascii_whitespace().nth(4) else {
            continue;
        };
        let mountpoint = PathBuf::from(mountpoint.replace("\\040", " "));
        let mut r = right.split_ascii_whitespace();
        let (fstype, _src, superopts) = (r.next(), r.next(), r.next().unwrap_or(""));
        match fstype {
            Some("cgroup2") if unified.is_none() => unified = Some(mountpoint),
            Some("cgroup") => {
                for opt in superopts.split(',') {
                    let slot = match opt {
                        "cpu" => &mut v1.cpu,
                        "cpuacct" => &mut v1.cpuacct,
                        "memory" => &mut v1.memory,
                        "freezer" => &mut v1.freezer,
                        "blkio" => &mut v1.blkio,
                        _ => continue,
                    };
                    slot.get_or_insert_with(|| mountpoint.clone());
                }
            }
            _ => {}
        }
    }
    if v1 == V1Roots::default() {
        unified.map(|root| CgroupLayout::V2 { root })
    } else {
        Some(CgroupLayout::Hybrid { unified, v1 })
    }
}

/// How to freeze a guest.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum FreezeMethod {
    /// v2 `cgroup.freeze` if a v2 hierarchy exists, else the v1 freezer,
    /// else signals.
    #[default]
    Auto,
    V2,
    V1,
    /// SIGSTOP/SIGCONT every pid (no freezer, or a freezer that misbehaves).
    Signals,
}

/// How a group was killed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum KillMethod {
    /// `cgroup.kill` (v2, Linux 5.14) did it.
    CgroupKill,
    /// SIGKILL to every pid, repeated until `cgroup.procs` was empty.
    Signals,
    /// The group was already empty.
    Empty,
}

/// What `set_idle` achieved.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum IdleOutcome {
    /// `cpu.idle` set: SCHED_IDLE semantics for the group (Linux 5.15).
    CpuIdle,
    /// No `cpu.idle`: minimum `cpu.weight` / `cpu.shares` instead (weaker:
    /// no wakeup-preemption advantage for the owner).
    MinimumWeight,
    /// No cpu controller: only per-task SCHED_IDLE (set by the launcher)
    /// protects the owner.
    Unavailable,
}

/// Guest memory bounds, bytes. `None` = unlimited.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct MemoryBounds {
    /// Soft bound: v2 `memory.high` (throttle and reclaim above it), v1
    /// `memory.soft_limit_in_bytes` (reclaimed first under global pressure:
    /// the closest v1 has to Linger-Longer's "owner reclaims guest pages
    /// first", spec §1.2 L142).
    pub high: Option<u64>,
    /// Hard bound: v2 `memory.max`, v1 `memory.limit_in_bytes`.
    pub max: Option<u64>,
}

/// Manager settings.
#[derive(Clone, Debug)]
pub struct CgroupConfig {
    pub layout: CgroupLayout,
    /// Name of the subtree holding every guest group (`<root>/<parent>/<job>`);
    /// existing subtrees of the machine are left alone (platform.md §1.2).
    pub parent: String,
    /// Mark the parent itself idle. Needed for the owner to win: `cpu.idle`
    /// and SCHED_IDLE only act against *siblings*, so an idle leaf under a
    /// normal-weight parent still gets half the CPU against the owner's
    /// root-level tasks. Linger-Longer wants guests strictly below the owner
    /// (L54), and a non-lingering policy suspends guests anyway.
    pub parent_idle: bool,
    pub freeze: FreezeMethod,
    /// Bound on waits for freeze/thaw/kill/removal.
    pub timeout: Duration,
}

impl CgroupConfig {
    pub fn new(layout: CgroupLayout) -> Self {
        CgroupConfig {
            layout,
            parent: "gleaner".to_string(),
            parent_idle: true,
            freeze: FreezeMethod::Auto,
            timeout: Duration::from_secs(5),
        }
    }
}

/// A controller hierarchy used for one function.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Backend {
    root: PathBuf,
    v2: bool,
}

#[derive(Clone, Debug, PartialEq, Eq)]
enum Freezer {
    V2(PathBuf),
    V1(PathBuf),
    Signals,
}

#[derive(Debug)]
struct Plan {
    unified: Option<PathBuf>,
    cpu: Option<Backend>,
    memory: Option<Backend>,
    usage: Option<Backend>,
    /// The guests' I/O weight (`cgroup_io.rs`).
    io: Option<Backend>,
    freezer: Freezer,
    /// Distinct hierarchy roots a guest group is created in.
    roots: Vec<PathBuf>,
    parent: String,
    parent_idle: bool,
    timeout: Duration,
}

/// Named controllers, for [`CgroupManager::controller_root`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Controller {
    Cpu,
    Memory,
    Freezer,
    Usage,
    Io,
}

/// Creates and drives guest groups.
#[derive(Clone, Debug)]
pub struct CgroupManager {
    plan: Arc<Plan>,
}

fn v2_has_controller(root: &Path, name: &str) -> bool {
    std::fs::read_to_string(root.join("cgroup.controllers"))
        .is_ok_and(|s| s.split_ascii_whitespace().any(|c| c == name))
}

impl CgroupManager {
    pub fn new(config: CgroupConfig) -> Result<Self, IsolationError> {
        let (unified, v1) = match &config.layout {
            CgroupLayout::V2 { root } => (Some(root.clone()), V1Roots::default()),
            CgroupLayout::Hybrid { unified, v1 } => (unified.clone(), v1.clone()),
        };
        let unified = unified.filter(|u| u.is_dir());
        let v1dir = |p: &Option<PathBuf>| p.clone().filter(|p| p.is_dir());
        let pick = |name: &str, v1root: &Option<PathBuf>| -> Option<Backend> {
            match &unified {
                Some(u) if v2_has_controller(u, name) => Some(Backend {
                    root: u.clone(),
                    v2: true,
                }),
                _ => v1dir(v1root).map(|root| Backend { root, v2: false }),
            }
        };
        let cpu = pick("cpu", &v1.cpu);
        let memory = pick("memory", &v1.memory);
        let io = pick("io", &v1.blkio);
        // The v2 hierarchy counts CPU (cpu.stat usage_usec) for sure only
        // with the cpu controller: on a hybrid layout whose cpu controller
        // is v1's, its usage_usec stays near zero while a guest burns CPU
        // (seen on a 6.x kernel), so v1's cpuacct counts there. Without
        // cpuacct, the v2 core files are the best there is.
        let usage = match (&unified, v1dir(&v1.cpuacct)) {
            (Some(u), _) if v2_has_controller(u, "cpu") => Some(Backend {
                root: u.clone(),
                v2: true,
            }),
            (_, Some(root)) => Some(Backend { root, v2: false }),
            (Some(u), None) => Some(Backend {
                root: u.clone(),
                v2: true,
            }),
            (None, None) => None,
        };
        let freezer = match (config.freeze, &unified, v1dir(&v1.freezer)) {
            (FreezeMethod::Signals, _, _) => Freezer::Signals,
            (FreezeMethod::Auto | FreezeMethod::V2, Some(u), _) => Freezer::V2(u.clone()),
            (FreezeMethod::Auto | FreezeMethod::V1, _, Some(f)) => Freezer::V1(f),
            (m, _, _) => {
                if m != FreezeMethod::Auto {
                    tracing::warn!(method = ?m, "requested freezer unavailable; using signals");
                }
                Freezer::Signals
            }
        };
        let mut roots: Vec<PathBuf> = Vec::new();
        let mut add = |p: &PathBuf| {
            if !roots.contains(p) {
                roots.push(p.clone());
            }
        };
        if let Some(u) = &unified {
            add(u);
        }
        for b in [&cpu, &memory, &usage, &io].into_iter().flatten() {
            add(&b.root);
        }
        if let Freezer::V1(f) = &freezer {
            add(f);
        }
        if roots.is_empty() {
            let looked = match &config.layout {
                CgroupLayout::V2 { root } => root.clone(),
                CgroupLayout::Hybrid { .. } => PathBuf::from("(hybrid roots)"),
            };
            return Err(IsolationError::NoHierarchy(looked));
        }
        let plan = Plan {
            unified,
            cpu,
            memory,
            usage,
            io,
            freezer,
            roots,
            parent: config.parent,
            parent_idle: config.parent_idle,
            timeout: config.timeout,
        };
        tracing::info!(?plan, "cgroup plan");
        Ok(CgroupManager {
            plan: Arc::new(plan),
        })
    }

    /// The hierarchy root serving a function, if any (and whether it is v2).
    pub fn controller_root(&self, c: Controller) -> Option<(PathBuf, bool)> {
        let b = match c {
            Controller::Cpu => self.plan.cpu.as_ref(),
            Controller::Memory => self.plan.memory.as_ref(),
            Controller::Usage => self.plan.usage.as_ref(),
            Controller::Io => self.plan.io.as_ref(),
            Controller::Freezer => {
                return match &self.plan.freezer {
                    Freezer::V2(p) => Some((p.clone(), true)),
                    Freezer::V1(p) => Some((p.clone(), false)),
                    Freezer::Signals => None,
                };
            }
        };
        b.map(|b| (b.root.clone(), b.v2))
    }

    /// Every hierarchy root guest groups live in.
    pub fn roots(&self) -> &[PathBuf] {
        &self.plan.roots
    }

    fn parent_dir(&self, root: &Path) -> PathBuf {
        root.join(&self.plan.parent)
    }

    /// Create the parent subtree in every hierarchy, enable the v2
    /// controllers it needs, and make it idle if configured. Idempotent.
    pub fn ensure_parent(&self) -> Result<(), IsolationError> {
        let p = &self.plan;
        for root in &p.roots {
            mkdir_ok(&self.parent_dir(root))?;
        }
        if let Some(u) = &p.unified {
            let wanted: Vec<&str> = [(&p.cpu, "cpu"), (&p.memory, "memory"), (&p.io, "io")]
                .into_iter()
                .filter(|(b, _)| b.as_ref().is_some_and(|b| b.v2))
                .map(|(_, n)| n)
                .collect();
            for name in wanted {
                enable_v2_controller(u, name)?;
                enable_v2_controller(&self.parent_dir(u), name)?;
            }
        }
        // Written either way, so turning the option off takes effect on a
        // parent left idle by an earlier run.
        if let Some(cpu) = &p.cpu {
            set_idle_at(&self.parent_dir(&cpu.root), cpu.v2, p.parent_idle)?;
        }
        // The whole guest subtree at the lowest I/O weight, against the
        // owner's groups (weights act among siblings, as cpu.idle does).
        if let Some(io) = &p.io
            && let Err(e) = super::cgroup_io::set_lowest_at(&self.parent_dir(&io.root), io.v2)
        {
            tracing::warn!(error = %e, "cannot lower the guests' I/O weight");
        }
        Ok(())
    }

    /// Create (or re-open after a daemon restart) the group of `job`.
    pub fn create(&self, job: &str) -> Result<GuestCgroup, IsolationError> {
        check_job_name(job)?;
        self.ensure_parent()?;
        let g = GuestCgroup {
            plan: self.plan.clone(),
            job: job.to_string(),
        };
        for root in &self.plan.roots {
            mkdir_ok(&g.dir(root))?;
        }
        tracing::debug!(job, "guest cgroup created");
        Ok(g)
    }

    /// Handle on an existing group without creating anything.
    pub fn open(&self, job: &str) -> Result<GuestCgroup, IsolationError> {
        check_job_name(job)?;
        Ok(GuestCgroup {
            plan: self.plan.clone(),
            job: job.to_string(),
        })
    }

    /// Names of the guest groups that exist (in the first hierarchy).
    pub fn list(&self) -> Result<Vec<String>, IsolationError> {
        let Some(root) = self.plan.roots.first() else {
            return Ok(Vec::new());
        };
        let dir = self.parent_dir(root);
        let rd = match std::fs::read_dir(&dir) {
            Ok(r) => r,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(e) => return Err(IsolationError::io(&dir, e)),
        };
        let mut v: Vec<String> = rd
            .flatten()
            .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
            .filter_map(|e| e.file_name().to_str().map(str::to_string))
            .collect();
        v.sort();
        Ok(v)
    }

    /// Cumulative CPU of all guests (the parent group, which includes its
    /// descendants on both v1 cpuacct and v2 cpu.stat).
    pub fn total_guest_usage(&self) -> Result<Duration, IsolationError> {
        match &self.plan.usage {
            Some(b) => {
                let dir = self.parent_dir(&b.root);
                if !dir.exists() {
                    return Ok(Duration::ZERO);
                }
                read_usage(&dir, b.v2)
            }
            None => Ok(Duration::ZERO),
        }
    }

    /// Memory bounds on the whole guest subtree (all guests together);
    /// `false` when no memory controller is available. Call after
    /// [`CgroupManager::ensure_parent`].
    pub fn set_parent_memory(&self, m: MemoryBounds) -> Result<bool, IsolationError> {
        let Some(b) = &self.plan.memory else {
            return Ok(false);
        };
        set_memory_at(&self.parent_dir(&b.root), b.v2, m)?;
        Ok(true)
    }

    /// Remove the (empty) parent subtree everywhere; for tests and
    /// uninstall. Fails with EBUSY while guest groups remain.
    pub fn remove_parent(&self) -> Result<(), IsolationError> {
        for root in &self.plan.roots {
            rmdir_ok(&self.parent_dir(root))?;
        }
        Ok(())
    }
}

impl crate::owner::GuestCpuUsage for CgroupManager {
    fn guest_cpu_usage(&self) -> Result<Duration, String> {
        self.total_guest_usage().map_err(|e| e.to_string())
    }
}

fn check_job_name(job: &str) -> Result<(), IsolationError> {
    if job.is_empty() || job == "." || job == ".." || job.contains(['/', '\0']) {
        return Err(IsolationError::BadJobName(job.to_string()));
    }
    Ok(())
}

fn mkdir_ok(dir: &Path) -> Result<(), IsolationError> {
    match std::fs::create_dir(dir) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => Ok(()),
        Err(e) => Err(IsolationError::io(dir, e)),
    }
}

fn rmdir_ok(dir: &Path) -> Result<(), IsolationError> {
    match std::fs::remove_dir(dir) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(IsolationError::io(dir, e)),
    }
}

/// Write a control file in one `write(2)`, never creating it. `O_TRUNC` is
/// what a shell's `echo x > file` does; cgroupfs accepts it, and fake
/// hierarchies in tests then hold exactly the value written.
fn write_ctl(path: &Path, value: &str) -> Result<(), IsolationError> {
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .truncate(true)
        .open(path)
        .map_err(|e| IsolationError::io(path, e))?;
    f.write_all(value.as_bytes())
        .map_err(|e| IsolationError::io(path, e))
}

fn read_ctl(path: &Path) -> Result<String, IsolationError> {
    std::fs::read_to_string(path).map_err(|e| IsolationError::io(path, e))
}

fn is_not_found(e: &IsolationError) -> bool {
    matches!(e, IsolationError::Io { source, .. } if source.kind() == std::io::ErrorKind::NotFound)
}

fn enable_v2_controller(dir: &Path, name: &str) -> Result<(), IsolationError> {
    let path = dir.join("cgroup.subtree_control");
    let cur = read_ctl(&path)?;
    if cur.split_ascii_whitespace().any(|c| c == name) {
        return Ok(());
    }
    write_ctl(&path, &format!("+{name}"))
}

/// Idle (or normal) CPU priority on a group directory.
fn set_idle_at(dir: &Path, v2: bool, idle: bool) -> Result<IdleOutcome, IsolationError> {
    match write_ctl(&dir.join("cpu.idle"), if idle { "1" } else { "0" }) {
        Ok(()) => return Ok(IdleOutcome::CpuIdle),
        Err(e) if is_not_found(&e) => {}
        Err(e) => return Err(e),
    }
    // Kernels before 5.15: lowest weight is the best available.
    let (file, low, normal) = if v2 {
        ("cpu.weight", "1", "100")
    } else {
        ("cpu.shares", "2", "1024")
    };
    write_ctl(&dir.join(file), if idle { low } else { normal })?;
    Ok(IdleOutcome::MinimumWeight)
}

fn set_memory_at(dir: &Path, v2: bool, m: MemoryBounds) -> Result<(), IsolationError> {
    if v2 {
        let v = |x: Option<u64>| x.map_or_else(|| "max".to_string(), |n| n.to_string());
        write_ctl(&dir.join("memory.high"), &v(m.high))?;
        write_ctl(&dir.join("memory.max"), &v(m.max))?;
    } else {
        let v = |x: Option<u64>| x.map_or_else(|| "-1".to_string(), |n| n.to_string());
        write_ctl(&dir.join("memory.limit_in_bytes"), &v(m.max))?;
        write_ctl(&dir.join("memory.soft_limit_in_bytes"), &v(m.high))?;
    }
    Ok(())
}

fn read_usage(dir: &Path, v2: bool) -> Result<Duration, IsolationError> {
    if v2 {
        let path = dir.join("cpu.stat");
        let text = read_ctl(&path)?;
        let usec = text
            .lines()
            .find_map(|l| l.strip_prefix("usage_usec "))
            .and_then(|v| v.trim().parse::<u64>().ok())
            .ok_or_else(|| IsolationError::Parse {
                path: path.clone(),
                what: "no usage_usec line".to_string(),
            })?;
        Ok(Duration::from_micros(usec))
    } else {
        let path = dir.join("cpuacct.usage");
        let text = read_ctl(&path)?;
        let ns = text
            .trim()
            .parse::<u64>()
            .map_err(|e| IsolationError::Parse {
                path: path.clone(),
                what: e.to_string(),
            })?;
        Ok(Duration::from_nanos(ns))
    }
}

/// One guest's group across the hierarchies.
#[derive(Clone, Debug)]
pub struct GuestCgroup {
    plan: Arc<Plan>,
    job: String,
}

impl GuestCgroup {
    pub fn job(&self) -> &str {
        &self.job
    }

    /// The group's directory in the hierarchy rooted at `root`.
    pub fn dir(&self, root: &Path) -> PathBuf {
        root.join(&self.plan.parent).join(&self.job)
    }

    /// Every directory of this group (one per hierarchy).
    pub fn dirs(&self) -> Vec<PathBuf> {
        self.plan.roots.iter().map(|r| self.dir(r)).collect()
    }

    /// `cgroup.procs` of every hierarchy: a process must be written into
    /// each (the launcher writes from `pre_exec`).
    pub fn procs_files(&self) -> Vec<PathBuf> {
        self.dirs()
            .into_iter()
            .map(|d| d.join("cgroup.procs"))
            .collect()
    }

    /// Move a process (all its threads) into the group, in every hierarchy.
    pub fn add_pid(&self, pid: u32) -> Result<(), IsolationError> {
        for f in self.procs_files() {
            write_ctl(&f, &pid.to_string())?;
        }
        Ok(())
    }

    /// Pids in the group (union over hierarchies, sorted).
    pub fn pids(&self) -> Result<Vec<i32>, IsolationError> {
        let mut set = BTreeSet::new();
        for f in self.procs_files() {
            let text = match std::fs::read_to_string(&f) {
                Ok(t) => t,
                // Removed already: nothing in it.
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
                Err(e) => return Err(IsolationError::io(&f, e)),
            };
            for l in text.lines().map(str::trim).filter(|l| !l.is_empty()) {
                let pid = l.parse::<i32>().map_err(|e| IsolationError::Parse {
                    path: f.clone(),
                    what: format!("{l:?}: {e}"),
                })?;
                set.insert(pid);
            }
        }
        Ok(set.into_iter().collect())
    }

    /// Idle priority while lingering (`true`), normal otherwise. This ranks
    /// the guest against the *other guests*; against the owner, what counts
    /// is the parent (`CgroupConfig::parent_idle`), since `cpu.idle` acts
    /// among siblings only.
    pub fn set_idle(&self, idle: bool) -> Result<IdleOutcome, IsolationError> {
        match &self.plan.cpu {
            Some(b) => set_idle_at(&self.dir(&b.root), b.v2, idle),
            None => Ok(IdleOutcome::Unavailable),
        }
    }

    /// The lowest I/O weight the kernel offers (`cgroup_io.rs`); how
    /// many weight files took it (0: no proportional I/O control here).
    pub fn set_io_lowest(&self) -> Result<usize, IsolationError> {
        match &self.plan.io {
            Some(b) => super::cgroup_io::set_lowest_at(&self.dir(&b.root), b.v2),
            None => Ok(0),
        }
    }

    /// Memory bounds; `false` when no memory controller is available.
    pub fn set_memory(&self, m: MemoryBounds) -> Result<bool, IsolationError> {
        let Some(b) = &self.plan.memory else {
            return Ok(false);
        };
        set_memory_at(&self.dir(&b.root), b.v2, m)?;
        Ok(true)
    }

    /// Cumulative CPU time of the group.
    pub fn cpu_usage(&self) -> Result<Duration, IsolationError> {
        match &self.plan.usage {
            Some(b) => read_usage(&self.dir(&b.root), b.v2),
            None => Ok(Duration::ZERO),
        }
    }

    fn wait_for(
        &self,
        path: &Path,
        what: &'static str,
        mut done: impl FnMut() -> Result<bool, IsolationError>,
    ) -> Result<(), IsolationError> {
        let start = Instant::now();
        loop {
            if done()? {
                return Ok(());
            }
            if start.elapsed() >= self.plan.timeout {
                return Err(IsolationError::Timeout {
                    path: path.to_path_buf(),
                    what,
                    after: self.plan.timeout,
                });
            }
            std::thread::sleep(Duration::from_millis(5));
        }
    }

    fn signal_all(&self, sig: Signal) -> Result<usize, IsolationError> {
        let pids = self.pids()?;
        for &pid in &pids {
            match kill(Pid::from_raw(pid), sig) {
                Ok(()) | Err(nix::errno::Errno::ESRCH) => {}
                Err(source) => {
                    return Err(IsolationError::Signal {
                        pid,
                        signal: sig.as_str(),
                        source,
                    });
                }
            }
        }
        Ok(pids.len())
    }

    /// Stop every process of the guest; returns once the kernel reports the
    /// group frozen (v2 `cgroup.events`, v1 `freezer.state`).
    pub fn freeze(&self) -> Result<(), IsolationError> {
        match &self.plan.freezer {
            Freezer::V2(root) => {
                let dir = self.dir(root);
                write_ctl(&dir.join("cgroup.freeze"), "1")?;
                let ev = dir.join("cgroup.events");
                self.wait_for(&ev, "frozen 1", || {
                    Ok(events_frozen(&read_ctl(&ev)?) == Some(true))
                })
            }
            Freezer::V1(root) => {
                let st = self.dir(root).join("freezer.state");
                write_ctl(&st, "FROZEN")?;
                self.wait_for(&st, "FROZEN", || Ok(read_ctl(&st)?.trim() == "FROZEN"))
            }
            Freezer::Signals => {
                // Repeat until no new pid shows up: a fork between reading
                // cgroup.procs and the signal would escape otherwise.
                let mut seen = 0;
                loop {
                    let n = self.signal_all(Signal::SIGSTOP)?;
                    if n == seen {
                        return Ok(());
                    }
                    seen = n;
                }
            }
        }
    }

    pub fn thaw(&self) -> Result<(), IsolationError> {
        match &self.plan.freezer {
            Freezer::V2(root) => {
                let dir = self.dir(root);
                write_ctl(&dir.join("cgroup.freeze"), "0")?;
                let ev = dir.join("cgroup.events");
                self.wait_for(&ev, "frozen 0", || {
                    Ok(events_frozen(&read_ctl(&ev)?) != Some(true))
                })
            }
            Freezer::V1(root) => {
                let st = self.dir(root).join("freezer.state");
                write_ctl(&st, "THAWED")?;
                self.wait_for(&st, "THAWED", || Ok(read_ctl(&st)?.trim() == "THAWED"))
            }
            Freezer::Signals => self.signal_all(Signal::SIGCONT).map(|_| ()),
        }
    }

    /// Whether the freezer reports the group frozen (`false` with signals).
    pub fn is_frozen(&self) -> Result<bool, IsolationError> {
        match &self.plan.freezer {
            Freezer::V2(root) => {
                let ev = self.dir(root).join("cgroup.events");
                Ok(events_frozen(&read_ctl(&ev)?) == Some(true))
            }
            Freezer::V1(root) => {
                Ok(read_ctl(&self.dir(root).join("freezer.state"))?.trim() == "FROZEN")
            }
            Freezer::Signals => Ok(false),
        }
    }

    /// Kill every process of the guest and wait until the group is empty.
    pub fn kill(&self) -> Result<KillMethod, IsolationError> {
        if self.pids()?.is_empty() {
            return Ok(KillMethod::Empty);
        }
        let mut method = KillMethod::Signals;
        if let Some(u) = &self.plan.unified {
            match write_ctl(&self.dir(u).join("cgroup.kill"), "1") {
                Ok(()) => method = KillMethod::CgroupKill,
                // Before Linux 5.14 there is no cgroup.kill.
                Err(e) if is_not_found(&e) => {}
                Err(e) => return Err(e),
            }
        }
        let procs = self.procs_files().into_iter().next().unwrap_or_default();
        let v1_freezer = match &self.plan.freezer {
            Freezer::V1(root) => Some(self.dir(root).join("freezer.state")),
            _ => None,
        };
        self.wait_for(&procs, "an empty group", || {
            if self.signal_all(Signal::SIGKILL)? == 0 {
                return Ok(true);
            }
            // Tasks frozen by the v1 freezer do not act on SIGKILL until
            // thawed (v2 frozen tasks do).
            if let Some(st) = &v1_freezer {
                write_ctl(st, "THAWED")?;
            }
            Ok(false)
        })?;
        tracing::info!(job = %self.job, ?method, "guest killed");
        Ok(method)
    }

    /// Remove the group everywhere. The group must be empty (call
    /// [`GuestCgroup::kill`] first); a just-killed group can stay busy for a
    /// moment while its tasks exit, so EBUSY is retried until the timeout.
    pub fn remove(&self) -> Result<(), IsolationError> {
        for d in self.dirs() {
            let start = Instant::now();
            loop {
                match std::fs::remove_dir(&d) {
                    Ok(()) => break,
                    Err(e) if e.kind() == std::io::ErrorKind::NotFound => break,
                    Err(e)
                        if e.raw_os_error() == Some(libc::EBUSY)
                            && start.elapsed() < self.plan.timeout =>
                    {
                        std::thread::sleep(Duration::from_millis(5));
                    }
                    Err(e) => return Err(IsolationError::io(&d, e)),
                }
            }
        }
        tracing::debug!(job = %self.job, "guest cgroup removed");
        Ok(())
    }
}

/// `frozen` from `cgroup.events` (`populated 1\nfrozen 0\n`).
fn events_frozen(text: &str) -> Option<bool> {
    text.lines()
        .find_map(|l| l.strip_prefix("frozen "))
        .map(|v| v.trim() == "1")
}

/// Kills and removes a guest group when dropped, whatever happened before
/// (a failing test, a panicking supervisor thread).
pub struct RemoveOnDrop(pub GuestCgroup);

impl std::ops::Deref for RemoveOnDrop {
    type Target = GuestCgroup;
    fn deref(&self) -> &GuestCgroup {
        &self.0
    }
}

impl Drop for RemoveOnDrop {
    fn drop(&mut self) {
        if let Err(e) = self.0.kill() {
            tracing::warn!(job = %self.0.job, error = %e, "kill on drop failed");
        }
        if let Err(e) = self.0.remove() {
            tracing::warn!(job = %self.0.job, error = %e, "remove on drop failed");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mountinfo_hybrid_and_v2() {
        let hybrid = "31 23 0:28 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755
32 31 0:29 / /sys/fs/cgroup/cpu rw,relatime - cgroup cgroup rw,cpu
33 31 0:30 / /sys/fs/cgroup/cpuacct rw,relatime - cgroup cgroup rw,cpuacct
35 31 0:32 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory
37 31 0:34 / /sys/fs/cgroup/freezer rw,relatime - cgroup cgroup rw,freezer
38 31 0:35 / /sys/fs/cgroup/blkio rw,relatime - cgroup cgroup rw,blkio
40 31 0:37 / /sys/fs/cgroup/systemd rw,relatime - cgroup cgroup rw,name=systemd
41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw
";
        assert_eq!(
            parse_mountinfo(hybrid),
            Some(CgroupLayout::default_hybrid())
        );
        let comounted =
            "32 31 0:29 / /sys/fs/cgroup/cpu,cpuacct rw shared:1 - cgroup cgroup rw,cpu,cpuacct\n";
        let Some(CgroupLayout::Hybrid { unified: None, v1 }) = parse_mountinfo(comounted) else {
            panic!("not hybrid");
        };
        assert_eq!(v1.cpu, v1.cpuacct);
        let v2 = "30 23 0:26 / /sys/fs/cgroup rw,nosuid shared:4 - cgroup2 cgroup2 rw,nsdelegate\n";
        assert_eq!(
            parse_mountinfo(v2),
            Some(CgroupLayout::V2 {
                root: PathBuf::from("/sys/fs/cgroup")
            })
        );
        assert_eq!(parse_mountinfo("1 2 0:1 / / rw - ext4 /dev/sda rw\n"), None);
    }

    #[test]
    fn events_parsing() {
        assert_eq!(events_frozen("populated 1\nfrozen 1\n"), Some(true));
        assert_eq!(events_frozen("populated 1\nfrozen 0\n"), Some(false));
        assert_eq!(events_frozen("populated 1\n"), None);
    }

    #[test]
    fn job_names() {
        for bad in ["", ".", "..", "a/b", "a\0"] {
            assert!(check_job_name(bad).is_err(), "{bad:?}");
        }
        assert!(check_job_name("job-1.0").is_ok());
    }
}
