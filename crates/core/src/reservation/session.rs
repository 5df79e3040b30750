//! The local handler's batch of requests and the coordinator's answer
//! (Mutka 1988 §6.3.4, L1156–1162; Tables 6.11/6.12): a session edits its
//! Reservation Request Table locally and sends it on `Sync` or `Close`;
//! the coordinator accepts or rejects each entry, in order, and answers
//! with one acknowledgement per entry. Only an acknowledged request is
//! approved (Table 6.5).

use super::market::Market;
use super::tables::ReservationId;
use super::{MarketError, Request};
use crate::time::Time;
use serde::{Deserialize, Serialize};

/// One row of the Reservation Request Table (Table 6.11).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct RequestEntry {
    /// The handler's own number for the row (Table 6.11's "Res. ID").
    pub row: u64,
    pub op: RequestOp,
}

/// Add (reserve) or Delete (unreserve).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "op")]
pub enum RequestOp {
    Add(Request),
    Delete {
        reservation: ReservationId,
        /// Machines to give up in every slot; all when absent.
        #[serde(default)]
        machines: Option<u32>,
    },
}

/// One row of the acknowledgement (Table 6.12).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Ack {
    pub row: u64,
    pub accepted: bool,
    /// The reservation created or changed.
    pub reservation: Option<ReservationId>,
    /// Machines granted (Add) or given up per slot (Delete).
    pub machines: u32,
    /// Specific stations granted.
    pub stations: Vec<String>,
    /// Why a row was refused.
    /// (the refusal's message; [`MarketError`] names the field or cause).
    pub error: Option<String>,
}

impl Market {
    /// Applies a session's rows for `user` in order (rows naming another
    /// user are refused). Each row is all-or-nothing.
    pub fn sync(&mut self, user: &str, rows: &[RequestEntry], now: Time) -> Vec<Ack> {
        self.advance(now);
        rows.iter()
            .map(|e| {
                let refuse = |err: MarketError| Ack {
                    row: e.row,
                    accepted: false,
                    reservation: None,
                    machines: 0,
                    stations: Vec::new(),
                    error: Some(err.to_string()),
                };
                match &e.op {
                    RequestOp::Add(req) if req.user != user => {
                        refuse(MarketError::UnknownUser(req.user.clone()))
                    }
                    RequestOp::Add(req) => match self.reserve(req, now) {
                        Ok(g) => Ack {
                            row: e.row,
                            accepted: true,
                            reservation: Some(g.id),
                            machines: g.machines,
                            stations: g.stations,
                            error: None,
                        },
                        Err(err) => refuse(err),
                    },
                    RequestOp::Delete {
                        reservation,
                        machines,
                    } => match self.cancel(*reservation, user, *machines, now) {
                        Ok(c) => Ack {
                            row: e.row,
                            accepted: true,
                            reservation: Some(c.id),
                            machines: machines.unwrap_or(0),
                            stations: Vec::new(),
                            error: None,
                        },
                        Err(err) => refuse(err),
                    },
                }
            })
            .collect()
    }
}
