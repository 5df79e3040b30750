//! A gang's start: the members of one parallel job placed at once on the
//! nodes of one grant, ranks 0..n-1 on its n nodes, each told its peers.

use super::super::Home;
use super::super::schedd::{self, Target};
use crate::queue::{GangRun, JobRecord};
use gleaner_proto::job::{JobDescription, JobId, JobState};
use gleaner_proto::wire::Grant;
use std::collections::HashSet;
use std::sync::Arc;
use std::time::Instant;

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

/// The members of the gang whose rank 0 is `lead` (of `k`), in rank
/// order, if every one is idle and none is being placed.
fn idle_gang(
    q: &crate::queue::JobQueue,
    lead: JobId,
    k: u32,
    placing: &HashSet<JobId>,
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
    // The first parallel job of the class whose members are all idle and
    // whose policy runs on as many nodes as the grant has (k for LL-k, any
    // shaped count from gang_min to k for reconfiguration).
    let n = u32::try_from(targets.len()).unwrap_or(u32::MAX);
    let members = {
        let q = home.queue();
        let placing = home.remote.placing();
        let gang_of = |id: JobId| {
            q.get(id)
                .ok()
                .flatten()
                .and_then(|r| r.description.gang)
                .filter(|m| m.gang.policy().runs_on(n))
        };
        home.classes
            .first_idle(
                &q,
                g.class.as_deref(),
                |id| {
                    id.proc == 0
                        && gang_of(id).is_some_and(|m| {
                            idle_gang(&q, id, m.gang.machine_count, &placing).is_some()
                        })
                },
                |id| home.remote.avoided_hosts(id),
            )
            .and_then(|lead| {
                let k = lead.description.gang?.gang.machine_count;
                let all = idle_gang(&q, lead.id, k, &placing)?;
                Some((k, all))
            })
    };
    let Some((k, mut members)) = members else {
        drop(last);
        tracing::info!(class = ?g.class, nodes = targets.len(), "no idle gang for the gang grant; its claims go back");
        for t in &targets {
            release(home, t).await;
        }
        return;
    };
    // Ranks 0..n-1 run; the others wait with the job (`parked`).
    members.truncate(targets.len());
    let cluster = members[0].id.cluster;
    home.gangs.forget(cluster);
    // The run's members, durably, before any placement leaves: the
    // members beyond n are parked from now on, also after a restart.
    let run = GangRun {
        cluster,
        size: n,
        machine_count: k,
    };
    let recorded = home.queue().start_gang_run(run);
    if let Err(e) = recorded {
        drop(last);
        tracing::error!(cluster, error = %e, "cannot record the gang's run; its claims go back");
        for t in &targets {
            release(home, t).await;
        }
        return;
    }
    // Every member's run is named and recorded before any request leaves.
    let mut runs = Vec::with_capacity(members.len());
    for (t, m) in targets.iter().zip(&members) {
        match schedd::begin(home, t, m).await {
            Some(run) => runs.push(run),
            None => {
                drop(last);
                for m in members.iter().take(runs.len()) {
                    home.remote.end_placing(m.id);
                    let _ = home.queue().retire_run(m.id);
                }
                for t in &targets {
                    release(home, t).await;
                }
                let ended = home.queue().end_gang_run(cluster);
                if let Err(e) = ended {
                    tracing::warn!(cluster, error = %e, "cannot forget a gang run that did not start");
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
    tracing::info!(cluster, members = n, machine_count = k, hosts = ?hosts.iter().map(|h| &h.0).collect::<Vec<_>>(), "gang start");
    let sends = targets
        .iter()
        .zip(members.iter())
        .zip(runs)
        .enumerate()
        .map(|(rank, ((t, m), run))| {
            let mut d = super::super::timing::placed_description(m);
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

#[cfg(test)]
mod tests {
    use super::*;
    use gleaner_core::gang::{OnEviction, Shape};
    use gleaner_proto::guest_key::GuestKey;
    use gleaner_proto::job::{Gang, GangMember, GangPolicyKind};
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
