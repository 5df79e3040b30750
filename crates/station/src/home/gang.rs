//! Parallel jobs at their home (docs/jobs.md, "Parallel jobs"): the home is
//! the one place that sees every member of a gang, so it starts them
//! together, hears one member's owner come back and tells the other
//! members' hosts, and stops the gang when rank 0 ends.
//!
//! - **Gang start** ([`place_gang`]): the coordinator grants all of a
//!   gang's nodes in one grant (`Grant::gang`, rank order). The home takes
//!   the first parallel job of the grant's class whose members are all
//!   idle, begins every member's run, then sends the k placements at once;
//!   each member learns its peers from its environment ([`member_env`]).
//!   A member a host refuses stops the members already started: the gang
//!   goes back to idle whole.
//! - **One member's owner returns** ([`after_report`]): under LL-k the
//!   member lingers where its owner lets guests linger (the host's ladder,
//!   `gleaner_core::gang::member_ladder`) and nothing reaches the home.
//!   Where the owner's ladder suspends it instead, the gang does what
//!   `gleaner_core::gang::GangPolicy::member_left` says: `suspend` holds
//!   every other member (`POST /v1/guests/{job}/gang?hold=true` on its
//!   host) until the owner leaves again, then releases them; `vacate`
//!   vacates every member, and the job goes back to idle to be placed
//!   again as a gang. A member evicted outright takes the gang with it.
//! - **Gang stop**: the job ends when rank 0 exits (HTCondor's default):
//!   the members still running are removed from their hosts and complete
//!   with rank 0's exit code, with the output they streamed so far.
//!
//! What the home holds in [`GangBook`] (which members it suspended, whose
//! owner is back) is in memory: after a restart of the home, held members
//! stay held until their gang's next eviction or end.

use super::Home;
use super::schedd::{self, Target};
use super::user_log::{UserEvent, user_log};
use crate::clock::now;
use crate::queue::JobRecord;
use gleaner_core::gang::GangAction;
use gleaner_proto::job::{GangMember, JobDescription, JobId, JobState, JobStateKind};
use gleaner_proto::wire::Grant;
use std::collections::{BTreeSet, HashMap};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Instant;

/// What the home knows of its running gangs, by cluster.
#[derive(Default)]
pub struct GangBook {
    map: Mutex<HashMap<u64, GangState>>,
}

#[derive(Default)]
struct GangState {
    /// Ranks whose own owner's ladder suspended them.
    owner_back: BTreeSet<u32>,
    /// Ranks the home suspended with the gang.
    held: BTreeSet<u32>,
}

impl GangBook {
    fn lock(&self) -> MutexGuard<'_, HashMap<u64, GangState>> {
        self.map
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn forget(&self, cluster: u64) {
        self.lock().remove(&cluster);
    }
}

/// The environment of member `rank` of `peers.len()`: HTCondor's
/// `_CONDOR_PROCNO`/`_CONDOR_NPROCS` and Gleaner's own, the peers being
/// the members' hosts in rank order.
pub(crate) fn member_env(d: &mut JobDescription, rank: u32, hosts: &[(String, String)]) {
    let n = hosts.len().to_string();
    let peers: Vec<&str> = hosts.iter().map(|(_, a)| host_of(a)).collect();
    let names: Vec<&str> = hosts.iter().map(|(n, _)| n.as_str()).collect();
    for (k, v) in [
        ("_CONDOR_PROCNO", rank.to_string()),
        ("_CONDOR_NPROCS", n.clone()),
        ("GLEANER_RANK", rank.to_string()),
        ("GLEANER_NPROCS", n),
        ("GLEANER_PEERS", peers.join(",")),
        ("GLEANER_PEER_STATIONS", names.join(",")),
    ] {
        d.environment.insert(k.to_string(), v);
    }
}

/// The host part of a station's base URL (`https://ws12:9618` → `ws12`,
/// `http://[::1]:80/` → `::1`).
pub(crate) fn host_of(address: &str) -> &str {
    let rest = address.split_once("://").map_or(address, |(_, r)| r);
    let authority = rest.split('/').next().unwrap_or(rest);
    if let Some(v6) = authority.strip_prefix('[') {
        return v6.split(']').next().unwrap_or(v6);
    }
    authority.split(':').next().unwrap_or(authority)
}

/// The idle members of the gang whose rank 0 is `lead`, in rank order, if
/// every member is idle and none is being placed.
fn idle_gang(
    q: &crate::queue::JobQueue,
    lead: JobId,
    k: u32,
    placing: &std::collections::HashSet<JobId>,
) -> Option<Vec<JobRecord>> {
    (0..k)
        .map(|rank| {
            let id = JobId::new(lead.cluster, rank);
            q.get(id)
                .ok()
                .flatten()
                .filter(|r| r.state == JobState::Idle && !placing.contains(&id))
        })
        .collect()
}

