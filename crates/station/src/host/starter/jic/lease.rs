//! The lease with the home: renewed every third of it; lost when the home
//! cannot be reached for the whole lease or says the run is not ours.

use super::{Starter, shadow_url};
use crate::lease::LeaseRenewal;
use axum::http::StatusCode;
use gleaner_proto::job::JobId;
use gleaner_proto::wire::PlacementRequest;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::sync::watch;
use tokio::task::JoinHandle;

/// Starts the renewals when the placement has a lease. `lost` (the run's
/// stale signal, `Home::stale`) becomes `Some(why)` when the lease is lost.
pub(crate) fn start_lease(
    starter: &Arc<Starter>,
    req: &PlacementRequest,
    guest_id: &str,
    lost: Arc<watch::Sender<Option<String>>>,
) -> Option<JoinHandle<()>> {
    req.lease_secs.filter(|l| *l > 0).map(|l| {
        tokio::spawn(lease_loop(
            starter.http_to(&req.home),
            // The claim is the host's credential at this home (never the
            // station's own token: that goes to the coordinator alone).
            req.claim_id.clone(),
            req.shadow.clone(),
            req.job_id,
            LeaseRenewal {
                host: starter.config.host.clone(),
                host_address: starter.config.address.clone(),
                guest_id: guest_id.to_string(),
                run: req.run.clone(),
            },
            Duration::from_secs(l),
            lost,
        ))
    })
}

/// Renews the lease every third of it. Sends `Some(why)` when the home
/// cannot be reached for the whole lease, or when it says the job is no
/// longer this host's to run: the guest must then die, so that the run the
/// home starts elsewhere is the only one.
async fn lease_loop(
    http: reqwest::Client,
    token: String,
    shadow: String,
    job: JobId,
    renewal: LeaseRenewal,
    lease: Duration,
    lost: Arc<watch::Sender<Option<String>>>,
) {
    let job_s = job.to_string();
    let Ok(url) = shadow_url(&shadow, &["v1", "shadow", &job_s, "lease"]) else {
        return;
    };
    let period = (lease / 3).max(Duration::from_millis(100));
    let mut last_ok = Instant::now();
    loop {
        let r = http
            .post(url.clone())
            .bearer_auth(&token)
            .timeout(period)
            .json(&renewal)
            .send()
            .await;
        match r {
            Ok(resp) if resp.status().is_success() => last_ok = Instant::now(),
            // 409: the job is no longer this host's, or this run is not
            // the job's current one (issue 14). 403: the home no longer
            // takes this station for the job's host (it was placed
            // elsewhere); as good as a 409.
            Ok(resp)
                if resp.status() == StatusCode::CONFLICT
                    || resp.status() == StatusCode::NOT_FOUND
                    || resp.status() == StatusCode::FORBIDDEN =>
            {
                tracing::warn!(%job, status = %resp.status(), "home no longer wants this run");
                lost.send_replace(Some("lease revoked by the home station".into()));
                return;
            }
            Ok(resp) => tracing::debug!(%job, status = %resp.status(), "lease renewal failed"),
            Err(e) => tracing::debug!(%job, error = %e, "lease renewal failed"),
        }
        if last_ok.elapsed() >= lease {
            tracing::warn!(%job, secs = lease.as_secs_f64(), "home unreachable for the lease: killing the guest");
            lost.send_replace(Some(format!(
                "home unreachable for {:.0} s (lease expired)",
                lease.as_secs_f64()
            )));
            return;
        }
        let next = (last_ok + lease).min(Instant::now() + period);
        tokio::time::sleep_until(next.into()).await;
    }
}
