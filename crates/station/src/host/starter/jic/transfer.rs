//! File transfers with the home's shadow: input files in, checkpoints
//! both ways (packed while sent and restored while received, throttled by
//! the host's bucket, timed for the transfer rate), output files out.

use super::Home;
use crate::checkpoint::stream::{FetchError as FetchBroke, SendError};
use crate::checkpoint::{
    BundleSource, Fetched, Manifest, PackOptions, RestoreTo, Sent, fetch_checkpoint,
    send_checkpoint,
};
use axum::body::Bytes;
use std::time::{Duration, Instant};

/// Why an input file did not arrive.
pub(crate) enum FetchError {
    /// The home is unreachable or failing: try again elsewhere or later.
    Transient(String),
    /// The file is missing, refused or cannot be written: the user must act.
    Permanent(String),
}

impl Home {
    /// An input file from the home's shadow. An unreachable or failing
    /// home is [`FetchError::Transient`]: the job goes back to its home's
    /// queue, not on hold, since nothing is wrong with it.
    pub(crate) async fn get_input(&self, name: &str) -> Result<Bytes, FetchError> {
        let url = self
            .url(&["input", name])
            .map_err(|e| FetchError::Permanent(e.to_string()))?;
        let resp = self
            .http
            .get(url)
            .bearer_auth(&self.credential)
            .send()
            .await
            .map_err(|e| FetchError::Transient(format!("cannot fetch {name:?}: {e}")))?;
        let status = resp.status();
        if !status.is_success() {
            let msg = format!("cannot fetch {name:?}: shadow answered {status}");
            return Err(if status.is_server_error() {
                FetchError::Transient(msg)
            } else {
                FetchError::Permanent(msg)
            });
        }
        resp.bytes()
            .await
            .map_err(|e| FetchError::Transient(format!("cannot fetch {name:?}: {e}")))
    }

    /// Restores the job's latest good checkpoint as it arrives (throttled
    /// by the host's bucket; the rate is recorded), through `to()`'s
    /// staging: nothing is left of one that does not verify. A corrupt one
    /// is reported by asking again with `verify=1`: the home checks its
    /// copies, sets aside what fails and serves the newest good one. A
    /// broken download is tried again while the home's patience lasts.
    /// `Ok(None)`: the job has none.
    pub(crate) async fn restore_checkpoint(
        &self,
        to: impl Fn() -> RestoreTo,
    ) -> Result<Option<Fetched>, String> {
        let deadline = Instant::now() + self.patience();
        let mut verify = false;
        let mut delay = Duration::from_millis(100);
        loop {
            let mut url = self.url(&["checkpoint"]).map_err(|e| e.to_string())?;
            if verify {
                url.query_pairs_mut().append_pair("verify", "1");
            }
            let resp = self
                .http
                .get(url)
                .bearer_auth(&self.credential)
                .timeout(Duration::from_secs(3600))
                .send()
                .await;
            let failure = match resp {
                Ok(r) if r.status() == reqwest::StatusCode::NOT_FOUND => return Ok(None),
                Ok(r) if r.status().is_success() => {
                    let st = self.starter.clone();
                    let take = move |n: u64| {
                        let st = st.clone();
                        async move { st.bucket.take(n).await }
                    };
                    match fetch_checkpoint(r, to(), take).await {
                        Ok(f) => {
                            let m = &f.unpacked.manifest;
                            self.starter.rate.record(m.payload_bytes(), f.elapsed);
                            self.set_base(f.unpacked.chunks.clone());
                            return Ok(Some(f));
                        }
                        Err(FetchBroke::Bad(e)) if !verify => {
                            tracing::warn!(job = %self.job, error = %e, "checkpoint refused at restore; asking the home for a good one");
                            verify = true;
                            continue;
                        }
                        Err(FetchBroke::Bad(e)) => return Err(format!("checkpoint refused: {e}")),
                        Err(e @ FetchBroke::Network(_)) => e.to_string(),
                    }
                }
                Ok(r) if r.status().is_server_error() => format!("shadow answered {}", r.status()),
                Ok(r) => return Err(format!("shadow answered {}", r.status())),
                Err(e) => format!("cannot fetch checkpoint: {e}"),
            };
            if Instant::now() + delay > deadline {
                return Err(failure);
            }
            tracing::warn!(job = %self.job, error = %failure, "checkpoint download failed; trying again");
            tokio::time::sleep(delay).await;
            delay = (delay * 2).min(Duration::from_secs(2));
        }
    }

