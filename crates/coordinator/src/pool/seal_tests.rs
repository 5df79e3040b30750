//! Claims signed together at the end of each call (`Pool::seal_claims`):
//! whatever path granted them, every grant the caller sees carries a valid
//! signed claim, the ledger holds the same ids, and no id is left empty.

use super::tests::ad;
use super::*;
use crate::CoordinatorConfig;
use gleaner_core::time::Dur;
use gleaner_proto::creds::PoolSigner;

const SEED: [u8; 32] = [9; 32];

fn signed_pool(cfg: CoordinatorConfig) -> (Pool, Time) {
    let cfg = CoordinatorConfig {
        startup_grace_secs: Some(0.0),
        ..cfg
    };
    let t0 = Time::from_secs(1_763_337_600);
    let p = Pool::from_config(&cfg, Box::new(PoolSigner::from_seed(&SEED)), 7, t0).unwrap();
    (p, t0)
}

fn station(name: &str, av: bool, idle: u32) -> StationAd {
    let mut a = ad(name, av, 1, idle, &[]);
    a.address = format!("http://{name}:9620");
    a
}

/// Every grant in `out` verifies as a claim on its host naming its nonce,
/// and the ledger's ids are exactly the grants'.
fn assert_sealed(p: &Pool, out: &Outbox, now: Time) -> usize {
    let verifier = PoolSigner::from_seed(&SEED).verifier();
    let secs = now.as_micros() / 1_000_000;
    let mut granted: Vec<String> = Vec::new();
    for (to, g) in out.grants() {
        assert!(
            !g.claim_id.is_empty(),
            "grant to {to} on {} unsealed",
            g.host
        );
        let t = verifier
            .verify_claim(&g.claim_id, &g.host, secs)
            .unwrap_or_else(|e| panic!("claim on {}: {e}", g.host));
        assert_eq!(t.home, to);
        assert_eq!(Some(&t.nonce), g.nonce.as_ref());
        granted.push(g.claim_id.clone());
    }
    let mut ledger: Vec<String> = p
        .saved_claims()
        .claims
        .into_iter()
        .map(|c| c.claim_id)
        .collect();
    granted.sort();
    ledger.sort();
    assert_eq!(ledger, granted, "the ledger holds what was granted");
    assert!(p.unsealed.is_empty());
    granted.len()
}

/// A periodic pass granting more claims than are signed one by one
/// (they are signed on several threads) seals every one.
#[test]
fn a_pass_seals_every_claim_it_grants() {
    let (mut p, t0) = signed_pool(CoordinatorConfig {
        pass_on_demand: false,
        ..CoordinatorConfig::default()
    });
    let mut out = Outbox::default();
    for i in 0..40 {
        p.advertise(station(&format!("h{i:02}"), true, 0), t0, &mut out);
    }
    p.advertise(station("a", false, 40), t0, &mut out);
    p.advertise(station("b", false, 40), t0, &mut out);
    assert!(out.messages.is_empty(), "{out:?}");
    let now = t0 + Dur::from_secs(1);
    p.tick(now, &mut out);
    assert_eq!(assert_sealed(&p, &out, now), 40);
}

/// Grants made by an ad's capacity event, and by a pass that waited for
/// the event gap (`run_due`), are sealed before the call returns too.
#[test]
fn event_passes_seal_their_claims() {
    let (mut p, t0) = signed_pool(CoordinatorConfig::default());
    // Further apart than the event gap.
    let at = |k: u64| t0 + Dur::from_millis(100 * k);
    let mut out = Outbox::default();
    p.advertise(station("a", false, 0), at(1), &mut out);
    p.advertise(station("h1", true, 0), at(2), &mut out);
    // New demand while a node is free: a pass in this very call.
    p.advertise(station("a", false, 1), at(3), &mut out);
    assert_eq!(assert_sealed(&p, &out, at(3)), 1);
    // A new host: a pass at once; another right after it waits for
    // `run_due`.
    p.advertise(station("a", false, 3), at(4), &mut out);
    p.advertise(station("h2", true, 0), at(5), &mut out);
    assert_eq!(assert_sealed(&p, &out, at(5)), 2);
    p.advertise(
        station("h3", true, 0),
        at(5) + Dur::from_millis(1),
        &mut out,
    );
    assert_eq!(assert_sealed(&p, &out, at(5)), 2);
    let due = p.pass_due().expect("the event waits for the gap");
    p.run_due(due, &mut out);
    assert_eq!(assert_sealed(&p, &out, due), 3);
}
