//! Status reports to the home, in order.

use super::{is_stale_run, shadow_url};
use axum::http::StatusCode;
use gleaner_proto::job::JobId;
use gleaner_proto::wire::JobStatusReport;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::sync::{mpsc, watch};

/// Sends status reports in order, retrying each with backoff, so that
/// the guest's reactions are never delayed by the network.
pub(super) async fn report_loop(
    http: reqwest::Client,
    token: String,
    shadow: String,
    job: JobId,
    mut rx: mpsc::UnboundedReceiver<JobStatusReport>,
    patience: Duration,
    stale: Arc<watch::Sender<Option<String>>>,
) {
    let job_s = job.to_string();
    let url = match shadow_url(&shadow, &["v1", "jobs", &job_s, "status"]) {
        Ok(u) => u,
        Err(e) => {
            tracing::error!(%job, error = %e, "cannot report status");
            return;
        }
    };
    while let Some(rep) = rx.recv().await {
        let mut delay = Duration::from_millis(100);
        // With a lease, keep trying for as long as the home would wait for
        // us: a short network cut must not lose a report.
        let until = Instant::now() + patience;
        for attempt in 1.. {
            if attempt > 8 && Instant::now() > until {
                tracing::warn!(%job, event = ?rep.event, "status report given up");
                break;
            }
            let r = http
                .post(url.clone())
                .bearer_auth(&token)
                .json(&rep)
                .send()
                .await;
            match r {
                Ok(resp) if resp.status().is_success() => break,
                // The shadow refused the report (e.g. an illegal state
                // transition); resending will not change its mind.
                Ok(resp) if resp.status().is_client_error() => {
                    let status = resp.status();
                    tracing::warn!(%job, %status, event = ?rep.event, "shadow refused status report");
                    if status == StatusCode::CONFLICT && is_stale_run(resp).await {
                        // The home gave this run up: it must stop.
                        stale.send_replace(Some("the home refused this run as stale".into()));
                    }
                    break;
                }
                Ok(resp) => {
                    tracing::warn!(%job, status = %resp.status(), attempt, "status report failed")
                }
                Err(e) => tracing::warn!(%job, error = %e, attempt, "status report failed"),
            }
            tokio::time::sleep(delay).await;
            delay = (delay * 2).min(Duration::from_secs(5));
        }
    }
}
