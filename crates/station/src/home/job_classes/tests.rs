//! The ad's classes in the share's order, their counts, avoided hosts,
//! and a grant finding its class's job behind any number of others.

use super::*;
use crate::home::share::Waiter;
use gleaner_proto::job::{JobDescription, JobState};

/// A queue of `owners.len()` idle jobs, one per owner, in that order.
fn queue(owners: &[&str]) -> (tempfile::TempDir, JobQueue, Vec<JobId>) {
    let dir = tempfile::tempdir().unwrap();
    let mut q = JobQueue::open(dir.path().join("queue.db")).unwrap();
    let ids = q
        .submit_with(Time::from_secs(1), |_| {
            Ok(owners
                .iter()
                .map(|o| JobDescription::new(*o, "/bin/true"))
                .collect())
        })
        .unwrap();
    (dir, q, ids)
}

fn class(owner: &str) -> JobClass {
    JobClass::of(&JobDescription::new(owner, "/bin/true"))
}

/// The share's order as given: each owner one account of one class.
fn snap(order: &[&str]) -> Snapshot {
    Snapshot {
        waiting: order
            .iter()
            .map(|o| Waiter {
                owner: o.to_string(),
                submitter: o.to_string(),
                classes: vec![class(o)],
            })
            .collect(),
        ..Snapshot::default()
    }
}

fn counts(c: &[JobClass]) -> Vec<(String, u32)> {
    c.iter().map(|c| (c.owner.clone(), c.count)).collect()
}

#[test]
fn classes_come_in_the_shares_order_with_their_idle_counts() {
    let (_d, mut q, ids) = queue(&["ann", "bob", "ann", "ann"]);
    let cache = ClassCache::default();
    let now = Time::from_secs(5);
    let none = HashSet::new();
    let c = cache.idle_classes(&q, &snap(&["bob", "ann"]), &none, &[], now);
    assert_eq!(counts(&c), [("bob".into(), 1), ("ann".into(), 3)]);
    q.transition(ids[0], JobState::Running, "x", Time::from_secs(2))
        .unwrap();
    let placing: HashSet<JobId> = [ids[2]].into();
    let c = cache.idle_classes(&q, &snap(&["ann", "bob"]), &placing, &[], now);
    assert_eq!(counts(&c), [("ann".into(), 1), ("bob".into(), 1)]);
}

#[test]
fn avoided_hosts_split_a_class_and_a_grant_takes_the_first_job_of_its_class() {
    let (_d, q, ids) = queue(&["ann", "bob", "ann"]);
    let cache = ClassCache::default();
    let avoiding = vec![(ids[0], vec!["h1".to_string()])];
    let now = Time::from_secs(5);
    let c = cache.idle_classes(&q, &snap(&["ann", "bob"]), &HashSet::new(), &avoiding, now);
    assert_eq!(c.len(), 3, "ann, ann avoiding h1, bob: {c:?}");
    assert_eq!((c[0].count, c[1].count), (1, 1));
    assert_eq!(c[1].avoid_hosts, ["h1"]);
    let avoided = |id: JobId| {
        if id == ids[0] {
            vec!["h1".to_string()]
        } else {
            Vec::new()
        }
    };
    let job = cache
        .first_idle(&q, Some(&c[0].key), |_| true, avoided)
        .unwrap();
    assert_eq!(job.id, ids[2]);
    // The advertised class with the avoided host finds its job through
    // the stored class.
    let job = cache
        .first_idle(&q, Some(&c[1].key), |_| true, avoided)
        .unwrap();
    assert_eq!(job.id, ids[0]);
    let job = cache
        .first_idle(&q, None, |id| id != ids[0], avoided)
        .unwrap();
    assert_eq!(job.id, ids[1]);
    assert!(
        cache
            .first_idle(&q, Some("nope"), |_| true, avoided)
            .is_none()
    );
}

#[test]
fn a_class_is_found_behind_any_number_of_other_jobs() {
    // More jobs of one class wait ahead than a scan would read.
    let mut owners = vec!["ann"; MAX_LOOKED + 50];
    owners.push("bob");
    let (_d, q, ids) = queue(&owners);
    let cache = ClassCache::default();
    let bob = class("bob").key;
    let job = cache
        .first_idle(&q, Some(&bob), |_| true, |_| Vec::new())
        .unwrap();
    assert_eq!(job.id, *ids.last().unwrap());
    // Bob leads the ad when the share serves him first.
    let c = cache.idle_classes(
        &q,
        &snap(&["bob", "ann"]),
        &HashSet::new(),
        &[],
        Time::from_secs(5),
    );
    assert_eq!(counts(&c)[0], ("bob".into(), 1));
    assert_eq!(c[1].count as u64, MAX_COUNTED - 1, "the rest of the budget");
}
