//! stdout/stderr streamed to the shadow while the job runs
//! (`POST .../output/{stream}?offset=N`), from the capture files' read
//! handles.

use super::{Home, StarterError};
use axum::http::StatusCode;
use gleaner_proto::wire::ErrorBody;
use std::fs::File;
use std::os::unix::fs::FileExt;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};
use tokio::sync::watch;
use tokio::task::JoinHandle;

/// Largest chunk of stdout/stderr sent in one request.
const MAX_CHUNK: usize = 256 * 1024;

/// The guest's output on its way home: one streamer for every start of
/// the program in a run.
pub(crate) struct Streaming {
    /// The streams, until the streamer takes them.
    pending: Option<Vec<OutputStream>>,
    task: Option<JoinHandle<Result<(), String>>>,
    finish_tx: watch::Sender<bool>,
    finish_rx: watch::Receiver<bool>,
    /// Stream offsets the shadow acknowledged (stdout, stderr), for the
    /// checkpoint code to wait on.
    acked: [Arc<AtomicU64>; 2],
}

impl Streaming {
    /// `base`: the stream offsets of the capture files' first bytes (the
    /// output lengths of the restored checkpoint); `readers`: the capture
    /// files' read handles (stdout, stderr).
    pub(crate) fn new(
        home: &Home,
        base: (u64, u64),
        readers: [File; 2],
    ) -> Result<Self, StarterError> {
        let (finish_tx, finish_rx) = watch::channel(false);
        let acked = [
            Arc::new(AtomicU64::new(base.0)),
            Arc::new(AtomicU64::new(base.1)),
        ];
        let [out_r, err_r] = readers;
        let pending = vec![
            OutputStream {
                name: "stdout",
                file: out_r,
                base: base.0,
                acked: base.0,
                shared: acked[0].clone(),
                url: home.url(&["output", "stdout"])?,
                refused: false,
                stale: home.stale_sender(),
                last_error: None,
            },
            OutputStream {
                name: "stderr",
                file: err_r,
                base: base.1,
                acked: base.1,
                shared: acked[1].clone(),
                url: home.url(&["output", "stderr"])?,
                refused: false,
                stale: home.stale_sender(),
                last_error: None,
            },
        ];
        Ok(Streaming {
            pending: Some(pending),
            task: None,
            finish_tx,
            finish_rx,
            acked,
        })
    }

    /// Starts the streamer (the first call only).
    pub(crate) fn start(&mut self, home: &Home) {
        if let Some(s) = self.pending.take() {
            self.task = Some(tokio::spawn(stream_loop(
                home.http.clone(),
                home.credential.clone(),
                s,
                home.starter.config.output_poll,
                self.finish_rx.clone(),
                home.patience(),
            )));
        }
    }

    /// Whether the shadow acknowledged stdout and stderr up to `want`.
    pub(crate) fn delivered(&self, want: [u64; 2]) -> bool {
        (0..2).all(|i| self.acked[i].load(Ordering::SeqCst) >= want[i])
    }

    /// The run ends without its output: a hold or a removal (HTCondor
    /// transfers nothing then), or a guest the host held. What was sent
    /// stays sent; the rest is not sent, and nothing is retried.
    pub(crate) fn abort(&mut self) {
        if let Some(t) = self.task.take() {
            t.abort();
        }
        self.pending = None;
    }

    /// The guest is done: the streamer flushes the rest, and this waits
    /// for it. `Err(why)`: the home does not have all of the output (the
    /// last refusal, e.g. "disk full at PATH"); the run must then not be
    /// reported complete (issue 14: nothing partial is delivered).
    pub(crate) async fn finish(&mut self) -> Result<(), String> {
        let _ = self.finish_tx.send(true);
        match self.task.take() {
            Some(s) => s.await.unwrap_or_else(|e| Err(e.to_string())),
            None => Ok(()),
        }
    }
}

/// One stream's state: offset acknowledged by the shadow.
struct OutputStream {
    name: &'static str,
    file: File,
    /// Stream offset of the capture file's first byte (the output length
    /// of the restored checkpoint).
    base: u64,
    acked: u64,
    /// `acked`, for the checkpoint code to wait on.
    shared: Arc<AtomicU64>,
    url: reqwest::Url,
    /// The home refused this run: stop sending.
    refused: bool,
    /// The run's stale signal (`Home::stale`).
    stale: Arc<watch::Sender<Option<String>>>,
    /// Why the last chunk did not arrive.
    last_error: Option<String>,
}

