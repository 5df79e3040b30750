//! The station's `[isolation]` settings and how they become a
//! [`CgroupManager`] (or, with a clear warning, none), a [`SlotConfig`] and
//! a launch [`Confinement`].
//!
//! ```toml
//! [isolation]
//! cgroups = "auto"      # off | auto (default) | v2 | hybrid
//! cgroup_root = "/sys/fs/cgroup"   # optional; tests point it at a temp dir
//! parent = "gleaner"
//! parent_idle = true
//! required = false      # true: refuse to start without cgroups
//! bound_memory = true   # memory bound on the whole guest subtree
//! slot_prefix = "gleaner-slot"   # slot accounts gleaner-slot1..N
//! slot_count = 4        # default: the station's CPUs
//! create_slot_users = true       # false: a package created them
//! slot_first_uid = 61000         # optional: fixed slot uids (CRIU pools)
//! namespaces = "auto"   # off | auto | required
//! private_tmp = true    # own tmpfs /tmp, /var/tmp, /dev/shm (with namespaces)
//! max_processes = 4096  # RLIMIT_NPROC of a slot-account guest; 0: none
//! delegated = false     # true: guest groups below the station's own
//!                       # cgroup (systemd Delegate=yes; delegation.rs)
//! own_root = true       # each namespaced guest sees a root of its own (view.rs)
//! expose = ["/data", "/scratch:rw"]   # also seen by every guest
//! network = "auto"      # auto | private | host (netns.rs)
//! disk = "auto"         # auto | loop | measure (sandbox_disk.rs)
//! default_disk_mb = 4096  # a job's sandbox when it gives no request_disk
//!
//! [isolation.volumes]   # seen by the jobs that ask: +WantVolumes = "refdata"
//! refdata = "/srv/refdata"
//! ```

use super::{
    CgroupConfig, CgroupLayout, CgroupManager, Confinement, DEFAULT_DISK_MB, DEFAULT_MAX_PROCESSES,
    DEFAULT_SLOT_PREFIX, DiskMode, Exposed, IsolationError, MemoryBounds, NamespaceMode,
    NetworkMode, SlotConfig, V1Roots, default_slot_count,
};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// Which cgroup layout to drive.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CgroupMode {
    /// No cgroups: guests run in their own process group, protected by
    /// per-task `SCHED_IDLE` and SIGSTOP only, and found by their slot's
    /// uid.
    Off,
    /// Detect the layout: from `/proc/self/mountinfo`, or, when
    /// `cgroup_root` is set, from what that directory holds. The default
    /// (issue 12: cgroups wherever the station may create them); where it
    /// may not (no root, no delegation), the station says why, loudly, and
    /// runs guests as with `Off`.
    #[default]
    Auto,
    /// Pure v2 at `cgroup_root` (default `/sys/fs/cgroup`).
    V2,
    /// v1 controllers at `<cgroup_root>/{cpu,cpuacct,memory,freezer}` and
    /// the v2 mount at `<cgroup_root>/unified` (platform.md §1.2).
    Hybrid,
}

/// `[isolation]` in `station.toml`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct CgroupSettings {
    pub cgroups: CgroupMode,
    /// Where the cgroup mounts are; `/sys/fs/cgroup` when unset.
    pub cgroup_root: Option<PathBuf>,
    /// Subtree holding every guest group (existing subtrees are left alone).
    pub parent: String,
    /// Give the whole guest subtree idle CPU priority (`cpu.idle` /
    /// `cpu.shares=2`): without it an idle leaf still competes with the
    /// owner at its parent's weight (see [`CgroupConfig::parent_idle`]).
    pub parent_idle: bool,
    /// Refuse to start when cgroups are asked for but unusable.
    pub required: bool,
    /// Bound the memory of the whole guest subtree to the memory the
    /// station offers (`memory_mb`): soft bound there, hard bound 25 %
    /// above, so the owner's working set wins (Ryu & Hollingsworth L142).
    pub bound_memory: bool,
    /// Slot account names are `<slot_prefix><n>` (root only; see
    /// `slots.rs`).
    pub slot_prefix: String,
    /// How many slot accounts, i.e. guests at once; `None`: the CPUs.
    pub slot_count: Option<u32>,
    /// Create missing slot accounts at start (root only).
    pub create_slot_users: bool,
    /// Fixed slot uids from this one on (`None`: chosen by `useradd`).
    pub slot_first_uid: Option<u32>,
    /// Own PID and mount namespaces for guests (`confine.rs`).
    pub namespaces: NamespaceMode,
    /// A fresh tmpfs on `/tmp`, `/var/tmp` and `/dev/shm` for each guest
    /// that has its own mount namespace (`confine.rs`).
    pub private_tmp: bool,
    /// `RLIMIT_NPROC` of each guest running as a slot account (every
    /// thread counts); 0: no bound beyond the daemon's own.
    pub max_processes: u64,
    /// Guest groups below the station's own cgroup, which systemd
    /// delegates to it (`Delegate=yes`), instead of below each
    /// hierarchy's root (`delegation.rs`).
    pub delegated: bool,
    /// Each guest with namespaces sees a root of its own (`view.rs`);
    /// `false`: the host's file system with a private `/tmp`, `/var/tmp`
    /// and `/dev/shm` (`private_tmp`).
    pub own_root: bool,
    /// Directories every guest sees besides the system's (read-only
    /// unless `:rw`): the owner's choice.
    pub expose: Vec<Exposed>,
    /// Directories a job sees when it asks for them by name
    /// (`+WantVolumes`).
    pub volumes: BTreeMap<String, Exposed>,
    /// The guests' network (`netns.rs`).
    pub network: NetworkMode,
    /// How `request_disk` is enforced (`sandbox_disk.rs`).
    pub disk: DiskMode,
    /// A job's sandbox size when it gives no `request_disk`, MiB.
    pub default_disk_mb: u64,
}

