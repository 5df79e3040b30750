//! Passes on events with the coordinator's defaults: free capacity meets a
//! waiting job within one event, not at the next interval.

use super::tests::{ad, pool};
use super::*;
use crate::CoordinatorConfig;
use gleaner_core::time::Dur;

/// A pool with `cfg`'s settings and no startup grace.
pub(super) fn pool_with(cfg: CoordinatorConfig) -> (Pool, Time) {
    let cfg = CoordinatorConfig {
        startup_grace_secs: Some(0.0),
        ..cfg
    };
    let t0 = Time::from_secs(1_763_337_600);
    let p = Pool::from_config(&cfg, Box::new(UnsignedClaims), 7, t0).unwrap();
    (p, t0)
}

/// `t0` plus `k` tenths of a second: ads further apart than the event gap.
fn at(t0: Time, k: u64) -> Time {
    t0 + Dur::from_millis(100 * k)
}

pub(super) fn grants_to(out: &Outbox, home: &str) -> Vec<String> {
    out.grants()
        .filter(|(to, _)| *to == home)
        .map(|(_, g)| g.host.clone())
        .collect()
}

/// A job submitted to a station while a node is free is granted that node
/// by the ad that announces it: no interval passes in between.
#[test]
fn new_demand_meets_a_free_node_in_the_same_ad() {
    let (mut p, t0) = pool_with(CoordinatorConfig::default());
    let mut out = Outbox::default();
    p.advertise(ad("h", true, 1, 0, &[]), at(t0, 1), &mut out);
    p.advertise(ad("a", false, 1, 0, &[]), at(t0, 2), &mut out);
    assert!(out.messages.is_empty());
    p.advertise(ad("a", false, 1, 1, &[]), at(t0, 3), &mut out);
    assert_eq!(grants_to(&out, "a"), ["h"], "{out:?}");
}

/// The thesis's setting (what `glean sim pool` runs): new demand waits for
/// the interval's pass (resolution A4).
#[test]
fn without_pass_on_demand_new_demand_waits_for_the_interval() {
    let (mut p, t0) = pool_with(CoordinatorConfig {
        pass_on_demand: false,
        ..CoordinatorConfig::default()
    });
    let mut out = Outbox::default();
    p.advertise(ad("h", true, 1, 0, &[]), t0, &mut out);
    p.advertise(ad("a", false, 1, 0, &[]), t0, &mut out);
    p.advertise(ad("a", false, 1, 1, &[]), t0 + Dur::from_secs(1), &mut out);
    assert!(out.messages.is_empty(), "{out:?}");
    p.tick(t0 + Dur::from_secs(2), &mut out);
    assert_eq!(grants_to(&out, "a"), ["h"]);
}

/// With the defaults one pass hands out every free node a waiting job
/// fits (Up-Down's A3 alternative), lowest index first.
#[test]
fn one_event_fills_every_free_node() {
    let (mut p, t0) = pool_with(CoordinatorConfig::default());
    let mut out = Outbox::default();
    for (k, h) in ["h1", "h2", "h3", "h4"].into_iter().enumerate() {
        p.advertise(ad(h, true, 1, 0, &[]), at(t0, k as u64), &mut out);
    }
    p.advertise(ad("a", false, 1, 20, &[]), at(t0, 5), &mut out);
    let mut hosts = grants_to(&out, "a");
    hosts.sort();
    assert_eq!(hosts, ["h1", "h2", "h3", "h4"], "{out:?}");
}

/// A guest ending is a capacity event: the next waiting job is granted
/// the node by the host's ad, before any interval or home ad.
#[test]
fn a_job_ending_frees_its_node_for_the_next_grant_at_once() {
    let (mut p, t0) = pool_with(CoordinatorConfig::default());
    let mut out = Outbox::default();
    p.advertise(ad("h", true, 1, 0, &[(1, "a")]), t0, &mut out);
    p.advertise(ad("a", false, 1, 3, &[]), t0, &mut out);
    assert!(out.messages.is_empty());
    p.advertise(ad("h", true, 1, 0, &[]), t0 + Dur::from_secs(1), &mut out);
    assert_eq!(grants_to(&out, "a"), ["h"]);
}

