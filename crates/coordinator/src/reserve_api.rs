//! The reservation coordinator's HTTP API (Mutka 1988 §6.3.4,
//! seeds/000_14c1149197e96532.txt L1156–1162): the local handler
//! (`glean reserve`) fetches its tables and sends its Reservation Request
//! Table; the coordinator answers one acknowledgement per row.
//!
//! - `GET /v1/reservations[?user=NAME][&slots=N]`: a user's session view
//!   (account, reservations, the Global Availability Table for the next N
//!   slots, the stations serving the user now). Users see only themselves;
//!   an admin sees anyone, and without `user` everything (System Table,
//!   Accounting List, every reservation, the binding, replacement counts).
//! - `POST /v1/reservations/sync[?user=NAME]` (`{"rows": [RequestEntry…]}`):
//!   applies the rows for the caller, in order, each all-or-nothing; answers
//!   the acks and the new view once the state is on disk. An admin may name
//!   another user and act for them (e.g. cancel their reservation: the
//!   refund is theirs); a user naming anyone else is refused.
//!
//! Stations hold no account: their tokens are refused before any body is
//! read, as is a user naming another user.

use crate::pool::partition::{Partition, ReplacementStats};
use crate::server::Shared;
use axum::Json;
use axum::body::Body;
use axum::extract::{Query, State};
use axum::http::HeaderMap;
use axum::response::{IntoResponse, Response};
use axum::{Extension, Router};
use gleaner_core::reservation::replacement::ReplacementRule;
use gleaner_core::reservation::session::{Ack, RequestEntry};
use gleaner_core::reservation::{
    AdmissionPolicy, Bank, MaskState, Money, Reservation, ReservationId, StationEntry,
};
use gleaner_core::time::Time;
use gleaner_edge::{ApiError, Caller, Role};
use gleaner_proto::wire::ErrorCode;
use serde::{Deserialize, Serialize};
use std::sync::Arc;

/// Rows one sync may carry (a session is a person's edits, not a bulk load).
pub const MAX_ROWS: usize = 256;
/// Default and largest availability horizon, in slots.
const DEFAULT_SLOTS: u64 = 24;
const MAX_SLOTS: u64 = 28 * 24;

/// A station's accounts (Table 6.6's P_D, P_G, NP).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct AccountView {
    pub station: String,
    pub p_d: Money,
    pub p_g: Money,
    pub np: Money,
}

/// One row of the Global Availability Table (Table 6.10).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SlotFree {
    pub slot: u64,
    pub start: Time,
    pub free: u32,
}

/// A station serving a reservation in the current slot.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct BoundView {
    pub station: String,
    pub reservation: ReservationId,
    pub user: String,
}

/// Everything an admin sees besides a user's view.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct PoolTables {
    pub stations: Vec<(String, StationEntry)>,
    pub accounting: Vec<(String, String)>,
    /// The current slot's row of the Global Reservation Table.
    pub mask: Vec<(String, MaskState)>,
    pub bank: Bank,
    pub stats: ReplacementStats,
    /// Hosting stations and when each became AV (Longest-Free picks the
    /// earliest unreserved one).
    pub av_since: std::collections::BTreeMap<String, Time>,
}

/// `GET /v1/reservations`: what a local handler opens a session with.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct ReservationsView {
    pub now: Time,
    pub slot_secs: u64,
    /// The current slot's index (slot k runs from k × slot_secs).
    pub slot: u64,
    pub policy: AdmissionPolicy,
    pub replacement: ReplacementRule,
    /// The user the view is for; empty for an admin's whole-pool view.
    pub user: String,
    pub account: Option<AccountView>,
    pub reservations: Vec<Reservation>,
    pub availability: Vec<SlotFree>,
    /// Stations donated now (reservable specifically).
    pub donated: Vec<String>,
    pub bound: Vec<BoundView>,
    /// Admin's whole-pool view only.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tables: Option<PoolTables>,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SyncBody {
    pub rows: Vec<RequestEntry>,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct SyncReply {
    pub acks: Vec<Ack>,
    pub view: ReservationsView,
}

#[derive(Deserialize)]
struct ViewQuery {
    user: Option<String>,
    slots: Option<u64>,
}

/// Builds the view for `user` (`None`: the whole pool) at `now`.
pub fn view(p: &Partition, user: Option<&str>, slots: u64, now: Time) -> ReservationsView {
    let m = p.market();
    let slot = m.slot_of(now);
    let account = user.and_then(|u| {
        let station = m.account_of(u)?;
        let e = m.station(station)?;
        Some(AccountView {
            station: station.to_string(),
            p_d: e.accounts.p_d,
            p_g: e.accounts.p_g,
            np: e.accounts.np,
        })
    });
    let reservations = match user {
        Some(u) => m.reservations_of(u).into_iter().cloned().collect(),
        None => m.reservation_list().into_iter().cloned().collect(),
    };
    let availability = m
        .availability(slot, slot + slots)
        .into_iter()
        .map(|(s, free)| SlotFree {
            slot: s,
            start: m.slot_start(s),
            free,
        })
        .collect();
    let bound = p
        .bound()
        .into_iter()
        .filter_map(|(station, id)| {
            let r = m.reservation(id)?;
            (user.is_none_or(|u| u == r.user)).then(|| BoundView {
                station,
                reservation: id,
                user: r.user.clone(),
            })
        })
        .collect();
    let tables = user.is_none().then(|| PoolTables {
        stations: m
            .stations()
            .map(|(n, e)| (n.to_string(), e.clone()))
            .collect(),
        accounting: m
            .accounting_list()
            .map(|(u, s)| (u.to_string(), s.to_string()))
            .collect(),
        mask: m.mask(slot),
        bank: m.bank(),
        stats: p.stats(),
        av_since: p.av_since().clone(),
    });
    ReservationsView {
        now,
        slot_secs: m.params().slot.0 / 1_000_000,
        slot,
        policy: m.params().policy,
        replacement: p.rule(),
        user: user.unwrap_or_default().to_string(),
        account,
        reservations,
        availability,
        donated: m.donated(slot).into_iter().map(str::to_string).collect(),
        bound,
        tables,
    }
}

