//! Tables and sentences for people: the default renderer.

use super::escape::{cells, say, shout};
use super::format::{autoformat_value, epoch_date, exit_code, run_time, short_date, yes_no};
use super::{Analysis, ClusterProgress, JobAction, JobList, LocalQueue, Output};
use comfy_table::{Table, presets::UTF8_FULL_CONDENSED};
use gleaner_coordinator::tokens::{IssuedToken, RevokeOutcome, TokenRecord};
use gleaner_proto::api::{ActionResponse, JobInfo};
use gleaner_proto::wire::{PoolStatus, SubmitResponse, UserPrio};
use gleaner_station::home::dagman::{DagRmResponse, DagStatus, DagSubmitResponse};

/// Renders with `comfy-table` on stdout; problems go to stderr.
pub struct TableOutput;

fn table(header: Vec<&str>) -> Table {
    let mut t = Table::new();
    t.load_preset(UTF8_FULL_CONDENSED).set_header(header);
    t
}

fn count(jobs: &[JobInfo], kind: &str) -> usize {
    jobs.iter()
        .filter(|j| j.state.kind().name() == kind)
        .count()
}

impl Output for TableOutput {
    fn submitted(&self, resp: &SubmitResponse) {
        say!(
            "{} job(s) submitted to cluster {}.",
            resp.jobs.len(),
            resp.cluster
        );
    }

    fn jobs(&self, jobs: &[JobInfo], list: JobList) {
        let history = list == JobList::History;
        let mut header = vec!["ID", "OWNER", "SUBMITTED", "RUN_TIME", "ST", "HOST", "CMD"];
        if history {
            header.insert(6, "EXIT");
        }
        let mut t = table(header);
        for j in jobs {
            let mut row = vec![
                j.id.to_string(),
                j.owner.clone(),
                short_date(j.submitted_at),
                run_time(j),
                j.state.kind().letter().to_string(),
                j.host.clone().unwrap_or_default(),
                j.cmd.clone(),
            ];
            if history {
                row.insert(6, exit_code(j));
            }
            t.add_row(cells(row));
        }
        say!("{t}");
        if list == JobList::Queue {
            say!(
                "Total: {} jobs; {} idle, {} running, {} suspended, {} held",
                jobs.len(),
                count(jobs, "idle"),
                count(jobs, "running"),
                count(jobs, "suspended"),
                count(jobs, "held")
            );
        }
    }

    fn queue_page(&self, p: &super::QueuePage) {
        let s = &p.summary;
        if !s.clusters.is_empty() {
            let mut t = table(vec![
                "OWNER",
                "BATCH",
                "SUBMITTED",
                "DONE",
                "RUN",
                "IDLE",
                "HOLD",
                "TOTAL",
            ]);
            for c in &s.clusters {
                let n = &c.counts;
                t.add_row(cells(vec![
                    c.owner.clone(),
                    format!("ID: {}", c.cluster),
                    short_date(c.submitted_at),
                    (n.completed + n.removed).to_string(),
                    (n.running + n.suspended).to_string(),
                    n.idle.to_string(),
                    n.held.to_string(),
                    n.total().to_string(),
                ]));
            }
            say!("{t}");
        }
        if !p.jobs.is_empty() {
            let mut t = table(vec![
                "ID",
                "OWNER",
                "SUBMITTED",
                "RUN_TIME",
                "ST",
                "HOST",
                "CMD",
            ]);
            for j in &p.jobs {
                t.add_row(cells(vec![
                    j.id.to_string(),
                    j.owner.clone(),
                    short_date(j.submitted_at),
                    run_time(j),
                    j.state.kind().letter().to_string(),
                    j.host.clone().unwrap_or_default(),
                    j.cmd.clone(),
                ]));
            }
            say!("{t}");
        }
        let n = &s.total;
        say!(
            "Total: {} jobs; {} idle, {} running, {} suspended, {} held",
            n.active(),
            n.idle,
            n.running,
            n.suspended,
            n.held
        );
        if p.pages > 1 {
            say!(
                "Page {} of {} ({} jobs each): glean q --page {} for more",
                p.page,
                p.pages,
                p.jobs.len().max(1),
                (p.page + 1).min(p.pages)
            );
        }
    }

