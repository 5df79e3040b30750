//! One JSON document per command on stdout, for scripts (`--json`).

use super::{Analysis, ClusterProgress, JobAction, JobList, LocalQueue, Output};
use gleaner_classad::{Ad, Expr, Literal, Value as ClassAdValue, unparse_expr};
use gleaner_coordinator::tokens::{IssuedToken, RevokeOutcome, TokenRecord};
use gleaner_proto::api::{ActionResponse, JobInfo};
use gleaner_proto::wire::{PoolStatus, SubmitResponse, UserPrio};
use gleaner_station::home::dagman::{DagRmResponse, DagStatus, DagSubmitResponse};
use serde::Serialize;
use serde_json::{Value, json};

/// Pretty-printed JSON; every command prints exactly one document.
pub struct JsonOutput;

fn print(v: &impl Serialize) {
    match serde_json::to_string_pretty(v) {
        Ok(s) => println!("{}", super::escape::json(&s)),
        // Our own types always serialise; say so rather than print nothing.
        Err(e) => eprintln!("glean: cannot render JSON: {e}"),
    }
}

/// A machine ad as a JSON object: literals as JSON values, any other
/// expression as HTCondor's JSON form `"\/Expr(EXPR)\/"`, so that
/// `condor_status -json` readers understand it.
fn ad_json(ad: &Ad) -> Value {
    let mut m = serde_json::Map::new();
    for (name, e) in ad.iter() {
        let v = match e {
            Expr::Lit(Literal::Bool(b)) => json!(b),
            Expr::Lit(Literal::Int(i)) => json!(i),
            Expr::Lit(Literal::Real(r)) if r.is_finite() => json!(r),
            Expr::Lit(Literal::Str(s)) => json!(s),
            Expr::Lit(Literal::Undefined) => Value::Null,
            other => json!(format!("\\/Expr({})\\/", unparse_expr(other))),
        };
        m.insert(name.to_string(), v);
    }
    Value::Object(m)
}

/// An evaluated value as JSON: scalars as JSON values (`undefined` as
/// null), `error`, lists and ads in ClassAd syntax as strings.
fn value_json(v: &ClassAdValue) -> Value {
    match v {
        ClassAdValue::Undefined => Value::Null,
        ClassAdValue::Bool(b) => json!(b),
        ClassAdValue::Int(i) => json!(i),
        ClassAdValue::Real(r) if r.is_finite() => json!(r),
        ClassAdValue::Str(s) => json!(s),
        other => json!(other.unparse()),
    }
}

impl Output for JsonOutput {
    fn submitted(&self, resp: &SubmitResponse) {
        print(resp);
    }
    fn jobs(&self, jobs: &[JobInfo], _list: JobList) {
        print(&jobs);
    }
    fn pages(&self) -> bool {
        false
    }
    fn queue_page(&self, page: &super::QueuePage) {
        // The same array as without pages: that page's jobs.
        print(&page.jobs);
    }
    fn job_ads(&self, ads: &[Ad]) {
        print(&ads.iter().map(ad_json).collect::<Vec<_>>());
    }
    fn autoformat(&self, attrs: &[String], rows: &[Vec<ClassAdValue>]) {
        let rows: Vec<Value> = rows
            .iter()
            .map(|r| {
                let m: serde_json::Map<String, Value> = attrs
                    .iter()
                    .cloned()
                    .zip(r.iter().map(value_json))
                    .collect();
                Value::Object(m)
            })
            .collect();
        print(&rows);
    }
    fn actions(&self, action: JobAction, resp: &ActionResponse) {
        print(&json!({ "action": action, "changed": resp.changed, "skipped": resp.skipped }));
    }
    fn analysis(&self, a: &Analysis) {
        print(a);
    }
    fn pool(&self, pool: &PoolStatus) {
        print(pool);
    }
    fn machine_ads(&self, ads: &[Ad]) {
        print(&ads.iter().map(ad_json).collect::<Vec<_>>());
    }
    fn local_queue(&self, q: &LocalQueue) {
        print(q);
    }
    fn userprio(&self, up: &UserPrio) {
        print(up);
    }
    fn home_users(&self, u: &gleaner_proto::api::HomeUsers) {
        print(u);
    }
    fn dag_submitted(&self, resp: &DagSubmitResponse) {
        print(resp);
    }
    fn dags(&self, dags: &[DagStatus]) {
        print(&dags);
    }
    fn progress(&self, clusters: &[ClusterProgress]) {
        // One line per update: a stream a script reads line by line.
        match serde_json::to_string(clusters) {
            Ok(s) => println!("{}", super::escape::json(&s)),
            Err(e) => eprintln!("glean: cannot render JSON: {e}"),
        }
    }
    fn dag(&self, dag: &DagStatus) {
        print(dag);
    }
    fn dag_removed(&self, resp: &DagRmResponse) {
        print(resp);
    }
    fn classad_value(&self, value: &str) {
        print(&json!({ "value": value }));
    }
    fn token_issued(&self, issued: &IssuedToken) {
        print(&json!({ "token": issued.token, "record": issued.record }));
    }
    fn tokens(&self, tokens: &[TokenRecord], _now_secs: u64) {
        print(&tokens);
    }
    fn token_revoked(&self, outcome: &RevokeOutcome) {
        let (already, record) = match outcome {
            RevokeOutcome::Revoked(r) => (false, r),
            RevokeOutcome::AlreadyRevoked(r) => (true, r),
        };
        print(&json!({ "already_revoked": already, "record": record }));
    }
    fn reserve(&self, report: &crate::reserve::Report) {
        print(report);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ads_follow_htcondor_json() {
        let ad = Ad::parse("[ Name = \"ws1\"; Cpus = 2; Start = Memory > 10 ]").unwrap();
        let v = ad_json(&ad);
        assert_eq!(v["Name"], json!("ws1"));
        assert_eq!(v["Cpus"], json!(2));
        assert_eq!(v["Start"], json!("\\/Expr(Memory > 10)\\/"));
    }
}
