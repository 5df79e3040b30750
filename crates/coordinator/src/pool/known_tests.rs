//! Ads that say nothing new (`known.rs`): what the pool derived from the
//! last ad stands, the progress fields are taken, and matchmaking sees the
//! new free disk.

use super::*;
use crate::CoordinatorConfig;
use gleaner_core::time::Dur;
use gleaner_proto::job::{JobDescription, JobId};
use gleaner_proto::matchmaking::{JobClass, machine_ad};
use gleaner_proto::wire::GuestInfo;
use proptest::prelude::*;

fn pool(t0: Time) -> Pool {
    let cfg = CoordinatorConfig {
        startup_grace_secs: Some(0.0),
        advertise_period_secs: 10,
        ..CoordinatorConfig::default()
    };
    Pool::new(
        cfg.timing().unwrap_or_else(|e| panic!("{e}")),
        Box::new(UnsignedClaims),
        &cfg.allocator,
        7,
        &FairnessState::default(),
        t0,
    )
}

fn host(disk_kb: u64, seq: u64) -> StationAd {
    let mut a = crate::matchmaker::tests::host("h", 1, 4096, 1.0);
    a.execute_only = true;
    a.disk_free_kb = disk_kb;
    a.sequence = seq;
    a
}

/// A home with one idle job of `d`.
fn home(d: &JobDescription, seq: u64) -> StationAd {
    let mut a = crate::matchmaker::tests::host("a", 0, 0, 1.0);
    a.submit_only = true;
    a.state = OwnerState::Na;
    let mut c = JobClass::of(d);
    c.count = 1;
    a.classes = vec![c];
    a.demand.idle_jobs = 1;
    a.sequence = seq;
    a
}

fn grants_to_a(out: &Outbox) -> usize {
    out.messages
        .iter()
        .filter(|m| matches!(m, Message::Grant { to, .. } if to == "a"))
        .count()
}

/// A job that needs more disk than the host has gets no grant until the
/// host's ads (otherwise the same) report enough, through the ClassAd's
/// `Disk` (requirements) and through the request (the fit's cheap check).
#[test]
fn more_free_disk_in_an_otherwise_unchanged_ad_lets_a_job_match() {
    let mut by_requirements = JobDescription::new("alice", "/bin/true");
    by_requirements.requirements = Some("TARGET.Disk >= 5000".into());
    let mut by_request = JobDescription::new("alice", "/bin/true");
    by_request.request_disk_kb = Some(5000);
    for d in [by_requirements, by_request] {
        let t0 = Time::from_secs(1_763_337_600);
        let mut p = pool(t0);
        let mut out = Outbox::default();
        let mut seq = 1;
        for i in 0..3u64 {
            let t = t0 + Dur::from_secs(10 * i);
            p.advertise(host(1000 + i, seq), t, &mut out);
            p.advertise(home(&d, seq), t, &mut out);
            p.tick(t, &mut out);
            seq += 1;
        }
        assert_eq!(grants_to_a(&out), 0, "1000 KiB free: {:?}", out.messages);
        let t = t0 + Dur::from_secs(40);
        p.advertise(host(9000, seq), t, &mut out);
        p.advertise(home(&d, seq), t, &mut out);
        p.tick(t, &mut out);
        assert_eq!(grants_to_a(&out), 1, "9000 KiB free");
    }
}

/// One station's ads, each a random change of the one before (or none
/// but the progress fields).
fn ads() -> impl Strategy<Value = Vec<StationAd>> {
    let step = (0u8..8, 0u64..3, any::<bool>());
    proptest::collection::vec(step, 1..40).prop_map(|steps| {
        let mut a = crate::matchmaker::tests::host("h", 2, 4096, 1.0);
        let mut out = Vec::new();
        for (i, (what, n, flag)) in steps.into_iter().enumerate() {
            a.sequence = i as u64 + 1;
            a.sent_at = Time::from_secs(i as u64);
            a.disk_free_kb = 1_000_000 - 17 * i as u64;
            match what {
                0 => a.state = if flag { OwnerState::Av } else { OwnerState::Na },
                1 => a.cpus = 1 + n as u32,
                2 => {
                    a.running_guests = (0..n)
                        .map(|j| GuestInfo {
                            job: JobId::new(j + 1, 0),
                            home: format!("home{j}"),
                            owner: "alice".into(),
                            since: Time::ZERO,
                            suspended: flag,
                            concurrency_limits: Vec::new(),
                            class: None,
                        })
                        .collect()
                }
                3 => {
                    a.attrs.insert("HasMatlab".into(), flag.to_string());
                }
                4 => {
                    let mut d = JobDescription::new("alice", "/bin/true");
                    d.request_memory_mb = Some(512 * (n + 1));
                    let mut c = JobClass::of(&d);
                    c.count = n as u32;
                    a.classes = vec![c];
                    a.demand.idle_jobs = n as u32;
                }
                5 => a.memory_mb = 1024 * (n + 1),
                // 6, 7: nothing new but the progress fields.
                _ => {}
            }
            out.push(a.clone());
        }
        out
    })
}

proptest! {
    /// Whatever the ads, the pool holds the last one as sent and what it
    /// derives from it equals what it would derive from that ad alone: the
    /// machine ClassAd, the homes of the nodes held, the job classes.
    #[test]
    fn what_the_pool_keeps_equals_a_fresh_derivation(ads in ads()) {
        let t0 = Time::from_secs(1_763_337_600);
        let mut p = pool(t0);
        let mut out = Outbox::default();
        for (i, ad) in ads.iter().enumerate() {
            p.advertise(ad.clone(), t0 + Dur::from_secs(i as u64), &mut out);
            let id = p.ids.get("h").copied();
            let k = id.and_then(|id| p.stations.get(&id));
            prop_assert!(k.is_some());
            let Some(k) = k else { continue };
            prop_assert_eq!(&k.ad, ad);
            prop_assert!(*k.machine() == machine_ad(ad), "machine ad of ad {}", i);
            let homes: Vec<StationId> = node_holders(ad)
                .filter_map(|h| p.ids.get(h).copied())
                .collect();
            prop_assert_eq!(&k.holders, &homes);
            let classes: Vec<&JobClass> = k.jobs.iter().map(|j| &j.class).collect();
            let sent: Vec<&JobClass> = ad.classes.iter().collect();
            prop_assert_eq!(classes, sent);
        }
    }
}