/// Event passes closer than the gap are served by one pass at its end,
/// which the caller runs when [`Pool::pass_due`] says.
#[test]
fn event_passes_within_the_gap_wait_for_its_end() {
    let (mut p, t0) = pool_with(CoordinatorConfig {
        event_pass_gap_secs: 1.0,
        ..CoordinatorConfig::default()
    });
    let mut out = Outbox::default();
    p.advertise(ad("a", false, 1, 1, &[]), t0, &mut out);
    // The host's ad is the first event: its pass runs at once.
    p.advertise(ad("h1", true, 1, 0, &[]), t0, &mut out);
    assert_eq!(grants_to(&out, "a"), ["h1"]);
    assert_eq!(p.pass_due(), None);
    let t = t0 + Dur::from_millis(100);
    p.advertise(ad("h2", true, 1, 0, &[]), t, &mut out);
    p.advertise(ad("b", false, 1, 1, &[]), t, &mut out);
    assert!(grants_to(&out, "b").is_empty(), "within the gap");
    assert_eq!(p.pass_due(), Some(t0 + Dur::from_secs(1)));
    p.run_due(t0 + Dur::from_millis(900), &mut out);
    assert!(grants_to(&out, "b").is_empty(), "not due yet");
    p.run_due(t0 + Dur::from_secs(1), &mut out);
    assert_eq!(grants_to(&out, "b"), ["h2"]);
    assert_eq!(p.pass_due(), None);
}

/// The known symptom: a home's only job placed on x2 showed in x2's ad
/// while the home's own last ad still counted it idle; the next pass must
/// not grant x1 to the home for that job again (the grant would hold x1
/// unused until its claim expired).
#[test]
fn a_used_claim_is_not_granted_again_before_its_home_readvertises() {
    let (mut p, t0) = pool_with(CoordinatorConfig::default());
    let mut out = Outbox::default();
    p.advertise(ad("x1", true, 0, 0, &[]), at(t0, 1), &mut out);
    p.advertise(ad("x2", true, 1, 0, &[]), at(t0, 2), &mut out);
    p.advertise(ad("home", false, 1, 1, &[]), at(t0, 3), &mut out);
    assert_eq!(grants_to(&out, "home"), ["x2"]);
    p.advertise(ad("x2", true, 1, 0, &[(1, "home")]), at(t0, 4), &mut out);
    // x1 turns free: a capacity event while the home's ad is stale.
    let mut out = Outbox::default();
    p.advertise(ad("x1", true, 1, 0, &[]), at(t0, 5), &mut out);
    p.tick(at(t0, 6), &mut out);
    assert!(grants_to(&out, "home").is_empty(), "{out:?}");
    // The home's next ad counts the job as remote; a new job is served
    // by the next pass.
    let mut home = ad("home", false, 1, 1, &[]);
    home.demand.remote_jobs = 1;
    p.advertise(home, at(t0, 7), &mut out);
    p.tick(at(t0, 8), &mut out);
    assert_eq!(grants_to(&out, "home"), ["x1"]);
}

