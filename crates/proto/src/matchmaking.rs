//! Matchmaking data on the wire: a station's policy, its idle jobs grouped
//! into classes, floating-licence requests, and the ClassAds built from them.
//!
//! A station's ad ([`crate::wire::StationAd`]) carries its resources, its
//! [`PolicyAd`] and its idle jobs as [`JobClass`]es (like HTCondor's
//! autoclusters: jobs that match alike are counted, not listed). The
//! coordinator matches classes against machine ads ([`machine_ad`],
//! [`class_ad`]) and tells the home station in a grant which class the host
//! is for.

use crate::job::{CheckpointMethod, JobDescription};
use crate::wire::StationAd;
use gleaner_classad::ad::Slot;
use gleaner_classad::{Ad, Expr, Literal};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// The station owner's rules, as advertised.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct PolicyAd {
    /// Operating windows (`"Mon-Fri 18:00-08:00"`, see
    /// `gleaner_core::owner_rules`); empty: always open.
    pub windows: Vec<String>,
    /// The station's local zone, seconds east of UTC, for the windows.
    pub utc_offset_secs: i32,
    /// Only these owners may run here (empty: everybody).
    pub allow_users: Vec<String>,
    /// These owners never run here.
    pub deny_users: Vec<String>,
    /// HTCondor-style `START` expression, evaluated with the machine as
    /// `MY` and the job as `TARGET`.
    pub start: Option<String>,
    /// Most guests at once; `None`: one per CPU.
    pub max_guests: Option<u32>,
}

impl PolicyAd {
    pub fn user_filter(&self) -> gleaner_core::owner_rules::UserFilter {
        gleaner_core::owner_rules::UserFilter {
            allow: self.allow_users.clone(),
            deny: self.deny_users.clone(),
        }
    }

    /// Whether the windows are open at UNIX second `unix`; windows that do
    /// not parse count as closed (the station validated them at start).
    pub fn window_open(&self, unix: i64) -> bool {
        gleaner_core::owner_rules::Windows::parse(&self.windows)
            .is_ok_and(|w| w.open_at(unix, self.utc_offset_secs))
    }
}

/// Idle jobs of one station that match alike: same owner, requirements,
/// rank, requests, licences and custom attributes.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct JobClass {
    /// Stable name of the class (a hash of everything but `count`).
    pub key: String,
    pub owner: String,
    pub requirements: Option<String>,
    pub rank: Option<String>,
    pub request_cpus: u32,
    pub request_memory_mb: Option<u64>,
    pub request_disk_kb: Option<u64>,
    #[serde(skip_serializing_if = "is_zero")]
    pub request_gpus: u32,
    /// Requests written as expressions, evaluated against each machine
    /// (`crate::requests`).
    #[serde(skip_serializing_if = "crate::requests::RequestExprs::is_empty")]
    pub request_exprs: crate::requests::RequestExprs,
    /// As in the submit file: `matlab`, `foo:2`.
    pub concurrency_limits: Vec<String>,
    pub custom_attrs: BTreeMap<String, String>,
    /// Hosts these jobs must avoid for now because they evicted them or
    /// lost their lease (DMW's resource feedback, Neeracher 1998 §4,
    /// dmw-neeracher.md): the matchmaker does not offer them.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub avoid_hosts: Vec<String>,
    /// Idle jobs in the class.
    pub count: u32,
    /// The name the jobs are accounted under when it is not the owner's:
    /// `group.owner` (HTCondor's `AccountingGroup`; the home's fair share
    /// and the pool's accounting see submitters by it). Absent from older
    /// homes, and for jobs without an accounting group.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub submitter: Option<String>,
    /// For the members of parallel jobs: their gang, placed all at once
    /// (`count` then counts members, `machine_count` of them per job).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gang: Option<crate::job::Gang>,
}

fn is_zero(n: &u32) -> bool {
    *n == 0
}

