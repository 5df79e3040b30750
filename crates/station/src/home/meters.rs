//! The home's event meters for `/metrics`: what cannot be read back from
//! the queue at scrape time (durations as they are observed, checkpoint
//! sizes). Reset when the station restarts, as Prometheus counters may be.

use crate::queue::JobRecord;
use gleaner_core::time::Time;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::histogram::Histogram;
use std::sync::atomic::AtomicU64;

/// Upper bounds of the submit→running histogram, seconds: 10 ms to about
/// 3 days (a factor of 4 per bucket), covering a job placed at once on an
/// idle pool and one that waits for nights of owners' absences.
fn wait_buckets() -> impl Iterator<Item = f64> {
    prometheus_client::metrics::histogram::exponential_buckets(0.01, 4.0, 14)
}

/// Counters and histograms the home updates where things happen. The
/// metric objects share their values with the clones a scrape registers.
#[derive(Debug, Clone)]
pub struct HomeMeters {
    /// Time from submission to the first start of a job, seconds.
    pub submit_to_running: Histogram,
    /// Checkpoints received and stored (verified, rotated in).
    pub checkpoints_stored: Counter,
    /// Their sizes summed, bytes.
    pub checkpoint_bytes: Counter,
    /// Time spent receiving them, seconds.
    pub checkpoint_seconds: Counter<f64, AtomicU64>,
    /// Checkpoints refused (corrupt, partial, too large).
    pub checkpoints_rejected: Counter,
    /// Time each start waited in the queue: from the job's last turn to
    /// idle (its submission, or its requeue after an eviction) to the
    /// start, seconds. Unlike submit→running, every start counts.
    pub queue_wait: Histogram,
    /// Time to receive each stored checkpoint, seconds.
    pub checkpoint_duration: Histogram,
}

impl HomeMeters {
    /// Job `before` (its record while idle) has just started at `at`: on
    /// its first start, its submit→running wait is observed.
    pub fn job_started(&self, before: &JobRecord, at: Time) {
        if before.started_at.is_none() {
            self.submit_to_running
                .observe(at.since(before.submitted_at).as_secs_f64());
        }
        // The idle record was last changed when the job turned idle.
        self.queue_wait
            .observe(at.since(before.updated_at).as_secs_f64());
    }
}

impl Default for HomeMeters {
    fn default() -> Self {
        HomeMeters {
            submit_to_running: Histogram::new(wait_buckets()),
            checkpoints_stored: Counter::default(),
            checkpoint_bytes: Counter::default(),
            checkpoint_seconds: Counter::default(),
            checkpoints_rejected: Counter::default(),
            queue_wait: Histogram::new(wait_buckets()),
            // 1 ms to about 4.6 h, a factor of 4 per bucket.
            checkpoint_duration: Histogram::new(
                prometheus_client::metrics::histogram::exponential_buckets(0.001, 4.0, 12),
            ),
        }
    }
}
