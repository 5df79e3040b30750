//! A TCP proxy between the hosts and the home. Connections are told apart
//! by the starter's user agent (`gleaner-starter/<host>`) on their first
//! request. `cut` drops a host's connections and refuses new ones; `cut_after` drops the next connection of a host once it has
//! carried that many bytes (once), as a network that fails in the middle
//! of a transfer.

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

#[derive(Clone, Default)]
pub struct Proxy {
    cut: Arc<Mutex<HashSet<String>>>,
    /// host → (arming, bytes): the first connection of that host to carry
    /// that many bytes after the arming is dropped.
    cut_after: Arc<Mutex<HashMap<String, (u64, u64)>>>,
    armings: Arc<AtomicU64>,
    conns: Arc<Mutex<Vec<(String, tokio::task::AbortHandle)>>>,
    /// Connections dropped in the middle by `cut_after`.
    pub dropped: Arc<AtomicU64>,
}

impl Proxy {
    /// Listens on a free loopback port and forwards to `target`.
    pub async fn start(target: u16) -> (Self, u16) {
        let l = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = l.local_addr().unwrap().port();
        let p = Proxy::default();
        let me = p.clone();
        tokio::spawn(async move {
            loop {
                let Ok((inbound, _)) = l.accept().await else {
                    continue;
                };
                let me2 = me.clone();
                tokio::spawn(async move { me2.serve(inbound, target).await });
            }
        });
        (p, port)
    }

    async fn serve(&self, mut inbound: TcpStream, target: u16) {
        let mut head = Vec::new();
        let mut buf = [0u8; 4096];
        while !head.windows(4).any(|w| w == b"\r\n\r\n") && head.len() < 64 * 1024 {
            match inbound.read(&mut buf).await {
                Ok(0) | Err(_) => return,
                Ok(n) => head.extend_from_slice(&buf[..n]),
            }
        }
        let text = String::from_utf8_lossy(&head).to_ascii_lowercase();
        let tag = text
            .split("gleaner-starter/")
            .nth(1)
            .and_then(|r| r.split(['\r', '\n']).next())
            .unwrap_or("")
            .trim()
            .to_string();
        if self.cut.lock().unwrap().contains(&tag) {
            return;
        }
        let Ok(mut outbound) = TcpStream::connect(("127.0.0.1", target)).await else {
            return;
        };
        if outbound.write_all(&head).await.is_err() {
            return;
        }
        let me = self.clone();
        let tag2 = tag.clone();
        let task = tokio::spawn(async move {
            let (mut ir, mut iw) = inbound.split();
            let (mut or, mut ow) = outbound.split();
            let counter = Counter::default();
            let up = me.pump(&tag2, &mut ir, &mut ow, &counter);
            let down = me.pump(&tag2, &mut or, &mut iw, &counter);
            tokio::pin!(up);
            tokio::pin!(down);
            let (mut up_done, mut down_done, mut over) = (false, false, false);
            while !(up_done && down_done) {
                tokio::select! {
                    r = &mut up, if !up_done => { up_done = true; over |= r; }
                    r = &mut down, if !down_done => { down_done = true; over |= r; }
                }
                if over {
                    break;
                }
            }
        });
        self.conns.lock().unwrap().push((tag, task.abort_handle()));
        let _ = task.await;
    }

    pub fn cut(&self, tag: &str) {
        self.cut.lock().unwrap().insert(tag.to_string());
        let mut c = self.conns.lock().unwrap();
        c.retain(|(t, h)| {
            if t == tag {
                h.abort();
                false
            } else {
                !h.is_finished()
            }
        });
    }

    /// Drops the first connection of `tag` to carry `bytes` from now on
    /// (once).
    pub fn cut_after(&self, tag: &str, bytes: u64) {
        let arming = self.armings.fetch_add(1, Ordering::SeqCst) + 1;
        self.cut_after
            .lock()
            .unwrap()
            .insert(tag.to_string(), (arming, bytes));
    }

    /// Copies until the end (false), or until this connection has carried
    /// more than an armed limit since its arming (true: it is dropped).
    async fn pump<R, W>(&self, tag: &str, r: &mut R, w: &mut W, c: &Counter) -> bool
    where
        R: tokio::io::AsyncRead + Unpin,
        W: tokio::io::AsyncWrite + Unpin,
    {
        let mut buf = vec![0u8; 64 * 1024];
        loop {
            let n = match r.read(&mut buf).await {
                Ok(0) | Err(_) => return false,
                Ok(n) => n,
            };
            let armed = self.cut_after.lock().unwrap().get(tag).copied();
            if let Some((arming, limit)) = armed {
                let mut g = c.0.lock().unwrap();
                if g.0 != arming {
                    *g = (arming, 0);
                }
                g.1 += n as u64;
                if g.1 > limit {
                    drop(g);
                    let mut m = self.cut_after.lock().unwrap();
                    if m.get(tag).is_some_and(|a| a.0 == arming) {
                        m.remove(tag);
                        self.dropped.fetch_add(1, Ordering::SeqCst);
                        return true;
                    }
                }
            }
            if w.write_all(&buf[..n]).await.is_err() {
                return false;
            }
        }
    }
}

/// A connection's (arming, bytes carried since it).
#[derive(Default)]
struct Counter(Mutex<(u64, u64)>);
