//! Two homes' jobs of the same id on one host are two guests: every home
//! numbers its clusters from 1, so a job id names a guest only with its
//! home.

use super::event_tests::{grants_to, pool_with};
use super::tests::ad;
use super::*;
use crate::CoordinatorConfig;
use gleaner_core::time::Dur;

fn pool() -> (Pool, Time) {
    pool_with(CoordinatorConfig::default())
}

/// Home a's job 1.0 ends on h while home b's job 1.0 still runs there:
/// a node is free, and the host's ad is the capacity event that grants it.
#[test]
fn one_homes_guest_ending_frees_a_node_beside_another_homes_job_of_that_id() {
    let (mut p, t0) = pool();
    let mut out = Outbox::default();
    p.advertise(ad("a", false, 1, 0, &[]), t0, &mut out);
    p.advertise(ad("b", false, 1, 0, &[]), t0, &mut out);
    p.advertise(ad("h", true, 2, 0, &[(1, "a"), (1, "b")]), t0, &mut out);
    p.advertise(ad("c", false, 1, 3, &[]), t0, &mut out);
    assert!(grants_to(&out, "c").is_empty(), "{out:?}");
    let t = t0 + Dur::from_secs(1);
    p.advertise(ad("h", true, 2, 0, &[(1, "b")]), t, &mut out);
    assert_eq!(grants_to(&out, "c"), ["h"], "{out:?}");
}

/// Claims of two homes on one host, each used by its home's job 1.0: both
/// settle (one home's guest does not hide the other's).
#[test]
fn claims_of_two_homes_settle_by_guests_of_the_same_id() {
    let (mut p, t0) = pool();
    let mut out = Outbox::default();
    p.advertise(ad("h", true, 2, 0, &[]), t0, &mut out);
    p.advertise(
        ad("a", false, 1, 1, &[]),
        t0 + Dur::from_millis(100),
        &mut out,
    );
    p.advertise(
        ad("b", false, 1, 1, &[]),
        t0 + Dur::from_millis(200),
        &mut out,
    );
    assert_eq!(grants_to(&out, "a"), ["h"], "{out:?}");
    assert_eq!(grants_to(&out, "b"), ["h"], "{out:?}");
    assert_eq!(p.saved_claims().claims.len(), 2);
    let t = t0 + Dur::from_secs(1);
    p.advertise(ad("h", true, 2, 0, &[(1, "a"), (1, "b")]), t, &mut out);
    assert_eq!(
        p.saved_claims().claims.len(),
        0,
        "both guests are their claims' own"
    );
}
