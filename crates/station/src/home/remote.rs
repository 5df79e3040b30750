//! The home's one table of its remote jobs: for each job that runs on
//! another station or is being placed there, which host (name and base
//! URL) and in which phase; when the host was last heard from (the lease);
//! and the hosts the job stays away from for now.
//!
//! The durable half, the host's name and address, is written with the
//! placement into the job's queue row ([`JobQueue::record_placement`]) and
//! read back when the home starts ([`RemoteJobs::load`]), so a restarted
//! home can still vacate the jobs it had placed. Contact times and avoided
//! hosts are deliberately not durable: a restarted home gives every running
//! job a fresh lease, and forgetting an avoided host only costs a retry.
//!
//! Hosts that evicted a job, or lost its lease, are avoided for
//! `avoid_host_secs` (Neeracher 1998 §4, resource feedback).
//!
//! [`JobQueue::record_placement`]: crate::queue::JobQueue::record_placement

use crate::queue::{JobRecord, RunningJob};
use gleaner_proto::job::JobId;
use gleaner_proto::job::JobState;
use std::collections::{HashMap, HashSet};
use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, Instant};

/// Where a remote job stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Phase {
    /// A placement request is in flight (the host may already run it).
    Placing,
    /// The host accepted it, or reported it running.
    Running,
}

/// Where one remote job runs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Placement {
    pub host: String,
    /// The host's base URL; unknown for a job placed by a home of an older
    /// schema until the host renews its lease.
    pub address: Option<String>,
    /// The claim it was placed with: the home's credential at that host
    /// (the station's own token goes to the coordinator alone).
    pub claim: Option<String>,
    /// The run placed there ([`gleaner_proto::run::RunId`] as text), if
    /// known: the only one whose data the home takes (`super::runs`).
    pub run: Option<String>,
    pub phase: Phase,
}

#[derive(Debug, Default)]
struct Row {
    at: Option<Placement>,
    /// The host was last heard from; `None` until the lease monitor first
    /// sees the job running (then it gets a full lease).
    last_contact: Option<Instant>,
    /// Hosts to stay away from, each until an instant.
    avoided: Vec<(String, Instant)>,
}

/// The table. See the module docs.
#[derive(Debug)]
pub struct RemoteJobs {
    lease: Duration,
    avoid_for: Duration,
    rows: Mutex<HashMap<JobId, Row>>,
}

/// A lease pass's verdict: the jobs whose lease ran out (with their host)
/// and when the next lease can run out.
pub type LeaseVerdict = (Vec<(JobId, Option<String>)>, Option<Instant>);

impl RemoteJobs {
    pub fn new(lease: Duration, avoid_for: Duration) -> Self {
        RemoteJobs {
            lease,
            avoid_for,
            rows: Mutex::new(HashMap::new()),
        }
    }

    fn rows(&self) -> MutexGuard<'_, HashMap<JobId, Row>> {
        self.rows
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// The lease between this home and its jobs' hosts (zero: none).
    pub fn lease(&self) -> Duration {
        self.lease
    }

    /// Fills the table from the queue's running jobs (at start).
    pub fn load(&self, running: &[RunningJob]) {
        let mut rows = self.rows();
        for r in running {
            let Some(host) = &r.host else { continue };
            rows.entry(r.id).or_default().at = Some(Placement {
                host: host.clone(),
                address: r.host_address.clone(),
                claim: r.host_claim.clone(),
                run: r.run_id.clone(),
                phase: Phase::Running,
            });
        }
    }

    /// Where `job` runs or is being placed.
    pub fn placement(&self, job: JobId) -> Option<Placement> {
        self.rows().get(&job).and_then(|r| r.at.clone())
    }

    /// The base URL of the host running `job`, when known.
    pub fn address(&self, job: JobId) -> Option<String> {
        self.placement(job).and_then(|p| p.address)
    }

    // ----- placement -----------------------------------------------------

    /// A placement request for `job` on `host` (at `address`) with `claim`
    /// is going out, for the run `run`; from now on only that run is heard
    /// (`None`: the run the queue records, if any).
    pub fn begin_placing(
        &self,
        job: JobId,
        host: &str,
        address: &str,
        claim: &str,
        run: Option<&str>,
    ) {
        self.rows().entry(job).or_default().at = Some(Placement {
            host: host.to_string(),
            address: Some(address.to_string()),
            claim: Some(claim.to_string()),
            run: run.map(str::to_string),
            phase: Phase::Placing,
        });
    }