/// Uses a gang grant: every member of one parallel job placed at once.
pub(crate) async fn place_gang(home: &Arc<Home>, g: &Grant) {
    let targets: Vec<Target> = g
        .gang
        .iter()
        .map(|n| Target {
            host: n.host.clone(),
            host_address: n.host_address.clone(),
            claim_id: n.claim_id.clone(),
            nonce: n.nonce.clone(),
            class: g.class.clone(),
            seq: 0,
        })
        .collect();
    let mut last = home.last_placement.lock().await;
    if let Some(t) = *last {
        let left = home.config.placement_interval().saturating_sub(t.elapsed());
        if !left.is_zero() {
            tokio::time::sleep(left).await;
        }
    }
    let members = {
        let q = home.queue();
        let placing = home.remote.placing();
        let k = u32::try_from(targets.len()).unwrap_or(u32::MAX);
        home.classes
            .first_idle(
                &q,
                g.class.as_deref(),
                |id| {
                    id.proc == 0
                        && q.get(id).ok().flatten().is_some_and(|r| {
                            r.description
                                .gang
                                .is_some_and(|m| m.gang.machine_count == k)
                        })
                        && idle_gang(&q, id, k, &placing).is_some()
                },
                |id| home.remote.avoided_hosts(id),
            )
            .and_then(|lead| idle_gang(&q, lead.id, k, &placing))
    };
    let Some(members) = members else {
        drop(last);
        tracing::info!(class = ?g.class, nodes = targets.len(), "no idle gang for the gang grant; its claims go back");
        for t in &targets {
            release(home, t).await;
        }
        return;
    };
    // Every member's run is named and recorded before any request leaves.
    let mut runs = Vec::with_capacity(members.len());
    for (t, m) in targets.iter().zip(&members) {
        match schedd::begin(home, t, m).await {
            Some(run) => runs.push(run),
            None => {
                drop(last);
                for (t, m) in targets.iter().zip(&members).take(runs.len()) {
                    home.remote.end_placing(m.id);
                    let _ = home.queue().retire_run(m.id);
                    release(home, t).await;
                }
                return;
            }
        }
    }
    *last = Some(Instant::now());
    drop(last);
    let hosts: Vec<(String, String)> = targets
        .iter()
        .map(|t| (t.host.clone(), t.host_address.clone()))
        .collect();
    let cluster = members[0].id.cluster;
    home.gangs.forget(cluster);
    tracing::info!(cluster, members = members.len(), hosts = ?hosts.iter().map(|h| &h.0).collect::<Vec<_>>(), "gang start");
    let sends = targets
        .iter()
        .zip(members.iter())
        .zip(runs)
        .enumerate()
        .map(|(rank, ((t, m), run))| {
            let mut d = super::timing::placed_description(m);
            member_env(&mut d, u32::try_from(rank).unwrap_or(u32::MAX), &hosts);
            schedd::send(home, t, m, run, d)
        });
    let accepted = futures_util::future::join_all(sends).await;
    if accepted.iter().any(|ok| !ok) {
        tracing::warn!(
            cluster,
            ?accepted,
            "a member of the gang did not start: the gang stops"
        );
        for (m, ok) in members.iter().zip(&accepted) {
            if *ok {
                schedd::spawn_vacate(
                    home,
                    m.id,
                    "gang start failed: another member did not start",
                );
            }
        }
    }
}

/// Gives a claim of an unused gang node back to its host.
async fn release(home: &Arc<Home>, t: &Target) {
    let url = format!("{}/v1/claims/release", t.host_address.trim_end_matches('/'));
    match home
        .peers
        .station(&t.host)
        .post(&url)
        .bearer_auth(&t.claim_id)
        .send()
        .await
    {
        Ok(r) => tracing::debug!(host = %t.host, status = %r.status(), "gang claim given back"),
        Err(e) => tracing::warn!(host = %t.host, error = %e, "gang claim release failed"),
    }
    home.news.notify_one();
}

/// The other members of `m`'s gang (cluster `cluster`) in `states`.
fn members_in(home: &Home, cluster: u64, m: GangMember, states: &[JobStateKind]) -> Vec<JobRecord> {
    let q = home.queue();
    (0..m.gang.machine_count)
        .filter(|r| *r != m.rank)
        .filter_map(|r| q.get(JobId::new(cluster, r)).ok().flatten())
        .filter(|r| states.contains(&r.state.kind()))
        .collect()
}

const ON_HOST: [JobStateKind; 2] = [JobStateKind::Running, JobStateKind::Suspended];

