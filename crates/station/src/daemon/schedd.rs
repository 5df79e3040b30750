//! The advertise loop and the home station's local scheduler.
//!
//! Every period (or at once when a job is submitted or finishes) the
//! station sends its [`StationAd`] to the coordinator; the ad carries the
//! demand (idle and remote jobs). The coordinator only hands out hosts; the
//! home station's own scheduler picks which of its jobs uses each granted
//! host, FIFO among equal priorities, and places at most one job per
//! placement interval (Mutka 1988 L839). Preemptions are passed on to the
//! host as vacate requests; the job is requeued when the host reports it
//! vacated.

use super::Station;
use super::config::StationConfig;
use super::machine;
use crate::daemon::now;
use gleaner_core::time::Time;
use gleaner_proto::job::{JobEventKind, JobId, JobState, JobStateKind};
use gleaner_proto::matchmaking::JobClass;
use gleaner_proto::wire::{
    AdvertiseReply, Demand, Grant, PROTOCOL_VERSION, PlacementRequest, PlacementResponse,
    Preemption, StationAd,
};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::sync::watch;

/// The parts of the ad that do not change while the daemon runs: used by
/// the starter to build the machine ad it checks placements against.
pub(crate) fn machine_template(cfg: &StationConfig, name: &str) -> StationAd {
    // Built-in attributes (checkpoint backends) first; the owner's `[attrs]`
    // may override them.
    let mut attrs = crate::checkpoint::ad_attrs();
    attrs.extend(cfg.attrs.clone());
    StationAd {
        protocol: PROTOCOL_VERSION,
        name: name.to_string(),
        address: String::new(),
        state: gleaner_core::detector::OwnerState::Av,
        cpus: cfg.cpus.unwrap_or(1),
        memory_mb: cfg.memory_mb.unwrap_or(1024),
        disk_free_kb: 0,
        arch: cfg
            .arch
            .clone()
            .unwrap_or_else(|| std::env::consts::ARCH.to_uppercase()),
        opsys: cfg.opsys.clone().unwrap_or_else(|| "LINUX".into()),
        speed: match cfg.speed {
            Some(s) => s,
            None if cfg.role.executes() => machine::measured_speed(),
            None => 0.0,
        },
        running_guests: Vec::new(),
        attrs,
        demand: Demand::default(),
        policy: Default::default(),
        classes: Vec::new(),
        submit_only: !cfg.role.executes(),
        execute_only: !cfg.role.submits(),
        sequence: 0,
        sent_at: Time::ZERO,
    }
}

/// Builds this station's advertisement.
fn build_ad(st: &Station, sequence: u64) -> StationAd {
    let counts = st.queue().count_by_state().unwrap_or_default();
    let count = |k: JobStateKind| {
        counts
            .iter()
            .find(|(s, _)| *s == k)
            .map_or(0, |(_, n)| u32::try_from(*n).unwrap_or(u32::MAX))
    };
    let placing = st.placing().clone();
    let demand = Demand {
        idle_jobs: count(JobStateKind::Idle)
            .saturating_sub(u32::try_from(placing.len()).unwrap_or(0)),
        remote_jobs: count(JobStateKind::Running) + count(JobStateKind::Suspended),
    };
    let classes = if st.config.role.submits() {
        machine::idle_classes(&st.queue(), &placing, |j| st.ckpt.avoided_hosts(j))
    } else {
        Vec::new()
    };
    let cfg = &st.config;
    let state = *st.owner.borrow();
    let mut ad = machine_template(cfg, &st.name);
    match &st.starter {
        Some(s) => {
            let guests = s.running_guests();
            // The coordinator counts one node per guest (pool.rs): offer
            // the CPUs no guest uses plus one node per guest.
            ad.cpus = s.config().cpus.saturating_sub(s.used_cpus()) + guests.len() as u32;
            ad.memory_mb = s.config().memory_mb.saturating_sub(s.used_memory_mb());
            ad.disk_free_kb = machine::disk_free_kb(&cfg.execute_dir());
            ad.running_guests = guests;
        }
        None => ad.cpus = 0,
    }
    ad.address = st.address.clone();
    ad.state = state;
    ad.policy = cfg.policy.to_ad(super::now_secs() as i64);
    ad.classes = classes;
    ad.demand = demand;
    ad.sequence = sequence;
    ad.sent_at = now();
    super::pool_rate::add_to_ad(st, &mut ad);
    ad
}

