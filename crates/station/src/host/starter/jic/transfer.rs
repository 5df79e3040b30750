//! File transfers with the home's shadow: input files in, checkpoint
//! bundles both ways (streamed from and to files, throttled by the host's
//! bucket, timed for the transfer rate), output files out.

use super::Home;
use axum::body::Bytes;
use std::path::Path;
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

    /// Streams the job's latest good checkpoint into a new file at `path`
    /// (throttled by the host's bucket; the rate is recorded). `Ok(false)`:
    /// the job has none yet. On failure no file is left.
    pub(crate) async fn download_checkpoint(&self, path: &Path) -> Result<bool, String> {
        use tokio::io::AsyncWriteExt;
        let url = self.url(&["checkpoint"]).map_err(|e| e.to_string())?;
        let t0 = Instant::now();
        let mut resp = self
            .http
            .get(url)
            .bearer_auth(&self.credential)
            .timeout(Duration::from_secs(3600))
            .send()
            .await
            .map_err(|e| format!("cannot fetch checkpoint: {e}"))?;
        if resp.status() == reqwest::StatusCode::NOT_FOUND {
            return Ok(false);
        }
        if !resp.status().is_success() {
            return Err(format!("shadow answered {}", resp.status()));
        }
        let _ = std::fs::remove_file(path);
        let mut file = tokio::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(path)
            .await
            .map_err(|e| format!("{}: {e}", path.display()))?;
        let mut bytes = 0u64;
        let fetched: Result<(), String> = async {
            while let Some(chunk) = resp
                .chunk()
                .await
                .map_err(|e| format!("checkpoint download: {e}"))?
            {
                self.starter.bucket.take(chunk.len() as u64).await;
                file.write_all(&chunk)
                    .await
                    .map_err(|e| format!("{}: {e}", path.display()))?;
                bytes += chunk.len() as u64;
            }
            file.flush()
                .await
                .map_err(|e| format!("{}: {e}", path.display()))
        }
        .await;
        drop(file);
        if let Err(e) = fetched {
            let _ = std::fs::remove_file(path);
            return Err(e);
        }
        self.starter.rate.record(bytes, t0.elapsed());
        Ok(true)
    }

    /// Uploads the bundle file at `path` (streamed and throttled, retried
    /// until `deadline`) and records the transfer rate. Returns the bytes
    /// sent once it arrived, `None` if it did not.
    pub(crate) async fn upload_checkpoint(
        &self,
        path: &Path,
        payload: u64,
        seq: u64,
        deadline: Instant,
    ) -> Option<u64> {
        let url = self.url(&["checkpoint"]).ok()?;
        let bytes = std::fs::metadata(path).map_or(payload, |m| m.len());
        let mut delay = Duration::from_millis(100);
        loop {
            let t0 = Instant::now();
            let file = match tokio::fs::File::open(path).await {
                Ok(f) => f,
                Err(e) => {
                    tracing::warn!(job = %self.job, error = %e, "checkpoint bundle vanished");
                    return None;
                }
            };
            match self.put_bundle(url.clone(), file, bytes).await {
                Ok(resp) if resp.status().is_success() => {
                    let took = t0.elapsed();
                    self.starter.rate.record(bytes, took);
                    tracing::info!(job = %self.job, seq, bytes, secs = took.as_secs_f64(), "checkpoint shipped home");
                    return Some(bytes);
                }
                Ok(resp) if resp.status().is_client_error() => {
                    tracing::warn!(job = %self.job, status = %resp.status(), "home refused the checkpoint");
                    return None;
                }
                Ok(resp) => {
                    tracing::warn!(job = %self.job, status = %resp.status(), "checkpoint upload failed")
                }
                Err(e) => {
                    tracing::warn!(job = %self.job, error = %e, "checkpoint upload failed")
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

    /// One `PUT` of a bundle, its body read from `file` through the
    /// host's bucket.
    async fn put_bundle(
        &self,
        url: reqwest::Url,
        file: tokio::fs::File,
        bytes: u64,
    ) -> reqwest::Result<reqwest::Response> {
        let st = self.starter.clone();
        let body =
            reqwest::Body::wrap_stream(crate::checkpoint::throttled_stream(file, move |n| {
                let st = st.clone();
                async move { st.bucket.take(n).await }
            }));
        self.http
            .put(url)
            .bearer_auth(&self.credential)
            .header("content-type", "application/octet-stream")
            .header("content-length", bytes)
            .timeout(Duration::from_secs(3600))
            .body(body)
            .send()
            .await
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
