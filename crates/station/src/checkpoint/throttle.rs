//! Transfer throttling (token buckets, a throttled stream) and the rate
//! meters that measure checkpoint transfers for `T_migr`.

use std::time::{Duration, Instant};

/// A token bucket in bytes: at most `rate` bytes per second on average,
/// bursts up to `burst`. Pure: the caller passes the time. A rate of 0
/// means unlimited.
#[derive(Clone, Debug)]
pub struct TokenBucket {
    rate: f64,
    burst: f64,
    tokens: f64,
    last: Instant,
}

impl TokenBucket {
    pub fn new(rate_bytes_per_sec: u64, burst: u64, now: Instant) -> Self {
        TokenBucket {
            rate: rate_bytes_per_sec as f64,
            burst: burst.max(1) as f64,
            tokens: burst.max(1) as f64,
            last: now,
        }
    }

    pub fn unlimited(&self) -> bool {
        self.rate <= 0.0
    }

    /// Takes `n` bytes (the balance may go negative: later callers queue
    /// behind) and returns how long the caller must wait before sending.
    pub fn reserve(&mut self, n: u64, now: Instant) -> Duration {
        if self.unlimited() {
            return Duration::ZERO;
        }
        let dt = now.saturating_duration_since(self.last).as_secs_f64();
        self.last = now.max(self.last);
        self.tokens = (self.tokens + dt * self.rate).min(self.burst);
        self.tokens -= n as f64;
        if self.tokens >= 0.0 {
            Duration::ZERO
        } else {
            Duration::from_secs_f64(-self.tokens / self.rate)
        }
    }
}

/// A bucket shared by every transfer of a station.
#[derive(Debug)]
pub struct SharedBucket(std::sync::Mutex<TokenBucket>);

impl SharedBucket {
    pub fn new(rate_bytes_per_sec: u64) -> Self {
        // One second's worth of burst, at least 256 KiB.
        let burst = rate_bytes_per_sec.max(256 * 1024);
        SharedBucket(std::sync::Mutex::new(TokenBucket::new(
            rate_bytes_per_sec,
            burst,
            Instant::now(),
        )))
    }

    /// Waits until `n` more bytes may move.
    pub async fn take(&self, n: u64) {
        let wait = {
            let mut b = self
                .0
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            b.reserve(n, Instant::now())
        };
        if !wait.is_zero() {
            tokio::time::sleep(wait).await;
        }
    }
}

/// A file as a stream of chunks for an HTTP body, each chunk waiting for
/// `take(len)` first (the station's token bucket): a checkpoint transfer
/// never needs the whole checkpoint in memory.
pub fn throttled_stream<F, Fut>(
    file: tokio::fs::File,
    take: F,
) -> impl futures_util::Stream<Item = std::io::Result<Vec<u8>>> + Send + 'static
where
    F: Fn(u64) -> Fut + Clone + Send + Sync + 'static,
    Fut: std::future::Future<Output = ()> + Send,
{
    futures_util::stream::unfold(file, move |mut f| {
        let take = take.clone();
        async move {
            use tokio::io::AsyncReadExt;
            let mut buf = vec![0u8; 256 * 1024];
            match f.read(&mut buf).await {
                Ok(0) => None,
                Ok(n) => {
                    buf.truncate(n);
                    take(n as u64).await;
                    Some((Ok(buf), f))
                }
                Err(e) => Some((Err(e), f)),
            }
        }
    })
}

/// Exponentially weighted transfer rate (bytes/s) of a pool's checkpoint
/// transfers, for Linger-Longer's `T_migr` (Ryu & Hollingsworth Eq. 5,
/// seeds/002_34f613b0a80e1e58.txt L87): this station's own measurement when
/// it has one, else the pool's (the median the coordinator computes from the
/// stations' ads, see `gleaner_proto::wire::CHECKPOINT_TRANSFER_RATE_ATTR`).
#[derive(Debug, Default)]
pub struct RateMeter {
    own: std::sync::Mutex<Option<f64>>,
    pool: std::sync::Mutex<Option<f64>>,
}

fn read_rate(m: &std::sync::Mutex<Option<f64>>) -> Option<f64> {
    *m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

impl RateMeter {
    /// Records one transfer; tiny ones say more about latency than rate.
    pub fn record(&self, bytes: u64, elapsed: Duration) {
        if bytes < 64 * 1024 || elapsed.is_zero() {
            return;
        }
        let r = bytes as f64 / elapsed.as_secs_f64();
        let mut g = self
            .own
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        *g = Some(match *g {
            Some(old) => 0.7 * old + 0.3 * r,
            None => r,
        });
    }

    /// The rate for `T_migr`: this station's own when it has measured one
    /// (its own link is the better guess), else the pool's.
    pub fn get(&self) -> Option<f64> {
        self.own().or_else(|| self.pool())
    }

    /// This station's own measurement only (what it advertises: echoing
    /// the pool's figure back would let it feed on itself).
    pub fn own(&self) -> Option<f64> {
        read_rate(&self.own)
    }

    /// The pool's rate as last heard from the coordinator.
    pub fn pool(&self) -> Option<f64> {
        read_rate(&self.pool)
    }

    /// Stores the pool's rate from an advertise reply (`None`: the pool has
    /// none, e.g. after the coordinator forgot the stations that had one).
    /// Non-positive or non-finite values are ignored.
    pub fn set_pool(&self, rate: Option<f64>) {
        let rate = rate.filter(|r| r.is_finite() && *r > 0.0);
        *self
            .pool
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = rate;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn token_bucket_limits_the_average_rate() {
        let t0 = Instant::now();
        let mut b = TokenBucket::new(1000, 1000, t0);
        assert_eq!(b.reserve(1000, t0), Duration::ZERO);
        // Empty now: 500 more bytes wait half a second.
        assert_eq!(b.reserve(500, t0), Duration::from_millis(500));
        // A second later 1000 tokens came back, 500 were owed.
        let w = b.reserve(500, t0 + Duration::from_secs(1));
        assert_eq!(w, Duration::ZERO);
        // Unlimited never waits.
        let mut u = TokenBucket::new(0, 1, t0);
        assert_eq!(u.reserve(u64::MAX / 2, t0), Duration::ZERO);
    }

    #[test]
    fn rate_meter_ignores_tiny_transfers() {
        let m = RateMeter::default();
        m.record(10, Duration::from_millis(1));
        assert_eq!(m.get(), None);
        m.record(1_000_000, Duration::from_secs(1));
        assert_eq!(m.get(), Some(1_000_000.0));
    }

    #[test]
    fn rate_meter_falls_back_to_the_pool_rate() {
        let m = RateMeter::default();
        assert_eq!(m.get(), None);
        m.set_pool(Some(40e6));
        assert_eq!(m.get(), Some(40e6));
        assert_eq!(m.own(), None, "the pool's rate is not the station's own");
        m.set_pool(Some(f64::NAN));
        assert_eq!(m.get(), None);
        m.set_pool(Some(40e6));
        // Once measured, the station's own rate wins.
        m.record(2_000_000, Duration::from_secs(1));
        assert_eq!(m.get(), Some(2e6));
        m.set_pool(Some(90e6));
        assert_eq!(m.get(), Some(2e6));
        assert_eq!(m.pool(), Some(90e6));
        m.set_pool(None);
        assert_eq!(m.get(), Some(2e6));
    }
}