/// FNV-1a, 64 bit: a stable, dependency-free hash for class keys.
fn fnv(bytes: &[u8]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in bytes {
        h ^= u64::from(*b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    h
}

impl JobClass {
    /// The version of [`JobClass::of`]'s key: a queue that stored keys of
    /// another version computes them again. Change it with `of` or the
    /// key's hash.
    /// 2: the submitter (accounting group), GPUs and request expressions
    /// are part of the key.
    pub const KEY_VERSION: i64 = 2;

    /// The class of one job (count 1). Like HTCondor's autoclusters, only
    /// the custom attributes that the job's requirements or rank mention
    /// count, so that e.g. `+Index = $(Process)` does not make every job a
    /// class of its own.
    pub fn of(d: &JobDescription) -> JobClass {
        let mut exprs = format!(
            "{} {}",
            d.requirements.as_deref().unwrap_or(""),
            d.rank.as_deref().unwrap_or("")
        );
        // Request expressions may name the job's own attributes too.
        for e in d.request_exprs.texts() {
            exprs.push(' ');
            exprs.push_str(e);
        }
        let exprs = exprs.to_ascii_lowercase();
        let mut custom_attrs: BTreeMap<String, String> = d
            .custom_attrs
            .iter()
            .filter(|(k, _)| exprs.contains(&k.to_ascii_lowercase()))
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        let mut clauses: Vec<String> = Vec::new();
        if let Some(r) = &d.requirements {
            clauses.push(crate::submit::matchtime::as_target_refs(r));
        }
        // A CRIU job can only run where a working CRIU is (the station
        // advertises it after probing, see gleaner-station's checkpoint).
        if d.checkpoint_method == CheckpointMethod::Criu {
            clauses.push("TARGET.HasCRIU =?= true".into());
        }
        // `request_<name>`: a machine with that much of the resource, as
        // HTCondor adds `TARGET.<name> >= Request<name>`.
        for (name, amount) in &d.custom_requests {
            custom_attrs.insert(format!("Request{name}"), amount.clone());
            clauses.push(format!("TARGET.{name} >= MY.Request{name}"));
        }
        // Match-time values the job needs from its machine.
        let mut needed: Vec<String> = d
            .arguments
            .iter()
            .chain(d.environment.values())
            .chain(d.custom_attrs.values())
            .flat_map(|v| crate::submit::matchtime::required_attrs(v))
            .collect();
        needed.sort();
        needed.dedup();
        for n in needed {
            clauses.push(format!("TARGET.{n} =!= undefined"));
        }
        let requirements = match clauses.len() {
            0 => None,
            1 if d.checkpoint_method == CheckpointMethod::Auto && d.custom_requests.is_empty() => {
                clauses.pop()
            }
            _ => Some(
                clauses
                    .iter()
                    .map(|c| format!("({c})"))
                    .collect::<Vec<_>>()
                    .join(" && "),
            ),
        };
        let mut c = JobClass {
            key: String::new(),
            owner: d.owner.clone(),
            requirements,
            rank: d.rank.clone(),
            request_cpus: d.request_cpus.max(1),
            request_memory_mb: d.request_memory_mb,
            request_disk_kb: d.request_disk_kb,
            request_gpus: d.request_gpus,
            request_exprs: d.request_exprs.clone(),
            concurrency_limits: d.concurrency_limits.clone(),
            custom_attrs,
            avoid_hosts: Vec::new(),
            count: 1,
            submitter: Some(d.submitter()).filter(|s| *s != d.owner),
            gang: d.gang.map(|m| m.gang),
        };
        c.rekey();
        c
    }

    /// The name its jobs are accounted under: `group.owner`, or the owner.
    pub fn submitter(&self) -> &str {
        self.submitter.as_deref().unwrap_or(&self.owner)
    }

    /// Whether a job of `other` needs of a host exactly what a job of this
    /// class needs (requirements, rank, resources, licences and the
    /// attributes they read; owners and accounting may differ): a host
    /// matched for one takes the other, but for rules about its owner.
    pub fn same_needs(&self, other: &JobClass) -> bool {
        self.requirements == other.requirements
            && self.rank == other.rank
            && self.request_cpus == other.request_cpus
            && self.request_memory_mb == other.request_memory_mb
            && self.request_disk_kb == other.request_disk_kb
            && self.concurrency_limits == other.concurrency_limits
            && self.custom_attrs == other.custom_attrs
            && self.gang.is_none()
            && other.gang.is_none()
    }

    /// The class of one job that must stay away from `hosts` for now.
    pub fn avoiding(d: &JobDescription, hosts: Vec<String>) -> JobClass {
        JobClass::of(d).with_avoided(hosts)
    }

    /// This class for a job that must stay away from `hosts` for now (the
    /// class itself when there are none).
    pub fn with_avoided(mut self, mut hosts: Vec<String>) -> JobClass {
        if !hosts.is_empty() {
            hosts.sort();
            hosts.dedup();
            self.avoid_hosts = hosts;
            self.rekey();
        }
        self
    }

    fn rekey(&mut self) {
        let mut sig = serde_json::to_vec(&(
            &self.owner,
            &self.requirements,
            &self.rank,
            self.request_cpus,
            self.request_memory_mb,
            self.request_disk_kb,
            &self.concurrency_limits,
            &self.custom_attrs,
            &self.avoid_hosts,
            &self.gang,
        ))
        .unwrap_or_default();
        // GPUs and request expressions sign a class only when it has them,
        // so that the key of every other class stays what it was
        // (`KEY_VERSION`).
        if self.request_gpus > 0 || !self.request_exprs.is_empty() {
            sig.extend(
                serde_json::to_vec(&(self.request_gpus, &self.request_exprs)).unwrap_or_default(),
            );
        }
        // Only a class with an accounting group gets another key.
        if let Some(s) = &self.submitter {
            sig.extend_from_slice(b"\0submitter\0");
            sig.extend_from_slice(s.as_bytes());
        }
        self.key = format!("{:016x}", fnv(&sig));
    }

    /// Groups jobs into classes, keeping the order of first appearance.
    pub fn group<'a>(jobs: impl IntoIterator<Item = &'a JobDescription>) -> Vec<JobClass> {
        Self::merge(jobs.into_iter().map(JobClass::of))
    }

    /// Merges single-job classes with equal keys, keeping the order of
    /// first appearance.
    pub fn merge(classes: impl IntoIterator<Item = JobClass>) -> Vec<JobClass> {
        let mut out: Vec<JobClass> = Vec::new();
        for c in classes {
            match out.iter_mut().find(|o| o.key == c.key) {
                Some(o) => o.count += 1,
                None => out.push(c),
            }
        }
        out
    }

    /// The licences the class takes, parsed; bad entries are skipped (the
    /// submit parser refuses them).
    pub fn licences(&self) -> Vec<(String, u32)> {
        parse_limits(&self.concurrency_limits).unwrap_or_default()
    }
}

/// Parses HTCondor `concurrency_limits` entries (`matlab`, `foo:2`) into
/// lower-case names and unit counts, adding up repeated names.
pub fn parse_limits<S: AsRef<str>>(entries: &[S]) -> Result<Vec<(String, u32)>, String> {
    let mut out: BTreeMap<String, u32> = BTreeMap::new();
    for e in entries {
        for part in e
            .as_ref()
            .split(|c: char| c == ',' || c.is_whitespace())
            .filter(|s| !s.is_empty())
        {
            let (name, n) = match part.split_once(':') {
                Some((name, n)) => match n.parse::<u32>() {
                    Ok(n) if n >= 1 => (name, n),
                    _ => {
                        return Err(format!(
                            "{part:?}: the count after ':' must be a whole number ≥ 1"
                        ));
                    }
                },
                None => (part, 1),
            };
            let ok = !name.is_empty()
                && name
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '.' || c == '-');
            if !ok {
                return Err(format!(
                    "{part:?}: a limit name uses letters, digits, '_', '.' and '-'"
                ));
            }
            *out.entry(name.to_ascii_lowercase()).or_default() += n;
        }
    }
    Ok(out.into_iter().collect())
}