    /// Packs `sources` and sends them home as they are packed (throttled,
    /// retried until `deadline`); chunks the home holds in the checkpoint
    /// this run restored or last sent are not sent again. Records the
    /// transfer rate. Returns how it went once it arrived, `None` if it
    /// did not.
    pub(crate) async fn upload_checkpoint(
        &self,
        manifest: Manifest,
        sources: Vec<BundleSource>,
        deadline: Instant,
    ) -> Option<Sent> {
        let url = self.url(&["checkpoint"]).ok()?;
        let mut delay = Duration::from_millis(100);
        let mut base = self.base();
        loop {
            let st = self.starter.clone();
            let take = move |n: u64| {
                let st = st.clone();
                async move { st.bucket.take(n).await }
            };
            let request = self
                .http
                .put(url.clone())
                .bearer_auth(&self.credential)
                .timeout(Duration::from_secs(3600));
            let opts = PackOptions {
                base: base.clone(),
                ..PackOptions::default()
            };
            match send_checkpoint(request, manifest.clone(), sources.clone(), opts, take).await {
                Ok(sent) => {
                    let p = &sent.packed;
                    self.starter.rate.record(p.raw_bytes, sent.elapsed);
                    tracing::info!(job = %self.job, seq = manifest.seq, bytes = p.raw_bytes, sent = p.wire_bytes, unchanged = p.referenced, secs = sent.elapsed.as_secs_f64(), "checkpoint shipped home");
                    self.set_base(Some(p.chunks.clone()));
                    return Some(sent);
                }
                Err(SendError::Refused { status, body })
                    if status == reqwest::StatusCode::CONFLICT
                        && base.is_some()
                        && body.contains("\"base\"") =>
                {
                    tracing::info!(job = %self.job, "the home lacks this checkpoint's base: sending it whole");
                    base = None;
                    continue;
                }
                Err(SendError::Refused { status, body }) if status.is_client_error() => {
                    tracing::warn!(job = %self.job, %status, %body, "home refused the checkpoint");
                    return None;
                }
                Err(SendError::Pack(e)) => {
                    tracing::warn!(job = %self.job, error = %e, "cannot collect checkpoint");
                    return None;
                }
                Err(e) => {
                    tracing::warn!(job = %self.job, error = %e, "checkpoint upload failed");
                    // A retry sends everything: the failure may have been
                    // the base's.
                    base = None;
                }
            }
            if Instant::now() + delay > deadline {
                tracing::warn!(job = %self.job, "checkpoint not shipped: home unreachable");
                return None;
            }
            tokio::time::sleep(delay).await;
            delay = (delay * 2).min(Duration::from_secs(2));
        }
    }

    /// Uploads one output file (`PUT .../files/{name}`), with a few
    /// retries. A refusal (4xx) is permanent; an unreachable or failing
    /// home (5xx, e.g. "disk full at PATH") is transient.
    pub(crate) async fn put_file(&self, name: &str, data: Vec<u8>) -> Result<(), FetchError> {
        let url = self
            .url(&["files", name])
            .map_err(|e| FetchError::Permanent(e.to_string()))?;
        let mut delay = Duration::from_millis(100);
        let mut last = String::new();
        for _ in 0..6 {
            match self
                .http
                .put(url.clone())
                .bearer_auth(&self.credential)
                .header("content-type", "application/octet-stream")
                .body(data.clone())
                .send()
                .await
            {
                Ok(r) if r.status().is_success() => return Ok(()),
                Ok(r) => {
                    let status = r.status();
                    last = match r.json::<gleaner_proto::wire::ErrorBody>().await {
                        Ok(b) => format!("shadow answered {status}: {}", b.error.message),
                        Err(_) => format!("shadow answered {status}"),
                    };
                    if status.is_client_error() {
                        return Err(FetchError::Permanent(format!(
                            "cannot upload output {name:?}: {last}"
                        )));
                    }
                }
                Err(e) => last = e.to_string(),
            }
            tokio::time::sleep(delay).await;
            delay = (delay * 2).min(Duration::from_secs(2));
        }
        Err(FetchError::Transient(format!(
            "cannot upload output {name:?}: {last}"
        )))
    }
}