    fn actions(&self, action: JobAction, resp: &ActionResponse) {
        for j in &resp.changed {
            say!("Job {j} {}.", action.past());
        }
        for (j, why) in &resp.skipped {
            shout!("Job {j} not {}: {why}", action.past());
        }
    }

    fn analysis(&self, a: &Analysis) {
        say!(
            "Job {} ({}), owner {}: {}",
            a.job,
            a.state,
            a.owner,
            a.requirements.as_deref().unwrap_or("no requirements")
        );
        if !a.concurrency_limits.is_empty() {
            say!("Concurrency limits: {}", a.concurrency_limits.join(", "));
        }
        let mut t = table(vec!["STATION", "MATCH", "RANK", "SIGMA", "WHY NOT"]);
        for v in &a.stations {
            let why: Vec<String> = v.rejects.iter().map(ToString::to_string).collect();
            t.add_row(cells(vec![
                v.station.clone(),
                yes_no(v.rejects.is_empty()).to_string(),
                format!("{}", v.rank),
                format!("{:.2}", v.sigma),
                why.join("\n"),
            ]));
        }
        say!("{t}");
        for l in &a.licences {
            say!("Licence {}: {} of {} in use", l.name, l.in_use, l.limit);
        }
        let matching = a.stations.iter().filter(|v| v.rejects.is_empty()).count();
        say!(
            "{matching} of {} stations could run this job now.",
            a.stations.len()
        );
    }

    fn pool(&self, pool: &PoolStatus) {
        let mut t = table(vec![
            "NAME", "STATE", "CPUS", "MEMORY", "GUESTS", "IDLE", "REMOTE", "SEEN",
        ]);
        for s in &pool.stations {
            let mut state = match (s.submit_only, s.execute_only) {
                (true, _) => "submit-only".to_string(),
                _ => format!("{:?}", s.state).to_uppercase(),
            };
            if s.drained {
                state.push_str(" drained");
            }
            t.add_row(cells(vec![
                s.name.clone(),
                state,
                s.cpus.to_string(),
                format!("{} MiB", s.memory_mb),
                s.guests.to_string(),
                s.idle_jobs.to_string(),
                s.remote_jobs.to_string(),
                format!("{:.0}s ago", s.last_seen_secs),
            ]));
        }
        say!("{t}");
        say!("Total: {} stations", pool.stations.len());
    }

    fn job_ads(&self, ads: &[gleaner_classad::Ad]) {
        // As condor_q -l: one ad after another, a blank line between.
        self.machine_ads(ads);
    }

    fn autoformat(&self, _attrs: &[String], rows: &[Vec<gleaner_classad::Value>]) {
        for r in rows {
            let row: Vec<String> = r.iter().map(autoformat_value).collect();
            say!("{}", cells(row).join(" "));
        }
    }

    fn machine_ads(&self, ads: &[gleaner_classad::Ad]) {
        for ad in ads {
            print!("{}", super::adformat::long_form(ad));
        }
    }

    fn local_queue(&self, q: &LocalQueue) {
        say!("No coordinator configured; this station's queue only.");
        let mut t = table(vec!["STATION", "IDLE", "RUNNING", "SUSPENDED", "HELD"]);
        t.add_row(cells(vec![
            q.station.clone(),
            q.idle.to_string(),
            q.running.to_string(),
            q.suspended.to_string(),
            q.held.to_string(),
        ]));
        say!("{t}");
    }