/// Advertises until shutdown, applying each reply.
pub(crate) async fn advertise_loop(st: Arc<Station>, mut shutdown: watch::Receiver<bool>) {
    if st.config.coordinator.is_empty() {
        tracing::info!("no coordinator configured: not advertising");
        return;
    }
    let url = format!(
        "{}/v1/advertise",
        st.config.coordinator.trim_end_matches('/')
    );
    let mut sequence = 0u64;
    let mut last_placement: Option<Instant> = None;
    let mut owner = st.owner.subscribe();
    loop {
        sequence += 1;
        let ad = build_ad(&st, sequence);
        let mut wait = Duration::from_secs(st.config.advertise_secs);
        match st
            .http
            .post(&url)
            .bearer_auth(&st.daemon_token)
            .json(&ad)
            .send()
            .await
        {
            Ok(resp) if resp.status().is_success() => match resp.json::<AdvertiseReply>().await {
                Ok(reply) => {
                    super::pool_rate::apply_reply(&st, &reply);
                    if reply.next_advertise_secs > 0 {
                        wait = Duration::from_secs(reply.next_advertise_secs)
                            .min(Duration::from_secs(st.config.advertise_secs));
                    }
                    for p in &reply.preemptions {
                        preempt(&st, p);
                    }
                    for g in &reply.grants {
                        place_on_grant(&st, g, &mut last_placement).await;
                    }
                }
                Err(e) => tracing::warn!(error = %e, "unreadable advertise reply"),
            },
            Ok(resp) => tracing::warn!(status = %resp.status(), "coordinator refused the ad"),
            Err(e) => tracing::warn!(error = %e, "cannot reach the coordinator"),
        }
        tokio::select! {
            _ = tokio::time::sleep(wait) => {}
            _ = st.wake.notified() => {}
            // The owner came or went: the coordinator must know at once.
            _ = owner.changed() => {}
            _ = shutdown.wait_for(|s| *s) => return,
        }
    }
}