fn insert_or_string(ad: &mut Ad, name: &str, expr: &str) {
    if ad.insert(name, expr).is_err() {
        ad.insert_str(name, expr);
    }
}

/// The machine ClassAd of a station (HTCondor attribute names).
///
/// `Requirements` is the policy's `START` (true when unset), as in
/// HTCondor's machine ads; operating windows and user lists are checked
/// outside the ad.
pub fn machine_ad(s: &StationAd) -> Ad {
    let mut ad = Ad::new();
    ad.insert_str("MyType", "Machine");
    ad.insert_str("Name", &s.name);
    ad.insert_str("Machine", &s.name);
    ad.insert_str("Arch", &s.arch);
    ad.insert_str("OpSys", &s.opsys);
    occupancy_attrs(&mut ad, s);
    ad.insert_real("Speed", s.speed);
    // HTCondor's Mips: our β is relative to a reference machine; 1000 Mips
    // stands for β = 1.
    ad.insert_int("Mips", (s.speed * 1000.0).round() as i64);
    if let Some(m) = s.policy.max_guests {
        ad.insert_int("MaxGuests", i64::from(m));
    }
    for (k, v) in &s.attrs {
        insert_or_string(&mut ad, k, v);
    }
    let start = s.policy.start.as_deref().unwrap_or("true");
    insert_or_string(&mut ad, "Start", start);
    insert_or_string(&mut ad, "Requirements", start);
    ad
}

