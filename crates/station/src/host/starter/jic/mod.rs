//! A guest's line to its home station, as HTCondor's JobInfoCommunicator:
//! status reports, the lease, output streaming and every file transfer to
//! or from the home's shadow go through [`Home`]; the rest of the starter
//! never builds a request.
//!
//! - `reports.rs`: status reports, in order, retried;
//! - `lease.rs`: the lease renewal loop;
//! - `stream.rs`: stdout/stderr streamed while the job runs;
//! - `transfer.rs`: input files, checkpoint bundles, output files.

mod lease;
mod reports;
mod stream;
mod transfer;

pub(crate) use lease::start_lease;
pub(crate) use stream::Streaming;
pub(crate) use transfer::FetchError;

use super::{Starter, StarterError};
use gleaner_proto::job::{JobEventKind, JobId, JobState};
use gleaner_proto::run::RunId;
use gleaner_proto::wire::{
    JobStatusReport, PROTOCOL_VERSION, PlacementRequest, StartFailure, Usage,
};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::{mpsc, watch};
use tokio::task::JoinHandle;

/// One guest's line to its home's shadow.
pub(crate) struct Home {
    starter: Arc<Starter>,
    job: JobId,
    /// This run, named in every request (the home hears only the job's
    /// current run, issue 14).
    run: Option<RunId>,
    /// Becomes `Some(why)` when the home says this run is not the job's
    /// current one (or the lease is lost, `lease.rs`): the guest must die.
    stale: Arc<watch::Sender<Option<String>>>,
    /// The shadow's base URL, from the placement.
    shadow: String,
    /// The placement's claim: this host's credential at the home for this
    /// job (the station's own token goes to the coordinator alone).
    credential: String,
    lease_secs: Option<u64>,
    reports: mpsc::UnboundedSender<JobStatusReport>,
    /// The client for this guest's home (over TLS: that home's
    /// certificate only).
    http: reqwest::Client,
    /// The chunks of the checkpoint the home holds as this job's latest,
    /// as far as this run knows (the one it restored or last sent): the
    /// base of its next upload.
    ckpt_base: std::sync::Mutex<Option<Arc<crate::checkpoint::ChunkSet>>>,
}

impl Home {
    /// Opens the line. Reports go out from a task of their own, so that
    /// the guest's reactions are never delayed by the network; the task
    /// ends when the `Home` is dropped and every report was sent (or
    /// given up).
    pub(crate) fn open(starter: &Arc<Starter>, req: &PlacementRequest) -> (Home, JoinHandle<()>) {
        let (tx, rx) = mpsc::unbounded_channel();
        let stale = Arc::new(watch::channel(None).0);
        let http = starter.http_to(&req.home);
        let reporter = tokio::spawn(reports::report_loop(
            http.clone(),
            req.claim_id.clone(),
            req.shadow.clone(),
            req.job_id,
            rx,
            req.lease_secs.map_or(Duration::ZERO, Duration::from_secs),
            stale.clone(),
        ));
        let home = Home {
            starter: starter.clone(),
            job: req.job_id,
            run: req.run.clone(),
            stale,
            shadow: req.shadow.clone(),
            credential: req.claim_id.clone(),
            lease_secs: req.lease_secs,
            reports: tx,
            http,
            ckpt_base: std::sync::Mutex::new(None),
        };
        (home, reporter)
    }

    pub(crate) fn report(&self, event: JobEventKind, state: JobState, detail: impl Into<String>) {
        self.report_usage(event, state, detail, None);
    }

    pub(crate) fn report_usage(
        &self,
        event: JobEventKind,
        state: JobState,
        detail: impl Into<String>,
        usage: Option<Usage>,
    ) {
        self.send(event, state, detail.into(), usage, None, None);
    }

    /// The host holds the job, with HTCondor's `HoldReasonCode` when it
    /// has one (20: a deferred job that missed its start).
    pub(crate) fn report_held(&self, why: String, code: Option<u32>) {
        self.send(
            JobEventKind::Held,
            JobState::Held {
                reason: why.clone(),
            },
            why,
            None,
            None,
            code,
        );
    }

