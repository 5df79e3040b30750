//! Guest cgroups below the station's own cgroup, when systemd delegates
//! that subtree to it (`Delegate=yes` in `gleaner-station.service`,
//! `[isolation] delegated = true`).
//!
//! systemd owns the cgroup tree and expects a service to write only below
//! its own, delegated cgroup (systemd.resource-control(5), `Delegate=`):
//! guest groups at `/sys/fs/cgroup/gleaner` would escape the unit, so
//! stopping it would not stop them. With delegation each hierarchy root of
//! the layout becomes the station's own cgroup in that hierarchy (read
//! from `/proc/self/cgroup`), and guests live at
//! `<own>/<parent>/<guest>`.
//!
//! cgroup v2 lets a non-root group hand controllers to its children only
//! while it holds no process itself (the "no internal processes" rule,
//! Documentation/admin-guide/cgroup-v2.rst), so the station first moves
//! itself into a leaf, `<own>/station`, in the v2 hierarchy. systemd
//! 254's `DelegateSubgroup=` does the same; Debian 12 has systemd 252.

use super::{CgroupLayout, IsolationError, V1Roots};
use std::path::{Path, PathBuf};

/// The leaf the station moves itself into in the v2 hierarchy.
pub const DAEMON_LEAF: &str = "station";

/// A process's cgroup in each hierarchy, as `/proc/<pid>/cgroup` lists
/// them: paths relative to the hierarchy's root (leading `/` removed).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct OwnCgroups {
    /// The v2 (unified) hierarchy: the `0::PATH` line.
    pub v2: Option<PathBuf>,
    /// v1 hierarchies: their controllers and the path.
    pub v1: Vec<(Vec<String>, PathBuf)>,
}

impl OwnCgroups {
    /// This process's, from `/proc/self/cgroup`.
    pub fn of_self() -> Result<Self, IsolationError> {
        let path = Path::new("/proc/self/cgroup");
        let text = std::fs::read_to_string(path).map_err(|e| IsolationError::io(path, e))?;
        Ok(Self::parse(&text))
    }

    /// Parses `ID:CONTROLLERS:PATH` lines; lines that do not parse are
    /// skipped.
    pub fn parse(text: &str) -> Self {
        let mut own = OwnCgroups::default();
        for line in text.lines() {
            let mut f = line.splitn(3, ':');
            let (Some(id), Some(controllers), Some(path)) = (f.next(), f.next(), f.next()) else {
                continue;
            };
            let rel = PathBuf::from(path.trim_start_matches('/'));
            if id == "0" && controllers.is_empty() {
                own.v2 = Some(rel);
            } else {
                let names = controllers.split(',').map(str::to_string).collect();
                own.v1.push((names, rel));
            }
        }
        own
    }

    /// The path in the v1 hierarchy serving `controller`.
    fn v1_path(&self, controller: &str) -> Option<&Path> {
        self.v1
            .iter()
            .find(|(names, _)| names.iter().any(|n| n == controller))
            .map(|(_, p)| p.as_path())
    }

    /// `layout` with every hierarchy root replaced by this process's own
    /// cgroup in it; a hierarchy this process is not listed in is dropped
    /// (the station then does without it, as without the controller).
    pub fn below(&self, layout: &CgroupLayout) -> CgroupLayout {
        let v2 = |root: &Path| self.v2.as_ref().map(|p| root.join(p));
        match layout {
            CgroupLayout::V2 { root } => CgroupLayout::V2 {
                root: v2(root).unwrap_or_else(|| root.clone()),
            },
            CgroupLayout::Hybrid { unified, v1 } => {
                let at =
                    |root: &Option<PathBuf>, c: &str| Some(root.as_ref()?.join(self.v1_path(c)?));
                CgroupLayout::Hybrid {
                    unified: unified.as_deref().and_then(v2),
                    v1: V1Roots {
                        cpu: at(&v1.cpu, "cpu"),
                        cpuacct: at(&v1.cpuacct, "cpuacct"),
                        memory: at(&v1.memory, "memory"),
                        freezer: at(&v1.freezer, "freezer"),
                        blkio: at(&v1.blkio, "blkio"),
                    },
                }
            }
        }
    }
}

/// The v2 hierarchy's directory of `layout`, if it has one.
fn unified_of(layout: &CgroupLayout) -> Option<&Path> {
    match layout {
        CgroupLayout::V2 { root } => Some(root),
        CgroupLayout::Hybrid { unified, .. } => unified.as_deref(),
    }
}

/// The layout for a delegated station: its own cgroups as roots, after
/// moving the process into [`DAEMON_LEAF`] of its v2 cgroup (so that the
/// cgroup may enable controllers for the guests'). `own` is normally
/// [`OwnCgroups::of_self`]; a station in the root cgroup (not run by
/// systemd) keeps `layout` as it is.
pub fn delegated_layout(
    layout: &CgroupLayout,
    own: &OwnCgroups,
) -> Result<CgroupLayout, IsolationError> {
    // Built a second time (or after a restart in the same cgroup): the
    // process is in the leaf already, and its parent is the own cgroup.
    let mut own = own.clone();
    if let Some(p) = &own.v2
        && p.file_name().is_some_and(|n| n == DAEMON_LEAF)
    {
        own.v2 = p.parent().map(Path::to_path_buf);
    }
    let below = own.below(layout);
    if let Some(dir) = unified_of(&below)
        && own.v2.as_ref().is_some_and(|p| !p.as_os_str().is_empty())
    {
        move_self_into_leaf(dir)?;
    }
    Ok(below)
}