/// The attributes of [`machine_ad`] that follow the station's occupancy
/// (owner state, guests, free resources) rather than its description.
fn occupancy_attrs(ad: &mut Ad, s: &StationAd) {
    let guests = s.running_guests.len() as i64;
    ad.insert_int("Cpus", i64::from(s.cpus));
    ad.insert_int("TotalCpus", i64::from(s.cpus) + guests);
    ad.insert_int("Memory", i64::try_from(s.memory_mb).unwrap_or(i64::MAX));
    set_disk(ad, s.disk_free_kb);
    ad.insert_int("GuestsRunning", guests);
    ad.insert_str("State", state_name(s.state));
}

/// [`machine_ad`] of `new`, reusing `old_ad` (the machine ad of `old`) when
/// only the occupancy changed: a coordinator receiving an ad every few
/// seconds then parses no expression again. Same result as
/// `machine_ad(new)`.
pub fn machine_ad_since(old: &StationAd, old_ad: Ad, new: &StationAd) -> Ad {
    let same_description = old.name == new.name
        && old.arch == new.arch
        && old.opsys == new.opsys
        && old.speed.to_bits() == new.speed.to_bits()
        && old.policy.max_guests == new.policy.max_guests
        && old.policy.start == new.policy.start
        && old.attrs == new.attrs
        // An owner's attribute may override an occupancy attribute.
        && !new.attrs.keys().any(|k| {
            ["cpus", "totalcpus", "memory", "disk", "guestsrunning", "state"]
                .contains(&k.to_ascii_lowercase().as_str())
        });
    if !same_description {
        return machine_ad(new);
    }
    let mut ad = old_ad;
    let guests = new.running_guests.len() as i64;
    if old.cpus != new.cpus || old.running_guests.len() != new.running_guests.len() {
        ad.insert_int("Cpus", i64::from(new.cpus));
        ad.insert_int("TotalCpus", i64::from(new.cpus) + guests);
        ad.insert_int("GuestsRunning", guests);
    }
    if old.memory_mb != new.memory_mb {
        ad.insert_int("Memory", i64::try_from(new.memory_mb).unwrap_or(i64::MAX));
    }
    if old.disk_free_kb != new.disk_free_kb {
        set_disk(&mut ad, new.disk_free_kb);
    }
    if old.state != new.state {
        ad.insert_str("State", state_name(new.state));
    }
    ad
}

