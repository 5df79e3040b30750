//! The coordinator's reservation role as the reservation experiments (B10
//! `reservations`, B11 `market`) drive it: a
//! `gleaner_coordinator::pool::partition::Partition` built from a
//! `[reservations]` section, fed station ads (`Partition::observe`) and
//! requests through `Partition::sync`, the entry point of the daemon's
//! `POST /v1/reservations/sync`. So the System Table, the slot binding, the
//! replacement rule and the error count the experiments report are the
//! daemon's own.

use crate::SimError;
use gleaner_coordinator::pool::partition::{Partition, Seen};
use gleaner_coordinator::reserve_config::ReservationsConfig;
use gleaner_core::reservation::Calendar;
use gleaner_core::reservation::session::{Ack, RequestEntry, RequestOp};
use gleaner_core::reservation::{Request, ReservationId};
use gleaner_core::time::Time;

/// The role under `config`, on the simulator's calendar (time 0 is a
/// Monday, `crate::availability`), its `Random` rule seeded with `seed`.
pub(super) fn role(config: &ReservationsConfig, seed: u64) -> Result<Partition, SimError> {
    let bad = |e: &dyn std::fmt::Display| SimError::Param {
        name: "reservations".into(),
        msg: e.to_string(),
    };
    let mut params = config.market_params().map_err(|e| bad(&e))?;
    params.calendar = Calendar {
        utc_offset_secs: config.utc_offset_secs,
        ..Calendar::SIM
    };
    let config = ReservationsConfig {
        seed: Some(seed),
        ..config.clone()
    };
    Partition::with_params(&config, params, seed, None).map_err(|e| bad(&e))
}

/// Runs `f` with the role's logs off: they speak of simulated stations
/// (every error hour is a warning), thousands an experiment.
pub(super) fn quiet<R>(f: impl FnOnce() -> R) -> R {
    tracing::subscriber::with_default(tracing::subscriber::NoSubscriber::default(), f)
}

/// An ad of a station that does (`hosting`) or does not offer its machine;
/// no experiment donates stations.
pub(super) fn ad(hosting: bool) -> Seen {
    Seen {
        hosting,
        donated: false,
    }
}

/// Sends `req` as a one-row session for its user, as `glean reserve` does.
pub(super) fn request(p: &mut Partition, row: u64, req: Request, now: Time) -> Ack {
    let user = req.user.clone();
    let rows = [RequestEntry {
        row,
        op: RequestOp::Add(req),
    }];
    let mut acks = p.sync(&user, &rows, now);
    acks.pop().unwrap_or(Ack {
        row,
        accepted: false,
        reservation: None::<ReservationId>,
        machines: 0,
        stations: Vec::new(),
        error: Some("no acknowledgement".into()),
    })
}
