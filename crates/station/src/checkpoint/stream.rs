//! Checkpoints over HTTP as streams: a pack running on a blocking thread
//! feeds an upload's body as its frames are made, and a download feeds a
//! restore (or the home's store) as its bytes arrive; the runtime only
//! moves buffers. Both directions pass through the caller's throttle
//! (`take`, the station's token bucket), and neither end holds more than a
//! few MiB.

use super::CheckpointError;
use super::bundle::{BundleSource, Manifest};
use super::pack::{FrameOut, PackOptions, Packed, pack};
use super::unpack::{Restore, Unpacked, restore};
use axum::body::Bytes;
use std::future::Future;
use std::path::PathBuf;
use std::time::{Duration, Instant};
use tokio::sync::mpsc;

/// Buffers (about 1 MiB each) in flight between a pack or restore and the
/// network.
const IN_FLIGHT: usize = 8;

/// Sends finished frames into a channel the upload's body reads.
struct ChannelOut(mpsc::Sender<std::io::Result<Bytes>>);

impl FrameOut for ChannelOut {
    fn put(&mut self, bytes: Vec<u8>) -> std::io::Result<()> {
        self.0
            .blocking_send(Ok(Bytes::from(bytes)))
            .map_err(|_| std::io::Error::new(std::io::ErrorKind::BrokenPipe, "upload ended"))
    }
}

/// Reads what a download's body delivers into a channel.
pub struct ChannelReader {
    rx: mpsc::Receiver<std::io::Result<Bytes>>,
    cur: Bytes,
}

impl ChannelReader {
    pub fn new(rx: mpsc::Receiver<std::io::Result<Bytes>>) -> Self {
        ChannelReader {
            rx,
            cur: Bytes::new(),
        }
    }
}

impl std::io::Read for ChannelReader {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        while self.cur.is_empty() {
            match self.rx.blocking_recv() {
                Some(Ok(b)) => self.cur = b,
                Some(Err(e)) => return Err(e),
                None => return Ok(0),
            }
        }
        let n = buf.len().min(self.cur.len());
        buf[..n].copy_from_slice(&self.cur[..n]);
        self.cur = self.cur.slice(n..);
        Ok(n)
    }
}

/// A channel from the network side to a blocking reader.
pub fn channel() -> (mpsc::Sender<std::io::Result<Bytes>>, ChannelReader) {
    let (tx, rx) = mpsc::channel(IN_FLIGHT);
    (tx, ChannelReader::new(rx))
}

/// How an upload went.
#[derive(Debug)]
pub struct Sent {
    pub packed: Packed,
    /// From the first byte read to the home's answer.
    pub elapsed: Duration,
}

/// Why an upload failed.
#[derive(Debug, thiserror::Error)]
pub enum SendError {
    /// The checkpoint could not be packed (missing file, I/O).
    #[error("{0}")]
    Pack(CheckpointError),
    /// The home could not be reached or the transfer broke.
    #[error("checkpoint upload: {0}")]
    Network(String),
    /// The home answered with this status and body.
    #[error("home answered {status}: {body}")]
    Refused {
        status: reqwest::StatusCode,
        body: String,
    },
}

