//! `glean reserve` for people: the session's tables and each
//! acknowledgement (refusals with their reason).

use super::escape::{cells, say};
use crate::reserve::Report;
use comfy_table::{Table, presets::UTF8_FULL_CONDENSED};
use gleaner_core::reservation::session::{Ack, RequestEntry, RequestOp};
use gleaner_core::reservation::{Money, Reservation};
use gleaner_core::time::Time;

fn table(header: Vec<&str>) -> Table {
    let mut t = Table::new();
    t.load_preset(UTF8_FULL_CONDENSED).set_header(header);
    t
}

fn when(t: Time) -> String {
    gleaner_proto::api::utc_datetime(t)
}

fn money(m: Money) -> String {
    format!("{:.2}", m.as_f64())
}

fn slot_time(slot: u64, slot_secs: u64) -> String {
    when(Time::from_secs(slot * slot_secs))
}

fn reservations(list: &[Reservation], slot_secs: u64) {
    if list.is_empty() {
        say!("No reservations.");
        return;
    }
    let mut t = table(vec![
        "ID",
        "CLASS",
        "FROM (UTC)",
        "TO (UTC)",
        "MACHINES",
        "STATIONS",
    ]);
    for r in list {
        t.add_row(cells(vec![
            r.id.to_string(),
            r.class.number().to_string(),
            slot_time(r.start, slot_secs),
            slot_time(r.stop, slot_secs),
            r.machines().to_string(),
            r.specific
                .values()
                .next()
                .map(|v| v.join(","))
                .unwrap_or_default(),
        ]));
    }
    say!("{t}");
}

fn rows(pending: &[RequestEntry]) {
    if pending.is_empty() {
        return;
    }
    let mut t = table(vec!["ROW", "REQUEST"]);
    for e in pending {
        let what = match &e.op {
            RequestOp::Add(r) => format!(
                "reserve {}–{} machines, class {}, {} to {}{}",
                r.lower,
                r.upper,
                r.class.number(),
                when(r.start),
                when(r.stop),
                if r.specific.is_empty() {
                    String::new()
                } else {
                    format!(" on {}", r.specific.join(","))
                }
            ),
            RequestOp::Delete {
                reservation,
                machines,
            } => match machines {
                Some(n) => format!("unreserve {n} machine(s) of {reservation}"),
                None => format!("unreserve {reservation}"),
            },
        };
        t.add_row(cells(vec![e.row.to_string(), what]));
    }
    say!("Not yet synced:\n{t}");
}

fn acks(list: &[Ack]) {
    for a in list {
        match (&a.error, a.reservation) {
            (None, Some(id)) => say!(
                "row {}: accepted: reservation {id}, {} machine(s){}",
                a.row,
                a.machines,
                if a.stations.is_empty() {
                    String::new()
                } else {
                    format!(" ({})", a.stations.join(","))
                }
            ),
            (None, None) => say!("row {}: accepted", a.row),
            (Some(e), _) => say!("row {}: REFUSED: {e}", a.row),
        }
    }
}

pub fn render(r: &Report) {
    match r {
        Report::Display { view, pending } => {
            match &view.account {
                Some(a) => say!(
                    "{}: account of station {}: P {} (income {}, gains {}), NP {}",
                    view.user,
                    a.station,
                    money(a.p_d + a.p_g),
                    money(a.p_d),
                    money(a.p_g),
                    money(a.np)
                ),
                None if view.user.is_empty() => say!("The whole pool (admin view)."),
                None => say!(
                    "{}: no account (the administrator links users in [reservations.accounts]).",
                    view.user
                ),
            }
            reservations(&view.reservations, view.slot_secs);
            if !view.bound.is_empty() {
                let mut t = table(vec!["STATION", "SERVES", "USER"]);
                for b in &view.bound {
                    t.add_row(cells(vec![
                        b.station.clone(),
                        b.reservation.to_string(),
                        b.user.clone(),
                    ]));
                }
                say!("Serving now:\n{t}");
            }
            let mut t = table(vec!["SLOT (UTC)", "FREE MACHINES"]);
            for s in &view.availability {
                t.add_row(cells(vec![when(s.start), s.free.to_string()]));
            }
            say!("Free machines by slot ({} s slots):\n{t}", view.slot_secs);
            if !view.donated.is_empty() {
                say!("Donated (reservable by name): {}", view.donated.join(", "));
            }
            rows(pending);
        }
        Report::Check {
            user,
            slot_secs,
            reservations: list,
        } => {
            say!("Reservations of {user}:");
            reservations(list, *slot_secs);
        }
        Report::Queued { row, pending } => {
            say!(
                "Row {} added; {pending} row(s) to sync (glean reserve sync).",
                row.row
            );
        }
        Report::Synced { acks: a, .. } => {
            if a.is_empty() {
                say!("Nothing to sync.");
            }
            acks(a);
        }
        Report::Closed { acks: a, closed } => {
            acks(a);
            if *closed {
                say!("Session closed.");
            } else {
                say!("Session kept open: a row was refused; try something else and close again.");
            }
        }
    }
}