/// Sets a machine ad's free disk (KiB), which changes in most ads.
pub fn set_disk(ad: &mut Ad, kb: u64) {
    ad.insert_int("Disk", disk_value(kb));
}

/// [`set_disk`] for an ad whose free disk is set again and again (the
/// coordinator's copy of every station's machine ad): `slot` remembers
/// where `Disk` is, so most updates skip the name lookup, whose cache
/// misses over 10 000 ads were a fifth of a round (bench/README.md).
pub fn set_disk_at(ad: &mut Ad, slot: &mut Option<Slot>, kb: u64) {
    let v = Expr::Lit(Literal::Int(disk_value(kb)));
    if let Some(s) = *slot
        && ad.replace_at(s, v)
    {
        return;
    }
    set_disk(ad, kb);
    *slot = ad.slot_of("Disk");
}

fn disk_value(kb: u64) -> i64 {
    i64::try_from(kb).unwrap_or(i64::MAX)
}

fn state_name(s: gleaner_core::detector::OwnerState) -> &'static str {
    match s {
        gleaner_core::detector::OwnerState::Av => "Unclaimed",
        gleaner_core::detector::OwnerState::Na => "Owner",
    }
}

/// The job ClassAd of a class (HTCondor attribute names; memory MiB, disk
/// KiB). A class without `requirements` requires nothing.
pub fn class_ad(c: &JobClass) -> Ad {
    let mut ad = Ad::new();
    ad.insert_str("MyType", "Job");
    for (k, v) in &c.custom_attrs {
        insert_or_string(&mut ad, k, v);
    }
    ad.insert_str("Owner", &c.owner);
    ad.insert_str("User", &c.owner);
    if let Some(s) = &c.submitter {
        ad.insert_str("AccountingGroup", s);
    }
    crate::requests::insert(&mut ad, crate::requests::Requests::of_class(c));
    if !c.concurrency_limits.is_empty() {
        ad.insert_str("ConcurrencyLimits", &c.concurrency_limits.join(","));
    }
    // An unparsable expression is kept as a string so that it evaluates to
    // no match (a string is not true) instead of vanishing.
    insert_or_string(
        &mut ad,
        "Requirements",
        c.requirements.as_deref().unwrap_or("true"),
    );
    if let Some(r) = &c.rank {
        insert_or_string(&mut ad, "Rank", r);
    }
    ad
}

#[cfg(test)]
mod tests {
    use super::*;

    fn station(name: &str) -> StationAd {
        serde_json::from_value(serde_json::json!({
            "name": name, "address": "", "state": "AV", "cpus": 1,
            "memory_mb": 0, "disk_free_kb": 0, "arch": "X86_64",
            "opsys": "LINUX", "sent_at": 0
        }))
        .unwrap()
    }

    #[test]
    fn limits_parse_like_htcondor() {
        assert_eq!(
            parse_limits(&["MATLAB", "foo:2", "matlab"]).unwrap(),
            vec![("foo".into(), 2), ("matlab".into(), 2)]
        );
        assert_eq!(parse_limits(&["a, b:3"]).unwrap().len(), 2);
        assert!(parse_limits(&["foo:0"]).is_err());
        assert!(parse_limits(&["foo:x"]).is_err());
        assert!(parse_limits(&["fo/o"]).is_err());
    }