    /// The program could not be started: back to the queue as far as this
    /// host is concerned; the home counts it and may hold the job.
    pub(crate) fn report_start_failure(&self, failure: StartFailure) {
        let detail = format!("failed to start: {}", failure.message);
        self.send(
            JobEventKind::Evicted,
            JobState::Idle,
            detail,
            None,
            Some(failure),
            None,
        );
    }

    fn send(
        &self,
        event: JobEventKind,
        state: JobState,
        detail: String,
        usage: Option<Usage>,
        start_failure: Option<StartFailure>,
        hold_code: Option<u32>,
    ) {
        tracing::info!(job = %self.job, ?event, %detail, "guest event");
        let _ = self.reports.send(JobStatusReport {
            protocol: PROTOCOL_VERSION,
            job_id: self.job,
            host: self.starter.config.host.clone(),
            event,
            state,
            at: self.starter.now(),
            detail,
            usage,
            run: self.run.clone(),
            start_failure,
            hold_code,
        });
    }

    /// Watches for the end of this run's right to run: `Some(why)` once
    /// the home refused it as stale or the lease was lost.
    pub(crate) fn stale(&self) -> watch::Receiver<Option<String>> {
        self.stale.subscribe()
    }

    /// The sender behind [`Home::stale`], for the lease loop.
    pub(crate) fn stale_sender(&self) -> Arc<watch::Sender<Option<String>>> {
        self.stale.clone()
    }

    /// `<shadow>/v1/shadow/<job>/<segs…>?run=<this run>`.
    pub(crate) fn url(&self, segs: &[&str]) -> Result<reqwest::Url, StarterError> {
        let job = self.job.to_string();
        let mut all = vec!["v1", "shadow", job.as_str()];
        all.extend_from_slice(segs);
        let mut u = shadow_url(&self.shadow, &all)?;
        if let Some(r) = &self.run {
            u.query_pairs_mut().append_pair("run", &r.to_string());
        }
        Ok(u)
    }

    /// The base of the next checkpoint upload.
    pub(crate) fn base(&self) -> Option<Arc<crate::checkpoint::ChunkSet>> {
        self.ckpt_base
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone()
    }

    pub(crate) fn set_base(&self, chunks: Option<crate::checkpoint::ChunkSet>) {
        *self
            .ckpt_base
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = chunks.map(Arc::new);
    }

    /// How long transfers to the home keep being retried: the lease (the
    /// home waits that long before it gives up on this run), else 20 s.
    pub(crate) fn patience(&self) -> Duration {
        self.lease_secs
            .map_or(Duration::from_secs(20), Duration::from_secs)
    }
}

/// Whether a 409 from the shadow says this run is stale (field `run`),
/// rather than e.g. an output gap: then the run must stop.
pub(crate) async fn is_stale_run(resp: reqwest::Response) -> bool {
    resp.json::<gleaner_proto::wire::ErrorBody>()
        .await
        .is_ok_and(|b| b.error.field.as_deref() == Some("run"))
}

/// Builds `<base>/<segments…>`, each segment percent-encoded.
pub(crate) fn shadow_url(base: &str, segments: &[&str]) -> Result<reqwest::Url, StarterError> {
    let mut u =
        reqwest::Url::parse(base).map_err(|_| StarterError::BadShadowUrl(base.to_string()))?;
    u.path_segments_mut()
        .map_err(|_| StarterError::BadShadowUrl(base.to_string()))?
        .pop_if_empty()
        .extend(segments);
    Ok(u)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shadow_urls_encode_segments() {
        let u = shadow_url("http://h:1/", &["v1", "shadow", "1.0", "input", "a b/c"]).unwrap();
        assert_eq!(u.as_str(), "http://h:1/v1/shadow/1.0/input/a%20b%2Fc");
        assert!(shadow_url("not a url", &["x"]).is_err());
    }
}