/// Uses one grant: the next idle job goes to the granted host, unless a
/// placement already happened within the placement interval.
async fn place_on_grant(st: &Arc<Station>, g: &Grant, last: &mut Option<Instant>) {
    // At most one placement per interval (Mutka 1988 L839); a grant we
    // cannot use now is simply not used: the coordinator grants again.
    if let Some(t) = last
        && t.elapsed() < st.config.placement_interval()
    {
        tracing::debug!(host = %g.host, "placement interval not over; grant unused");
        return;
    }
    let job = {
        let placing = st.placing().clone();
        // A grant for a class is used by the first idle job of that class
        // (the coordinator matched the host for it).
        let n = match g.class {
            Some(_) => 10_000,
            None => placing.len() + 32,
        };
        match st.queue().next_idle_jobs(n) {
            Ok(jobs) => jobs.into_iter().find(|j| {
                !placing.contains(&j.id)
                    // Skip jobs this host evicted recently (resource feedback).
                    && !st.ckpt.avoids(j.id, &g.host)
                    && g.class
                        .as_ref()
                        .is_none_or(|k| {
                            JobClass::avoiding(&j.description, st.ckpt.avoided_hosts(j.id)).key
                                == *k
                        })
            }),
            Err(e) => {
                tracing::error!(error = %e, "cannot read idle jobs");
                None
            }
        }
    };
    let Some(job) = job else {
        tracing::debug!(host = %g.host, class = ?g.class, "no idle job for the grant");
        return;
    };
    *last = Some(Instant::now());
    st.placing().insert(job.id);
    let req = PlacementRequest {
        protocol: PROTOCOL_VERSION,
        job_id: job.id,
        home: st.name.clone(),
        claim_id: g.claim_id.clone(),
        description: job.description.clone(),
        shadow: st.address.clone(),
        checkpoint: None,
        run_count: job.run_count,
        lease_secs: Some(st.config.lease_secs.ceil() as u64).filter(|l| *l > 0),
    };
    let url = format!("{}/v1/place", g.host_address.trim_end_matches('/'));
    let result = st
        .http
        .post(&url)
        .bearer_auth(&st.daemon_token)
        .json(&req)
        .send()
        .await;
    let outcome = match result {
        Ok(resp) if resp.status().is_success() => resp
            .json::<PlacementResponse>()
            .await
            .map_err(|e| e.to_string()),
        Ok(resp) => Err(format!("host answered {}", resp.status())),
        Err(e) => Err(e.to_string()),
    };
    match outcome {
        Ok(PlacementResponse::Accepted { guest_id }) => {
            let at = now();
            let mut q = st.queue();
            if let Err(e) = q.annotate(job.id, JobEventKind::Placed, &g.host, at) {
                tracing::error!(job = %job.id, error = %e, "cannot record placement");
            }
            // The host may already have reported "started" (then the
            // shadow has logged the start).
            let current = q.get(job.id).ok().flatten().map(|r| r.state);
            let mut started_here = false;
            if current == Some(JobState::Idle) {
                match q.transition(
                    job.id,
                    JobState::Running,
                    &format!("placed on host {} as {guest_id}", g.host),
                    at,
                ) {
                    Ok(_) => started_here = true,
                    Err(e) => tracing::warn!(job = %job.id, error = %e, "cannot mark job running"),
                }
            }
            drop(q);
            // The lease runs from the placement, not from an earlier run.
            st.ckpt.touch(job.id);
            st.hosts().insert(job.id, g.host_address.clone());
            if started_here {
                super::shadow::user_log(
                    st,
                    job.id,
                    at,
                    "001",
                    &format!("Job executing on host: {}", g.host),
                    &g.host_address,
                );
            }
            tracing::info!(job = %job.id, host = %g.host, "job placed");
        }
        Ok(PlacementResponse::Rejected { reason, message }) => {
            tracing::info!(job = %job.id, host = %g.host, ?reason, message, "placement rejected");
        }
        Err(e) => tracing::warn!(job = %job.id, host = %g.host, error = %e, "placement failed"),
    }
    st.placing().remove(&job.id);
}

/// Passes a preemption on to the host running our job there.
fn preempt(st: &Arc<Station>, p: &Preemption) {
    let jobs: Vec<JobId> = match p.job {
        Some(j) => vec![j],
        None => st
            .queue()
            .list(&Default::default())
            .unwrap_or_default()
            .into_iter()
            .filter(|r| {
                matches!(r.state, JobState::Running | JobState::Suspended)
                    && r.host.as_deref() == Some(p.host.as_str())
            })
            .map(|r| r.id)
            .collect(),
    };
    for j in jobs {
        spawn_vacate(st, j, &format!("preempted: {}", p.reason));
    }
}

/// Asks the host running `job` to vacate it, in the background. The job is
/// requeued when the host reports it evicted, not here.
pub(crate) fn spawn_vacate(st: &Arc<Station>, job: JobId, why: &str) {
    let Some(host) = st.hosts().get(&job).cloned() else {
        tracing::warn!(job = %job, "vacate: host address unknown (placed before a restart?)");
        return;
    };
    let st = st.clone();
    let why = why.to_string();
    tokio::spawn(async move {
        let url = format!("{}/v1/guests/{job}/vacate", host.trim_end_matches('/'));
        match st
            .http
            .post(&url)
            .bearer_auth(&st.daemon_token)
            .send()
            .await
        {
            Ok(r) if r.status().is_success() => {
                tracing::info!(%job, %host, why, "vacate requested");
            }
            Ok(r) => tracing::warn!(%job, %host, status = %r.status(), "vacate refused"),
            Err(e) => tracing::warn!(%job, %host, error = %e, "vacate failed"),
        }
    });
}
