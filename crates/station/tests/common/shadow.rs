//! A tiny home shadow for placing guests straight on a station's
//! `/v1/place`: serves each job's input files, records its streamed output,
//! uploaded files and status reports, per job.

use axum::Json;
use axum::Router;
use axum::body::Bytes;
use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use axum::routing::{get, post, put};
use gleaner_proto::job::{JobEventKind, JobId};
use gleaner_proto::wire::JobStatusReport;
use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex};

/// What the shadow saw, by job id (`"1.0"`).
#[derive(Default)]
pub struct Seen {
    pub inputs: HashMap<(String, String), Vec<u8>>,
    pub outputs: HashMap<(String, String), Vec<u8>>,
    pub files: HashMap<(String, String), Vec<u8>>,
    pub reports: Vec<JobStatusReport>,
}

#[derive(Clone, Default)]
pub struct Shadow {
    pub seen: Arc<Mutex<Seen>>,
    pub url: String,
}

async fn input(
    State(s): State<Shadow>,
    Path((job, name)): Path<(String, String)>,
) -> (StatusCode, Vec<u8>) {
    match s.seen.lock().unwrap().inputs.get(&(job, name)) {
        Some(b) => (StatusCode::OK, b.clone()),
        None => (StatusCode::NOT_FOUND, Vec::new()),
    }
}

async fn output(
    State(s): State<Shadow>,
    Path((job, stream)): Path<(String, String)>,
    Query(q): Query<BTreeMap<String, String>>,
    body: Bytes,
) -> StatusCode {
    let off: usize = q.get("offset").and_then(|o| o.parse().ok()).unwrap_or(0);
    let mut seen = s.seen.lock().unwrap();
    let buf = seen.outputs.entry((job, stream)).or_default();
    if off > buf.len() {
        return StatusCode::CONFLICT;
    }
    let end = off + body.len();
    if end > buf.len() {
        buf.resize(end, 0);
    }
    buf[off..end].copy_from_slice(&body);
    StatusCode::OK
}

async fn file(
    State(s): State<Shadow>,
    Path((job, name)): Path<(String, String)>,
    body: Bytes,
) -> StatusCode {
    s.seen
        .lock()
        .unwrap()
        .files
        .insert((job, name), body.to_vec());
    StatusCode::NO_CONTENT
}

async fn status(State(s): State<Shadow>, Json(r): Json<JobStatusReport>) -> StatusCode {
    s.seen.lock().unwrap().reports.push(r);
    StatusCode::NO_CONTENT
}

impl Shadow {
    /// Serves on a free loopback port.
    pub async fn start() -> Shadow {
        let l = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let s = Shadow {
            url: format!("http://{}", l.local_addr().unwrap()),
            ..Default::default()
        };
        let app = Router::new()
            .route("/v1/shadow/{job}/input/{name}", get(input))
            .route("/v1/shadow/{job}/output/{stream}", post(output))
            .route("/v1/shadow/{job}/files/{name}", put(file))
            .route("/v1/jobs/{job}/status", post(status))
            .with_state(s.clone());
        tokio::spawn(async move { axum::serve(l, app).await.unwrap() });
        s
    }

    pub fn put_input(&self, job: JobId, name: &str, bytes: &[u8]) {
        self.seen
            .lock()
            .unwrap()
            .inputs
            .insert((job.to_string(), name.to_string()), bytes.to_vec());
    }

    /// The first report of `kind` for `job`.
    pub fn report(&self, job: JobId, kind: JobEventKind) -> Option<JobStatusReport> {
        self.seen
            .lock()
            .unwrap()
            .reports
            .iter()
            .find(|r| r.job_id == job && r.event == kind)
            .cloned()
    }

    /// Every report for `job`, in order.
    pub fn reports(&self, job: JobId) -> Vec<JobStatusReport> {
        self.seen
            .lock()
            .unwrap()
            .reports
            .iter()
            .filter(|r| r.job_id == job)
            .cloned()
            .collect()
    }

    pub fn output(&self, job: JobId, stream: &str) -> Vec<u8> {
        self.seen
            .lock()
            .unwrap()
            .outputs
            .get(&(job.to_string(), stream.to_string()))
            .cloned()
            .unwrap_or_default()
    }

    pub fn file(&self, job: JobId, name: &str) -> Option<Vec<u8>> {
        self.seen
            .lock()
            .unwrap()
            .files
            .get(&(job.to_string(), name.to_string()))
            .cloned()
    }
}
