//! A typed client for the station's user API (what the `glean` CLI uses).
//!
//! # Finding the station and the token
//!
//! The CLI talks to the user's own station, on its user socket (the kernel
//! tells the station who you are; no token) or over HTTP with a token.
//! [`ClientSettings::discover`] reads the personal pool directory
//! `$GLEAN_HOME` (default `~/.glean`):
//!
//! ```text
//! $GLEAN_HOME/
//!   pool.toml    socket = "/run/gleaner/ws12.sock"     # the station's user socket
//!                station = "http://127.0.0.1:9620"     # or its URL (one of the two)
//!                coordinator = "http://central:9618"   # optional (glean status)
//!                token_file = "token"                  # optional, relative to $GLEAN_HOME
//!                ca = "pool-ca.pem"                    # the pool CA, for https:// URLs
//!                pool = "lab"                          # the pool's name (with ca)
//!   token        the user's bearer token (one line), mode 0600: needed
//!                for the station's URL and for the coordinator
//! ```
//!
//! The socket is used when `pool.toml` names one, unless `--station URL`
//! or `--token FILE` is given (a token means "act as its subject", which
//! only HTTP carries); `--station unix:/path` names a socket directly.
//! With `--station URL` and `--token FILE`, `pool.toml` is not needed.

use gleaner_proto::api::{ActionRequest, ActionResponse, JobDetail, JobInfo, SubmitBody};
use gleaner_proto::wire::{ErrorBody, SubmitResponse};
use serde::Deserialize;
use serde::de::DeserializeOwned;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// Client errors.
#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    /// The station answered with an error body.
    #[error("station refused the request ({status}): {body}")]
    Api { status: u16, body: ErrorBody },
    #[error("cannot reach the station at {url}: {message}")]
    Http { url: String, message: String },
    #[error("unexpected answer from the station: {0}")]
    Decode(String),
    #[error("{0}")]
    Config(String),
}

impl ClientError {
    /// The HTTP status, when the station answered.
    pub fn status(&self) -> Option<u16> {
        match self {
            ClientError::Api { status, .. } => Some(*status),
            _ => None,
        }
    }
}

/// `$GLEAN_HOME/pool.toml`.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct PoolFile {
    pub station: Option<String>,
    /// The station's user socket.
    pub socket: Option<PathBuf>,
    pub coordinator: Option<String>,
    pub token_file: Option<PathBuf>,
    /// The pool CA (PEM), relative to `$GLEAN_HOME`: the one root trusted
    /// for `https://` URLs (`glean user add` writes it).
    pub ca: Option<PathBuf>,
    /// The pool's name.
    pub pool: Option<String>,
}

/// How to reach the station.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum StationAddr {
    /// Over HTTP with a bearer token.
    Url(String),
    /// On its user socket, as the calling Unix user.
    Socket(PathBuf),
}

impl StationAddr {
    /// `unix:/path` is a socket, anything else a URL.
    pub fn parse(s: &str) -> StationAddr {
        match s.strip_prefix("unix:") {
            Some(p) => StationAddr::Socket(PathBuf::from(p)),
            None => StationAddr::Url(s.to_string()),
        }
    }
}

impl std::fmt::Display for StationAddr {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            StationAddr::Url(u) => f.write_str(u),
            StationAddr::Socket(p) => write!(f, "unix:{}", p.display()),
        }
    }
}

/// Where to reach the station and with which token.
#[derive(Clone, Debug)]
pub struct ClientSettings {
    pub station: StationAddr,
    /// The user's token: required for a station URL, optional on the
    /// socket (still used for the coordinator).
    pub token: Option<String>,
    pub coordinator: Option<String>,
    /// The pool CA, for `https://` URLs.
    pub ca: Option<gleaner_edge::tls::PoolCa>,
}

/// `$GLEAN_HOME`, or `~/.glean`.
pub fn glean_home() -> PathBuf {
    if let Some(h) = std::env::var_os("GLEAN_HOME").filter(|h| !h.is_empty()) {
        return PathBuf::from(h);
    }
    let home = std::env::var_os("HOME").map_or_else(|| PathBuf::from("."), PathBuf::from);
    home.join(".glean")
}

fn read_token(path: &Path) -> Result<String, ClientError> {
    let t = std::fs::read_to_string(path)
        .map_err(|e| ClientError::Config(format!("cannot read token {}: {e}", path.display())))?;
    let t = t.trim().to_string();
    if t.is_empty() {
        return Err(ClientError::Config(format!(
            "token file {} is empty",
            path.display()
        )));
    }
    Ok(t)
}