    fn userprio(&self, up: &UserPrio) {
        let mut t = table(vec![
            "STATION",
            "UP-DOWN INDEX",
            "NODES HELD",
            "WAITING",
            "WANTS",
            "ADVERTISING",
        ]);
        for e in &up.stations {
            t.add_row(cells(vec![
                e.station.clone(),
                format!("{}", e.si),
                e.nodes_held.to_string(),
                e.waiting.to_string(),
                yes_no(e.wants).to_string(),
                yes_no(e.known).to_string(),
            ]));
        }
        say!("{t}");
        say!(
            "Allocator: {}. A smaller index means a higher priority (Mutka 1988 Table 4.3).",
            up.allocator
        );
        if !up.submitters.is_empty() {
            let mut t = table(vec!["SUBMITTER", "NODES HELD", "USAGE"]);
            for e in &up.submitters {
                t.add_row(cells(vec![
                    e.name.clone(),
                    e.nodes_held.to_string(),
                    format!("{:.2}", e.usage),
                ]));
            }
            say!("");
            say!("{t}");
            say!("Usage: nodes held, decayed with a half-life of one day, pool-wide.");
        }
    }

    fn home_users(&self, u: &gleaner_proto::api::HomeUsers) {
        super::users::print(u);
    }

    fn dag_submitted(&self, resp: &DagSubmitResponse) {
        // condor_submit_dag's lines, which scripts parse.
        let base = resp.dagman_out.trim_end_matches(".dagman.out");
        say!("-----------------------------------------------------------------------");
        say!("File for submitting this DAG to HTCondor           : (none: the station runs it)");
        say!(
            "Log of DAGMan debugging messages                 : {}",
            resp.dagman_out
        );
        say!("Log of the life of condor_dagman itself          : {base}.dagman.log");
        say!("");
        say!("Submitting job(s).");
        say!("1 job(s) submitted to cluster {}.", resp.id);
        say!("-----------------------------------------------------------------------");
        if resp.done > 0 {
            say!(
                "DAG {} submitted: {} nodes, {} already done (from {}).",
                resp.id,
                resp.nodes,
                resp.done,
                resp.rescue
                    .as_ref()
                    .map_or("DONE lines".to_string(), |r| r.path.clone())
            );
        } else {
            say!("DAG {} submitted: {} nodes.", resp.id, resp.nodes);
        }
    }

    fn progress(&self, clusters: &[ClusterProgress]) {
        let mut t = table(vec![
            "CLUSTER", "TOTAL", "IDLE", "RUN", "SUSP", "HELD", "DONE", "PROGRESS",
        ]);
        for c in clusters {
            t.add_row(cells(vec![
                c.cluster.to_string(),
                c.total.to_string(),
                c.idle.to_string(),
                c.running.to_string(),
                c.suspended.to_string(),
                c.held.to_string(),
                (c.completed + c.removed).to_string(),
                progress_bar(c.completed + c.removed, c.total, 20),
            ]));
        }
        say!("{t}");
    }

    fn dags(&self, dags: &[DagStatus]) {
        let mut t = table(vec![
            "ID", "OWNER", "STATE", "DONE", "RUNNING", "FAILED", "NODES", "DAG FILE",
        ]);
        for s in dags {
            let count = |k: &str| s.nodes.iter().filter(|n| n.status == k).count();
            t.add_row(cells(vec![
                s.id.to_string(),
                s.owner.clone(),
                s.state.name().to_string(),
                count("done").to_string(),
                (count("running") + count("submitted")).to_string(),
                count("failed").to_string(),
                s.nodes.len().to_string(),
                s.dag_file.clone(),
            ]));
        }
        say!("{t}");
    }

    fn dag(&self, s: &DagStatus) {
        let message = if s.message.is_empty() {
            String::new()
        } else {
            format!(" — {}", s.message)
        };
        say!(
            "DAG {} ({}), {}: {}{message}",
            s.id,
            s.owner,
            s.state.name(),
            s.dag_file
        );
        if let Some(r) = &s.rescue_file {
            say!("rescue file: {r}");
        }
        let mut t = table(vec![
            "NODE",
            "STATUS",
            "FAILURES",
            "RETRY",
            "CLUSTERS",
            "PARENTS",
            "PRIORITY PARENTS",
        ]);
        for n in &s.nodes {
            let clusters: Vec<String> = n.clusters.iter().map(u64::to_string).collect();
            t.add_row(cells(vec![
                n.name.clone(),
                n.status.clone(),
                n.failures.to_string(),
                n.retries.to_string(),
                clusters.join(","),
                n.data_parents.join(" "),
                n.priority_parents.join(" "),
            ]));
        }
        say!("{t}");
    }

