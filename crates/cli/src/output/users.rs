//! `glean users` for people: one row per user of the home (jobs by state,
//! nodes held, decayed usage, factor, output kept in the spool), then the
//! home's per-user limits.

use comfy_table::{Table, presets::UTF8_FULL_CONDENSED};
use gleaner_proto::api::HomeUsers;

/// A size in the largest unit that keeps it readable.
fn bytes(n: u64) -> String {
    const MB: u64 = 1 << 20;
    if n >= MB {
        format!("{:.1} MB", n as f64 / MB as f64)
    } else {
        format!("{n} B")
    }
}

fn limit(v: Option<u64>) -> String {
    v.map_or_else(|| "none".to_string(), |n| n.to_string())
}

pub(super) fn print(u: &HomeUsers) {
    let mut t = Table::new();
    t.load_preset(UTF8_FULL_CONDENSED).set_header(vec![
        "USER",
        "IDLE",
        "RUN",
        "SUSP",
        "HELD",
        "NODES",
        "USAGE",
        "FACTOR",
        "SPOOL",
        "ACCOUNTED AS",
    ]);
    for r in &u.users {
        t.add_row(vec![
            r.user.clone(),
            r.jobs.idle.to_string(),
            r.jobs.running.to_string(),
            r.jobs.suspended.to_string(),
            r.jobs.held.to_string(),
            r.nodes.to_string(),
            format!("{:.2}", r.usage),
            format!("{}", r.factor),
            bytes(r.spool_bytes),
            r.submitters.join(" "),
        ]);
    }
    println!("{t}");
    let l = &u.limits;
    println!(
        "Limits: max_jobs_per_owner = {}, max_jobs_per_submission = {}, max_jobs = {}, \
         max_running_per_owner = {}, spool per job {}, per user {}.",
        l.max_jobs_per_owner,
        l.max_jobs_per_submission,
        limit(l.max_jobs),
        limit(l.max_running_per_owner),
        bytes(l.max_job_spool_bytes),
        bytes(l.max_owner_spool_bytes),
    );
    println!(
        "A node given to this station goes to the user holding the fewest nodes \
         (weighted by factor), then the lower usage, then in turn."
    );
}