fn not_configured() -> ApiError {
    ApiError::new(
        ErrorCode::NotFound,
        "this coordinator takes no reservations (no [reservations] section in its configuration)",
    )
}

/// Users and admins only; stations hold no reservation account.
fn person(caller: &Caller) -> Result<(), ApiError> {
    match caller.role {
        Role::User | Role::Admin => Ok(()),
        Role::Station => {
            tracing::warn!(station = %caller.name, "reservation call with a station token refused");
            Err(ApiError::new(
                ErrorCode::Forbidden,
                "stations cannot reserve: use a user token",
            ))
        }
    }
}

async fn get_view(
    State(shared): State<Arc<Shared>>,
    Extension(caller): Extension<Caller>,
    query: Result<Query<ViewQuery>, axum::extract::rejection::QueryRejection>,
) -> Result<Response, ApiError> {
    person(&caller)?;
    let Query(q) = query.map_err(|e| ApiError::bad("query", e.to_string()))?;
    let user = match (caller.role, q.user) {
        (Role::Admin, u) => u,
        (_, Some(u)) if u != caller.name => {
            return Err(ApiError::field(
                ErrorCode::Forbidden,
                "user",
                format!("{} may see only their own reservations", caller.name),
            ));
        }
        _ => Some(caller.name.clone()),
    };
    let slots = q.slots.unwrap_or(DEFAULT_SLOTS).clamp(1, MAX_SLOTS);
    let pool = shared.pool();
    let p = pool.partition().ok_or_else(not_configured)?;
    Ok(Json(view(p, user.as_deref(), slots, crate::server::now())).into_response())
}

async fn read_rows(body: Body, headers: &HeaderMap, max: usize) -> Result<SyncBody, ApiError> {
    let bytes = crate::server::read_body(body, headers, max).await?;
    let mut de = serde_json::Deserializer::from_slice(&bytes);
    let body: SyncBody = serde_path_to_error::deserialize(&mut de).map_err(|e| {
        ApiError::bad(
            &e.path().to_string(),
            format!("invalid reservation request: {}", e.inner()),
        )
    })?;
    if body.rows.len() > MAX_ROWS {
        return Err(ApiError::bad(
            "rows",
            format!("at most {MAX_ROWS} rows per sync"),
        ));
    }
    Ok(body)
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct SyncQuery {
    user: Option<String>,
}

async fn sync(
    State(shared): State<Arc<Shared>>,
    Extension(caller): Extension<Caller>,
    query: Result<Query<SyncQuery>, axum::extract::rejection::QueryRejection>,
    headers: HeaderMap,
    body: Body,
) -> Result<Response, ApiError> {
    // Who is calling, and for whom, is settled before a byte of the body
    // is read.
    person(&caller)?;
    let Query(q) = query.map_err(|e| ApiError::bad("query", e.to_string()))?;
    let user = match q.user {
        Some(u) if u != caller.name => {
            if caller.role != Role::Admin {
                tracing::warn!(user = %caller.name, target = %u, "reservation sync for another user refused");
                return Err(ApiError::field(
                    ErrorCode::Forbidden,
                    "user",
                    format!("{} may act only on their own reservations", caller.name),
                ));
            }
            if u.is_empty() {
                return Err(ApiError::bad("user", "an empty user name"));
            }
            tracing::info!(admin = %caller.name, user = %u, "admin acts on a user's reservations");
            u
        }
        _ => caller.name.clone(),
    };
    if shared.pool().partition().is_none() {
        return Err(not_configured());
    }
    let rows = read_rows(body, &headers, shared.max_body).await?;
    let now = crate::server::now();
    let (acks, view, state) = {
        let mut pool = shared.pool();
        let acks = pool
            .with_partition(now, |p| p.sync(&user, &rows.rows, now))
            .ok_or_else(not_configured)?;
        let p = pool.partition().ok_or_else(not_configured)?;
        let view = view(p, Some(&user), DEFAULT_SLOTS, now);
        let state = pool
            .take_partition_state()
            .map(|s| (shared.stamp_reservations(), s));
        (acks, view, state)
    };
    for a in acks.iter().filter(|a| !a.accepted) {
        tracing::info!(user = %user, row = a.row, error = ?a.error, "reservation row refused");
    }
    if let Some((serial, state)) = state
        && !shared.save_reservations(serial, state).await
    {
        // The acknowledgement promises durability: without the write it
        // cannot be given.
        tracing::error!("could not write reservations.json");
        return Err(ApiError::new(
            ErrorCode::Unavailable,
            "coordinator cannot persist its reservations",
        ));
    }
    Ok(Json(SyncReply { acks, view }).into_response())
}

/// The routes, for the authenticated part of the server's router.
pub(crate) fn routes() -> Router<Arc<Shared>> {
    Router::new()
        .route("/v1/reservations", axum::routing::get(get_view))
        .route("/v1/reservations/sync", axum::routing::post(sync))
}