    /// The host accepted `job`: it runs there, and its lease runs from now
    /// (not from an earlier run). A job that already left (its host
    /// reported the end before the answer came) is not brought back.
    pub fn placed(&self, job: JobId) {
        let mut rows = self.rows();
        let row = rows.entry(job).or_default();
        if let Some(p) = &mut row.at {
            p.phase = Phase::Running;
        }
        row.last_contact = Some(Instant::now());
    }

    /// The placement request for `job` is over: if nothing says the job
    /// runs there (refused, or no answer), it is not remote.
    pub fn end_placing(&self, job: JobId) {
        let mut rows = self.rows();
        if let Some(row) = rows.get_mut(&job)
            && row.at.as_ref().is_some_and(|p| p.phase == Phase::Placing)
        {
            row.at = None;
        }
    }

    pub fn is_placing(&self, job: JobId) -> bool {
        self.rows()
            .get(&job)
            .and_then(|r| r.at.as_ref())
            .is_some_and(|p| p.phase == Phase::Placing)
    }

    /// Does `r` hold a remote host: running or suspended there, or being
    /// placed (the host may start before the home hears "accepted")? Only
    /// then does the home take output, checkpoints and lease renewals for it.
    ///
    /// `was_placing`: whether the job was being placed *before* `r` was
    /// read ([`super::http::remote_job_record`] reads in that order). An
    /// accepted placement is marked running in the queue before it stops
    /// being placed (`schedd::place`), so a row read after a look at the
    /// phase misses neither; a row read first could be idle and the phase
    /// over by now, and the host's first lease renewal, sent as its guest
    /// starts, was refused so: the host killed a run that had done its
    /// work and the job ran again (the burst test of `pool_processes`).
    pub fn is_remote(&self, r: &JobRecord, was_placing: bool) -> bool {
        matches!(r.state, JobState::Running | JobState::Suspended)
            || was_placing
            || self.is_placing(r.id)
    }

    /// The jobs being placed right now.
    pub fn placing(&self) -> HashSet<JobId> {
        self.rows()
            .iter()
            .filter(|(_, r)| r.at.as_ref().is_some_and(|p| p.phase == Phase::Placing))
            .map(|(j, _)| *j)
            .collect()
    }

    // ----- news from hosts -----------------------------------------------

    /// The station `job` is placed on: the table's placement (being placed
    /// or running), else `last_host`, the host its queue row last recorded.
    /// Only this station (or an administrator) speaks for the job
    /// ([`super::host_caller`]).
    pub fn current_host(&self, job: JobId, last_host: Option<&str>) -> Option<String> {
        self.placement(job)
            .map(|p| p.host)
            .or_else(|| last_host.map(str::to_string))
    }

    /// May `host` speak for `job` (report on it, renew its lease)? Only the
    /// host it was last placed on (`last_host`, from its queue row; any host
    /// when none is recorded), or any while a placement is in flight (the
    /// new host may start before the home hears "accepted"). A host the home
    /// gave up on (lease expired, job placed elsewhere) may not.
    pub fn speaks_for(&self, job: JobId, last_host: Option<&str>, host: &str) -> bool {
        self.is_placing(job) || last_host.is_none_or(|h| h == host)
    }

    /// The host of `job` was heard from.
    pub fn touch(&self, job: JobId) {
        self.rows().entry(job).or_default().last_contact = Some(Instant::now());
    }

    /// The host reported a state change: the job still holds the host
    /// (`remote`: running or suspended) or left it.
    pub fn reported(&self, job: JobId, remote: bool) {
        let mut rows = self.rows();
        let Some(row) = rows.get_mut(&job) else {
            return;
        };
        if remote {
            if let Some(p) = &mut row.at {
                p.phase = Phase::Running;
            }
        } else {
            row.at = None;
        }
    }

