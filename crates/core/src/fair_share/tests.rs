//! Unit and property tests of the share: who goes first, decay, turns,
//! max-min fairness over a run, the flood, claim reuse.

use super::*;
use proptest::prelude::*;

fn w(name: &str, holding: u32) -> Waiting<'_> {
    Waiting { name, holding }
}

fn names(share: &FairShare, waiting: &[Waiting<'_>]) -> Vec<String> {
    share
        .order(waiting)
        .into_iter()
        .map(|i| waiting[i].name.to_string())
        .collect()
}

#[test]
fn submitter_names_follow_htcondor() {
    assert_eq!(submitter_name("ann", None, false), "ann");
    assert_eq!(submitter_name("ann", Some("physics"), false), "physics.ann");
    assert_eq!(submitter_name("ann", Some(""), false), "ann");
    assert_eq!(submitter_name("ann", None, true), "nice-user.ann");
    assert_eq!(submitter_name("ann", Some("g"), true), "g.ann");
    assert!(is_nice("nice-user.ann"));
    assert!(!is_nice("nice-users.ann"));
    assert!(!is_nice("ann"));
    let c = ShareConfig::default();
    assert_eq!(c.factor("ann"), 1.0);
    assert_eq!(c.factor("nice-user.ann"), 1e10);
    let mut c = c;
    c.factors.insert("ann".into(), 0.0);
    assert_eq!(
        c.factor("ann"),
        1.0,
        "a factor that is not positive counts as 1"
    );
}

#[test]
fn a_submitter_holding_nothing_goes_before_one_holding_every_node() {
    let mut s = FairShare::new(ShareConfig::default());
    s.observe(Time::from_secs(0), [("ann", 4)]);
    s.observe(Time::from_secs(3600), [("ann", 4)]);
    let waiting = [w("ann", 4), w("bob", 0)];
    assert_eq!(names(&s, &waiting), ["bob", "ann"]);
    assert_eq!(s.first(&waiting).map(|w| w.name), Some("bob"));
}

#[test]
fn among_equal_holders_the_lighter_recent_user_goes_first() {
    let mut s = FairShare::new(ShareConfig::default());
    // Ann used 2 nodes for an hour, Bob 1; now both hold nothing.
    s.observe(Time::from_secs(0), [("ann", 2), ("bob", 1)]);
    s.observe(Time::from_secs(3600), []);
    assert!(s.usage("ann") > s.usage("bob"));
    assert_eq!(names(&s, &[w("ann", 0), w("bob", 0)]), ["bob", "ann"]);
}

#[test]
fn usage_halves_in_one_half_life_and_approaches_the_nodes_held() {
    let h = Dur::from_hours(1);
    let mut s = FairShare::new(ShareConfig {
        half_life: h,
        ..ShareConfig::default()
    });
    let mut t = Time::from_secs(0);
    s.observe(t, [("ann", 10)]);
    for _ in 0..200 {
        t += Dur::from_mins(3);
        s.observe(t, [("ann", 10)]);
    }
    assert!((s.usage("ann") - 10.0).abs() < 1e-2, "{}", s.usage("ann"));
    // From now on Ann holds nothing.
    s.observe(t + Dur::from_mins(3), []);
    let before = s.usage("ann");
    s.observe(t + Dur::from_mins(3) + h, []);
    assert!((s.usage("ann") - before / 2.0).abs() < 1e-9);
    assert!((s.priority("ann") - s.usage("ann")).abs() < 1e-12);
}

#[test]
fn equals_take_turns() {
    let mut s = FairShare::new(ShareConfig::default());
    let mut served = Vec::new();
    for _ in 0..6 {
        let waiting = [w("c", 0), w("a", 0), w("b", 0)];
        let first = s.first(&waiting).map(|w| w.name.to_string()).unwrap();
        s.served(&first);
        served.push(first);
    }
    assert_eq!(served, ["a", "b", "c", "a", "b", "c"]);
}

#[test]
fn nice_users_come_after_everyone() {
    let s = FairShare::new(ShareConfig::default());
    let waiting = [w("nice-user.ann", 0), w("bob", 50)];
    assert_eq!(names(&s, &waiting), ["bob", "nice-user.ann"]);
}

#[test]
fn reuse_keeps_switches_or_gives_back() {
    let c = ShareConfig::default();
    let t = Time::from_secs(100);
    assert_eq!(
        reuse(&c, "ann", true, Some("ann"), false, None, t),
        Reuse::Keep
    );
    assert_eq!(reuse(&c, "ann", true, None, false, None, t), Reuse::Keep);
    assert_eq!(
        reuse(&c, "ann", true, Some("bob"), true, None, t),
        Reuse::Switch("bob".into())
    );
    assert_eq!(
        reuse(&c, "ann", true, Some("bob"), false, None, t),
        Reuse::GiveBack("bob".into())
    );
    // Not again for Bob within the gap while Ann has work for the claim.
    let just = Some(t);
    assert_eq!(
        reuse(&c, "ann", true, Some("bob"), false, just, t),
        Reuse::Keep
    );
    let later = t + c.give_back_gap;
    assert_eq!(
        reuse(&c, "ann", true, Some("bob"), false, just, later),
        Reuse::GiveBack("bob".into())
    );
    // Ann has nothing more: the claim goes back anyway.
    assert_eq!(
        reuse(&c, "ann", false, Some("bob"), false, just, t),
        Reuse::GiveBack("bob".into())
    );
}

/// A home with `nodes` nodes and users with endless queues (`demand`: the
/// first step each user has jobs from); every step some running jobs
/// complete (`ends`), then every free node goes to the share's first.
/// Returns each step's holdings.
fn run(nodes: u32, demand: &[u32], ends: &[Vec<bool>], factors: &[f64]) -> Vec<Vec<u32>> {
    let names: Vec<String> = (0..demand.len()).map(|i| format!("u{i}")).collect();
    let mut config = ShareConfig::default();
    for (n, f) in names.iter().zip(factors) {
        config.factors.insert(n.clone(), *f);
    }
    let mut s = FairShare::new(config);
    let mut held = vec![0u32; demand.len()];
    let mut out = Vec::new();
    let mut t = Time::from_secs(0);
    for (step, end) in ends.iter().enumerate() {
        // Each user's running jobs end one each where `end` says so.
        for (i, e) in end.iter().enumerate().take(held.len()) {
            if *e && held[i] > 0 {
                held[i] -= 1;
            }
        }
        t += Dur::from_secs(10);
        let free = nodes - held.iter().sum::<u32>();
        for _ in 0..free {
            s.observe(
                t,
                names.iter().map(String::as_str).zip(held.iter().copied()),
            );
            let waiting: Vec<Waiting<'_>> = names
                .iter()
                .zip(&held)
                .zip(demand)
                .filter(|(_, from)| **from as usize <= step)
                .map(|((n, h), _)| w(n, *h))
                .collect();
            let Some(first) = s.first(&waiting).map(|w| w.name.to_string()) else {
                break;
            };
            let i = names.iter().position(|n| *n == first).unwrap();
            held[i] += 1;
            s.served(&first);
        }
        out.push(held.clone());
    }
    out
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    /// The order is a permutation and does not depend on the order in
    /// which the waiting submitters are listed.
    #[test]
    fn order_is_a_permutation_independent_of_input_order(
        held in proptest::collection::vec(0u32..20, 1..8),
        used in proptest::collection::vec(0u32..20, 1..8),
        rot in 0usize..8,
    ) {
        let names: Vec<String> = (0..held.len()).map(|i| format!("s{i}")).collect();
        let mut s = FairShare::new(ShareConfig::default());
        s.observe(Time::from_secs(0), names.iter().map(String::as_str).zip(used.iter().copied()));
        s.observe(Time::from_secs(7200), names.iter().map(String::as_str).zip(held.iter().copied()));
        let a: Vec<Waiting<'_>> = names.iter().zip(&held).map(|(n, h)| w(n, *h)).collect();
        let mut b = a.clone();
        b.rotate_left(rot % a.len());
        let mut ia = s.order(&a);
        let oa: Vec<&str> = ia.iter().map(|&i| a[i].name).collect();
        let ob: Vec<&str> = s.order(&b).iter().map(|&i| b[i].name).collect();
        prop_assert_eq!(&oa, &ob);
        ia.sort_unstable();
        prop_assert_eq!(ia, (0..a.len()).collect::<Vec<_>>());
    }

    /// Whatever the history, with equal factors a submitter holding no
    /// node is served before every submitter holding one.
    #[test]
    fn holding_nothing_goes_first(
        held in proptest::collection::vec(1u32..10_000, 1..6),
        used in proptest::collection::vec(0u32..10_000, 1..6),
        newcomer_used in 0u32..10_000,
    ) {
        let names: Vec<String> = (0..held.len()).map(|i| format!("s{i}")).collect();
        let mut s = FairShare::new(ShareConfig::default());
        s.observe(
            Time::from_secs(0),
            names.iter().map(String::as_str).zip(used.iter().copied()).chain([("new", newcomer_used)]),
        );
        s.observe(Time::from_secs(86_400), names.iter().map(String::as_str).zip(held.iter().copied()));
        let mut waiting: Vec<Waiting<'_>> = names.iter().zip(&held).map(|(n, h)| w(n, *h)).collect();
        waiting.push(w("new", 0));
        prop_assert_eq!(s.first(&waiting).map(|w| w.name), Some("new"));
    }

    /// Max-min fairness over a run: once every node is handed out, users
    /// with endless queues hold within one node of each other, however
    /// the completions fell.
    #[test]
    fn endless_queues_share_the_nodes_within_one(
        nodes in 1u32..16,
        users in 2usize..5,
        ends in proptest::collection::vec(proptest::collection::vec(any::<bool>(), 5), 1..60),
    ) {
        let demand = vec![0; users];
        for held in run(nodes, &demand, &ends, &vec![1.0; users]) {
            let (lo, hi) = (held.iter().min().unwrap(), held.iter().max().unwrap());
            prop_assert!(hi - lo <= 1, "{held:?}");
            prop_assert_eq!(held.iter().sum::<u32>(), nodes);
        }
    }

    /// The flood: user 0 holds every node with an endless queue; user 1
    /// comes later with jobs. User 1 gets the first node freed after it
    /// came, whatever user 0 has queued.
    #[test]
    fn a_flood_does_not_delay_a_newcomer_beyond_the_next_free_node(
        nodes in 1u32..16,
        arrive in 1u32..20,
        ends in proptest::collection::vec(proptest::collection::vec(any::<bool>(), 2), 21..60),
    ) {
        let steps = run(nodes, &[0, arrive], &ends, &[1.0, 1.0]);
        let arrive = arrive as usize;
        prop_assert_eq!(steps[arrive - 1][1], 0);
        // The first step from its arrival at which a node came free.
        let freed = (arrive..ends.len()).find(|&s| ends[s][0] && steps[s - 1][0] > 0);
        if let Some(s) = freed {
            prop_assert!(steps[s][1] >= 1, "no node for the newcomer at step {s}: {steps:?}");
        }
    }

    /// A factor of 2 settles at about half the nodes of a factor of 1.
    #[test]
    fn factors_weigh_the_share(nodes in 6u32..30) {
        let ends: Vec<Vec<bool>> = (0..40).map(|i| vec![i % 2 == 0, i % 3 == 0]).collect();
        let last = run(nodes, &[0, 0], &ends, &[1.0, 2.0]).pop().unwrap();
        let (a, b) = (f64::from(last[0]) + 1.0, f64::from(last[1]) + 1.0);
        prop_assert!(a > b, "{last:?}");
        prop_assert!((a / b - 2.0).abs() <= 2.0 / b + 1e-9, "{last:?}");
    }
}

fn acct<'a>(owner: &'a str, submitter: &'a str) -> Account<'a> {
    Account { owner, submitter }
}

#[test]
fn many_group_names_do_not_enlarge_a_users_share() {
    // Ann spreads her jobs over 50 groups; Bob uses his own name. Eight
    // nodes are handed out one by one: Bob gets half.
    let groups: Vec<String> = (0..50).map(|i| format!("g{i}.ann")).collect();
    let mut s = Shares::new(ShareConfig::default());
    let mut held: BTreeMap<String, u32> = BTreeMap::new();
    let t = Time::from_secs(1);
    for _ in 0..8 {
        let mut all: Vec<Account<'_>> = groups.iter().map(|g| acct("ann", g)).collect();
        all.push(acct("bob", "bob"));
        let holding: Vec<(Account<'_>, u32)> = all
            .iter()
            .map(|a| (*a, held.get(a.submitter).copied().unwrap_or(0)))
            .collect();
        s.observe(t, &holding);
        let first = all[s.first(&all).unwrap()];
        *held.entry(first.submitter.to_string()).or_default() += 1;
        s.served(&first);
    }
    assert_eq!(held.get("bob"), Some(&4), "{held:?}");
    // Ann's four went to four of her groups, one each.
    assert_eq!(held.len(), 5, "{held:?}");
}

#[test]
fn nice_jobs_wait_for_everyone_and_groups_take_turns_within_a_user() {
    let mut s = Shares::new(ShareConfig::default());
    let (nice, bob) = (acct("ann", "nice-user.ann"), acct("bob", "bob"));
    s.observe(Time::from_secs(1), &[(bob, 30)]);
    assert_eq!(s.first(&[nice, bob]), Some(1));
    let (a1, a2) = (acct("ann", "x.ann"), acct("ann", "y.ann"));
    s.observe(Time::from_secs(2), &[(a1, 3), (a2, 1), (bob, 30)]);
    assert_eq!(s.order(&[a1, a2, bob]), [1, 0, 2]);
    s.observe(Time::from_secs(3600), &[(a1, 3), (a2, 1), (bob, 30)]);
    assert!(s.user_usage("ann") > 0.0 && s.submitter_usage("x.ann") > 0.0);
    assert_eq!(s.user_priority("bob"), s.user_usage("bob"));
}

proptest! {
    /// Whatever the groups, a user holding nothing is served before every
    /// user holding a node, and the order lists every account once.
    #[test]
    fn shares_serve_an_empty_handed_user_first(
        held in proptest::collection::vec((0usize..3, 0usize..4, 1u32..50), 1..12),
        newcomer_group in 0usize..4,
    ) {
        let users = ["ann", "bob", "cat"];
        let groups = ["", "a", "b", "nice-user"];
        let names: Vec<(String, String)> = held
            .iter()
            .map(|(u, g, _)| {
                let user = users[*u];
                let sub = if groups[*g].is_empty() { user.to_string() } else { format!("{}.{user}", groups[*g]) };
                (user.to_string(), sub)
            })
            .collect();
        let mut s = Shares::new(ShareConfig::default());
        let holding: Vec<(Account<'_>, u32)> = names
            .iter()
            .zip(&held)
            .map(|((o, sub), (_, _, n))| (acct(o, sub), *n))
            .collect();
        s.observe(Time::from_secs(5), &holding);
        let g = groups[newcomer_group];
        let sub = if g.is_empty() { "dan".to_string() } else { format!("{g}.dan") };
        let mut waiting: Vec<Account<'_>> = holding.iter().map(|(a, _)| *a).collect();
        waiting.push(acct("dan", &sub));
        let mut order = s.order(&waiting);
        if g != "nice-user" {
            prop_assert_eq!(order[0], waiting.len() - 1);
        }
        order.sort_unstable();
        order.dedup();
        prop_assert_eq!(order.len(), waiting.len());
    }
}

/// Observations `(seconds, nodes held by s0, s1, s2)`.
fn history() -> impl Strategy<Value = Vec<(u64, [u32; 3])>> {
    proptest::collection::vec((1u64..20_000, proptest::array::uniform3(0u32..12)), 1..12)
}

fn observe_all(s: &mut Shares, t0: u64, steps: &[(u64, [u32; 3])]) -> u64 {
    let names = ["s0", "s1", "s2"];
    let mut t = t0;
    for (dt, held) in steps {
        t += dt;
        let h: Vec<(Account<'_>, u32)> = names
            .iter()
            .zip(held)
            .map(|(n, k)| (acct(n, n), *k))
            .collect();
        s.observe(Time::from_secs(t), &h);
    }
    t
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(128))]

    /// A share saved when nothing is held and taken up by a fresh one (a
    /// restarted home) goes on exactly as the one that never stopped,
    /// down-time decaying it as time with nothing held.
    #[test]
    fn a_restored_share_goes_on_as_the_one_that_never_stopped(
        before in history(),
        down in 0u64..200_000,
        after in history(),
    ) {
        let config = ShareConfig { half_life: Dur::from_hours(2), ..ShareConfig::default() };
        let mut kept = Shares::new(config.clone());
        let t = observe_all(&mut kept, 0, &before);
        kept.observe(Time::from_secs(t + 1), &[]);
        let (users, submitters) = kept.saved().unwrap();
        let mut restored = Shares::new(config);
        restored.restore(&users, &submitters);
        observe_all(&mut kept, t + 1 + down, &after);
        observe_all(&mut restored, t + 1 + down, &after);
        for n in ["s0", "s1", "s2"] {
            let (a, b) = (kept.user_usage(n), restored.user_usage(n));
            prop_assert!((a - b).abs() <= 1e-9 * a.max(1.0), "{n}: {a} vs {b}");
            let (a, b) = (kept.submitter_usage(n), restored.submitter_usage(n));
            prop_assert!((a - b).abs() <= 1e-9 * a.max(1.0), "{n}: {a} vs {b}");
        }
    }
}

#[test]
fn restore_ignores_values_that_are_not_usage() {
    let mut s = FairShare::new(ShareConfig::default());
    let saved = SavedUsage {
        at: Time::from_secs(5),
        usage: [
            ("nan".to_string(), f64::NAN),
            ("neg".to_string(), -3.0),
            ("inf".to_string(), f64::INFINITY),
            ("ok".to_string(), 2.5),
        ]
        .into_iter()
        .collect(),
    };
    s.restore(&saved);
    assert_eq!(s.usage("ok"), 2.5);
    for n in ["nan", "neg", "inf"] {
        assert_eq!(s.usage(n), 0.0, "{n}");
    }
    assert_eq!(s.saved().unwrap().usage.len(), 1);
}