/// A member's report was applied (`before` → `after`): what it means for
/// its gang.
pub(crate) fn after_report(home: &Arc<Home>, before: &JobRecord, after: &JobRecord) {
    let Some(m) = after.description.gang else {
        return;
    };
    let cluster = after.id.cluster;
    match (before.state.kind(), &after.state) {
        (JobStateKind::Running, JobState::Suspended) => {
            {
                let mut book = home.gangs.lock();
                let st = book.entry(cluster).or_default();
                if st.held.contains(&m.rank) {
                    // The echo of the home's own hold.
                    return;
                }
                st.owner_back.insert(m.rank);
            }
            let ranks: Vec<u32> = (0..m.gang.machine_count).collect();
            match m.gang.policy().member_left(&ranks, m.rank, &[]) {
                GangAction::Suspend => {
                    let others = members_in(home, cluster, m, &[JobStateKind::Running]);
                    tracing::info!(job = %after.id, others = others.len(), "a member's owner is back: the gang is suspended");
                    for o in others {
                        if let Some(om) = o.description.gang {
                            home.gangs
                                .lock()
                                .entry(cluster)
                                .or_default()
                                .held
                                .insert(om.rank);
                        }
                        spawn_gang_hold(home, o.id, true);
                    }
                }
                _ => {
                    tracing::info!(job = %after.id, "a member's owner is back: the gang is vacated");
                    vacate_gang(
                        home,
                        cluster,
                        m,
                        true,
                        "gang vacated: a member's owner is back",
                    );
                }
            }
        }
        (JobStateKind::Suspended, JobState::Running) => {
            let release: Vec<u32> = {
                let mut book = home.gangs.lock();
                let st = book.entry(cluster).or_default();
                if st.held.contains(&m.rank) && !st.owner_back.contains(&m.rank) {
                    // The echo of the home's own release (or a member
                    // still held: its host resumes it only when told).
                    return;
                }
                st.owner_back.remove(&m.rank);
                if st.owner_back.is_empty() {
                    std::mem::take(&mut st.held).into_iter().collect()
                } else {
                    Vec::new()
                }
            };
            if !release.is_empty() {
                tracing::info!(job = %after.id, members = release.len(), "the owner left: the gang resumes");
            }
            for r in release {
                spawn_gang_hold(home, JobId::new(cluster, r), false);
            }
        }
        (JobStateKind::Running | JobStateKind::Suspended, JobState::Idle) => {
            // One member left its host: the gang goes back to idle whole.
            vacate_gang(
                home,
                cluster,
                m,
                false,
                "gang vacated: a member left its host",
            );
        }
        (_, JobState::Completed { exit_code }) if m.rank == 0 => {
            // In a task of its own: completing the others must not hang
            // on rank 0's report (whose sender may give up waiting).
            let (home, exit_code) = (home.clone(), *exit_code);
            tokio::spawn(async move { stop_gang(&home, cluster, m, exit_code).await });
        }
        _ => {}
    }
}

/// Vacates the members of the gang still on their hosts (the reporting
/// one too when `with_self`).
fn vacate_gang(home: &Arc<Home>, cluster: u64, m: GangMember, with_self: bool, why: &str) {
    home.gangs.forget(cluster);
    let mut on_host = members_in(home, cluster, m, &ON_HOST);
    if with_self {
        let me = JobId::new(cluster, m.rank);
        if let Ok(Some(r)) = home.queue().get(me) {
            on_host.push(r);
        }
    }
    for r in on_host {
        schedd::spawn_vacate(home, r.id, why);
    }
}