/// The daemon's mailbox: grants reach a waiting events call at once, stay
/// until acknowledged, and never also go in an advertise reply.
#[test]
fn events_stream_delivers_once_and_until_acknowledged() {
    let (mut s, t0) = pool(0.0);
    s.advertise(ad("h", true, 1, 0, &[]), t0);
    let Err(bell) = s.events("a", 0) else {
        panic!("no mail yet")
    };
    // The grant is posted by the ad that brings the demand; the stream
    // hears of it.
    let _ = s.advertise(ad("a", false, 1, 0, &[]), t0);
    let t = t0 + Dur::from_secs(1);
    let reply = s.advertise(ad("h2", true, 0, 0, &[]), t);
    assert!(reply.grants.is_empty());
    let t = t + Dur::from_secs(1);
    let r = s.advertise(ad("a", false, 1, 1, &[]), t);
    // The ad's own reply carries it: the stream had not been sent it.
    assert_eq!(r.grants.len(), 1);
    assert!(bell.has_changed().unwrap());
    assert!(s.events("a", 0).is_err(), "delivered once");
    // Next job: this time the stream takes it first.
    let t = t + Dur::from_secs(1);
    s.advertise(ad("h", true, 1, 0, &[(1, "a")]), t);
    let mut a = ad("a", false, 1, 1, &[]);
    a.demand.remote_jobs = 1;
    assert!(s.advertise(a, t).grants.is_empty(), "h is busy");
    s.advertise(ad("h", true, 1, 0, &[]), t + Dur::from_secs(1));
    let got = s.events("a", 0).expect("mail");
    assert_eq!(got.grants.len(), 1);
    let again = s.events("a", 0).expect("not acknowledged: sent again");
    assert_eq!(again, got);
    let r = s.advertise(ad("a", false, 1, 1, &[]), t + Dur::from_secs(2));
    assert!(r.grants.is_empty(), "sent on the stream, not in the reply");
    assert!(s.events("a", got.last).is_err(), "acknowledged");
}

/// The nonce an unsigned claim id carries (`home>host#nonce`).
fn nonce(claim_id: &str) -> String {
    claim_id
        .split_once('#')
        .map(|(_, n)| n.to_string())
        .unwrap()
}

/// Settled by id: a guest that started and ended between two of its host's
/// ads never shows in one, but the host names the claim it used; the node
/// is free at once (a capacity event), not when the claim would expire.
#[test]
fn a_claim_named_by_its_host_is_settled_even_after_its_guest_ended() {
    let (mut p, t0) = pool_with(CoordinatorConfig::default());
    let mut out = Outbox::default();
    p.advertise(ad("h", true, 1, 0, &[]), at(t0, 1), &mut out);
    p.advertise(ad("a", false, 1, 2, &[]), at(t0, 2), &mut out);
    let first: Vec<_> = out.grants().map(|(_, g)| g.claim_id.clone()).collect();
    assert_eq!(first.len(), 1);
    assert_eq!(p.saved_claims().claims.len(), 1);
    // The home re-advertises (one job placed, one idle): still pending.
    let mut a = ad("a", false, 1, 1, &[]);
    a.demand.remote_jobs = 1;
    let mut out = Outbox::default();
    p.advertise(a, at(t0, 3), &mut out);
    assert!(out.messages.is_empty());
    // The job ran and ended; the host's next ad names the claim only.
    let mut h = ad("h", true, 1, 0, &[]);
    h.claims_used = vec![nonce(&first[0])];
    p.advertise(h, at(t0, 4), &mut out);
    let second: Vec<_> = out.grants().map(|(_, g)| g.claim_id.clone()).collect();
    assert_eq!(
        second.len(),
        1,
        "the freed node goes to the next job: {out:?}"
    );
    assert_ne!(second[0], first[0]);
    assert_eq!(
        p.saved_claims().claims.len(),
        1,
        "the first claim is settled"
    );
}

/// A host that names the claims it used leaves the others pending, even
/// when another guest of the same home shows up (counting would have
/// taken that guest for the claim's).
#[test]
fn a_host_naming_its_claims_settles_only_those() {
    let (mut p, t0) = pool_with(CoordinatorConfig::default());
    let mut out = Outbox::default();
    p.advertise(ad("h", true, 2, 0, &[]), at(t0, 1), &mut out);
    p.advertise(ad("a", false, 1, 2, &[]), at(t0, 2), &mut out);
    let ids: Vec<_> = out.grants().map(|(_, g)| g.claim_id.clone()).collect();
    assert_eq!(ids.len(), 2);
    let mut h = ad("h", true, 2, 0, &[(7, "a")]);
    h.claims_used = vec![nonce(&ids[1])];
    p.advertise(h, at(t0, 3), &mut out);
    let left: Vec<_> = p
        .saved_claims()
        .claims
        .into_iter()
        .map(|c| c.claim_id)
        .collect();
    assert_eq!(left, [ids[0].clone()]);
}