    /// `host` renewed the lease of `job` from `address`: a sign of life,
    /// and the address if the table lacked it (after a restart of a home
    /// that had not recorded it).
    pub fn renewed(&self, job: JobId, host: &str, address: &str) {
        let mut rows = self.rows();
        let row = rows.entry(job).or_default();
        row.last_contact = Some(Instant::now());
        if address.is_empty() {
            return;
        }
        match &mut row.at {
            Some(p) if p.address.is_none() => p.address = Some(address.to_string()),
            Some(_) => {}
            None => {
                row.at = Some(Placement {
                    host: host.to_string(),
                    address: Some(address.to_string()),
                    claim: None,
                    run: None,
                    phase: Phase::Running,
                })
            }
        }
    }

    /// The current run of `job` is over without a successor: no run is
    /// heard (an empty run, see `super::runs`). The placement stays, so
    /// that the host can still be asked to vacate.
    pub fn retire_run(&self, job: JobId) {
        if let Some(p) = self.rows().get_mut(&job).and_then(|r| r.at.as_mut()) {
            p.run = Some(String::new());
        }
    }

    /// The home gave up on `job`'s host (its lease ran out): not remote.
    pub fn forget(&self, job: JobId) {
        if let Some(row) = self.rows().get_mut(&job) {
            row.at = None;
        }
    }

    // ----- avoided hosts -------------------------------------------------

    /// Remember that `host` evicted (or lost) `job`.
    pub fn avoid_host(&self, job: JobId, host: &str) {
        self.avoid_host_for(job, host, self.avoid_for);
    }

    /// Keeps `job` off `host` for `avoid_for` (at most the table's own
    /// avoidance; a failed start backs off for less, `home::start_failures`).
    pub fn avoid_host_for(&self, job: JobId, host: &str, avoid_for: Duration) {
        let avoid_for = avoid_for.min(self.avoid_for);
        if avoid_for.is_zero() || host.is_empty() {
            return;
        }
        let mut rows = self.rows();
        let v = &mut rows.entry(job).or_default().avoided;
        v.retain(|(h, _)| h != host);
        v.push((host.to_string(), Instant::now() + avoid_for));
    }

    /// The hosts `job` stays away from for now.
    pub fn avoided_hosts(&self, job: JobId) -> Vec<String> {
        let mut rows = self.rows();
        let Some(row) = rows.get_mut(&job) else {
            return Vec::new();
        };
        let now = Instant::now();
        row.avoided.retain(|(_, until)| *until > now);
        row.avoided.iter().map(|(h, _)| h.clone()).collect()
    }

    /// Every job that stays away from some hosts for now, with them (the
    /// ad advertises such jobs in classes of their own).
    pub fn avoiding(&self) -> Vec<(JobId, Vec<String>)> {
        let now = Instant::now();
        let mut rows = self.rows();
        let mut out = Vec::new();
        for (id, row) in rows.iter_mut() {
            row.avoided.retain(|(_, until)| *until > now);
            if !row.avoided.is_empty() {
                out.push((*id, row.avoided.iter().map(|(h, _)| h.clone()).collect()));
            }
        }
        out.sort_by_key(|(id, _)| *id);
        out
    }

    /// Should `job` stay away from `host` for now?
    pub fn avoids(&self, job: JobId, host: &str) -> bool {
        self.avoided_hosts(job).iter().any(|h| h == host)
    }

    // ----- leases --------------------------------------------------------

