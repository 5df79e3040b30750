//! The advertise loop: the station's ad, built from the two sides' parts,
//! goes to the coordinator every period (or at once when the home has news,
//! a guest ends or the owner comes or goes); the reply is handed to each
//! side.

use crate::clock::{now, now_secs};
use crate::config::StationConfig;
use crate::home::Home;
use crate::host::{Host, transfer_rate};
use crate::node::revocations::StationRevocations;
use gleaner_proto::wire::{AdvertiseReply, StationAd};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::watch;

/// What the loop needs.
pub struct Advertiser {
    pub config: Arc<StationConfig>,
    pub address: String,
    /// This station's own token.
    pub token: String,
    pub http: reqwest::Client,
    pub home: Arc<Home>,
    pub host: Arc<Host>,
    /// Where the revoked tokens of each reply go (the verifier's set).
    pub revocations: Arc<StationRevocations>,
}

/// The station's ad: the host's part (the machine, its owner, its
/// guests), the home's (demand and job classes), and the station's own
/// measured transfer rate.
pub fn build_ad(home: &Home, host: &Host, address: &str, sequence: u64) -> StationAd {
    let home_part = home.part();
    let host_part = host.part();
    let mut ad = host_part.machine;
    ad.address = address.to_string();
    ad.classes = home_part.classes;
    ad.demand = home_part.demand;
    ad.sequence = sequence;
    ad.sent_at = now();
    let mut summary = home.summary();
    summary.guests = host.guest_ladders();
    ad.summary = Some(summary);
    let rate = transfer_rate::own_rate(host_part.transfer_rate, home_part.transfer_rate);
    transfer_rate::add_to_ad(rate, &mut ad);
    ad
}

/// Hands the coordinator's reply to the two sides: the pool's transfer
/// rate and the guests' destinations to the host; preemptions, then
/// grants, to the home. Revoked tokens go to the verifier first, before
/// anything else is done on the reply.
async fn dispatch(
    home: &Arc<Home>,
    host: &Host,
    revocations: &StationRevocations,
    reply: &AdvertiseReply,
) {
    revocations.absorb(&reply.revoked, now_secs());
    host.on_pool_transfer_rate(reply.checkpoint_transfer_rate);
    host.on_destinations(&reply.destinations);
    host.on_drained(reply.drained);
    home.on_preemptions(&reply.preemptions);
    // A grant may wait out the placement interval: the loop goes on.
    if !reply.grants.is_empty() {
        let (home, grants) = (home.clone(), reply.grants.clone());
        tokio::spawn(async move { home.on_grants(&grants).await });
    }
}

/// Advertises until shutdown, dispatching each reply.
pub async fn run(a: Advertiser, mut shutdown: watch::Receiver<bool>) {
    if a.config.coordinator.is_empty() {
        tracing::info!("no coordinator configured: not advertising");
        return;
    }
    let url = format!(
        "{}/v1/advertise",
        a.config.coordinator.trim_end_matches('/')
    );
    let mut sequence = 0u64;
    let mut owner = a.host.owner_changes();
    loop {
        sequence += 1;
        let ad = build_ad(&a.home, &a.host, &a.address, sequence);
        let mut wait = Duration::from_secs(a.config.advertise_secs);
        match a
            .http
            .post(&url)
            .bearer_auth(&a.token)
            .json(&ad)
            .send()
            .await
        {
            Ok(resp) if resp.status().is_success() => match resp.json::<AdvertiseReply>().await {
                Ok(reply) => {
                    if reply.next_advertise_secs > 0 {
                        wait = Duration::from_secs(reply.next_advertise_secs)
                            .min(Duration::from_secs(a.config.advertise_secs));
                    }
                    dispatch(&a.home, &a.host, &a.revocations, &reply).await;
                }
                Err(e) => tracing::warn!(error = %e, "unreadable advertise reply"),
            },
            Ok(resp) => tracing::warn!(status = %resp.status(), "coordinator refused the ad"),
            Err(e) => tracing::warn!(error = %e, "cannot reach the coordinator"),
        }
        tokio::select! {
            _ = tokio::time::sleep(wait) => {}
            _ = a.home.news().notified() => {}
            // A node came free: a capacity event for the coordinator.
            _ = a.host.guest_ended() => {}
            // The owner came or went: the coordinator must know at once.
            _ = owner.changed() => {}
            _ = shutdown.wait_for(|s| *s) => return,
        }
    }
}