/// Moves this process (every thread: `cgroup.procs`) into `<dir>/station`,
/// unless it is there already.
fn move_self_into_leaf(dir: &Path) -> Result<(), IsolationError> {
    let leaf = dir.join(DAEMON_LEAF);
    match std::fs::create_dir(&leaf) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
        Err(e) => return Err(IsolationError::io(&leaf, e)),
    }
    let procs = leaf.join("cgroup.procs");
    let pid = std::process::id().to_string();
    std::fs::write(&procs, &pid).map_err(|e| IsolationError::io(&procs, e))?;
    tracing::info!(cgroup = %leaf.display(), "station moved into its delegated cgroup's leaf");
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    const HYBRID: &str = "\
9:name=systemd:/system.slice/gleaner-station.service
8:pids:/system.slice/gleaner-station.service
4:memory:/system.slice/gleaner-station.service
2:cpu,cpuacct:/system.slice/gleaner-station.service
6:freezer:/
0::/system.slice/gleaner-station.service
";

    #[test]
    fn proc_cgroup_lines_parse() {
        let own = OwnCgroups::parse(HYBRID);
        let unit = PathBuf::from("system.slice/gleaner-station.service");
        assert_eq!(own.v2.as_ref(), Some(&unit));
        assert_eq!(own.v1_path("cpuacct"), Some(unit.as_path()));
        assert_eq!(own.v1_path("freezer"), Some(Path::new("")));
        assert_eq!(own.v1_path("blkio"), None);
        assert_eq!(
            OwnCgroups::parse("garbage\n\n0::/\n").v2,
            Some(PathBuf::new())
        );
    }

    #[test]
    fn every_hierarchy_root_becomes_the_own_cgroup() {
        let own = OwnCgroups::parse(HYBRID);
        let unit = "system.slice/gleaner-station.service";
        let r = |s: &str| Some(PathBuf::from(s));
        let hybrid = CgroupLayout::Hybrid {
            unified: r("/c/unified"),
            v1: V1Roots {
                cpu: r("/c/cpu"),
                cpuacct: r("/c/cpuacct"),
                memory: r("/c/memory"),
                freezer: r("/c/freezer"),
                blkio: None,
            },
        };
        assert_eq!(
            own.below(&hybrid),
            CgroupLayout::Hybrid {
                unified: r(&format!("/c/unified/{unit}")),
                v1: V1Roots {
                    cpu: r(&format!("/c/cpu/{unit}")),
                    cpuacct: r(&format!("/c/cpuacct/{unit}")),
                    memory: r(&format!("/c/memory/{unit}")),
                    freezer: r("/c/freezer/"),
                    blkio: None,
                },
            }
        );
        let v2 = CgroupLayout::V2 {
            root: PathBuf::from("/sys/fs/cgroup"),
        };
        assert_eq!(
            OwnCgroups::parse("0::/system.slice/x.service\n").below(&v2),
            CgroupLayout::V2 {
                root: PathBuf::from("/sys/fs/cgroup/system.slice/x.service")
            }
        );
        // A hierarchy the process is not in is dropped.
        let only_v2 = OwnCgroups::parse("0::/a.service\n").below(&hybrid);
        let CgroupLayout::Hybrid { unified, v1 } = only_v2 else {
            panic!("layout kind changed")
        };
        assert_eq!(unified, r("/c/unified/a.service"));
        assert_eq!(v1, V1Roots::default());
    }

    /// On a fake v2 tree: the leaf is made and the pid written to its
    /// cgroup.procs (a plain file here, so the process does not move).
    #[test]
    fn the_daemon_moves_into_its_leaf_only_when_delegated() {
        let dir = tempfile::tempdir().unwrap();
        let unit = dir.path().join("system.slice/s.service");
        std::fs::create_dir_all(&unit).unwrap();
        let layout = CgroupLayout::V2 {
            root: dir.path().to_path_buf(),
        };
        let own = OwnCgroups::parse("0::/system.slice/s.service\n");
        assert_eq!(
            delegated_layout(&layout, &own).unwrap(),
            CgroupLayout::V2 { root: unit.clone() }
        );
        let procs = std::fs::read_to_string(unit.join("station/cgroup.procs")).unwrap();
        assert_eq!(procs, std::process::id().to_string());
        // Once in the leaf, the same layout again, not a leaf in the leaf.
        let moved = OwnCgroups::parse("0::/system.slice/s.service/station\n");
        assert_eq!(
            delegated_layout(&layout, &moved).unwrap(),
            CgroupLayout::V2 { root: unit.clone() }
        );
        assert!(!unit.join("station/station").exists());
        // In the root cgroup (no systemd): nothing moves, nothing changes.
        let root_only = tempfile::tempdir().unwrap();
        let layout = CgroupLayout::V2 {
            root: root_only.path().to_path_buf(),
        };
        assert_eq!(
            delegated_layout(&layout, &OwnCgroups::parse("0::/\n")).unwrap(),
            layout
        );
        assert!(!root_only.path().join(DAEMON_LEAF).exists());
    }
}