impl ClientSettings {
    /// Resolves the station URL and token: explicit overrides first, then
    /// `$GLEAN_HOME/pool.toml` and `$GLEAN_HOME/token`.
    pub fn discover(station: Option<&str>, token_file: Option<&Path>) -> Result<Self, ClientError> {
        Self::discover_in(&glean_home(), station, token_file)
    }

    /// [`ClientSettings::discover`] with an explicit pool directory.
    pub fn discover_in(
        home: &Path,
        station: Option<&str>,
        token_file: Option<&Path>,
    ) -> Result<Self, ClientError> {
        let pool_path = home.join("pool.toml");
        let pool: PoolFile = match std::fs::read_to_string(&pool_path) {
            Ok(text) => toml::from_str(&text)
                .map_err(|e| ClientError::Config(format!("{}: {e}", pool_path.display())))?,
            Err(_) => PoolFile::default(),
        };
        let station = match (station, token_file, &pool.socket, &pool.station) {
            (Some(s), _, _, _) => StationAddr::parse(s),
            // An explicit token acts as its subject: HTTP.
            (None, Some(_), _, Some(url)) => StationAddr::Url(url.clone()),
            (None, _, Some(sock), _) => StationAddr::Socket(sock.clone()),
            (None, _, None, Some(url)) => StationAddr::Url(url.clone()),
            (None, _, None, None) => {
                return Err(ClientError::Config(format!(
                    "no station: pass --station URL (or unix:/path) or set `socket` or `station` in {}",
                    pool_path.display()
                )));
            }
        };
        let token_path = match (token_file, &pool.token_file) {
            (Some(p), _) => p.to_path_buf(),
            (None, Some(p)) if p.is_absolute() => p.clone(),
            (None, Some(p)) => home.join(p),
            (None, None) => home.join("token"),
        };
        let token = match &station {
            StationAddr::Url(_) => Some(read_token(&token_path)?),
            // On the socket the kernel says who you are; a token is kept
            // for the coordinator if there is one.
            StationAddr::Socket(_) if token_file.is_some() => Some(read_token(&token_path)?),
            StationAddr::Socket(_) => read_token(&token_path).ok(),
        };
        let ca = match &pool.ca {
            None => None,
            Some(p) => {
                let path = if p.is_absolute() {
                    p.clone()
                } else {
                    home.join(p)
                };
                let name = pool.pool.as_deref().unwrap_or("gleaner");
                Some(gleaner_edge::tls::PoolCa::load(name, &path).map_err(|e| {
                    ClientError::Config(format!("ca in {}: {e}", pool_path.display()))
                })?)
            }
        };
        Ok(ClientSettings {
            station,
            token,
            coordinator: pool.coordinator,
            ca,
        })
    }

    /// A client of the coordinator at `url` with the user's token (and the
    /// pool CA for https).
    pub fn coordinator_client(&self, url: &str) -> Result<StationClient, ClientError> {
        StationClient::with_ca(url, self.token()?, self.ca.as_ref())
    }

    /// The token, for calls that need one (the coordinator's).
    pub fn token(&self) -> Result<&str, ClientError> {
        self.token.as_deref().ok_or_else(|| {
            ClientError::Config(
                "this needs a token (the coordinator has no user socket): pass --token FILE or \
                 put one in $GLEAN_HOME/token"
                    .into(),
            )
        })
    }
}

/// A client of one station's user API.
#[derive(Clone, Debug)]
pub struct StationClient {
    base: String,
    /// What to show as the station's address (`unix:/path` on a socket).
    shown: String,
    token: Option<String>,
    http: reqwest::Client,
}

/// Query of [`StationClient::jobs`].
#[derive(Clone, Debug, Default)]
pub struct JobQuery {
    pub owner: Option<String>,
    pub state: Option<String>,
    /// Include completed and removed jobs.
    pub all: bool,
}

impl JobQuery {
    /// The query's parameters for `GET /v1/jobs`.
    fn params(&self) -> Vec<(&'static str, String)> {
        let mut params = Vec::new();
        if let Some(o) = &self.owner {
            params.push(("owner", o.clone()));
        }
        if let Some(s) = &self.state {
            params.push(("state", s.clone()));
        }
        if self.all {
            params.push(("all", "1".into()));
        }
        params
    }
}

