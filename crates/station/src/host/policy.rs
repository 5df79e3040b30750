//! The station owner's policy for guests: operating windows, allowed and
//! denied users, a `START` expression and a guest limit (`[policy]` in
//! `station.toml`).
//!
//! The policy is advertised (the coordinator only matches jobs it admits)
//! and enforced here too: the starter refuses a placement that violates it
//! (the fit check of `gleaner_proto::fit`, as the matchmaker's),
//! and when an operating window closes while guests run the station acts
//! as if the owner had come back (the lending gate, `lending_gate.rs`), so the configured eviction ladder
//! (suspend, linger, vacate …) applies. The window rule itself is pure code
//! in `gleaner_core::owner_rules`.

use gleaner_core::owner_rules::Windows;
use gleaner_proto::matchmaking::PolicyAd;
use serde::{Deserialize, Serialize};

/// `[policy]` of `station.toml`.
///
/// ```toml
/// [policy]
/// windows = ["Mon-Fri 18:00-08:00", "Sat,Sun 00:00-24:00"]
/// allow_users = []            # empty: everybody
/// deny_users = ["mallory"]
/// start = "TARGET.RequestMemory <= 2048"
/// max_guests = 2              # default: one per CPU
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct PolicyConfig {
    pub windows: Vec<String>,
    pub allow_users: Vec<String>,
    pub deny_users: Vec<String>,
    pub start: Option<String>,
    pub max_guests: Option<u32>,
}

impl PolicyConfig {
    /// Checks the windows and the `START` expression; the message names
    /// the field.
    pub fn validate(&self) -> Result<(), (&'static str, String)> {
        Windows::parse(&self.windows).map_err(|e| ("policy.windows", e.to_string()))?;
        if let Some(s) = &self.start {
            gleaner_classad::parse_expr(s)
                .map_err(|e| ("policy.start", format!("not a valid expression: {e}")))?;
        }
        if self.max_guests == Some(0) {
            return Err((
                "policy.max_guests",
                "must be at least 1 (use role = \"submit_only\" to host nothing)".into(),
            ));
        }
        Ok(())
    }

    /// The advertised form, with the zone offset at `unix`.
    pub fn to_ad(&self, unix: i64) -> PolicyAd {
        PolicyAd {
            windows: self.windows.clone(),
            utc_offset_secs: super::machine_ad::utc_offset_secs(unix),
            allow_users: self.allow_users.clone(),
            deny_users: self.deny_users.clone(),
            start: self.start.clone(),
            max_guests: self.max_guests,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use gleaner_core::detector::OwnerState;
    use gleaner_proto::fit;
    use gleaner_proto::job::JobDescription;
    use gleaner_proto::wire::StationAd;
    use std::time::Duration;
    use tokio::sync::watch;

    fn station() -> StationAd {
        serde_json::from_value(serde_json::json!({
            "name": "ws", "address": "", "state": "AV", "cpus": 1,
            "memory_mb": 1024, "disk_free_kb": 0, "arch": "X86_64",
            "opsys": "LINUX", "sent_at": 0
        }))
        .unwrap()
    }

    /// A window covering no minute of any day but the current one's
    /// opposite: closed now, whatever the zone.
    fn closed_window() -> String {
        let now = crate::clock::now_secs() as i64;
        let t = gleaner_core::owner_rules::LocalTime::from_unix(
            now,
            crate::host::machine_ad::utc_offset_secs(now),
        );
        let day = ["Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun"][((t.weekday + 3) % 7) as usize];
        format!("{day} 00:00-24:00")
    }

    /// Waits (at most 10 s) for the gate's output to become `want`.
    async fn reaches(rx: &mut watch::Receiver<OwnerState>, want: OwnerState) {
        tokio::time::timeout(Duration::from_secs(10), rx.wait_for(|s| *s == want))
            .await
            .unwrap()
            .unwrap();
    }

    /// The lending gate over `windows` and the detector's `raw` state.
    fn gate(
        windows: Vec<String>,
        raw: watch::Receiver<OwnerState>,
        out: watch::Sender<OwnerState>,
        stop: watch::Receiver<bool>,
    ) -> tokio::task::JoinHandle<()> {
        use crate::host::{lending_gate, owner_controls::OwnerControls, owner_log::OwnerLog};
        lending_gate::Gate {
            config_windows: windows,
            raw,
            controls: watch::channel(OwnerControls::default()).1,
            out,
            log: std::sync::Arc::new(OwnerLog::in_memory()),
            news: Default::default(),
        }
        .spawn(stop)
    }

    #[tokio::test]
    async fn a_closed_window_reads_as_the_owner_being_back() {
        let (_stop_tx, stop) = watch::channel(false);
        let (raw_tx, raw_rx) = watch::channel(OwnerState::Av);
        let (out_tx, mut out_rx) = watch::channel(OwnerState::Av);
        let g = gate(vec![closed_window()], raw_rx, out_tx, stop.clone());
        reaches(&mut out_rx, OwnerState::Na).await;
        g.abort();
        // An open window passes the activity source through.
        let (out_tx, mut out_rx) = watch::channel(OwnerState::Av);
        let g = gate(
            vec!["* 00:00-24:00".into()],
            raw_tx.subscribe(),
            out_tx,
            stop,
        );
        raw_tx.send(OwnerState::Na).unwrap();
        reaches(&mut out_rx, OwnerState::Na).await;
        raw_tx.send(OwnerState::Av).unwrap();
        reaches(&mut out_rx, OwnerState::Av).await;
        g.abort();
    }

    #[test]
    fn validation_names_the_field() {
        let mut p = PolicyConfig {
            windows: vec!["Mon-Fry 09:00-10:00".into()],
            ..Default::default()
        };
        assert_eq!(p.validate().unwrap_err().0, "policy.windows");
        p.windows.clear();
        p.start = Some("Memory >".into());
        assert_eq!(p.validate().unwrap_err().0, "policy.start");
        p.start = Some("TARGET.RequestMemory < 10".into());
        p.validate().unwrap();
    }

    #[test]
    fn admission_checks_windows_users_start_and_requirements() {
        let mut s = station();
        s.policy = PolicyAd {
            windows: vec!["Mon-Fri 18:00-08:00".into()],
            deny_users: vec!["mallory".into()],
            start: Some("TARGET.RequestCpus == 1".into()),
            ..Default::default()
        };
        s.disk_free_kb = 1 << 20;
        // The starter's check, the one the matchmaker makes.
        let admit = |job: &JobDescription, now| {
            crate::host::starter::admit(&s, false, job, now).map_err(|r| fit::explain(&r))
        };
        // 2025-11-17 (Monday) 20:00 UTC: open; 12:00: closed.
        let open = 1_763_337_600 + 20 * 3600;
        let closed = 1_763_337_600 + 12 * 3600;
        let mut job = JobDescription::new("alice", "/bin/true");
        assert!(admit(&job, open).is_ok());
        assert!(admit(&job, closed).unwrap_err().contains("window"));
        job.owner = "mallory".into();
        assert!(admit(&job, open).unwrap_err().contains("mallory"));
        job.owner = "alice".into();
        job.request_cpus = 2;
        // Two CPUs: neither START nor the one free CPU allows it.
        let why = admit(&job, open).unwrap_err();
        assert!(why.contains("START"), "{why}");
        assert!(why.contains("cpus: needs 2, 1 free"), "{why}");
        job.request_cpus = 1;
        job.requirements = Some("Memory > 4096".into());
        assert!(
            admit(&job, open)
                .unwrap_err()
                .contains("requirements: [Memory > 4096 is false]")
        );
    }
}