    #[test]
    fn classes_group_alike_jobs() {
        let mut a = JobDescription::new("alice", "/bin/true");
        let b = a.clone();
        a.requirements = Some("Memory > 10".into());
        let jobs = [a.clone(), b.clone(), a.clone()];
        let g = JobClass::group(jobs.iter());
        assert_eq!(g.len(), 2);
        assert_eq!(g[0].count, 2);
        assert_eq!(g[0].key, JobClass::of(&a).key, "stable key");
        assert_ne!(g[0].key, g[1].key);
        // Attributes nothing refers to do not split classes.
        let mut c = b.clone();
        c.custom_attrs.insert("Index".into(), "7".into());
        assert_eq!(JobClass::of(&c).key, JobClass::of(&b).key);
        c.requirements = Some("MY.Index > 3".into());
        let mut e = c.clone();
        e.custom_attrs.insert("Index".into(), "1".into());
        assert_ne!(JobClass::of(&c).key, JobClass::of(&e).key);
    }

    #[test]
    fn criu_jobs_match_only_stations_with_criu() {
        let mut d = JobDescription::new("alice", "/bin/true");
        d.checkpoint_method = CheckpointMethod::Criu;
        let mut s = station("ws1");
        assert!(!gleaner_classad::matches(
            &class_ad(&JobClass::of(&d)),
            &machine_ad(&s),
            0
        ));
        s.attrs.insert("HasCRIU".into(), "true".into());
        assert!(gleaner_classad::matches(
            &class_ad(&JobClass::of(&d)),
            &machine_ad(&s),
            0
        ));
        // The user's own requirements still apply.
        d.requirements = Some("Memory >= 8192".into());
        assert!(!gleaner_classad::matches(
            &class_ad(&JobClass::of(&d)),
            &machine_ad(&s),
            0
        ));
        // CRIU and non-CRIU jobs are different classes.
        let mut e = d.clone();
        e.checkpoint_method = CheckpointMethod::Auto;
        assert_ne!(JobClass::of(&d).key, JobClass::of(&e).key);
    }

    #[test]
    fn ads_match_on_requirements_and_start() {
        let mut s = station("ws1");
        s.memory_mb = 4096;
        s.attrs.insert("HasMatlab".into(), "true".into());
        s.policy.start = Some("TARGET.Owner != \"mallory\"".into());
        let m = machine_ad(&s);
        let mut d = JobDescription::new("alice", "/bin/true");
        d.requirements = Some("Memory >= 2048 && HasMatlab".into());
        assert!(gleaner_classad::matches(
            &class_ad(&JobClass::of(&d)),
            &m,
            0
        ));
        d.owner = "mallory".into();
        assert!(!gleaner_classad::matches(
            &class_ad(&JobClass::of(&d)),
            &m,
            0
        ));
        d.owner = "alice".into();
        d.requirements = Some("Memory >= 8192".into());
        assert!(!gleaner_classad::matches(
            &class_ad(&JobClass::of(&d)),
            &m,
            0
        ));
    }

    #[test]
    fn an_updated_machine_ad_equals_a_fresh_one() {
        let mut a = station("ws1");
        a.attrs.insert("HasMatlab".into(), "true".into());
        a.policy.start = Some("TARGET.RequestCpus == 1".into());
        let ad = machine_ad(&a);
        let mut b = a.clone();
        b.cpus = 4;
        b.state = gleaner_core::detector::OwnerState::Na;
        b.disk_free_kb = 99;
        let updated = machine_ad_since(&a, ad.clone(), &b);
        assert_eq!(updated, machine_ad(&b));
        assert_eq!(
            updated.to_string(),
            machine_ad(&b).to_string(),
            "same order"
        );
        // A changed description builds the ad again.
        let mut c = b.clone();
        c.policy.start = Some("false".into());
        assert_eq!(machine_ad_since(&b, updated, &c), machine_ad(&c));
        // An owner's Cpus attribute wins over the occupancy.
        let mut d = a.clone();
        d.attrs.insert("Cpus".into(), "1".into());
        let dad = machine_ad(&d);
        let mut e = d.clone();
        e.cpus = 8;
        assert_eq!(machine_ad_since(&d, dad, &e), machine_ad(&e));
    }
}