impl StationClient {
    /// A client of the station (or coordinator) at `base_url`, sending
    /// `token`.
    pub fn new(base_url: impl Into<String>, token: impl Into<String>) -> Result<Self, ClientError> {
        Self::with_ca(&base_url.into(), token, None)
    }

    /// A client of `base_url` sending `token`; `https://` URLs are checked
    /// against the pool CA `ca` alone (the URL's host must be in the
    /// daemon's certificate), `http://` is allowed only to loopback.
    pub fn with_ca(
        base_url: &str,
        token: impl Into<String>,
        ca: Option<&gleaner_edge::tls::PoolCa>,
    ) -> Result<Self, ClientError> {
        let https = base_url.to_ascii_lowercase().starts_with("https://");
        gleaner_edge::tls::check_url("URL", base_url, true).map_err(ClientError::Config)?;
        let http = match (https, ca) {
            (true, Some(ca)) => gleaner_edge::tls::https_client(
                Self::builder(),
                ca,
                None,
                gleaner_edge::tls::Expect::UrlHost,
            )
            .map_err(|e| ClientError::Config(format!("HTTP client: {e}")))?,
            (true, None) => {
                return Err(ClientError::Config(format!(
                    "{base_url} is https: the client needs the pool CA (`ca` in \
                     $GLEAN_HOME/pool.toml, from `glean user add`)"
                )));
            }
            (false, _) => Self::builder()
                .build()
                .map_err(|e| ClientError::Config(format!("HTTP client: {e}")))?,
        };
        let base = base_url.trim_end_matches('/').to_string();
        Ok(StationClient {
            shown: base.clone(),
            base,
            token: Some(token.into()),
            http,
        })
    }

    /// A client of the station's user socket at `path`: no token, the
    /// station knows the calling user from the socket.
    pub fn unix(path: impl AsRef<Path>) -> Result<Self, ClientError> {
        let path = path.as_ref();
        let http = Self::builder()
            .unix_socket(path)
            .build()
            .map_err(|e| ClientError::Config(format!("HTTP client: {e}")))?;
        Ok(StationClient {
            // Any host will do: the connection is the socket's.
            base: "http://localhost".into(),
            shown: format!("unix:{}", path.display()),
            token: None,
            http,
        })
    }

    fn builder() -> reqwest::ClientBuilder {
        reqwest::Client::builder()
            .connect_timeout(Duration::from_secs(5))
            .timeout(Duration::from_secs(60))
    }

    pub fn from_settings(s: &ClientSettings) -> Result<Self, ClientError> {
        match &s.station {
            StationAddr::Socket(p) => Self::unix(p),
            StationAddr::Url(u) => Self::with_ca(u, s.token()?, s.ca.as_ref()),
        }
    }

    /// The station's address as the user knows it (`unix:/path` for the
    /// socket).
    pub fn base_url(&self) -> &str {
        &self.shown
    }

    fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base)
    }

    async fn send(&self, rb: reqwest::RequestBuilder) -> Result<reqwest::Response, ClientError> {
        let rb = match &self.token {
            Some(t) => rb.bearer_auth(t),
            None => rb,
        };
        let resp = rb.send().await.map_err(|e| ClientError::Http {
            url: self.shown.clone(),
            message: e.to_string(),
        })?;
        let status = resp.status();
        if status.is_success() {
            return Ok(resp);
        }
        let text = resp.text().await.unwrap_or_default();
        let body = serde_json::from_str::<ErrorBody>(&text).unwrap_or_else(|_| {
            ErrorBody::new(gleaner_proto::wire::ErrorCode::Internal, text.clone())
        });
        Err(ClientError::Api {
            status: status.as_u16(),
            body,
        })
    }

    async fn json<T: DeserializeOwned>(
        &self,
        rb: reqwest::RequestBuilder,
    ) -> Result<T, ClientError> {
        self.send(rb)
            .await?
            .json::<T>()
            .await
            .map_err(|e| ClientError::Decode(e.to_string()))
    }

    /// `GET /v1/whoami`: who the station takes the caller for.
    pub async fn whoami(&self) -> Result<crate::home::identity::WhoAmI, ClientError> {
        self.json(self.http.get(self.url("/v1/whoami"))).await
    }

    /// `GET /v1/users`: the home's users, their share and use, and its
    /// limits (`glean users`).
    pub async fn users(&self) -> Result<gleaner_proto::api::HomeUsers, ClientError> {
        self.json(self.http.get(self.url("/v1/users"))).await
    }

    /// `POST /v1/submit`.
    pub async fn submit(&self, body: &SubmitBody) -> Result<SubmitResponse, ClientError> {
        self.json(self.http.post(self.url("/v1/submit")).json(body))
            .await
    }

    /// `GET /v1/jobs`.
    pub async fn jobs(&self, q: &JobQuery) -> Result<Vec<JobInfo>, ClientError> {
        self.json(self.http.get(self.url("/v1/jobs")).query(&q.params()))
            .await
    }

    /// `GET /v1/jobs?limit=&offset=`: one page of the queue.
    pub async fn jobs_page(
        &self,
        q: &JobQuery,
        offset: u64,
        limit: u64,
    ) -> Result<Vec<JobInfo>, ClientError> {
        let mut params = q.params();
        params.push(("limit", limit.to_string()));
        params.push(("offset", offset.to_string()));
        self.json(self.http.get(self.url("/v1/jobs")).query(&params))
            .await
    }

    /// `GET /v1/queue/summary`.
    pub async fn queue_summary(
        &self,
        owner: Option<&str>,
    ) -> Result<gleaner_proto::api::QueueSummary, ClientError> {
        let params: Vec<(&str, &str)> = owner.map(|o| vec![("owner", o)]).unwrap_or_default();
        self.json(self.http.get(self.url("/v1/queue/summary")).query(&params))
            .await
    }

    /// `GET /v1/jobs/{id}`.
    pub async fn job(&self, id: &str) -> Result<JobDetail, ClientError> {
        self.json(self.http.get(self.url(&format!("/v1/jobs/{id}"))))
            .await
    }

    async fn action(
        &self,
        id: &str,
        what: &str,
        reason: Option<&str>,
    ) -> Result<ActionResponse, ClientError> {
        let body = ActionRequest {
            reason: reason.map(str::to_string),
        };
        self.json(
            self.http
                .post(self.url(&format!("/v1/jobs/{id}/{what}")))
                .json(&body),
        )
        .await
    }

    /// `POST /v1/jobs/{id}/rm`; `id` is `C.P` or a cluster `C`.
    pub async fn rm(&self, id: &str, reason: Option<&str>) -> Result<ActionResponse, ClientError> {
        self.action(id, "rm", reason).await
    }

    pub async fn hold(
        &self,
        id: &str,
        reason: Option<&str>,
    ) -> Result<ActionResponse, ClientError> {
        self.action(id, "hold", reason).await
    }

    pub async fn release(
        &self,
        id: &str,
        reason: Option<&str>,
    ) -> Result<ActionResponse, ClientError> {
        self.action(id, "release", reason).await
    }

    /// `POST /v1/jobs/{id}/edit` (`condor_qedit`); `id` is `C.P` or `C`.
    pub async fn edit(
        &self,
        id: &str,
        req: &crate::home::qedit::EditRequest,
    ) -> Result<crate::home::qedit::EditResponse, ClientError> {
        self.json(
            self.http
                .post(self.url(&format!("/v1/jobs/{id}/edit")))
                .json(req),
        )
        .await
    }

    /// `GET /v1/history`.
    pub async fn history(&self, owner: Option<&str>) -> Result<Vec<JobInfo>, ClientError> {
        let mut rb = self.http.get(self.url("/v1/history"));
        if let Some(o) = owner {
            rb = rb.query(&[("owner", o)]);
        }
        self.json(rb).await
    }

    /// `GET /v1/jobs/{id}/output/{stream}?offset=N`: output so far (at
    /// most the home's 4 MiB per read: see [`StationClient::output_part`]).
    pub async fn output(
        &self,
        id: &str,
        stream: &str,
        offset: u64,
    ) -> Result<Vec<u8>, ClientError> {
        Ok(self.output_part(id, stream, offset, None).await?.0)
    }

    /// Up to `max` bytes of a job's output from `offset` (the home caps it
    /// too), and the stream's whole length so far (`None` from an older
    /// home that does not say).
    pub async fn output_part(
        &self,
        id: &str,
        stream: &str,
        offset: u64,
        max: Option<u64>,
    ) -> Result<(Vec<u8>, Option<u64>), ClientError> {
        let mut rb = self
            .http
            .get(self.url(&format!("/v1/jobs/{id}/output/{stream}")))
            .query(&[("offset", offset)]);
        if let Some(m) = max {
            rb = rb.query(&[("max", m)]);
        }
        let resp = self.send(rb).await?;
        let size = resp
            .headers()
            .get(crate::home::user::OUTPUT_SIZE_HEADER)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.parse().ok());
        let bytes = resp
            .bytes()
            .await
            .map_err(|e| ClientError::Decode(e.to_string()))?;
        Ok((bytes.to_vec(), size))
    }

    /// `POST /v1/dags`: submit a DAG (`glean dag submit`).
    pub async fn submit_dag(
        &self,
        body: &crate::home::dagman::DagSubmitBody,
    ) -> Result<crate::home::dagman::DagSubmitResponse, ClientError> {
        self.json(self.http.post(self.url("/v1/dags")).json(body))
            .await
    }

    /// `GET /v1/dags`: every DAG, or one owner's.
    pub async fn dags(
        &self,
        owner: Option<&str>,
    ) -> Result<Vec<crate::home::dagman::DagStatus>, ClientError> {
        let mut rb = self.http.get(self.url("/v1/dags"));
        if let Some(o) = owner {
            rb = rb.query(&[("owner", o)]);
        }
        self.json(rb).await
    }

    /// `GET /v1/dags/{id}`.
    pub async fn dag(&self, id: u64) -> Result<crate::home::dagman::DagStatus, ClientError> {
        self.json(self.http.get(self.url(&format!("/v1/dags/{id}"))))
            .await
    }

    /// `POST /v1/dags/{id}/rm`.
    pub async fn rm_dag(&self, id: u64) -> Result<crate::home::dagman::DagRmResponse, ClientError> {
        self.json(self.http.post(self.url(&format!("/v1/dags/{id}/rm"))))
            .await
    }

    /// `GET {path}` on the same host, decoded as JSON (e.g. `/v1/guests`).
    pub async fn get_json<T: DeserializeOwned>(&self, path: &str) -> Result<T, ClientError> {
        self.json(self.http.get(self.url(path))).await
    }

    /// `POST {path}` with `body` as JSON, the answer decoded as JSON.
    pub async fn post_json<B: serde::Serialize, T: DeserializeOwned>(
        &self,
        path: &str,
        body: &B,
    ) -> Result<T, ClientError> {
        self.json(self.http.post(self.url(path)).json(body)).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pool(files: &[(&str, &str)]) -> tempfile::TempDir {
        let d = tempfile::tempdir().unwrap();
        for (name, text) in files {
            std::fs::write(d.path().join(name), text).unwrap();
        }
        d
    }

    #[test]
    fn the_socket_is_used_without_a_token() {
        let d = pool(&[(
            "pool.toml",
            "socket = \"/run/gleaner/s.sock\"\nstation = \"http://h:1\"\n",
        )]);
        let s = ClientSettings::discover_in(d.path(), None, None).unwrap();
        assert_eq!(s.station, StationAddr::Socket("/run/gleaner/s.sock".into()));
        assert_eq!(s.token, None);
        assert!(s.token().unwrap_err().to_string().contains("needs a token"));
        // A token file is kept for the coordinator.
        std::fs::write(d.path().join("token"), "tok\n").unwrap();
        let s = ClientSettings::discover_in(d.path(), None, None).unwrap();
        assert_eq!(s.token.as_deref(), Some("tok"));
    }

    #[test]
    fn overrides_choose_the_transport() {
        let d = pool(&[
            (
                "pool.toml",
                "socket = \"/run/gleaner/s.sock\"\nstation = \"http://h:1\"\n",
            ),
            ("t", "tok"),
        ]);
        let t = d.path().join("t");
        // An explicit token acts as its subject: HTTP.
        let s = ClientSettings::discover_in(d.path(), None, Some(&t)).unwrap();
        assert_eq!(s.station, StationAddr::Url("http://h:1".into()));
        let s = ClientSettings::discover_in(d.path(), Some("unix:/x.sock"), None).unwrap();
        assert_eq!(s.station, StationAddr::Socket("/x.sock".into()));
        assert_eq!(s.station.to_string(), "unix:/x.sock");
        let s = ClientSettings::discover_in(d.path(), Some("http://o:2"), Some(&t)).unwrap();
        assert_eq!(s.station, StationAddr::Url("http://o:2".into()));
        // A URL needs a token.
        let e = ClientSettings::discover_in(d.path(), Some("http://o:2"), None).unwrap_err();
        assert!(e.to_string().contains("cannot read token"), "{e}");
        let empty = tempfile::tempdir().unwrap();
        let e = ClientSettings::discover_in(empty.path(), None, None).unwrap_err();
        assert!(e.to_string().contains("no station"), "{e}");
    }
}