    fn dag_removed(&self, r: &DagRmResponse) {
        say!(
            "DAG {} removed ({} unfinished job(s) removed).",
            r.id,
            r.removed_jobs.len()
        );
        match &r.rescue_file {
            Some(p) => say!("Rescue file: {p}\nResume with: glean dag submit {p}"),
            None => say!("No rescue file could be written; see the station's log."),
        }
    }

    fn classad_value(&self, value: &str) {
        say!("{value}");
    }

    fn token_issued(&self, issued: &IssuedToken) {
        say!("{}", issued.token);
        let r = &issued.record;
        shout!(
            "glean: {} token {} for {:?}, expires {}",
            role_of(r),
            r.token_id,
            r.subject,
            r.expires_at.map_or("never".into(), epoch_date)
        );
    }

    fn tokens(&self, tokens: &[TokenRecord], now: u64) {
        let mut t = table(vec![
            "ID", "SUBJECT", "ROLE", "ISSUED", "EXPIRES", "REVOKED",
        ]);
        for r in tokens {
            let mut expires = r.expires_at.map_or("never".into(), epoch_date);
            if r.expires_at.is_some_and(|e| now >= e) {
                expires.push_str(" (expired)");
            }
            let revoked = match (r.revoked, r.revoked_at) {
                (true, Some(at)) => epoch_date(at),
                (true, None) => "yes".into(),
                (false, _) => "no".into(),
            };
            let mut role = role_of(r);
            if let Some(at) = r.join.as_ref().and_then(|j| j.used_at) {
                role.push_str(&format!(" (used {})", epoch_date(at)));
            }
            t.add_row(cells(vec![
                r.token_id.clone(),
                r.subject.clone(),
                role,
                epoch_date(r.issued_at),
                expires,
                revoked,
            ]));
        }
        say!("{t}");
    }

    fn token_revoked(&self, outcome: &RevokeOutcome) {
        match outcome {
            RevokeOutcome::Revoked(r) => say!(
                "revoked {} token {} of {:?}; stations refuse it from their next advertisement",
                r.role,
                r.token_id,
                r.subject
            ),
            RevokeOutcome::AlreadyRevoked(r) => {
                say!("token {} was already revoked", r.token_id)
            }
        }
    }

    fn reserve(&self, report: &crate::reserve::Report) {
        super::reserve::render(report);
    }
}

/// A record's role as listed: a one-time join token is "join".
fn role_of(r: &TokenRecord) -> String {
    if r.join.is_some() {
        "join".into()
    } else {
        r.role.to_string()
    }
}

/// `[#####---------------]  25%`: `done` of `total` in `width` cells.
fn progress_bar(done: usize, total: usize, width: usize) -> String {
    let frac = if total == 0 {
        1.0
    } else {
        done as f64 / total as f64
    };
    let full = ((frac * width as f64).round() as usize).min(width);
    format!(
        "[{}{}] {:>3.0}%",
        "#".repeat(full),
        "-".repeat(width - full),
        frac * 100.0
    )
}

#[cfg(test)]
mod progress_tests {
    use super::progress_bar;

    #[test]
    fn bars_fill_with_the_share_done() {
        assert_eq!(progress_bar(0, 4, 8), "[--------]   0%");
        assert_eq!(progress_bar(1, 4, 8), "[##------]  25%");
        assert_eq!(progress_bar(4, 4, 8), "[########] 100%");
        assert_eq!(progress_bar(0, 0, 4), "[####] 100%");
    }
}