impl OutputStream {
    /// Sends what the shadow lacks. Returns true when it has everything
    /// written so far (or refuses this run: nothing more to send then).
    async fn pump(&mut self, http: &reqwest::Client, token: &str) -> bool {
        loop {
            if self.refused {
                return true;
            }
            let len = self.base + self.file.metadata().map_or(0, |m| m.len());
            if self.acked >= len {
                return true;
            }
            let n = usize::try_from(len - self.acked)
                .unwrap_or(MAX_CHUNK)
                .min(MAX_CHUNK);
            let mut buf = vec![0u8; n];
            let got = match self.file.read_at(&mut buf, self.acked - self.base) {
                Ok(g) => g,
                Err(e) => {
                    tracing::warn!(stream = self.name, error = %e, "cannot read capture file");
                    return false;
                }
            };
            if got == 0 {
                return true;
            }
            buf.truncate(got);
            if !self.send(http, token, buf).await {
                return false;
            }
        }
    }

    /// Sends one chunk at the acknowledged offset; true when it arrived.
    async fn send(&mut self, http: &reqwest::Client, token: &str, buf: Vec<u8>) -> bool {
        let got = buf.len();
        let mut url = self.url.clone();
        url.query_pairs_mut()
            .append_pair("offset", &self.acked.to_string());
        let r = http
            .post(url)
            .bearer_auth(token)
            .header("content-type", "application/octet-stream")
            .body(buf)
            .send()
            .await;
        match r {
            Ok(resp) if resp.status().is_success() => {
                self.acked += got as u64;
                self.shared.store(self.acked, Ordering::SeqCst);
                true
            }
            Ok(resp) if resp.status() == StatusCode::CONFLICT => {
                match conflict(resp).await {
                    Conflict::Gap => {
                        // The shadow has less than we thought (e.g. it
                        // restarted without its file): resend from the
                        // start; the endpoint is idempotent, so nothing is
                        // duplicated.
                        tracing::warn!(
                            stream = self.name,
                            offset = self.acked,
                            "output gap; resending from the start of this run"
                        );
                        self.acked = self.base;
                    }
                    Conflict::Refused(why) => {
                        // The home gave this run up (issue 14), or the job
                        // is no longer running there (removed, held):
                        // nothing more of it is stored, and the run must
                        // stop. Resending would only repeat the refusal.
                        tracing::warn!(stream = self.name, %why, "home refused this run's output");
                        self.stale.send_replace(Some(format!(
                            "the home refused this run's output: {why}"
                        )));
                        self.refused = true;
                    }
                }
                false
            }
            Ok(resp) => {
                let status = resp.status();
                tracing::warn!(stream = self.name, %status, "output chunk refused");
                // The home says why (e.g. "disk full at PATH"): kept for
                // the run's end, should the output never get through.
                self.last_error = Some(match resp.json::<ErrorBody>().await {
                    Ok(b) => format!("home answered {status}: {}", b.error.message),
                    Err(_) => format!("home answered {status}"),
                });
                false
            }
            Err(e) => {
                tracing::warn!(stream = self.name, error = %e, "output chunk failed");
                self.last_error = Some(e.to_string());
                false
            }
        }
    }
}

/// What a 409 from the shadow's output endpoint means.
enum Conflict {
    /// The chunk would leave a gap (field `offset`, or an older shadow's
    /// bare 409): resend from the start.
    Gap,
    /// Anything else (field `run`: a stale run; no field: the job is not
    /// running there any more): stop sending, stop the run.
    Refused(String),
}

async fn conflict(resp: reqwest::Response) -> Conflict {
    match resp.json::<ErrorBody>().await {
        Ok(b) if b.error.field.as_deref() == Some("offset") => Conflict::Gap,
        Ok(b) => Conflict::Refused(b.error.message),
        Err(_) => Conflict::Gap,
    }
}

/// Polls the capture files and streams them until told to finish; then
/// flushes the rest (bounded retries). `Err(why)`: not all of it arrived.
async fn stream_loop(
    http: reqwest::Client,
    token: String,
    mut streams: Vec<OutputStream>,
    poll: Duration,
    mut finish: watch::Receiver<bool>,
    patience: Duration,
) -> Result<(), String> {
    loop {
        for s in &mut streams {
            s.pump(&http, &token).await;
        }
        tokio::select! {
            _ = tokio::time::sleep(poll) => {}
            _ = finish.changed() => break,
        }
    }
    let mut delay = Duration::from_millis(100);
    let until = Instant::now() + patience;
    for attempt in 0.. {
        if attempt >= 10 && Instant::now() > until {
            break;
        }
        let mut done = true;
        for s in &mut streams {
            done &= s.pump(&http, &token).await;
        }
        if done {
            return Ok(());
        }
        tokio::time::sleep(delay).await;
        delay = (delay * 2).min(Duration::from_secs(2));
    }
    tracing::warn!("output streams not fully delivered");
    let why = streams
        .iter()
        .find_map(|s| s.last_error.clone())
        .unwrap_or_else(|| "home unreachable".into());
    Err(format!("output not delivered home: {why}"))
}