/// Packs `sources` and sends them with `request` (a PUT, credentials
/// set) as the body is made; every buffer waits for `take(len)` first.
pub async fn send_checkpoint<F, Fut>(
    request: reqwest::RequestBuilder,
    manifest: Manifest,
    sources: Vec<BundleSource>,
    opts: PackOptions,
    take: F,
) -> Result<Sent, SendError>
where
    F: Fn(u64) -> Fut + Clone + Send + Sync + 'static,
    Fut: Future<Output = ()> + Send,
{
    let t0 = Instant::now();
    let (tx, rx) = mpsc::channel::<std::io::Result<Bytes>>(IN_FLIGHT);
    let err_tx = tx.clone();
    let packer = tokio::task::spawn_blocking(move || {
        let r = pack(manifest, &sources, &opts, &mut ChannelOut(tx));
        if let Err(e) = &r {
            // The body fails rather than ending: the home must not take a
            // short bundle for a whole one (it would refuse it anyway).
            let _ = err_tx.blocking_send(Err(std::io::Error::other(e.to_string())));
        }
        r
    });
    let body = futures_util::stream::unfold((rx, take), |(mut rx, take)| async move {
        let item = rx.recv().await?;
        if let Ok(b) = &item {
            take(b.len() as u64).await;
        }
        Some((item, (rx, take)))
    });
    let resp = request
        .header("content-type", "application/octet-stream")
        .body(reqwest::Body::wrap_stream(body))
        .send()
        .await;
    let packed = packer
        .await
        .map_err(|e| SendError::Network(format!("packer: {e}")))?;
    match (resp, packed) {
        (Err(e), Err(pe)) if ended_by_upload(&pe) => Err(SendError::Network(e.to_string())),
        (Err(_), Err(pe)) => Err(SendError::Pack(pe)),
        (Err(e), Ok(_)) => Err(SendError::Network(e.to_string())),
        (Ok(r), _) if !r.status().is_success() => Err(refusal(r).await),
        (Ok(_), Err(pe)) => Err(SendError::Pack(pe)),
        (Ok(_), Ok(packed)) => Ok(Sent {
            packed,
            elapsed: t0.elapsed(),
        }),
    }
}

/// Whether a pack stopped only because the upload it fed ended.
fn ended_by_upload(e: &CheckpointError) -> bool {
    matches!(e, CheckpointError::Corrupt(m) if m.contains("upload ended"))
}

async fn refusal(r: reqwest::Response) -> SendError {
    let status = r.status();
    let body = r.text().await.unwrap_or_default();
    SendError::Refused { status, body }
}

/// Where a restore puts each file, and as whom (owned, for a blocking
/// thread).
pub struct RestoreTo {
    pub route: Box<dyn Fn(&str) -> PathBuf + Send + Sync>,
    pub owner: Option<(u32, u32)>,
    pub threads: usize,
}

/// How a download went.
#[derive(Debug)]
pub struct Fetched {
    pub unpacked: Unpacked,
    /// Bytes received.
    pub bytes: u64,
    pub elapsed: Duration,
}

/// Why a download failed.
#[derive(Debug, thiserror::Error)]
pub enum FetchError {
    /// The bundle did not verify (corrupt or cut short): nothing was
    /// restored.
    #[error("{0}")]
    Bad(CheckpointError),
    #[error("checkpoint download: {0}")]
    Network(String),
}

/// Restores the bundle `resp` delivers (a successful answer) as its bytes
/// arrive; every chunk waits for `take(len)` first.
pub async fn fetch_checkpoint<F, Fut>(
    resp: reqwest::Response,
    to: RestoreTo,
    take: F,
) -> Result<Fetched, FetchError>
where
    F: Fn(u64) -> Fut,
    Fut: Future<Output = ()>,
{
    let t0 = Instant::now();
    let (tx, mut reader) = channel();
    let restorer = tokio::task::spawn_blocking(move || {
        let opts = Restore {
            route: &*to.route,
            owner: to.owner,
            threads: to.threads,
        };
        restore(&mut reader, &opts)
    });
    let mut resp = resp;
    let mut bytes = 0u64;
    let mut broken = None;
    loop {
        match resp.chunk().await {
            Ok(Some(c)) => {
                take(c.len() as u64).await;
                bytes += c.len() as u64;
                if tx.send(Ok(c)).await.is_err() {
                    // The restore stopped (it failed; its error says why).
                    break;
                }
            }
            Ok(None) => break,
            Err(e) => {
                broken = Some(e.to_string());
                let _ = tx
                    .send(Err(std::io::Error::other(format!("download broke: {e}"))))
                    .await;
                break;
            }
        }
    }
    drop(tx);
    let restored = restorer
        .await
        .map_err(|e| FetchError::Network(format!("restorer: {e}")))?;
    match (restored, broken) {
        (Ok(unpacked), _) => Ok(Fetched {
            unpacked,
            bytes,
            elapsed: t0.elapsed(),
        }),
        (Err(_), Some(net)) => Err(FetchError::Network(net)),
        (Err(e), None) => Err(FetchError::Bad(e)),
    }
}
