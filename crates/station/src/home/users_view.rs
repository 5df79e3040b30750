//! `GET /v1/users`: the administrator's view of the home's users (`glean
//! users`): each user's jobs by state, the nodes they hold, their decayed
//! usage and priority factor (`share`), the output they keep in the spool
//! (`spool`), and the home's limits (`limits`). Open to every caller the
//! home serves, as the queue is (`condor_status -submitters`,
//! `condor_userprio`).

use super::Home;
use axum::Json;
use axum::extract::State;
use gleaner_edge::ApiError;
use gleaner_proto::api::{HomeLimits, HomeUser, HomeUsers};
use gleaner_proto::job::JobStateKind;
use std::collections::BTreeMap;
use std::sync::Arc;

pub(crate) async fn users(State(home): State<Arc<Home>>) -> Result<Json<HomeUsers>, ApiError> {
    let l = &home.config.limits;
    let spool = home.spooled.limits();
    let limits = HomeLimits {
        max_jobs_per_owner: l.max_jobs_per_owner,
        max_jobs_per_submission: l.max_jobs_per_submission,
        max_jobs: l.max_jobs,
        max_running_per_owner: l.max_running_per_owner,
        max_job_spool_bytes: spool.max_job_bytes,
        max_owner_spool_bytes: spool.max_owner_bytes,
    };
    let factors = &home.config.share.factors;
    let mut users: BTreeMap<String, HomeUser> = BTreeMap::new();
    let factor = |name: &str| factors.get(name).copied().unwrap_or(1.0);
    let active = [
        JobStateKind::Idle,
        JobStateKind::Running,
        JobStateKind::Suspended,
        JobStateKind::Held,
    ];
    let snap = {
        let q = home.queue();
        for (owner, state, n) in q.count_by_owner(&active)? {
            entry(&mut users, &owner, factor).jobs.add(state, n);
        }
        let placing = home.remote.placing();
        super::share::snapshot(&home, &q, &placing, crate::clock::now())
    };
    for ((owner, submitter), n) in &snap.holding {
        let u = entry(&mut users, owner, factor);
        u.nodes = u.nodes.saturating_add(*n);
        if !u.submitters.contains(submitter) {
            u.submitters.push(submitter.clone());
        }
    }
    for w in &snap.waiting {
        let u = entry(&mut users, &w.owner, factor);
        if !u.submitters.contains(&w.submitter) {
            u.submitters.push(w.submitter.clone());
        }
    }
    for (owner, bytes) in home.spooled.usage() {
        entry(&mut users, &owner, factor).spool_bytes = bytes;
    }
    for u in users.values_mut() {
        u.usage = home.share.usage_of(&u.user).0;
        u.submitters.sort();
    }
    Ok(Json(HomeUsers {
        limits,
        users: users.into_values().collect(),
    }))
}

/// The row of `name`, made when first met.
fn entry<'a>(
    users: &'a mut BTreeMap<String, HomeUser>,
    name: &str,
    factor: impl Fn(&str) -> f64,
) -> &'a mut HomeUser {
    users.entry(name.to_string()).or_insert_with(|| HomeUser {
        user: name.to_string(),
        factor: factor(name),
        ..HomeUser::default()
    })
}
