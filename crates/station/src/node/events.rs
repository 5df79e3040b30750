//! The events stream: the coordinator pushes this station's grants and
//! preemptions (`GET /v1/events`, a long poll with the station's own token)
//! as soon as a pass decides them, so the home uses a grant at once instead
//! of at its next advertisement. Mail the stream has not been sent still
//! comes in advertise replies, so an older coordinator without the stream
//! loses nothing.

use crate::config::StationConfig;
use crate::home::Home;
use gleaner_proto::wire::EventsReply;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::watch;

/// Seconds the coordinator holds a call open when there is no mail: below
/// the HTTP client's 30 s timeout.
const WAIT_SECS: u64 = 20;
/// Pause after a failed call, so a coordinator that is down or has no
/// stream is not hammered.
const RETRY: Duration = Duration::from_secs(2);

/// What the stream needs.
pub struct Events {
    pub config: Arc<StationConfig>,
    /// This station's own token: the coordinator answers with its mail only.
    pub token: String,
    pub http: reqwest::Client,
    pub home: Arc<Home>,
}

/// Follows the stream until shutdown; each reply's preemptions, then
/// grants, go to the home, as an advertise reply's do.
pub async fn run(e: Events, mut shutdown: watch::Receiver<bool>) {
    if e.config.coordinator.is_empty() {
        return;
    }
    let base = format!("{}/v1/events", e.config.coordinator.trim_end_matches('/'));
    // Everything up to `after` has been received; the next call says so.
    let mut after = 0u64;
    loop {
        let call = e
            .http
            .get(&base)
            .query(&[("after", after), ("wait", WAIT_SECS)])
            .bearer_auth(&e.token)
            .send();
        let reply = tokio::select! {
            r = call => r,
            _ = shutdown.wait_for(|s| *s) => return,
        };
        let pause = match reply {
            Ok(resp) if resp.status().is_success() => match resp.json::<EventsReply>().await {
                Ok(r) => {
                    after = after.max(r.last);
                    e.home.on_preemptions(&r.preemptions);
                    // Placements run beside the stream, which goes on
                    // listening (a preemption must not wait for them).
                    if !r.grants.is_empty() {
                        let home = e.home.clone();
                        tokio::spawn(async move { home.on_grants(&r.grants).await });
                    }
                    None
                }
                Err(err) => {
                    tracing::warn!(error = %err, "unreadable events reply");
                    Some(RETRY)
                }
            },
            Ok(resp) => {
                // 404: a coordinator without the stream; grants come with ads.
                tracing::debug!(status = %resp.status(), "events stream refused");
                Some(RETRY * 5)
            }
            Err(err) => {
                tracing::debug!(error = %err, "events stream: cannot reach the coordinator");
                Some(RETRY)
            }
        };
        if let Some(p) = pause {
            tokio::select! {
                _ = tokio::time::sleep(p) => {}
                _ = shutdown.wait_for(|s| *s) => return,
            }
        }
    }
}