/// Rank 0 ended: the members still on their hosts are removed from them
/// and complete with rank 0's exit code.
async fn stop_gang(home: &Arc<Home>, cluster: u64, m: GangMember, exit_code: i32) {
    home.gangs.forget(cluster);
    let at = now();
    for r in members_in(home, cluster, m, &ON_HOST) {
        // Completed first, then removed from its host: the host's report
        // of the removal then finds the member complete (the other order
        // would requeue it).
        let detail = format!("gang ended: rank 0 exited with {exit_code}");
        let task = tokio::spawn(super::deliver::complete(
            home.clone(),
            r.clone(),
            JobState::Completed { exit_code },
            detail,
            at,
        ));
        match task.await {
            Ok(Ok((done, detail))) => {
                schedd::spawn_vacate_as(home, r.id, "gang ended: rank 0 exited", "remove");
                super::runs::retire_run(home, r.id);
                home.remote.reported(r.id, false);
                super::claim_reuse::after_departure(home, r.id);
                tracing::info!(job = %r.id, state = %done.state, "member stopped with its gang");
                user_log(home, r.id, at, UserEvent::Terminated { exit_code, detail }).await;
            }
            Ok(Err(e)) => {
                tracing::warn!(job = %r.id, error = ?e, "cannot complete a gang member; removed from its host all the same");
                schedd::spawn_vacate_as(home, r.id, "gang ended: rank 0 exited", "remove");
            }
            Err(e) => {
                tracing::warn!(job = %r.id, error = %e, "cannot complete a gang member; removed from its host all the same");
                schedd::spawn_vacate_as(home, r.id, "gang ended: rank 0 exited", "remove");
            }
        }
    }
    // A member still waiting (its start failed, say) never runs alone:
    // the job is over, so it leaves the queue.
    for r in members_in(home, cluster, m, &[JobStateKind::Idle]) {
        if home.remote.is_placing(r.id) {
            continue;
        }
        let why = format!("gang ended: rank 0 exited with {exit_code} before this member ran");
        let moved = home.queue().transition(r.id, JobState::Removed, &why, at);
        match moved {
            Ok(_) => user_log(home, r.id, at, UserEvent::Aborted { reason: why }).await,
            Err(e) => {
                tracing::warn!(job = %r.id, error = %e, "cannot remove a waiting gang member")
            }
        }
    }
    home.news.notify_one();
}

/// Asks the host of `job` to hold (or release) it with its gang, with the
/// claim the member was placed with.
fn spawn_gang_hold(home: &Arc<Home>, job: JobId, hold: bool) {
    let Some((host_name, host, claim)) = home
        .remote
        .placement(job)
        .and_then(|p| Some((p.host, p.address?, p.claim?)))
    else {
        tracing::warn!(%job, "gang hold: host address or claim unknown");
        return;
    };
    let home = home.clone();
    tokio::spawn(async move {
        let url = format!(
            "{}/v1/guests/{job}/gang?hold={hold}",
            host.trim_end_matches('/')
        );
        match home
            .peers
            .station(&host_name)
            .post(&url)
            .bearer_auth(&claim)
            .send()
            .await
        {
            Ok(r) if r.status().is_success() => tracing::info!(%job, %host, hold, "gang hold sent"),
            Ok(r) => tracing::warn!(%job, %host, status = %r.status(), "gang hold refused"),
            Err(e) => tracing::warn!(%job, %host, error = %e, "gang hold failed"),
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;
    use gleaner_core::gang::{OnEviction, Shape};
    use gleaner_proto::guest_key::GuestKey;
    use gleaner_proto::job::{Gang, GangPolicyKind};
    use proptest::prelude::*;

    #[test]
    fn hosts_of_addresses() {
        assert_eq!(host_of("https://ws12:9618"), "ws12");
        assert_eq!(host_of("http://127.0.0.1:4000/"), "127.0.0.1");
        assert_eq!(host_of("http://[::1]:80/x"), "::1");
        assert_eq!(host_of("ws3"), "ws3");
    }

    #[test]
    fn members_learn_rank_count_and_peers() {
        let hosts = vec![
            ("a".to_string(), "https://a.lab:9618".to_string()),
            ("b".to_string(), "https://b.lab:9618".to_string()),
            ("c".to_string(), "https://c.lab:9618".to_string()),
        ];
        let mut d = JobDescription::new("u", "x");
        member_env(&mut d, 1, &hosts);
        let e = &d.environment;
        assert_eq!(e["_CONDOR_PROCNO"], "1");
        assert_eq!(e["_CONDOR_NPROCS"], "3");
        assert_eq!(e["GLEANER_RANK"], "1");
        assert_eq!(e["GLEANER_NPROCS"], "3");
        assert_eq!(e["GLEANER_PEERS"], "a.lab,b.lab,c.lab");
        assert_eq!(e["GLEANER_PEER_STATIONS"], "a,b,c");
    }

    proptest! {
        /// Every member of a gang is its own guest on a host: the keys of
        /// k members (job id = cluster, rank) are all distinct, also
        /// beside another home's gang of the same cluster number.
        #[test]
        fn member_keys_are_distinct(cluster in 1u64..1000, k in 1u32..=64) {
            let g = Gang {
                machine_count: k,
                policy: GangPolicyKind::Linger,
                on_eviction: OnEviction::Suspend,
                min: 1,
                shape: Shape::Any,
            };
            let mut keys = std::collections::HashSet::new();
            for home in ["h1", "h2"] {
                for rank in 0..k {
                    let m = GangMember { gang: g, rank };
                    prop_assert!(keys.insert(GuestKey::new(home, JobId::new(cluster, m.rank))));
                }
            }
            prop_assert_eq!(keys.len() as u32, 2 * k);
        }
    }
}
