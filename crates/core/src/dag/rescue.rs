//! Rescue DAGs in DAGMan's format and naming (`Dag::WriteRescue` and
//! `DagmanUtils::RescueDagName` in HTCondor).
//!
//! A rescue DAG is a partial DAG laid over the original one when it is
//! submitted again ([`super::load::apply_rescue`]): a comment header with
//! statistics, then `DONE node` for every node that succeeded (and for a
//! failed node whose children all depend on it weakly), and `RETRY node
//! n` with the retries left when `DAGMAN_RESET_RETRIES_UPON_RESCUE` is
//! false. It is named `FILE.rescue001`, `FILE.rescue002` … (`FILE_multi…`
//! for several DAG files), up to `DAGMAN_MAX_RESCUE_NUM`, after which the
//! last one is overwritten. A save point file has the same format, retries
//! always reset.

use super::command::{EdgeKind, NodeKind};
use super::run::{Run, Status};

/// Format version DAGMan writes.
pub const RESCUE_DAG_VERSION: &str = "2.1.0";

/// The name of rescue DAG number `n` of `primary` (the first DAG file).
pub fn rescue_name(primary: &str, multi: bool, n: u32) -> String {
    format!(
        "{primary}{}.rescue{n:03}",
        if multi { "_multi" } else { "" }
    )
}

/// The highest rescue number among `names` (file names in the primary
/// DAG file's directory, or full paths), 0 if none.
pub fn last_rescue_num(names: &[String], primary: &str, multi: bool, max: u32) -> u32 {
    let base = super::load::base_of(primary);
    let prefix = format!("{base}{}.rescue", if multi { "_multi" } else { "" });
    names
        .iter()
        .filter_map(|n| {
            let n = super::load::base_of(n);
            let digits = n.strip_prefix(&prefix)?;
            if digits.len() != 3 || !digits.bytes().all(|b| b.is_ascii_digit()) {
                return None;
            }
            digits.parse::<u32>().ok()
        })
        .filter(|&n| n <= max)
        .max()
        .unwrap_or(0)
}

/// Civil date and time (UTC) of a UNIX time.
pub fn utc(secs: u64) -> (i64, u32, u32, u32, u32, u32) {
    let days = (secs / 86_400) as i64;
    let rem = secs % 86_400;
    // Howard Hinnant's civil_from_days.
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let y = yoe + era * 400;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let y = if m <= 2 { y + 1 } else { y };
    (
        y,
        m,
        d,
        (rem / 3600) as u32,
        ((rem % 3600) / 60) as u32,
        (rem % 60) as u32,
    )
}

/// Whether a failed node's children all depend on it weakly (then its
/// rescue entry is `DONE`: it ran, which is all they need).
fn all_children_weak(run: &Run, i: usize) -> bool {
    let spec = run.spec();
    let children = &spec.nodes[i].children;
    !children.is_empty()
        && children.iter().all(|&c| {
            spec.nodes[c as usize]
                .parents
                .iter()
                .any(|p| p.node as usize == i && p.kind == EdgeKind::Weak)
        })
}

fn body(run: &Run, header: &str, now_secs: u64, reset_retries: bool) -> String {
    let spec = run.spec();
    let (y, mo, d, h, mi, s) = utc(now_secs);
    let mut out = String::from(header);
    out.push_str(&format!(
        "# Created {mo}/{d}/{y} {h:02}:{mi:02}:{s:02} UTC\n# Rescue DAG version: {RESCUE_DAG_VERSION}\n#\n"
    ));
    let failed: Vec<&str> = (0..spec.nodes.len())
        .filter(|&i| run.node(i).is_some_and(|n| n.status == Status::Error))
        .map(|i| spec.nodes[i].name.as_str())
        .collect();
    // DAGMan's count of done nodes, whatever made them done.
    let predone = (0..spec.nodes.len())
        .filter(|&i| run.node(i).is_some_and(|n| n.status == Status::Done))
        .count();
    out.push_str(&format!(
        "# Total number of Nodes: {}\n# Nodes premarked DONE: {predone}\n# Nodes that failed: {}\n#   ",
        run.node_count(),
        failed.len()
    ));
    for f in &failed {
        out.push_str(f);
        out.push(',');
    }
    out.push_str("<ENDLIST>\n\n");
    for (i, n) in spec.nodes.iter().enumerate() {
        let Some(r) = run.node(i) else { continue };
        if n.kind != NodeKind::Final {
            if r.status == Status::Done {
                out.push_str(&format!("DONE {}\n", n.name));
            } else if r.status == Status::Error && all_children_weak(run, i) {
                out.push_str("# Failed node with only weak child dependencies:\n");
                out.push_str(&format!("DONE {}\n", n.name));
            }
        }
        if r.max_retries > 0 && !reset_retries {
            let left = r.max_retries.saturating_sub(r.retries);
            out.push_str(&format!(
                "# {} of {} retries already performed; {left} remaining\n",
                r.retries, r.max_retries
            ));
            out.push_str(&format!("RETRY {} {left}", n.name));
            if let Some(u) = n.unless_exit {
                out.push_str(&format!(" UNLESS-EXIT {u}"));
            }
            out.push('\n');
        }
    }
    out
}

/// The rescue DAG of `run` now (`now_secs`: UNIX time), for DAG file
/// `dag_file` (the primary one).
pub fn rescue_text(run: &Run, dag_file: &str, now_secs: u64) -> String {
    let header = format!("# Rescue DAG file, created after running\n#   the {dag_file} DAG file\n");
    body(
        run,
        &header,
        now_secs,
        run.config().reset_retries_upon_rescue,
    )
}

/// The save point file written when node `node` starts.
pub fn save_point_text(run: &Run, node: usize, now_secs: u64) -> String {
    let name = run.spec().nodes.get(node).map_or("", |n| n.name.as_str());
    let header = format!("# Save file written at Start Node {name}\n");
    body(run, &header, now_secs, true)
}

/// Where a node's save point file goes: a bare name in `save_files/`
/// under the DAG's working directory, a path relative to that directory
/// as given.
pub fn save_point_path(cwd: &str, file: &str) -> String {
    if file.contains('/') {
        super::load::join_path(cwd, file)
    } else {
        super::load::join_path(cwd, &format!("save_files/{file}"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_numbers() {
        assert_eq!(rescue_name("/d/a.dag", false, 1), "/d/a.dag.rescue001");
        assert_eq!(rescue_name("a.dag", true, 12), "a.dag_multi.rescue012");
        let names: Vec<String> = [
            "a.dag.rescue001",
            "a.dag.rescue003",
            "a.dag.rescue002.old",
            "b.dag.rescue009",
            "a.dag.rescue01",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        assert_eq!(last_rescue_num(&names, "/x/a.dag", false, 100), 3);
        assert_eq!(last_rescue_num(&names, "/x/a.dag", false, 2), 1);
    }

    #[test]
    fn utc_dates() {
        assert_eq!(utc(0), (1970, 1, 1, 0, 0, 0));
        assert_eq!(utc(1_292_620_511), (2010, 12, 17, 21, 15, 11));
        assert_eq!(utc(951_782_400), (2000, 2, 29, 0, 0, 0));
    }
}