/// `[isolation]` by the name of what it configures (the struct predates
/// slot accounts and namespaces).
pub type IsolationSettings = CgroupSettings;

impl Default for CgroupSettings {
    fn default() -> Self {
        CgroupSettings {
            cgroups: CgroupMode::Auto,
            cgroup_root: None,
            parent: "gleaner".to_string(),
            parent_idle: true,
            required: false,
            bound_memory: true,
            slot_prefix: DEFAULT_SLOT_PREFIX.to_string(),
            slot_count: None,
            create_slot_users: true,
            slot_first_uid: None,
            namespaces: NamespaceMode::Auto,
            private_tmp: true,
            max_processes: DEFAULT_MAX_PROCESSES,
            delegated: false,
            own_root: true,
            expose: Vec::new(),
            volumes: BTreeMap::new(),
            network: NetworkMode::Auto,
            disk: DiskMode::Auto,
            default_disk_mb: DEFAULT_DISK_MB,
        }
    }
}

const DEFAULT_ROOT: &str = "/sys/fs/cgroup";

fn hybrid_at(root: &Path) -> CgroupLayout {
    let p = |s: &str| Some(root.join(s));
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

impl CgroupSettings {
    /// Checks values serde cannot; the message names the key.
    pub fn validate(&self) -> Result<(), String> {
        let p = self.parent.as_str();
        if p.is_empty() || p == "." || p == ".." || p.contains(['/', '\0']) {
            return Err(format!(
                "isolation.parent {p:?}: must be one path component"
            ));
        }
        if self.default_disk_mb == 0 {
            return Err("isolation.default_disk_mb: must be at least 1".to_string());
        }
        for name in self.volumes.keys() {
            if name.is_empty()
                || !name
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
            {
                return Err(format!(
                    "isolation.volumes.{name}: a volume's name is letters, digits, `_` and `-`"
                ));
            }
        }
        self.slot_config().validate()
    }

    /// The slot accounts these settings name.
    pub fn slot_config(&self) -> SlotConfig {
        let mut c = SlotConfig::new(
            self.slot_prefix.clone(),
            self.slot_count.unwrap_or_else(default_slot_count),
        );
        c.create = self.create_slot_users;
        c.first_uid = self.slot_first_uid;
        c
    }

    /// The launch policy these settings ask for, after probing whether
    /// namespaces are allowed here (`namespaces = "required"` fails when
    /// they are not).
    pub fn confinement(&self) -> Result<Confinement, IsolationError> {
        Ok(Confinement::for_station(self.namespaces)?
            .with_private_tmp(self.private_tmp)
            .with_max_processes(self.process_bound()))
    }

    /// `max_processes` as a bound (`None` for 0).
    pub fn process_bound(&self) -> Option<u64> {
        (self.max_processes > 0).then_some(self.max_processes)
    }

    /// The layout these settings select, `None` when cgroups are off.
    pub fn layout(&self) -> Result<Option<CgroupLayout>, IsolationError> {
        let root = self
            .cgroup_root
            .clone()
            .unwrap_or_else(|| PathBuf::from(DEFAULT_ROOT));
        Ok(match self.cgroups {
            CgroupMode::Off => None,
            CgroupMode::V2 => Some(CgroupLayout::V2 { root }),
            CgroupMode::Hybrid => Some(hybrid_at(&root)),
            CgroupMode::Auto => match &self.cgroup_root {
                None => Some(CgroupLayout::detect()?),
                // A v2 root has cgroup.controllers at its top.
                Some(r) if r.join("cgroup.controllers").is_file() => {
                    Some(CgroupLayout::V2 { root: r.clone() })
                }
                Some(r) => Some(hybrid_at(r)),
            },
        })
    }

    fn try_build(&self, memory_mb: u64) -> Result<Option<CgroupManager>, IsolationError> {
        let Some(mut layout) = self.layout()? else {
            return Ok(None);
        };
        if self.delegated {
            layout = super::delegation::delegated_layout(
                &layout,
                &super::delegation::OwnCgroups::of_self()?,
            )?;
        }
        let mut cfg = CgroupConfig::new(layout);
        cfg.parent = self.parent.clone();
        cfg.parent_idle = self.parent_idle;
        if !self.parent_idle {
            tracing::warn!(
                "isolation.parent_idle = false: the guest subtree competes with the owner at \
                 normal weight; guests should run at idle priority at all times"
            );
        }
        let m = CgroupManager::new(cfg)?;
        // Creating the parent proves we may write there (root, delegation).
        m.ensure_parent()?;
        if self.bound_memory && memory_mb > 0 {
            let bytes = memory_mb.saturating_mul(1024 * 1024);
            m.set_parent_memory(MemoryBounds {
                high: Some(bytes),
                max: Some(bytes.saturating_add(bytes / 4)),
            })?;
        }
        Ok(Some(m))
    }

    /// A manager for the station's own user processes (the home's local
    /// jobs and DAG scripts): the same layout, its own subtree
    /// `<parent>-<suffix>` at normal weight and without the guests' memory
    /// bound. `None` when cgroups are off or unusable (the processes then
    /// run in their session only).
    pub fn build_named(&self, suffix: &str) -> Option<CgroupManager> {
        let mut s = self.clone();
        s.parent = format!("{}-{suffix}", self.parent);
        s.parent_idle = false;
        s.bound_memory = false;
        match s.try_build(0) {
            Ok(m) => m,
            Err(e) => {
                tracing::warn!(error = %e, "no cgroups for the home's user processes");
                None
            }
        }
    }

    /// The manager to hand to the starter. When cgroups were asked for but
    /// cannot be used, logs why and returns `Ok(None)` (guests then rely on
    /// per-task SCHED_IDLE and SIGSTOP), unless `required` is set.
    pub fn build(&self, memory_mb: u64) -> Result<Option<CgroupManager>, IsolationError> {
        match self.try_build(memory_mb) {
            Ok(m) => {
                if m.is_none() {
                    tracing::warn!(
                        "guests run without cgroups ([isolation] cgroups = \"off\"): per-task \
                         SCHED_IDLE, SIGSTOP and kill by uid only, no memory bounds"
                    );
                }
                Ok(m)
            }
            Err(e) if !self.required => {
                tracing::warn!(
                    error = %e,
                    euid = nix::unistd::geteuid().as_raw(),
                    "GUESTS RUN WITHOUT CGROUPS: cannot create the guest cgroups ({e}); guests \
                     fall back to per-task SCHED_IDLE, SIGSTOP and kill by uid, without memory \
                     bounds, and guest CPU is not subtracted from the owner's load. Run the \
                     station as root or delegate a cgroup subtree to it, or set \
                     [isolation] cgroups = \"off\" to silence this"
                );
                Ok(None)
            }
            Err(e) => Err(e),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn layouts_from_settings() {
        let mut s = CgroupSettings {
            cgroups: CgroupMode::Off,
            ..Default::default()
        };
        assert_eq!(s.layout().unwrap(), None);
        let dir = tempfile::tempdir().unwrap();
        s.cgroup_root = Some(dir.path().to_path_buf());
        s.cgroups = CgroupMode::Auto;
        assert_eq!(s.layout().unwrap(), Some(hybrid_at(dir.path())));
        std::fs::write(dir.path().join("cgroup.controllers"), "cpu memory\n").unwrap();
        assert_eq!(
            s.layout().unwrap(),
            Some(CgroupLayout::V2 {
                root: dir.path().to_path_buf()
            })
        );
        s.cgroups = CgroupMode::Hybrid;
        assert_eq!(s.layout().unwrap(), Some(hybrid_at(dir.path())));
    }

    #[test]
    fn unusable_cgroups_fall_back_unless_required() {
        let dir = tempfile::tempdir().unwrap();
        let mut s = CgroupSettings {
            cgroups: CgroupMode::V2,
            cgroup_root: Some(dir.path().join("missing")),
            ..Default::default()
        };
        assert!(s.build(1024).unwrap().is_none());
        s.required = true;
        assert!(s.build(1024).is_err());
        s.parent = "a/b".into();
        assert!(s.validate().is_err());
    }

    #[test]
    fn slot_and_namespace_keys() {
        let s: CgroupSettings = toml::from_str(
            "slot_prefix = \"gl-slot\"\nslot_count = 3\ncreate_slot_users = false\n\
             slot_first_uid = 61000\nnamespaces = \"required\"\n",
        )
        .unwrap();
        assert_eq!(
            s.slot_config(),
            SlotConfig {
                prefix: "gl-slot".into(),
                count: 3,
                create: false,
                first_uid: Some(61000),
            }
        );
        assert_eq!(s.namespaces, NamespaceMode::Required);
        assert!(s.validate().is_ok());
        let d = CgroupSettings::default();
        assert_eq!(d.slot_config().prefix, "gleaner-slot");
        assert_eq!(d.slot_config().count, default_slot_count());
        assert!(d.slot_config().create);
        assert_eq!(d.namespaces, NamespaceMode::Auto);
        // Cgroups on by default wherever the station may create them.
        assert_eq!(d.cgroups, CgroupMode::Auto);
        let bad = CgroupSettings {
            slot_prefix: "Bad/Prefix".into(),
            ..Default::default()
        };
        assert!(bad.validate().unwrap_err().contains("slot_prefix"));
        assert!(toml::from_str::<CgroupSettings>("slot_count = 0").is_ok());
        let zero: CgroupSettings = toml::from_str("slot_count = 0").unwrap();
        assert!(zero.validate().is_err());
    }

    #[test]
    fn view_network_and_disk_keys() {
        let s: CgroupSettings = toml::from_str(
            "expose = [\"/data\", \"/scratch:rw\"]\nnetwork = \"host\"\ndisk = \"loop\"\n\
             default_disk_mb = 100\nown_root = false\n[volumes]\nrefdata = \"/srv/ref\"\n",
        )
        .unwrap();
        assert_eq!(s.expose.len(), 2);
        assert!(s.expose[1].writable);
        assert_eq!(s.network, NetworkMode::Host);
        assert_eq!(s.disk, DiskMode::Loop);
        assert_eq!(s.default_disk_mb, 100);
        assert!(!s.own_root);
        assert_eq!(s.volumes["refdata"].path, PathBuf::from("/srv/ref"));
        assert!(s.validate().is_ok());
        let d = CgroupSettings::default();
        assert_eq!(
            (d.network, d.disk, d.default_disk_mb, d.own_root),
            (NetworkMode::Auto, DiskMode::Auto, DEFAULT_DISK_MB, true)
        );
        let bad: CgroupSettings = toml::from_str("[volumes]\n\"a b\" = \"/x\"\n").unwrap();
        assert!(bad.validate().unwrap_err().contains("isolation.volumes"));
        assert!(toml::from_str::<CgroupSettings>("expose = [\"relative\"]").is_err());
        assert!(toml::from_str::<CgroupSettings>("network = \"bridge\"").is_err());
        let zero: CgroupSettings = toml::from_str("default_disk_mb = 0").unwrap();
        assert!(zero.validate().is_err());
    }

    #[test]
    fn fake_v2_root_gets_parent_and_memory_bound() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        std::fs::write(root.join("cgroup.controllers"), "cpu memory\n").unwrap();
        std::fs::write(root.join("cgroup.subtree_control"), "").unwrap();
        // The files the kernel would create in the parent.
        let parent = root.join("gleaner");
        std::fs::create_dir(&parent).unwrap();
        for f in [
            "cgroup.subtree_control",
            "cpu.idle",
            "memory.high",
            "memory.max",
        ] {
            std::fs::write(parent.join(f), "").unwrap();
        }
        let s = CgroupSettings {
            cgroups: CgroupMode::Auto,
            cgroup_root: Some(root.to_path_buf()),
            ..Default::default()
        };
        assert!(s.build(100).unwrap().is_some());
        let r = |f: &str| std::fs::read_to_string(parent.join(f)).unwrap();
        assert_eq!(r("cpu.idle"), "1");
        assert_eq!(r("memory.high"), (100u64 << 20).to_string());
        assert_eq!(r("memory.max"), (125u64 << 20).to_string());
    }
}