    /// One pass of the lease monitor over the running jobs (`running`, in
    /// job-id order, with their hosts): the jobs not heard from within
    /// `limit` (their contact is dropped) and the next instant a lease can
    /// run out. A job met for the first time gets a full lease; an expired
    /// one that is being placed again right now is looked at again after
    /// `placing_recheck`.
    pub fn lease_pass(
        &self,
        running: &[(JobId, Option<String>)],
        limit: Duration,
        placing_recheck: Duration,
    ) -> LeaseVerdict {
        let mut rows = self.rows();
        let now = Instant::now();
        // Jobs that are no longer running need no lease.
        for (id, row) in rows.iter_mut() {
            if running.binary_search_by(|(r, _)| r.cmp(id)).is_err() {
                row.last_contact = None;
            }
        }
        let mut expired = Vec::new();
        let mut next: Option<Instant> = None;
        for (id, host) in running {
            let row = rows.entry(*id).or_default();
            // First sight (e.g. after a restart of this home): a full lease.
            let due = *row.last_contact.get_or_insert(now) + limit;
            if due > now {
                next = Some(next.map_or(due, |n| n.min(due)));
            } else if row.at.as_ref().is_some_and(|p| p.phase == Phase::Placing) {
                // Its new placement decides; look again shortly.
                let again = now + placing_recheck;
                next = Some(next.map_or(again, |n| n.min(again)));
            } else {
                row.last_contact = None;
                expired.push((*id, host.clone()));
            }
        }
        rows.retain(|_, r| {
            r.avoided.retain(|(_, until)| *until > now);
            r.at.is_some() || r.last_contact.is_some() || !r.avoided.is_empty()
        });
        (expired, next)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn job(s: &str) -> JobId {
        s.parse().unwrap()
    }

    #[test]
    fn avoid_list_expires() {
        let t = RemoteJobs::new(Duration::from_secs(1), Duration::from_millis(50));
        let j = job("1.0");
        assert!(!t.avoids(j, "b"));
        t.avoid_host(j, "b");
        assert!(t.avoids(j, "b"));
        assert!(!t.avoids(j, "c"));
        std::thread::sleep(Duration::from_millis(80));
        assert!(!t.avoids(j, "b"));
    }

    #[test]
    fn a_placement_runs_through_its_phases() {
        let t = RemoteJobs::new(Duration::from_secs(1), Duration::ZERO);
        let (a, b) = (job("1.0"), job("2.0"));
        t.begin_placing(a, "ws1", "http://ws1", "claim", Some("run-a"));
        t.begin_placing(b, "ws2", "http://ws2", "claim", Some("run-b"));
        assert_eq!(t.placing(), HashSet::from([a, b]));
        // Accepted: running, with its address; refused: not remote.
        assert_eq!(t.current_host(b, Some("old")).as_deref(), Some("ws2"));
        t.placed(a);
        t.end_placing(a);
        t.end_placing(b);
        assert_eq!(t.current_host(b, Some("old")).as_deref(), Some("old"));
        assert_eq!(t.current_host(b, None), None);
        assert!(t.placing().is_empty());
        assert_eq!(t.address(a).as_deref(), Some("http://ws1"));
        assert_eq!(t.placement(b), None);
        // The host reports the end: the job leaves the table.
        t.reported(a, false);
        assert_eq!(t.placement(a), None);
    }

    #[test]
    fn a_restarted_home_reloads_and_learns_addresses() {
        let t = RemoteJobs::new(Duration::from_secs(1), Duration::ZERO);
        let (a, b) = (job("1.0"), job("1.1"));
        t.load(&[
            RunningJob {
                id: a,
                host: Some("ws1".into()),
                host_address: Some("http://ws1".into()),
                host_claim: None,
                run_id: None,
            },
            RunningJob {
                id: b,
                host: Some("ws2".into()),
                host_address: None,
                host_claim: None,
                run_id: None,
            },
        ]);
        assert_eq!(t.address(a).as_deref(), Some("http://ws1"));
        assert_eq!(t.address(b), None);
        t.renewed(b, "ws2", "http://ws2");
        assert_eq!(t.address(b).as_deref(), Some("http://ws2"));
    }

    #[test]
    fn leases_expire_unless_renewed_or_being_placed() {
        let t = RemoteJobs::new(Duration::from_millis(30), Duration::ZERO);
        let (a, b, c) = (job("1.0"), job("2.0"), job("3.0"));
        let running = vec![(a, Some("x".into())), (b, Some("y".into())), (c, None)];
        let limit = Duration::from_millis(30);
        let recheck = Duration::from_millis(5);
        // First sight: a full lease for everyone.
        let (expired, next) = t.lease_pass(&running, limit, recheck);
        assert!(expired.is_empty() && next.is_some());
        std::thread::sleep(Duration::from_millis(40));
        t.touch(a);
        t.begin_placing(c, "z", "http://z", "claim", Some("run-c"));
        let (expired, _) = t.lease_pass(&running, limit, recheck);
        assert_eq!(expired, vec![(b, Some("y".to_string()))]);
    }
}
